"""Warp 1.19's array API details: views as another dtype, None for an array argument,
struct arrays through numpy (`numpy_dtype`, `numpy_value`, fills, array fields), empty
arrays, and Warp's exception types for bad shapes.

Runs on warp-lang too (GL_TEST_BACKEND=warp, wpcompat.py) to check the expectations.
"""

import typing
from typing import Literal

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

gradloom_only = pytest.mark.skipif(BACKEND == "warp", reason="a gradloom-specific detail")


def test_view_same_size_reinterprets():
    src = np.arange(1, 10, dtype=np.uint32)
    a = wp.array(src, dtype=wp.uint32, device=DEVICE)
    assert a.view(dtype=wp.float32).numpy().tobytes() == src.view(np.float32).tobytes()
    rgba = wp.array(np.full((3, 4), 1, np.uint8), dtype=wp.vec4ub, device=DEVICE)
    assert rgba.view(wp.uint32).numpy().tolist() == [0x01010101] * 3


def test_view_between_vectors_and_scalars():
    data = np.arange(16, dtype=np.float32).reshape(4, 4)
    v = wp.array(data, dtype=wp.vec4, device=DEVICE)
    m = v.view(dtype=wp.mat22)
    assert m.shape == (4,) and m.numpy().reshape(4, 4).tolist() == data.tolist()
    s = v.view(dtype=float)
    assert s.shape == (4, 4) and s.numpy().tolist() == data.tolist()
    f = wp.array(data, dtype=float, device=DEVICE)
    assert f.view(dtype=wp.vec4).shape == (4,)
    s.numpy()[0, 0] = 42.0  # a view shares memory
    assert v.numpy()[0, 0] == 42.0


def test_view_size_mismatch_is_a_type_error():
    b = wp.array(np.arange(4, dtype=np.float32), dtype=float, device=DEVICE)
    with pytest.raises(TypeError, match="source dtype has size 4 bytes, but target dtype has "
                       "size 2 bytes"):
        b.view(dtype=wp.uint16)
    v = wp.zeros(2, dtype=wp.vec4, device=DEVICE)
    with pytest.raises(TypeError, match="source scalar dtype float32 has size 4 bytes"):
        v.view(dtype=wp.float64)


@wp.kernel
def null_array_is_false(a: wp.array(dtype=float), b: wp.array(dtype=float),
                        out: wp.array(dtype=int)):
    if not a:
        out[0] = 1
    if b:
        out[1] = 1


def test_none_is_an_empty_array_argument():
    b = wp.zeros(3, dtype=float, device=DEVICE)
    out = wp.zeros(2, dtype=int, device=DEVICE)
    wp.launch(null_array_is_false, dim=1, inputs=[None, b, out], device=DEVICE)
    assert out.numpy().tolist() == [1, 1]


@wp.struct
class Particle:
    x: int
    v: wp.vec3
    a: wp.array(dtype=float)


