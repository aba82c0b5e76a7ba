"""Tests for gradloom.runtime.array.array / array_ops / device: Warp-style arrays on the CPU."""

from __future__ import annotations

import typing

import numpy as np
import pytest

from gradloom import types as T
from gradloom.errors import GradloomError
from gradloom.runtime import device as dv
from gradloom.runtime.array import array as wa
from gradloom.runtime.array import ops as ops

# --------------------------------------------------------------------------------------------
# Constructors and dtypes


@pytest.mark.parametrize(
    ("data", "dtype", "expected"),
    [
        ([1.0, 2.0], T.float64, np.float64),  # Python floats infer float64, as in Warp
        ([1, 2], T.int64, np.int64),
        ([True, False], T.bool_, np.bool_),
        (np.zeros(3, dtype=np.float32), T.float32, np.float32),
        (np.zeros(3, dtype=np.uint8), T.uint8, np.uint8),
    ],
)
def test_dtype_inferred_from_data(data: typing.Any, dtype: T.ScalarType, expected: type) -> None:
    a = wa.array(data)
    assert a.dtype == dtype
    assert a.numpy().dtype == expected
    np.testing.assert_array_equal(a.numpy(), np.asarray(data))


@pytest.mark.parametrize(
    ("dtype", "np_dtype"),
    [
        (float, np.float32),
        (int, np.int32),
        (bool, np.bool_),
        (T.float16, np.float16),
        (T.float64, np.float64),
        (T.uint32, np.uint32),
        (np.float32, np.float32),
    ],
)
def test_explicit_scalar_dtype(dtype: typing.Any, np_dtype: type) -> None:
    a = wa.array([1, 0, 3], dtype=dtype)
    assert a.numpy().dtype == np_dtype
    assert a.dtype == T.resolve_annotation(dtype)
    assert a.shape == (3,) and a.ndim == 1 and a.size == 3


def test_data_is_copied_by_default_and_aliased_with_copy_false() -> None:
    src = np.arange(4, dtype=np.float32)
    a = wa.array(src)
    a.numpy()[0] = 9
    assert src[0] == 0
    b = wa.array(src, copy=False)
    b.numpy()[1] = 7
    assert src[1] == 7
    assert b.ptr == src.ctypes.data


def test_vec3_trailing_dims() -> None:
    data = np.arange(12, dtype=np.float64).reshape(4, 3)
    a = wa.array(data, dtype=T.vec3)
    assert a.shape == (4,) and a.ndim == 1 and a.size == 4
    assert a.dtype is T.vec3
    assert a.strides == (12,)
    assert a.numpy().shape == (4, 3) and a.numpy().dtype == np.float32
    np.testing.assert_array_equal(a.numpy(), data.astype(np.float32))
    v = a[2]
    assert isinstance(v, T.VecValue) and v.gl_type is T.vec3
    np.testing.assert_array_equal(v, [6, 7, 8])


def test_vec3_from_flat_list_and_list_of_values() -> None:
    a = wa.array([1.0, 2, 3, 4, 5, 6], dtype=T.vec3)
    assert a.shape == (2,)
    np.testing.assert_array_equal(a.numpy(), [[1, 2, 3], [4, 5, 6]])
    b = wa.array([T.vec3(1, 2, 3), T.vec3(4, 5, 6)], dtype=T.vec3)
    assert b.shape == (2,)
    c = wa.array([[1, 2, 3], [4, 5, 6]], dtype=T.vec3)
    np.testing.assert_array_equal(c.numpy(), b.numpy())
    d = wa.array(np.zeros((2, 6)), dtype=T.vec3)  # last dim a multiple of 3 splits
    assert d.shape == (2, 2)


def test_mat33_trailing_dims() -> None:
    a = wa.array(np.zeros((5, 3, 3)), dtype=T.mat33)
    assert a.shape == (5,) and a.strides == (36,)
    assert a.numpy().shape == (5, 3, 3)
    b = wa.array(np.arange(18.0).reshape(2, 9), dtype=T.mat33)
    assert b.shape == (2,)
    np.testing.assert_array_equal(b[1], np.arange(9.0, 18.0).reshape(3, 3))


