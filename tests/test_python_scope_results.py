"""What builtins called from Python return, as Warp 1.12+ documents it (warp.config.
legacy_scalar_return_types): float32 / int32 / bool results are Python numbers, other scalar
types keep their type; Python numbers alone compute in int32 / float32; the words of a call that
fits no overload; keyword names of either overload; bytes() of bfloat16 values."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom.ir.evaluate import HostUnavailableError


def test_float32_int32_and_bool_results_are_python_numbers() -> None:
    assert type(wp.sin(wp.float32(1.23))) is float
    assert wp.sin(wp.float32(1.23)) == float(np.sin(np.float32(1.23)))  # still float32 math
    assert type(wp.length(wp.vec3f(1.0, 2.0, 2.0))) is float
    assert type(wp.abs(wp.int32(-3))) is int and wp.abs(wp.int32(-3)) == 3
    assert type(wp.vec3f(1.0, 2.0, 3.0) == wp.vec3f(1.0, 2.0, 3.0)) is bool
    assert type(wp.trace(wp.mat22f(1.0, 2.0, 3.0, 4.0))) is float


def _typed(value: object, t: object) -> bool:
    """value is a Python-scope value of gradloom type t (not a Python number)."""
    return isinstance(value, t) and type(value) not in (float, int, bool)  # type: ignore[arg-type]


def test_other_scalar_types_keep_their_type() -> None:
    r64 = wp.sin(wp.float64(1.23))
    assert _typed(r64, wp.float64) and not isinstance(r64, wp.float32)
    assert type(r64.value) is float and r64.value == float(np.sin(1.23))
    r16 = wp.sqrt(wp.float16(2.0))
    assert _typed(r16, wp.float16) and r16 == np.sqrt(np.float16(2.0))
    assert _typed(wp.invert(wp.int8(5)), wp.int8) and wp.invert(wp.int8(5)) == -6
    assert _typed(wp.mul(wp.uint64(3), wp.uint64(4)), wp.uint64)


def test_components_follow_the_same_rule() -> None:
    v = wp.mul(wp.vec3f(1.23, 2.0, 3.0), wp.float32(0.12))
    assert type(v[0]) is float and v[0] == float(np.float32(1.23) * np.float32(0.12))
    m = wp.mat22f(1.0, 2.0, 3.0, 4.0)
    assert type(m[1][0]) is float and type(m[1, 0]) is float
    assert _typed(wp.vec2d(1.0, 2.0)[1], wp.float64)
    assert [type(c) for c in wp.vec3f(1.0, 2.0, 3.0)] == [float] * 3


def test_legacy_scalar_return_types_gives_python_numbers_everywhere() -> None:
    old = wp.config.legacy_scalar_return_types
    try:
        wp.config.legacy_scalar_return_types = True
        assert type(wp.sin(wp.float16(1.23))) is float
        assert type(wp.sin(wp.float64(1.23))) is float
        assert type(wp.invert(wp.int16(-123))) is int
        assert type(wp.vec2d(1.0, 2.0)[0]) is float
    finally:
        wp.config.legacy_scalar_return_types = old
    assert _typed(wp.sin(wp.float64(1.23)), wp.float64)


def test_python_numbers_alone_compute_in_int32_and_float32() -> None:
    big = -1234567890
    assert wp.mul(big, big) == wp.mul(wp.int32(big), wp.int32(big)) == 304084036
    huge = -1234567890123456789
    assert wp.invert(huge) == wp.invert(wp.int32(huge)) == 2112454932
    f32 = np.float32
    assert wp.add(0.1, 0.2) == float(f32(f32(0.1) + f32(0.2)))
    assert type(wp.add(1, 2)) is int and type(wp.add(1.5, 2.0)) is float
    assert wp.sin(1.23) == wp.sin(wp.float32(1.23))


def test_a_call_that_fits_no_overload_ends_with_warps_words() -> None:
    with pytest.raises(RuntimeError) as info:
        wp.min(wp.vec3f(3.0, 1.0, 2.0), wp.vec3d(3.0, 1.0, 2.0))
    assert str(info.value) == "Couldn't find a function 'min' compatible with the arguments " \
                              "'vec3f, vec3d'"
    # why, and where: in a note under the message
    notes = getattr(info.value, "__notes__", [])
    assert any("test_python_scope_results.py" in n and "vec3d" in n for n in notes)


@wp.kernel
def _points(m: wp.array(dtype=wp.mat44), p: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    out[0] = wp.transform_point(mat=m[0], point=p[0])
    out[1] = wp.transform_vector(mat=m[0], vec=p[0])


def test_transform_point_takes_either_overloads_keyword() -> None:
    mat = wp.mat44f(1.0, 0.0, 0.0, 5.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    point = wp.vec3f(1.0, 2.0, 3.0)
    np.testing.assert_allclose(wp.transform_point(point=point, mat=mat), (6.0, 4.0, 3.0))
    np.testing.assert_allclose(wp.transform_point(xform=mat, point=point), (6.0, 4.0, 3.0))
    np.testing.assert_allclose(wp.transform_vector(mat=mat, vec=point), (1.0, 4.0, 3.0))
    out = wp.zeros(2, dtype=wp.vec3)
    wp.launch(_points, dim=1, inputs=[wp.array([mat], dtype=wp.mat44),
                                      wp.array([point], dtype=wp.vec3), out])
    np.testing.assert_allclose(out.numpy(), [(6.0, 4.0, 3.0), (1.0, 4.0, 3.0)])
    with pytest.raises(TypeError, match="xform.*mat"):
        wp.transform_point(xform=mat, mat=mat, point=point)


def test_bytes_of_a_bfloat16_value_are_its_16_bit_components() -> None:
    q = wp.quat_identity(dtype=wp.bfloat16)
    assert bytes(q) == np.array([0, 0, 0, 0x3F80], np.uint16).tobytes()
    assert bytes(wp.vec2f(1.0, 2.0)) == np.array([1.0, 2.0], np.float32).tobytes()


@wp.func
def _same_array(a: wp.array(dtype=float)) -> wp.array(dtype=float):
    return a


@wp.func
def _twice_length(a: wp.array(dtype=float)) -> int:
    return a.shape[0] * 2


@wp.func
def _first(a: wp.array(dtype=float)) -> float:
    return a[0]


class _TaggedArray(wp.array):
    pass


def test_funcs_called_from_python_pass_arrays_through() -> None:
    """Warp runs the function as Python, so an array comes back as the same object; here the
    host program returns the argument itself and reads its shape, never its memory."""
    a = wp.zeros(3, dtype=float)
    tagged = _TaggedArray([1.0, 2.0], dtype=float)
    assert _same_array(a) is a and _same_array(tagged) is tagged
    assert _twice_length(a) == 6 and _twice_length(tagged) == 4
    with pytest.raises(HostUnavailableError, match="array memory"):
        _first(a)