@wp.kernel
def read_particles(ps: wp.array(dtype=Particle), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = float(ps[i].x) + ps[i].v[2] + ps[i].a[1]


def test_struct_arrays_through_numpy():
    na = np.zeros(3, dtype=Particle.numpy_dtype())
    na["x"] = 17
    na["v"] = (1, 2, 3)
    a = wp.array(data=na, dtype=Particle, device=DEVICE)
    assert a.numpy()["x"].tolist() == [17, 17, 17]
    p = Particle()
    p.x = 5
    p.v = wp.vec3(1.0, 2.0, 3.0)
    p.a = wp.array([10.0, 20.0], dtype=float, device=DEVICE)
    filled = wp.full(4, p, device=DEVICE)
    assert filled.dtype == Particle and filled.numpy()["x"].tolist() == [5] * 4
    expected = np.empty(4, dtype=Particle.numpy_dtype())
    expected.fill(p.numpy_value())
    np.testing.assert_array_equal(filled.numpy(), expected)  # field by field
    out = wp.zeros(2, dtype=float, device=DEVICE)
    wp.launch(read_particles, dim=2, inputs=[wp.array([p, p], dtype=Particle, device=DEVICE),
                                             out], device=DEVICE)
    assert out.numpy().tolist() == [5.0 + 3.0 + 20.0] * 2


def test_empty_arrays():
    a = wp.empty((0, 3), dtype=wp.vec2f, device=DEVICE, requires_grad=True)
    assert a.ptr is None and a.size == 0 and a.grad.ptr is None
    assert a.flatten().shape == (0,) and a.transpose().shape == (3, 0)
    na = np.asarray(wp.zeros((1, 0), dtype=wp.vec2f, device=DEVICE))
    assert na.shape == (1, 0, 2) and na.strides == (0, 8, 4)


def test_shape_errors_are_warps_exceptions():
    with pytest.raises(ValueError, match="Array shapes must be non-negative"):
        wp.zeros(shape=(10, -1), dtype=int, device=DEVICE)
    arr = wp.array(np.arange(6, dtype=np.float32), dtype=float, device=DEVICE)
    with pytest.raises(RuntimeError, match=r"cannot reshape array of shape \(6,\) \(size 6\) "
                       r"into shape \(4, 2\) \(size 8\)"):
        arr.reshape((4, 2))


@wp.kernel
def write_first(a: wp.array(dtype=float)):
    a[0] = 1.0


@wp.kernel
def write_first_if_given(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    if a and a.shape[0] > 0:
        a[0] = 1.0
        out[0] = 1.0
    else:
        out[0] = 2.0


def test_none_for_an_array_is_an_empty_array_as_in_warp():
    out = wp.zeros(1, dtype=float, device=DEVICE)
    wp.launch(write_first_if_given, dim=1, inputs=[None, out], device=DEVICE)
    assert out.numpy()[0] == 2.0  # `if a` is false for None
    a = wp.zeros(2, dtype=float, device=DEVICE)
    wp.launch(write_first_if_given, dim=1, inputs=[a, out], device=DEVICE)
    assert out.numpy()[0] == 1.0 and a.numpy()[0] == 1.0


def test_array_annotations_compare_hash_and_print_as_warp():
    assert wp.array[float] == wp.array[wp.float32]
    assert hash(wp.array[float]) == hash(wp.array[wp.float32])
    assert wp.array[float] != wp.array[float, Literal[2]] and wp.array[float, Literal[2]].ndim == 2
    assert wp.array[float] != wp.indexedarray[float]
    assert repr(wp.array2d[wp.float32]) == "wp.array2d[wp.float32]"
    assert repr(wp.array[wp.vec3f]) == "wp.array[wp.vec3f]"
    assert repr(wp.indexedarray[wp.float32, Literal[3]]) == "wp.indexedarray[wp.float32, Literal[3]]"
    u = wp.array[float] | None
    assert typing.get_origin(u) is typing.Union and type(None) in u.__args__
    a, b = wp.zeros(2, device=DEVICE), wp.zeros(2, device=DEVICE)
    assert a == a and a != b and {a: 1}[a] == 1  # arrays with memory: identity


def test_launch_argument_errors_are_runtime_errors():
    with pytest.raises(RuntimeError, match=r"expects an array of type array\(ndim=1, "
                       r"dtype=float32\), but passed value has type list"):
        wp.launch(write_first, dim=1, inputs=[[1.0]], device=DEVICE)


@wp.struct
class Inner:
    field: wp.uint32
    v: wp.vec3


@wp.struct
class Outer:
    inner: Inner
    h: wp.float16


@wp.kernel
def set_outer(items: wp.array(dtype=Outer)):
    i = wp.tid()
    items[i].inner.field = wp.uint32(i + 1)
    items[i].inner.v = wp.vec3(1.0, 2.0, 3.0)


def test_struct_elements_read_back_as_instances():
    items = wp.zeros(3, dtype=Outer, device=DEVICE)
    wp.launch(set_outer, dim=3, inputs=[items], device=DEVICE)
    values = items.list()
    assert [int(o.inner.field) for o in values] == [1, 2, 3]
    assert list(values[2].inner.v) == [1.0, 2.0, 3.0]


def test_struct_array_fields_and_one_element_views():
    p = Particle()
    p.x = 3
    p.a = wp.array([1.0, 2.0], dtype=float, device=DEVICE)
    back = wp.full(2, p, device=DEVICE).list()[1]
    assert back.x == 3 and back.a.dtype == wp.float32 and back.a.ndim == 1
    one = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, device=DEVICE).view(dtype=wp.vec4)
    assert one.shape == (1,)
    m = wp.array(np.arange(4, dtype=np.float32).reshape(2, 2), dtype=wp.mat22, device=DEVICE)
    assert m.shape == (1,)


def test_allocation_with_strides():
    a = wp.empty((3, 3), dtype=wp.int32, strides=(16, 12), device=DEVICE)
    assert a.strides == (16, 12) and a.capacity == 4 + 2 * 16 + 2 * 12
    t = wp.zeros((5, 3), dtype=wp.vec3, strides=(12, 60), device=DEVICE)
    assert t.capacity == wp.zeros((3, 5), dtype=wp.vec3, device=DEVICE).capacity


@pytest.mark.parametrize("shape, ndim", [((2, 3), 1), ((6,), 2), ((0,), 2), ((0, 3), 1)])
def test_data_shape_wins_over_ndim(shape, ndim):
    # warp-lang 1.19 keeps the data's shape whatever ndim says (newton builds
    # `wp.array(np.array([]), dtype=wp.int32, ndim=2)` for a model without joints)
    a = wp.array(np.zeros(shape, np.int32), dtype=wp.int32, ndim=ndim, device=DEVICE)
    assert a.shape == shape and a.ndim == len(shape)


def test_allocators_accept_ndim_as_warp_does():
    # warp-lang ignores ndim= next to a shape (newton passes both)
    for make in (wp.empty, wp.zeros, wp.ones):
        assert make((3, 2), dtype=wp.vec3, ndim=2, device=DEVICE).shape == (3, 2)
        assert make((3, 2), dtype=float, ndim=1, device=DEVICE).shape == (3, 2)