@pytest.mark.parametrize(
    ("shape", "dtype", "name"),
    [((2, 4), T.vec3, "vec3f"), ((2, 3, 4), T.mat33, "mat33f"), ((5,), T.vec4, "vec4f")],
)
def test_trailing_dim_mismatch_raises(shape: tuple[int, ...], dtype: typing.Any, name: str) -> None:
    with pytest.raises(GradloomError) as err:
        wa.array(np.zeros(shape), dtype=dtype)
    assert name in str(err.value) and str(shape) in str(err.value)


def test_explicit_shape_reshapes_data() -> None:
    a = wa.array(np.arange(12.0), dtype=T.vec3, shape=(2, 2))
    assert a.shape == (2, 2) and a.numpy().shape == (2, 2, 3)
    with pytest.raises(GradloomError):
        wa.array(np.arange(10.0), dtype=float, shape=(3, 3))


@pytest.mark.parametrize("bad", ["float32x", object, complex, T.ptr, 3.5])
def test_unknown_dtype_raises_naming_it(bad: typing.Any) -> None:
    with pytest.raises(GradloomError) as err:
        ops.zeros(3, dtype=bad)
    assert repr(bad) in str(err.value)


def test_uninferable_data_raises() -> None:
    with pytest.raises(GradloomError):
        wa.array(np.array([1 + 2j]))


def test_too_many_dims_raises() -> None:
    with pytest.raises(GradloomError):
        ops.zeros((1, 2, 1, 2, 1))
    with pytest.raises(GradloomError):
        wa.array(np.zeros((1, 1, 1, 1, 2)))
    assert ops.zeros((1, 2, 3, 4)).ndim == 4


def test_zero_dim_data_raises() -> None:
    with pytest.raises(GradloomError):
        wa.array(np.float32(3.0))


@pytest.mark.parametrize("shape", [5, (5,), (2, 3), [2, 3, 4]])
def test_zeros_ones_empty_shapes(shape: typing.Any) -> None:
    expected = (shape,) if isinstance(shape, int) else tuple(shape)
    for fn, value in ((ops.zeros, 0.0), (ops.ones, 1.0), (ops.empty, None)):
        a = fn(shape)
        assert a.shape == expected and a.dtype == T.float32
        assert a.numpy().dtype == np.float32
        if value is not None:
            np.testing.assert_array_equal(a.numpy(), np.full(expected, value, np.float32))


def test_zeros_default_shape_and_empty_ptr() -> None:
    a = ops.zeros()
    assert a.shape == (0,) and a.size == 0 and a.ptr is None and a.capacity == 0  # as Warp


def test_vec_zeros_ones_full() -> None:
    a = ops.zeros(4, dtype=T.vec3)
    assert a.shape == (4,) and a.numpy().shape == (4, 3)
    b = ops.ones((2, 2), dtype=T.mat22)
    np.testing.assert_array_equal(b.numpy(), np.ones((2, 2, 2, 2)))
    c = ops.full(3, T.vec3(1, 2, 3))
    assert c.dtype == T.vec3
    np.testing.assert_array_equal(c.numpy(), np.tile([1, 2, 3], (3, 1)))
    d = ops.full((2,), 1.5, dtype=T.vec3)
    np.testing.assert_array_equal(d.numpy(), np.full((2, 3), 1.5))


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (2, T.int32),
        (2.0, T.float32),
        (True, T.bool_),
        (T.float64(2.0), T.float64),
        ((1.0, 2.0, 3.0), T.vector(3, T.float64)),
        (T.mat22(1, 2, 3, 4), T.mat22),
    ],
)
def test_full_infers_dtype_like_warp(value: typing.Any, dtype: typing.Any) -> None:
    a = ops.full(3, value)
    assert a.dtype == dtype
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(a[i]), np.asarray(value))


