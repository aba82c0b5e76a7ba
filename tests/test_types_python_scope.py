"""Warp 1.19's Python-scope type API: type objects' class attributes, the
introspection functions of `wp.types`, vector/matrix values' checks, array arithmetic
operators, Warp's config options and error classes, constants, and IEEE constant folding.

Runs on warp-lang too (GL_TEST_BACKEND=warp, wpcompat.py) to check the expectations;
gradloom-specific details are marked.
"""

import ctypes
import math
import re

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

gradloom_only = pytest.mark.skipif(BACKEND == "warp", reason="a gradloom-specific detail")


# -- type objects ------------------------------------------------------------------------------


def test_scalar_class_attributes():
    assert wp.float32._type_ is ctypes.c_float and wp.float64._type_ is ctypes.c_double
    assert wp.int8._type_(300).value == 44  # ctypes wraps, as Warp's tests rely on
    assert wp.float16._type_ is ctypes.c_uint16 and wp.uint64._type_ is ctypes.c_uint64
    assert wp.int32._length_ == 1 and not hasattr(wp.int32, "_shape_")
    assert np.dtype(wp.float64) == np.float64 and np.zeros(2, dtype=wp.int16).dtype == np.int16


def test_composite_class_attributes():
    assert wp.vec3._length_ == 3 and wp.vec3._shape_ == (3,)
    assert wp.types.matrix((2, 3), wp.float32)._shape_ == (2, 3)
    assert wp.mat33d._length_ == 9 and wp.mat33d._wp_scalar_type_ is wp.float64
    assert wp.vec4h._type_ is ctypes.c_uint16
    assert wp.quat._wp_generic_type_str_ == "quat_t"
    assert wp.transformd._wp_generic_type_str_ == "transform_t"


def test_isinstance_with_type_objects():
    v = wp.vec3(1.0, 2.0, 3.0)
    assert isinstance(v, wp.vec3) and not isinstance(v, wp.vec3d)
    assert isinstance(wp.mat22(1, 2, 3, 4), wp.mat22)


def test_from_ptr():
    with pytest.raises(RuntimeError, match="NULL pointer"):
        wp.vec3.from_ptr(0)
    buf = (ctypes.c_float * 3)(1.0, 2.0, 3.0)
    assert list(wp.vec3.from_ptr(ctypes.addressof(buf))) == [1.0, 2.0, 3.0]


@wp.struct
class Foo:
    x: int


@pytest.mark.parametrize("t, kind", [
    (int, "int"), (wp.int16, "int"), (float, "float"), (wp.float16, "float"),
    (wp.vec3, "vector"), (wp.types.vector(8, wp.uint8), "vector"), (wp.mat33h, "matrix"),
    (wp.quath, "quaternion"), (wp.transformd, "transformation"), (Foo, "struct"),
    (wp.array, "array"), (wp.indexedarray, "array"),
])
def test_type_introspection(t, kind):
    ty = wp.types
    assert ty.type_is_int(t) == (kind == "int")
    assert ty.type_is_float(t) == (kind == "float")
    assert ty.type_is_scalar(t) == (kind in ("int", "float"))
    assert ty.type_is_vector(t) == (kind == "vector")
    assert ty.type_is_matrix(t) == (kind == "matrix")
    assert ty.type_is_quaternion(t) == (kind == "quaternion")
    assert ty.type_is_transformation(t) == (kind == "transformation")
    composite = kind in ("vector", "matrix", "quaternion", "transformation")
    assert ty.type_is_composite(t) == composite
    assert ty.type_is_value(t) == (composite or kind in ("int", "float"))
    assert ty.type_is_struct(t) == (kind == "struct")
    assert ty.type_is_array(t) == (kind == "array")


