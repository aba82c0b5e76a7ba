"""Python-scope scalar values (`wp.int32(3)`, `wp.float16(1.5)`, `wp.bool(1)`): instances of their
gradloom type with Warp's `.value`, arithmetic as a kernel computes it, Warp's TypeErrors, and
numpy interop (arrays, launch arguments, struct fields, fills)."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest

import gradloom as wp

INT_TYPES = [wp.int8, wp.int16, wp.int32, wp.int64, wp.uint8, wp.uint16, wp.uint32, wp.uint64]
FLOAT_TYPES = [wp.float16, wp.float32, wp.float64]


@pytest.mark.parametrize("t", [*INT_TYPES, *FLOAT_TYPES, wp.bfloat16, wp.bool])
def test_a_value_is_an_instance_of_its_type_only(t) -> None:  # type: ignore[no-untyped-def]
    v = t(1)
    assert isinstance(v, t)
    others = [u for u in [*INT_TYPES, *FLOAT_TYPES, wp.bfloat16, wp.bool] if u is not t]
    assert not any(isinstance(v, u) for u in others)
    assert type(v.value) is {"f": float, "b": bool}.get(t.kind, int)
    assert repr(v) == f"{t.__name__}({v.value})"
    assert pickle.loads(pickle.dumps(v)) == v and isinstance(pickle.loads(pickle.dumps(v)), t)


def test_construction_wraps_and_rounds_as_the_type() -> None:
    assert wp.uint8(-1).value == 255 and wp.int8(200).value == -56
    assert wp.float16(1.1).value == float(np.float16(1.1))
    assert wp.bfloat16(1.3).value == 1.296875  # the nearest bfloat16: 1 + 38/128
    assert wp.bool(2).value is True and wp.bool(0).value is False


@wp.kernel
def _int_ops(a: wp.array(dtype=wp.int32), b: wp.array(dtype=wp.int32),
             q: wp.array(dtype=wp.int32), r: wp.array(dtype=wp.int32)):
    i = wp.tid()
    q[i] = a[i] / b[i]
    r[i] = a[i] % b[i]


def test_integer_division_and_remainder_are_the_kernels() -> None:
    pairs = [(-7, 2), (7, -2), (-7, -2), (7, 2), (-2147483648, 3)]
    a = wp.array([p[0] for p in pairs], dtype=wp.int32)
    b = wp.array([p[1] for p in pairs], dtype=wp.int32)
    q, r = wp.zeros(len(pairs), dtype=wp.int32), wp.zeros(len(pairs), dtype=wp.int32)
    wp.launch(_int_ops, dim=len(pairs), inputs=[a, b, q, r])
    for k, (x, y) in enumerate(pairs):
        assert wp.int32(x) / wp.int32(y) == q.numpy()[k] == int(x / y)  # C: toward zero
        assert wp.int32(x) % wp.int32(y) == r.numpy()[k] == x - y * int(x / y)
    assert type(wp.int32(-7) / wp.int32(2)) is int  # int32 results are Python ints


def test_results_keep_the_type_and_wrap_or_round() -> None:
    s = wp.int8(100) + wp.int8(100)
    assert isinstance(s, wp.int8) and s.value == -56
    assert isinstance(-wp.uint8(3), wp.uint8) and (-wp.uint8(3)).value == 253
    third = wp.float16(1.0) / wp.float16(3.0)
    assert isinstance(third, wp.float16) and third.value == float(np.float16(1) / np.float16(3))
    assert isinstance(wp.float64(2.0) ** wp.float64(0.5), wp.float64)
    assert type(wp.float32(1.5) * wp.float32(2.0)) is float
    bf = wp.bfloat16(1.0) / wp.bfloat16(3.0)
    assert isinstance(bf, wp.bfloat16) and bf.value == wp.bfloat16(1.0 / 3.0).value


def test_operators_warp_does_not_define_raise_type_error() -> None:
    with pytest.raises(TypeError):
        wp.int32(2) ** wp.int32(3)
    with pytest.raises(TypeError):
        wp.int32(7) // wp.int32(2)
    with pytest.raises(TypeError):
        wp.uint32(5) & wp.uint32(1)
    with pytest.raises(TypeError):
        ~wp.int16(1)
    with pytest.raises(TypeError):  # mixed types, as in a kernel
        wp.float32(1.0) + wp.float64(1.0)


def test_numpy_interop() -> None:
    h = wp.float16(1.5)
    assert np.array([h, h]).dtype == np.float16
    assert float(h) == 1.5 and int(wp.float32(2.7)) == 2
    assert [10, 20, 30][wp.int64(2)] == 30 and list(range(wp.uint8(3))) == [0, 1, 2]
    assert np.float32(2.0) * wp.float32(3.0) == 6.0
    np.testing.assert_array_equal(np.arange(3) * wp.float64(2.0), [0.0, 2.0, 4.0])
    assert wp.float64(2.0) * wp.vec3d(1.0, 2.0, 3.0) == wp.vec3d(2.0, 4.0, 6.0)
    assert wp.int16(3) < 4 and wp.float16(2.0) == 2.0 and wp.bool(1) == True  # noqa: E712


@wp.struct
class _S:
    h: wp.float16
    u: wp.uint8
    flag: wp.bool


@wp.kernel
def _read(s: _S, x: wp.float64, n: wp.int8, flag: wp.bool, out: wp.array(dtype=wp.float64)):
    out[0] = wp.float64(s.h) + wp.float64(s.u) + x + wp.float64(n)
    if s.flag and flag:
        out[1] = 1.0


def test_values_as_launch_arguments_struct_fields_and_fills() -> None:
    s = _S()
    s.h, s.u, s.flag = wp.float16(0.5), wp.uint8(7), wp.bool(True)
    out = wp.zeros(2, dtype=wp.float64)
    wp.launch(_read, dim=1, inputs=[s, wp.float64(0.25), wp.int8(-3), wp.bool(1), out])
    np.testing.assert_array_equal(out.numpy(), [4.75, 1.0])
    for t in [*INT_TYPES, *FLOAT_TYPES, wp.bool]:
        a = wp.zeros(3, dtype=t)
        a.fill_(t(1))
        assert a.numpy().tolist() == [1, 1, 1]


_FLAG = wp.bool(True)
_THIRD = wp.bfloat16(1.0 / 3.0)


@wp.kernel
def _captured(out: wp.array(dtype=wp.float32)):
    flag = _FLAG
    out[0] = wp.float32(_THIRD)
    if flag == True:  # noqa: E712 (a bool local compares with a bool)
        out[1] = 1.0


def test_captured_values_keep_their_type() -> None:
    out = wp.zeros(2, dtype=wp.float32)
    wp.launch(_captured, dim=1, inputs=[out])
    assert out.numpy().tolist() == [_THIRD.value, 1.0]
    assert wp.full(2, value=wp.bfloat16(1.5)).dtype == wp.bfloat16
    assert wp.full(2, value=wp.bool(1)).dtype == wp.bool


def test_unsupported_operators_name_both_operands_in_order() -> None:
    with pytest.raises(TypeError, match=r"for //: 'int' and 'int32'$"):
        7 // wp.int32(2)
    with pytest.raises(TypeError, match=r"for <<: 'uint8' and 'int'$"):
        wp.uint8(1) << 2
    with pytest.raises(TypeError, match=r"unary ~: 'int64'$"):
        ~wp.int64(1)


@wp.kernel
def _fill_any(a: wp.array(dtype=Any), value: Any):
    a[wp.tid()] = value


def test_a_generic_parameter_takes_the_values_type() -> None:
    for t, v in [(wp.bool, wp.bool(True)), (wp.bfloat16, wp.bfloat16(1.5)),
                 (wp.float16, wp.float16(2.5)), (wp.uint8, wp.uint8(7))]:
        a = wp.zeros(2, dtype=t)
        wp.launch(_fill_any, dim=2, inputs=[a, v])  # the overload for (array(t), t)
        assert a.list() == [v.value] * 2