def test_like_constructors() -> None:
    src = wa.array(np.arange(6.0).reshape(2, 3), dtype=T.float64, requires_grad=True)
    for fn in (ops.zeros_like, ops.empty_like, ops.ones_like):
        b = fn(src)
        assert b.shape == src.shape and b.dtype == src.dtype and b.requires_grad
    assert not ops.zeros_like(src, requires_grad=False).requires_grad
    np.testing.assert_array_equal(ops.ones_like(src).numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(ops.full_like(src, 4.0).numpy(), np.full((2, 3), 4.0))
    np.testing.assert_array_equal(ops.zeros_like(src).numpy(), np.zeros((2, 3)))


def test_from_numpy_infers_vectors_and_matrices() -> None:
    assert ops.from_numpy(np.zeros(4, np.float32)).dtype == T.float32
    v = ops.from_numpy(np.zeros((4, 3), np.float32))
    assert v.dtype == T.vec3 and v.shape == (4,)
    m = ops.from_numpy(np.zeros((4, 3, 3), np.float64))
    assert m.dtype == T.mat33d and m.shape == (4,)
    s = ops.from_numpy(np.zeros((4, 3)), dtype=T.float32)
    assert s.shape == (4, 3)


def test_fixed_ndim_classes() -> None:
    a = ops.array2d(np.zeros((2, 3)), dtype=float)
    assert a.ndim == 2 and isinstance(a, wa.array)
    # as warp-lang 1.19 does, data keeps its own shape (array3d of 2-D data is 2-D)
    assert ops.array3d(np.zeros((2, 3)), dtype=float).shape == (2, 3)


def test_struct_array_zeros_and_numpy() -> None:
    st = T.StructType("S", (("a", T.float32), ("v", T.vec3), ("i", T.int64)), object)
    s = ops.zeros(4, dtype=st)
    assert s.dtype is st and s.shape == (4,)
    assert s.strides == (st.size,) and s.numpy().dtype.itemsize == st.size
    assert [s.numpy().dtype.fields[n][1] for n in ("a", "v", "i")] == [0, 4, 16]
    s.numpy()["v"][2] = [1, 2, 3]
    np.testing.assert_array_equal(s.vars["v"][2], [1, 2, 3])
    s.zero_()
    assert not s.numpy()["v"].any()


# --------------------------------------------------------------------------------------------
# Memory, views, strides


def test_numpy_is_zero_copy_both_ways() -> None:
    a = ops.zeros((3, 2), dtype=T.vec3)
    n = a.numpy()
    n[1, 1] = [1, 2, 3]
    np.testing.assert_array_equal(a[1, 1], [1, 2, 3])
    a.fill_(T.vec3(4, 5, 6))
    np.testing.assert_array_equal(n[2, 0], [4, 5, 6])
    assert a.numpy() is not None and n.ctypes.data == a.ptr
    assert np.asarray(a).ctypes.data == a.ptr
    np.asarray(a)[0, 0, 0] = -1
    assert n[0, 0, 0] == -1


def test_attributes_match_numpy() -> None:
    n = np.zeros((4, 5), dtype=np.float32)
    a = wa.array(n, copy=False)
    assert a.shape == n.shape and a.strides == n.strides and a.ptr == n.ctypes.data
    assert a.is_contiguous and a.capacity == n.nbytes and len(a) == 4
    assert str(a.device) == "cpu" and a.device == "cpu"


@pytest.mark.parametrize(
    "key",
    [
        slice(1, 3),
        (slice(None), 2),
        1,
        (slice(None, None, 2), slice(1, 4)),
        (slice(None), slice(None, None, -1)),
        -1,
    ],
)
def test_views_share_memory_and_strides(key: typing.Any) -> None:
    n = np.arange(20, dtype=np.float32).reshape(4, 5)
    a = wa.array(n, copy=False, requires_grad=True)
    v = a[key]
    ref = n[key]
    assert isinstance(v, wa.array)
    assert v.shape == ref.shape and v.strides == ref.strides and v.ptr == ref.ctypes.data
    assert v.is_contiguous == ref.flags.c_contiguous
    np.testing.assert_array_equal(v.numpy(), ref)
    v.fill_(-5)
    assert (n[key] == -5).all()
    assert v.requires_grad and v.grad is not None
    assert v.grad.strides == v.strides
    v.grad.fill_(1)
    expected = np.zeros((4, 5), np.float32)
    expected[key] = 1
    np.testing.assert_array_equal(a.grad.numpy(), expected)


def test_vec_view_keeps_trailing_dims() -> None:
    a = ops.zeros((4, 2), dtype=T.vec3)
    v = a[:, 1]
    assert v.shape == (4,) and v.strides == (24,) and v.ptr == a.ptr + 12
    assert v.numpy().shape == (4, 3)
    v.fill_(T.vec3(1, 2, 3))
    np.testing.assert_array_equal(a.numpy()[:, 1], np.tile([1, 2, 3], (4, 1)))
    np.testing.assert_array_equal(a.numpy()[:, 0], 0)


def test_element_access_in_python_scope() -> None:
    a = wa.array([1.5, 2.5], dtype=T.float32)
    assert a[1] == np.float32(2.5) and isinstance(a[1], np.float32)
    assert a[-1] == np.float32(2.5)
    b = ops.zeros((2, 3), dtype=T.int32)
    b[1, 2] = 7
    assert b[1, 2] == 7 and b.numpy()[1, 2] == 7
    assert list(wa.array([1, 2, 3], dtype=int)) == [1, 2, 3]
    with pytest.raises(IndexError):
        a[5]
    with pytest.raises(IndexError):
        a[0, 0]
    with pytest.raises(GradloomError):
        a[1.0]


def test_reshape_flatten_transpose() -> None:
    n = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = wa.array(n, copy=False, requires_grad=True)
    r = a.reshape((2, 6))
    assert r.shape == (2, 6) and r.ptr == a.ptr and r.grad is not None
    assert r.grad.ptr == a.grad.ptr
    f = a.flatten()
    np.testing.assert_array_equal(f.numpy(), n.ravel())
    t = a.transpose()
    assert t.shape == (4, 3) and t.strides == n.T.strides and not t.is_contiguous
    np.testing.assert_array_equal(t.numpy(), n.T)
    with pytest.raises(GradloomError):
        t.reshape(12)
    with pytest.raises(GradloomError):
        a.reshape((5, 5))
    c = t.contiguous()
    assert c.is_contiguous and c.ptr != a.ptr
    np.testing.assert_array_equal(c.numpy(), n.T)
    assert c.requires_grad


def test_list_and_printing() -> None:
    a = ops.zeros((2, 2))
    assert a.list() == [0.0, 0.0, 0.0, 0.0]
    v = ops.full(2, T.vec2(1, 2))
    vals = v.list()
    assert len(vals) == 2 and vals[1].gl_type is T.vec2
    np.testing.assert_array_equal(vals[1], [1, 2])
    assert repr(v) == "array(shape=(2,), dtype=vec2f)"
    assert str(a) == str(a.numpy())


def test_ptr_constructor_wraps_memory() -> None:
    n = np.arange(6, dtype=np.float32)
    a = wa.array(ptr=n.ctypes.data, shape=(2,), dtype=T.vec3)
    np.testing.assert_array_equal(a.numpy(), [[0, 1, 2], [3, 4, 5]])
    a.numpy()[0, 0] = 9
    assert n[0] == 9


# --------------------------------------------------------------------------------------------
# fill_, zero_, assign, copy, clone


def test_fill_and_zero() -> None:
    a = ops.zeros((2, 3), dtype=T.float64)
    a.fill_(2.5)
    np.testing.assert_array_equal(a.numpy(), np.full((2, 3), 2.5))
    a.zero_()
    np.testing.assert_array_equal(a.numpy(), 0)
    m = ops.zeros(2, dtype=T.mat22)
    m.fill_([1, 2, 3, 4])
    np.testing.assert_array_equal(m.numpy()[1], [[1, 2], [3, 4]])
    with pytest.raises(GradloomError):
        m.fill_([1, 2, 3])
    with pytest.raises(GradloomError):
        a.fill_([1.0, 2.0])


def test_assign_sources_and_shape_check() -> None:
    a = ops.zeros(3, dtype=T.vec3)
    a.assign(np.ones((3, 3)))
    np.testing.assert_array_equal(a.numpy(), np.ones((3, 3)))
    a.assign([[1, 2, 3]] * 3)
    np.testing.assert_array_equal(a.numpy()[2], [1, 2, 3])
    b = ops.zeros(3, dtype=T.vec3)
    b.assign(a)
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert b.ptr != a.ptr
    a.assign(np.zeros((2, 3)))  # fewer elements: the first ones (Warp's assign is a copy)
    np.testing.assert_array_equal(a.numpy(), [[0, 0, 0], [0, 0, 0], [1, 2, 3]])
    with pytest.raises(GradloomError):
        a.assign(ops.zeros(4, dtype=T.vec3))  # more than it holds


def test_copy_whole_and_with_offsets() -> None:
    src = wa.array(np.arange(1.0, 6.0), dtype=float)
    dst = ops.zeros(8)
    ops.copy(dst, src, dest_offset=2, src_offset=1, count=3)
    np.testing.assert_array_equal(dst.numpy(), [0, 0, 2, 3, 4, 0, 0, 0])
    whole = ops.zeros(5)
    ops.copy(whole, src)
    np.testing.assert_array_equal(whole.numpy(), src.numpy())


def test_copy_flattened_multidim_and_vec() -> None:
    src = wa.array(np.arange(12.0).reshape(4, 3), dtype=T.vec3)
    dst = ops.zeros((2, 3), dtype=T.vec3)
    ops.copy(dst, src, dest_offset=1, src_offset=2, count=2)
    expected = np.zeros((6, 3), np.float32)
    expected[1:3] = np.arange(6.0, 12.0).reshape(2, 3)
    np.testing.assert_array_equal(dst.numpy().reshape(6, 3), expected)


def test_copy_non_contiguous() -> None:
    base = np.arange(10, dtype=np.float32)
    src = wa.array(base, copy=False)[::2]
    dst = ops.zeros(5)
    ops.copy(dst, src)
    np.testing.assert_array_equal(dst.numpy(), base[::2])
    dst2 = ops.zeros(10)
    ops.copy(dst2[::2], src, dest_offset=1, src_offset=2, count=2)
    np.testing.assert_array_equal(dst2.numpy(), [0, 0, 4, 0, 6, 0, 0, 0, 0, 0])
    with pytest.raises(GradloomError):
        ops.copy(ops.zeros((2, 5))[:, ::2], ops.zeros((2, 3)), count=2)


def test_copy_errors() -> None:
    with pytest.raises(GradloomError):
        ops.copy(ops.zeros(3), ops.zeros(5))
    with pytest.raises(GradloomError):
        ops.copy(ops.zeros(3), ops.zeros(3), src_offset=-1)
    with pytest.raises(GradloomError):
        ops.copy(ops.zeros(3), ops.zeros(3, dtype=T.float64))
    with pytest.raises(GradloomError):
        ops.copy(ops.zeros(3), np.zeros(3))


def test_copy_is_bitwise_between_same_size_types() -> None:
    src = wa.array([1.0, 2.0], dtype=T.float32)
    dst = ops.zeros(2, dtype=T.int32)
    ops.copy(dst, src)
    np.testing.assert_array_equal(dst.numpy(), src.numpy().view(np.int32))


def test_clone_is_independent() -> None:
    a = wa.array(np.arange(6.0).reshape(2, 3), dtype=float, requires_grad=True)
    a.grad.fill_(3)
    c = ops.clone(a)
    assert c.shape == a.shape and c.dtype == a.dtype and c.ptr != a.ptr
    assert c.requires_grad and c.grad is not None and c.grad.ptr != a.grad.ptr
    np.testing.assert_array_equal(c.grad.numpy(), 0)
    c.numpy()[0, 0] = 100
    assert a.numpy()[0, 0] == 0
    assert not ops.clone(a, requires_grad=False).requires_grad
    t = ops.clone(a.transpose())
    assert t.is_contiguous
    np.testing.assert_array_equal(t.numpy(), a.numpy().T)


# --------------------------------------------------------------------------------------------
# Gradients


def test_requires_grad_allocates_zero_grad() -> None:
    a = ops.zeros((2, 3), dtype=T.vec3, requires_grad=True)
    assert a.requires_grad and a.grad is not None
    assert a.grad.shape == a.shape and a.grad.dtype == a.dtype
    assert a.grad.strides == a.strides and a.grad.ptr != a.ptr
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((2, 3, 3)))
    b = wa.array([1.0, 2.0], dtype=float)
    assert not b.requires_grad and b.grad is None
    b.requires_grad = True
    assert b.grad is not None and b.grad.shape == (2,)
    b.requires_grad = False
    assert b.grad is None