@pytest.mark.parametrize("x, kind", [
    (123, "int"), (wp.int16(3), "int"), (1.5, "float"), (wp.float32(1.5), "float"),
    (wp.vec2i(1, 2), "vector"), (wp.mat22(1, 2, 3, 4), "matrix"), (wp.quat(0, 0, 0, 1), "quat"),
    (Foo(), "struct"), (wp.zeros(2, dtype=float, device=DEVICE), "array"),
])
def test_value_introspection(x, kind):
    ty = wp.types
    assert ty.is_int(x) == (kind == "int") and ty.is_float(x) == (kind == "float")
    assert ty.is_vector(x) == (kind == "vector") and ty.is_matrix(x) == (kind == "matrix")
    assert ty.is_quaternion(x) == (kind == "quat")
    assert ty.is_composite(x) == (kind in ("vector", "matrix", "quat"))
    assert ty.is_value(x) == (kind not in ("struct", "array"))
    assert ty.is_struct(x) == (kind == "struct") and ty.is_array(x) == (kind == "array")
    assert not ty.is_int(type(x)) and not ty.is_vector(type(x))


def test_type_size_equal_and_repr():
    ty = wp.types
    assert ty.type_size(wp.float32) == 1 and ty.type_size(wp.mat33) == 9 and ty.type_size(int) == 1
    assert ty.types_equal(wp.vec3, wp.types.vector(3, wp.float32))
    assert not ty.types_equal(wp.vec3, wp.vec3d)
    assert ty.type_repr(wp.vec3f) == "vec3f" and ty.type_repr(wp.mat22d) == "mat22d"
    assert ty.type_repr(wp.float16) == "float16"
    assert ty.type_repr(wp.types.vector(5, wp.float32)) == "vector(length=5, dtype=float32)"


# -- vector and matrix values ----------------------------------------------------------------


def test_vector_compares_to_sequences_as_one_bool():
    v = wp.vec3(1.0, 2.0, 3.0)
    assert (v == (1.0, 2.0, 3.0)) is True and (v != [1.0, 2.0, 3.0]) is False
    assert (v == (1.0, 2.0)) is False
    assert v != wp.vec3(1.0, 2.0, 4.0)


def test_slice_assignment_writes_the_value():
    v = wp.vec3i(1, 2, 3)
    v[:] = [7, 8, 9]
    assert list(v) == [7, 8, 9]
    v[::2] = [0, 0]
    assert list(v) == [0, 8, 0]
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    m[1] = (5.0, 6.0)
    assert m[1, 0] == 5.0 and m[1, 1] == 6.0


def test_vector_key_and_value_checks():
    v = wp.vec3i(1, 2, 3)
    with pytest.raises(KeyError, match="Invalid key None, expected int or slice"):
        v[None]
    with pytest.raises(TypeError, match="Expected to assign a `int32` value but got `str`"):
        v[0] = "1"
    with pytest.raises(TypeError, match="sequence of `int32` values but got `vec3i`"):
        v[:1] = (v,)
    with pytest.raises(ValueError, match="Can only assign sequence of same size"):
        v[:1] = (1, 2)
    with pytest.raises(ValueError, match="expected 3 elements, got 2"):
        wp.vec3(1.0, 2.0)


def test_matrix_key_and_row_checks():
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    with pytest.raises(KeyError, match="expected one or two indices, got 3"):
        m[0, 1, 0]
    with pytest.raises(IndexError, match="Invalid row index"):
        m.set_row(2, (0.0, 0.0))
    m.set_row(0, (9.0, 8.0))
    assert list(m.get_row(0)) == [9.0, 8.0]
    with pytest.raises(TypeError, match="expected row of length 2"):
        wp.mat22((1.0, 2.0, 3.0), (3.0, 4.0, 5.0))


def test_transform_parts_can_be_set():
    t = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat(0.0, 0.0, 0.0, 1.0))
    t.p = wp.vec3(4.0, 5.0, 6.0)
    assert list(t.p) == [4.0, 5.0, 6.0] and list(t.q) == [0.0, 0.0, 0.0, 1.0]


@gradloom_only
def test_integer_scalars_wrap_like_c():
    assert wp.uint8(-1) == 255 and wp.int8(300) == 44 and wp.int8(300).dtype == np.int8


