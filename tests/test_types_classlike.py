"""Type objects used as Python classes, as code written for Warp does: `|` unions, subclassing."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import gradloom as wp


class vec10f(wp.types.vector(length=10, dtype=wp.float32)):  # noqa: N801 (Warp code's spelling)
    """A named vector type, the MuJoCo Warp / newton idiom."""


class mat43(wp.types.matrix(shape=(4, 3), dtype=float)):  # noqa: N801
    pass


@wp.kernel
def _use_named_types(a: wp.array(dtype=vec10f), m: wp.array(dtype=mat43), out: wp.array(dtype=float)):
    i = wp.tid()
    v = vec10f()
    v[3] = 2.0
    a[i] = v + a[i]
    m[i] = m[i] * 3.0
    out[i] = wp.dot(a[i], a[i]) + m[i][3, 2]


def test_subclass_is_the_type_it_names():
    assert vec10f == wp.types.vector(10, wp.float32)
    assert mat43 == wp.types.matrix((4, 3), wp.float32)
    assert isinstance(vec10f(), vec10f) and isinstance(wp.types.vector(10, wp.float32)(), vec10f)


def test_named_types_in_kernels():
    a = wp.ones(2, dtype=vec10f)
    mvals = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    m = wp.array(mvals, dtype=mat43)
    out = wp.zeros(2, dtype=float)
    wp.launch(_use_named_types, 2, inputs=[a, m, out])
    expect_a = np.ones((2, 10), np.float32)
    expect_a[:, 3] += 2.0
    np.testing.assert_array_equal(a.numpy(), expect_a)
    np.testing.assert_array_equal(m.numpy(), mvals * 3)
    np.testing.assert_allclose(out.numpy(), (expect_a**2).sum(1) + mvals[:, 3, 2] * 3)


def test_subclass_with_members_is_refused():
    with pytest.raises(TypeError, match="may only hold a docstring; it defines norm"):

        class vec3x(wp.vec3):  # noqa: N801
            def norm(self) -> float:
                return 0.0

    with pytest.raises(TypeError, match="other base classes"):

        class both(wp.vec3, int):  # noqa: N801
            pass


def test_unions():
    assert typing.get_args(wp.float16 | wp.float32) == (wp.float16, wp.float32)
    union = list[float] | tuple[float, float] | wp.vec2
    assert typing.get_args(union) == (list[float], tuple[float, float], wp.vec2)
    assert typing.get_args(wp.vec3 | None) == (wp.vec3, type(None))
    assert typing.get_args(None | wp.mat22) == (type(None), wp.mat22)


def test_issubclass_against_unions_of_type_objects():
    # newton's Kamino: `FloatType = wp.float16 | wp.float32 | wp.float64`, then
    # `issubclass(dtype, FloatType | IntType)` on every block dtype it builds
    float_type = wp.float16 | wp.float32 | wp.float64
    int_type = wp.int16 | wp.int32 | wp.int64
    assert issubclass(wp.float32, float_type | int_type)
    assert issubclass(wp.int64, int_type) and not issubclass(wp.int64, float_type)
    assert not issubclass(wp.uint8, float_type | int_type)
    assert issubclass(wp.vec2i, wp.vec2s | wp.vec2i) and not issubclass(wp.vec3, wp.vec2s | wp.vec2i)
    assert issubclass(vec10f, wp.types.vector(10, wp.float32))  # a named type is the type
    # isinstance against a union asks about the value's class (Kamino: `isinstance(tol,
    # FloatType | float)`)
    assert isinstance(wp.float32(1e-6), float_type | float) and isinstance(wp.float16(1), float_type)
    assert not isinstance(wp.int32(3), float_type | float)
    assert isinstance(wp.vec3(1.0, 2.0, 3.0), wp.vec3 | wp.vec4) and not isinstance(wp.vec2(), wp.vec3 | wp.vec4)


def test_spatial_types_equal_the_plain_ones_and_keep_their_names():
    # Warp's types_equal: a spatial vector/matrix is the vector/matrix of its shape and dtype
    vec6, mat66 = wp.types.vector(6, wp.float32), wp.types.matrix((6, 6), wp.float32)
    assert wp.spatial_vectorf == vec6 and hash(wp.spatial_vectorf) == hash(vec6)
    assert wp.spatial_matrixf == mat66 and hash(wp.spatial_matrixf) == hash(mat66)
    assert wp.quatf != wp.types.vector(4, wp.float32) and wp.transformf != wp.types.vector(7, wp.float32)
    assert wp.spatial_vectord != vec6  # the dtype still counts
    assert (repr(wp.spatial_vectorf), repr(vec6)) == ("spatial_vectorf", "vec6f")
    assert type(wp.spatial_vectorf()).__name__ == "spatial_vectorf" and type(vec6()).__name__ == "vec6f"


def test_array_of_a_type_variable_is_a_typing_alias():
    # a generic class's Python-scope annotation (`-> wp.array[IndexType]`), as Warp's array
    # is Generic in its dtype; no kernel takes such a parameter
    index_type = typing.TypeVar("index_type", wp.int32, wp.int64)
    alias = wp.array[index_type]
    assert typing.get_origin(alias) is wp.array and typing.get_args(alias) == (index_type,)
    assert typing.get_args(wp.array2d[index_type]) == (index_type,)


@wp.struct
class _Padded:
    a: wp.vec3
    b: wp.int8


def test_typing_names_warp_code_imports():
    assert typing.get_args(wp.DeviceLike) == (wp.Device, str, type(None))
    assert wp.handle == wp.uint64  # Warp's handle type "behaves identically to uint64"
    # sizes as C lays the values out: the struct is padded to its alignment (numpy agrees)
    padded = np.dtype([("a", np.float32, 3), ("b", np.int8)], align=True).itemsize
    sizes = {wp.float16: 2, wp.bool: 1, float: 4, int: 4, wp.vec3: 12, wp.mat33d: 72,
             _Padded: padded}  # fmt: skip
    for t, size in sizes.items():
        assert wp.types.type_size_in_bytes(t) == size, t
    with pytest.raises(TypeError, match="Invalid data type"):
        wp.types.type_size_in_bytes(wp.array(dtype=float))