def test_grad_of_strided_array_has_same_strides() -> None:
    n = np.zeros((4, 6), dtype=np.float32)[:, ::-2]
    a = wa.array(n, copy=False)
    a.requires_grad = True
    assert a.grad is not None and a.grad.strides == a.strides == n.strides


def test_grad_setter_checks_shape() -> None:
    a = ops.zeros(3)
    a.grad = ops.ones(3)
    assert a.requires_grad and a.grad.numpy().sum() == 3
    with pytest.raises(GradloomError):
        a.grad = ops.ones(4)
    with pytest.raises(GradloomError):
        a.grad = ops.ones(3, dtype=T.float64)
    a.grad = None
    assert a.grad is None and not a.requires_grad


# --------------------------------------------------------------------------------------------
# Annotation mode


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: wa.array(dtype=T.vec3), T.ArrayType(T.vec3, 1)),
        (lambda: wa.array(dtype=float, ndim=2), T.ArrayType(T.float32, 2)),
        (lambda: ops.array2d(dtype=float), T.ArrayType(T.float32, 2)),
        (lambda: ops.array4d(dtype=T.mat33), T.ArrayType(T.mat33, 4)),
        (lambda: wa.array(dtype=int), T.ArrayType(T.int32, 1)),
        (lambda: wa.array(), T.ArrayType(typing.Any, 1)),
    ],
)
def test_annotation_gl_type(make: typing.Any, expected: T.ArrayType) -> None:
    ann = make()
    assert ann.__gl_type__() == expected
    assert T.resolve_annotation(ann) == expected