# -- array operators -------------------------------------------------------------------------


def test_array_arithmetic_maps_builtins():
    a = wp.array([1.0, 2.0, 4.0], dtype=float, device=DEVICE)
    b = wp.array([0.5, 0.5, 2.0], dtype=float, device=DEVICE)
    s = wp.float32(3.0)
    assert (a + b).numpy().tolist() == [1.5, 2.5, 6.0]
    assert (a - s).numpy().tolist() == [-2.0, -1.0, 1.0]
    assert (s - a).numpy().tolist() == [2.0, 1.0, -1.0]
    assert (s * a).numpy().tolist() == [3.0, 6.0, 12.0]
    assert (a / b).numpy().tolist() == [2.0, 4.0, 2.0]
    assert (-a).numpy().tolist() == [-1.0, -2.0, -4.0]
    ints = wp.array([5, 7, 9], dtype=wp.int32, device=DEVICE)
    assert (ints % wp.int32(4)).numpy().tolist() == [1, 3, 1]
    a += b
    assert a.numpy().tolist() == [1.5, 2.5, 6.0]


def test_map_of_two_builtins_does_not_share_code():
    # regression: wp.map(wp.add, ...) and wp.map(wp.sub, ...) once compiled to one kernel
    a = wp.array([3.0, 4.0], dtype=float, device=DEVICE)
    b = wp.array([1.0, 1.0], dtype=float, device=DEVICE)
    assert wp.map(wp.add, a, b).numpy().tolist() == [4.0, 5.0]
    assert wp.map(wp.sub, a, b).numpy().tolist() == [2.0, 3.0]
    assert wp.map(wp.mul, a, b).numpy().tolist() == [3.0, 4.0]


# -- config, errors, constants ---------------------------------------------------------------


def test_warp_config_options_have_warp_defaults():
    assert wp.config.log_level == wp.LOG_INFO == 20
    assert wp.config.verify_autograd_array_access is False
    assert wp.config.legacy_scalar_return_types is False
    assert wp.config.max_unroll == 16
    old = wp.config.log_level
    wp.config.log_level = wp.LOG_DEBUG
    assert wp.config.log_level == 10
    wp.config.log_level = old


def test_codegen_errors_are_the_builtin_exceptions():
    assert issubclass(wp.WarpCodegenError, RuntimeError)
    assert issubclass(wp.WarpCodegenTypeError, TypeError)
    assert issubclass(wp.WarpCodegenValueError, ValueError)
    assert issubclass(wp.WarpCodegenKeyError, KeyError)
    assert issubclass(wp.WarpCodegenIndexError, IndexError)
    assert issubclass(wp.WarpCodegenAttributeError, AttributeError)


@gradloom_only
def test_gradloom_errors_are_warps():
    assert issubclass(wp.KernelTypeError, wp.WarpCodegenTypeError)
    assert issubclass(wp.UnknownNameError, wp.WarpCodegenKeyError)
    err = wp.UnknownNameError("name 'x' is not defined")
    assert str(err) == "name 'x' is not defined"  # not quoted, although a KeyError


def test_constants():
    assert math.isnan(wp.NAN) and math.inf == wp.INF and math.pi == wp.PI
    assert math.pi / 2 == wp.HALF_PI and abs(wp.LN2 - math.log(2)) < 1e-15
    assert math.e == wp.E and abs(wp.PHI - 1.618033988749895) < 1e-15


@wp.kernel
def special_constants(out: wp.array(dtype=float)):
    out[0] = 2.0 / 0.0
    out[1] = 0.0 / 0.0
    out[2] = -1.0 / 0.0
    out[3] = float(wp.NAN)
    out[4] = wp.INF
    out[5] = 0.0 ** -1.0


def test_float_constant_folding_is_ieee():
    out = wp.zeros(6, dtype=float, device=DEVICE)
    wp.launch(special_constants, dim=1, inputs=[out], device=DEVICE)
    got = out.numpy()
    assert got[0] == np.inf and np.isnan(got[1]) and got[2] == -np.inf
    assert np.isnan(got[3]) and got[4] == np.inf and got[5] == np.inf