def test_gl_type_of_concrete_arrays_and_classes() -> None:
    assert ops.zeros((2, 2), dtype=T.vec3).__gl_type__() == T.ArrayType(T.vec3, 2)
    assert T.resolve_annotation(wa.array) == T.ArrayType(typing.Any, 1)
    assert T.resolve_annotation(ops.array3d) == T.ArrayType(typing.Any, 3)


def test_annotation_misuse_raises() -> None:
    ann = wa.array(dtype=float)
    for use in (
        ann.numpy,
        lambda: ann[0],
        lambda: len(ann),
        lambda: np.asarray(ann),
        ann.zero_,
        lambda: ops.clone(ann),
        lambda: ops.zeros_like(ann),
    ):
        with pytest.raises(GradloomError, match="annotation"):
            use()
    with pytest.raises(GradloomError):
        wa.array(dtype=float, ndim=5)
    with pytest.raises(GradloomError):
        wa.array(dtype="vec3")


# --------------------------------------------------------------------------------------------
# Devices


@pytest.mark.skipif(dv.is_cuda_available(), reason="a CUDA device is available")
@pytest.mark.parametrize("ident", ["cuda", "cuda:0", "cuda:1"])
def test_cuda_device_raises_clearly(ident: str) -> None:
    with pytest.raises(GradloomError, match="no CUDA device"):
        ops.zeros(3, device=ident)
    with pytest.raises(GradloomError, match="no CUDA device"):
        dv.get_device(ident)
    with pytest.raises(GradloomError, match="no CUDA device"):
        wa.array([1.0], device=ident)


def test_unknown_device_raises_naming_it() -> None:
    with pytest.raises(GradloomError, match="tpu"):
        dv.get_device("tpu")
    with pytest.raises(GradloomError):
        dv.get_device(3.5)


def test_cpu_device() -> None:
    cpu = dv.get_device("cpu")
    assert cpu == "cpu" and cpu == dv.get_device() and str(cpu) == "cpu"
    assert cpu.is_cpu and not cpu.is_cuda and cpu.ordinal == -1 and cpu.alias == "cpu"
    assert hash(cpu) == hash(dv.get_device(cpu)) and {cpu: 1}[dv.get_device("cpu")] == 1
    assert cpu != "cuda"
    assert ops.zeros(2, device="cpu").device == cpu
    assert ops.zeros(2, device=cpu).to("cpu").device == "cpu"
    if not dv.is_cuda_available():  # tests/test_cuda_runtime.py covers CUDA devices
        assert dv.get_devices() == [cpu] and dv.get_preferred_device() == cpu
        assert dv.get_cuda_device_count() == 0
    assert dv.is_cpu_available()
    dv.synchronize()
    dv.synchronize_device("cpu")
    dv.init()


def test_scoped_device_restores() -> None:
    before = dv.get_device()
    with dv.ScopedDevice("cpu") as d:
        assert d == "cpu" and dv.get_device() == d
        with dv.ScopedDevice(d):
            assert dv.get_device() == "cpu"
        with dv.ScopedDevice(device="cpu"):  # Warp's keyword (newton's Kamino passes it)
            assert dv.get_device() == "cpu"
    assert dv.get_device() is before
    if not dv.is_cuda_available():
        with pytest.raises(GradloomError):
            dv.ScopedDevice("cuda:0")
    dv.set_device("cpu")
    assert dv.get_device() == "cpu"