@wp.kernel
def quaternion_factory(out: wp.array(dtype=wp.quath), src: wp.array(dtype=wp.quatf)):
    q = wp.types.quaternion(src[0][0], src[0][1], src[0][2], src[0][3])
    out[0] = wp.types.quaternion(q, dtype=wp.float16)


def test_type_factories_construct_in_kernels():
    src = wp.array([[1.0, 2.0, 3.0, 4.0]], dtype=wp.quatf, device=DEVICE)
    out = wp.zeros(1, dtype=wp.quath, device=DEVICE)
    wp.launch(quaternion_factory, dim=1, inputs=[out, src], device=DEVICE)
    assert out.numpy().tolist() == [[1.0, 2.0, 3.0, 4.0]]


# -- atomics' element types (Warp's) -----------------------------------------------------------


@wp.kernel(module="unique")
def atomic_add_int8(a: wp.array(dtype=wp.int8)):
    wp.atomic_add(a, 0, wp.int8(1))


@wp.kernel(module="unique")
def atomic_max_half(a: wp.array(dtype=wp.float16)):
    wp.atomic_max(a, 0, wp.float16(1.0))


@wp.kernel
def augassign_int8(a: wp.array(dtype=wp.int8)):
    a[0] += wp.int8(1)


def test_atomic_builtins_take_warps_element_types():
    a = wp.zeros(1, dtype=wp.int8, device=DEVICE)
    with pytest.raises(RuntimeError) as info:
        wp.launch(atomic_add_int8, dim=1, inputs=[a], device=DEVICE)
    # the message ends with Warp's words (unittest's assertRaisesRegex sees str() only)
    assert re.search(r"atomic_add\(\) operations only work on arrays with \[u\]int32, "
                     r"\[u\]int64, float16, bfloat16, float32, or float64 as the underlying "
                     r"scalar types, but got int8 \(with scalar type int8\)$", str(info.value))
    h = wp.zeros(1, dtype=wp.float16, device=DEVICE)
    with pytest.raises(RuntimeError, match=r"atomic_max\(\) operations only work on arrays with "
                       r"\[u\]int32, \[u\]int64, bfloat16, float32, or float64"):
        wp.launch(atomic_max_half, dim=1, inputs=[h], device=DEVICE)
    wp.launch(augassign_int8, dim=3, inputs=[a], device=DEVICE)  # `+=` takes any number type
    assert a.numpy().tolist() == [3]


def test_transform_keywords_in_python():
    assert list(wp.transform()) == [0.0] * 6 + [1.0]
    assert list(wp.transform(p=(1.0, 2.0, 3.0))) == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]
    assert list(wp.transform(q=(4.0, 5.0, 6.0, 7.0), p=(1.0, 2.0, 3.0))) == \
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert list(wp.transform((1.0, 2.0, 3.0), q=(4.0, 5.0, 6.0, 7.0))) == \
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]


@wp.kernel
def literal_vectors(out: wp.array(dtype=int)):
    b = wp.types.vector(True, False, True)
    i = wp.types.vector(1, 2, 3)
    t = wp.transform(p=wp.vec3(1.0, 2.0, 3.0))
    m = wp.types.matrix(1.0, 2.0, 3.0, 4.0, shape=(2, 2))
    out[0] = int(b[0]) + int(b[1]) * 10 + i[2] * 100
    out[1] = int(t[6]) + int(m[1, 0])


def test_kernel_constructors_infer_and_take_keywords():
    out = wp.zeros(2, dtype=int, device=DEVICE)
    wp.launch(literal_vectors, dim=1, inputs=[out], device=DEVICE)
    assert out.numpy().tolist() == [301, 4]


def test_type_factories_return_one_object_per_type():
    assert wp.types.vector(5, wp.float32) is wp.types.vector(5, wp.float32)
    assert wp.types.matrix((4, 4), wp.float64) is wp.types.matrix((4, 4), wp.float64)