def test_array_deleter_runs_once_no_view_of_the_memory_is_left() -> None:
    import ctypes
    import gc

    import gradloom as wp

    freed: list[tuple[int, int]] = []
    memory = (ctypes.c_float * 4)(1.0, 2.0, 3.0, 4.0)
    ptr = ctypes.addressof(memory)
    a = wp.array(ptr=ptr, shape=(4,), dtype=wp.float32, deleter=lambda p, n: freed.append((p, n)))
    assert a.deleter is not None and wp.zeros(2, dtype=float).deleter is None  # as Warp
    view, host = a[1:], a.numpy()
    del a
    gc.collect()
    assert freed == [] and view.numpy()[0] == 2.0  # a view still uses the memory
    del view
    gc.collect()
    assert freed == [] and host[3] == 4.0  # numpy's view too
    del host
    gc.collect()
    assert freed == [(ptr, 16)]


def test_assign_copies_the_sources_contiguous_elements_in_order_as_warp() -> None:
    import gradloom as wp

    # MuJoCo Warp: d.mocap_pos (nworld, nmocap) of vec3 assigned a numpy (nmocap, 3) array
    dest = wp.zeros((1, 1), dtype=wp.vec3)
    dest.assign(np.array([[2.0, 3.0, 4.0]], dtype=np.float32))
    np.testing.assert_array_equal(dest.numpy(), [[[2.0, 3.0, 4.0]]])
    flat = wp.zeros(6, dtype=float)
    flat.assign(wp.array(np.arange(6.0).reshape(2, 3), dtype=float))
    np.testing.assert_array_equal(flat.numpy(), np.arange(6.0))
    # Warp's assign is wp.copy: all of a smaller source's elements, the rest untouched
    # (MuJoCo Warp assigns 5 values to a (1, 16) array)
    flat.assign(np.full(2, -1.0, dtype=np.float32))
    np.testing.assert_array_equal(flat.numpy(), [-1, -1, 2, 3, 4, 5])
    flat.assign(wp.full(3, 7.0, dtype=float))
    np.testing.assert_array_equal(flat.numpy(), [7, 7, 7, 3, 4, 5])
    with pytest.raises(GradloomError, match="assign"):
        flat.assign(np.zeros(7, dtype=np.float32))  # more than it holds: an error
    strided = wp.zeros((4, 2), dtype=float)[:, 0]
    with pytest.raises(GradloomError, match="contiguous"):
        strided.assign(np.zeros(2, dtype=np.float32))  # not contiguous: shapes must match


def test_assign_of_fewer_elements_keeps_the_others_gradients() -> None:
    import gradloom as wp

    @wp.kernel
    def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = 2.0 * x[i]

    x = wp.array(np.arange(4.0), dtype=float, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        x.assign(wp.array([10.0, 20.0], dtype=float))  # overwrites x[0:2] only
        wp.launch(double, 4, inputs=[x, y])
    tape.backward(grads={y: wp.ones(4, dtype=float)})
    np.testing.assert_array_equal(y.numpy(), [20, 40, 4, 6])
    # the overwritten elements' old values reach nothing; the others keep their gradient
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 2, 2])


def test_array_from_data_with_a_minus_one_in_its_shape() -> None:
    import gradloom as wp

    # MuJoCo Warp's tests: wp.array(qfrc, dtype=wp.float32, shape=(1, -1)), as numpy reshapes
    a = wp.array(np.arange(6, dtype=np.float32), dtype=wp.float32, shape=(2, -1))
    assert a.shape == (2, 3)
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))
    assert wp.array(np.arange(6, dtype=np.float32), dtype=wp.vec3, shape=(-1,)).shape == (2,)
    with pytest.raises(GradloomError, match="does not fit"):
        wp.array(np.arange(7, dtype=np.float32), dtype=wp.float32, shape=(2, -1))
    with pytest.raises(GradloomError, match="non-negative"):
        wp.zeros((2, -1), dtype=float)  # without data there is nothing to infer from