@gradloom_only
def test_type_factories_return_the_named_types():
    assert wp.types.vector(3, wp.float32) is wp.vec3
    assert wp.types.matrix((4, 4), wp.float64) is wp.mat44d
    assert wp.types.quaternion(dtype=wp.float16) is wp.quath


def test_tile_annotations_are_accepted():
    t = wp.tile[float, 8, 4]
    assert t.shape == (8, 4) and wp.types.is_tile(t)
    assert wp.tile[float, (4, 4)].shape == (4, 4)


def _kernel_capturing(np_dtype):
    wptype = wp.dtype_from_numpy(np_dtype)

    @wp.kernel(module="unique")
    def k(a: wp.array(dtype=wptype)):
        if wp.static(np_dtype == np.float16):
            a[0] = wptype(2.0)
        else:
            a[0] = wptype(3.0)

    return k, wptype


def test_kernel_capturing_a_numpy_scalar_class():
    # regression: the cache key read `.tobytes` of the captured class np.float16
    for np_dtype, want in ((np.float16, 2.0), (np.float32, 3.0)):
        k, wptype = _kernel_capturing(np_dtype)
        a = wp.zeros(1, dtype=wptype, device=DEVICE)
        wp.launch(k, dim=1, inputs=[a], device=DEVICE)
        assert float(a.numpy()[0]) == want


def test_missing_components_and_swizzles_are_attribute_errors():
    v = wp.vec3(1.0, 2.0, 3.0)
    for name in ("foo", "xy", "w"):
        with pytest.raises(AttributeError, match=rf"'vec3f' object has no attribute '{name}'$"):
            getattr(v, name)
    v2 = wp.vec2(1.0, 2.0)
    assert not hasattr(v2, "z")
    with pytest.raises(AttributeError):
        v2.z = 3.0
    with pytest.raises(AttributeError):
        v.xy = 9.0
    v.foo = 9
    assert v.foo == 9 and list(v) == [1.0, 2.0, 3.0]


@wp.kernel
def cast_vector(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3h)):
    b[0] = wp.types.vector(a[0], dtype=wp.float16)


def test_vector_builtin_copies_with_the_source_length():
    a = wp.array([[1.0, 2.0, 3.0]], dtype=wp.vec3, device=DEVICE)
    b = wp.zeros(1, dtype=wp.vec3h, device=DEVICE)
    wp.launch(cast_vector, dim=1, inputs=[a, b], device=DEVICE)
    assert b.numpy().tolist() == [[1.0, 2.0, 3.0]]


def test_integer_vector_components_wrap():
    v = wp.vec3ui(1, 2, 3)
    v[1:3] = (-2, -3)
    assert list(v) == [1, 2**32 - 2, 2**32 - 3]
    assert list(wp.vec3ub(-1)) == [255, 255, 255]


def test_from_buffer_shares_memory_with_the_buffer_as_warps_ctypes_types_do():
    # newton's host transforms: wp.transform.from_buffer(values), then writes through either
    buf = np.arange(7, dtype=np.float32)
    t = wp.transform.from_buffer(buf)
    assert isinstance(t, wp.transform)
    np.testing.assert_array_equal(np.asarray(t), np.arange(7))
    np.asarray(t)[0] = 42.0
    buf[6] = -1.0
    assert buf[0] == 42.0 and t[6] == -1.0
    m = wp.mat22.from_buffer(np.arange(5, dtype=np.float32), 4)  # byte offset 4
    np.testing.assert_array_equal(np.asarray(m), [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match="not writable"):
        wp.vec3.from_buffer(np.arange(3, dtype=np.float32).tobytes())


def test_a_vector_or_matrix_value_is_true_when_it_has_components():
    # Warp's types are ctypes arrays (true when not empty), even all zeros
    assert bool(wp.vec3(0.0)) and bool(wp.mat22(0.0))
    assert any(row for row in wp.mat33(0.0))  # newton's builder: any(x for x in inertia)
