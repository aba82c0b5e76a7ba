"""Fabric arrays (`wp.fabricarray`, `wp.indexedfabricarray`, arrays of arrays): elements spread
over buckets of memory, read and written in kernels and in Python scope."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import LaunchError

_CODES = {wp.float32: "f4", wp.float64: "f8", wp.int32: "i4", wp.uint8: "u1"}


def _interface(pointers: list[int], counts: list[int], type_info: tuple, **extra) -> dict:
    info = {"type": type_info, "access": 2, "pointers": pointers, "counts": counts, **extra}
    return {"version": 1, "device": "cpu", "attribs": {"a": info}}


def _buckets(values: np.ndarray, dtype, sizes: list[int]) -> tuple[wp.fabricarray, list]:
    """A Fabric array over separate allocations, one per bucket (not one block of memory)."""
    parts, start = [], 0
    for n in sizes:
        parts.append(wp.array(values[start:start + n], dtype=dtype))
        start += n
    scalar = getattr(dtype, "_wp_scalar_type_", dtype)
    length = getattr(dtype, "_length_", 1)
    role = "vector" if length > 1 else ""
    iface = _interface([p.ptr for p in parts], sizes, (True, _CODES[scalar], length, 0, role))
    return wp.fabricarray(data=iface, attrib="a"), parts


@wp.kernel
def _scale(a: wp.fabricarray[float], s: float):
    i = wp.tid()
    a[i] = a[i] * s
    wp.atomic_add(a, i, 1.0)


@wp.kernel
def _scale_indexed(a: wp.indexedfabricarray[float], out: wp.array[float]):
    i = wp.tid()
    out[i] = a[i]
    a[i] = -a[i]


def test_kernel_reads_and_writes_every_bucket():
    values = np.arange(10, dtype=np.float32)
    fa, parts = _buckets(values, wp.float32, [3, 1, 6])
    assert fa.shape == (10,) and fa.size == 10 and fa.dtype == wp.float32 and fa.ndim == 1
    wp.launch(_scale, dim=fa.size, inputs=[fa, 2.0])
    np.testing.assert_array_equal(fa.numpy(), values * 2 + 1)
    np.testing.assert_array_equal(parts[1].numpy(), [7.0])  # element 3 lives in bucket 1


def test_indexed_view_in_kernel_touches_only_its_elements():
    values = np.arange(8, dtype=np.float32)
    fa, keep = _buckets(values, wp.float32, [5, 3])
    idx = wp.array([6, 0, 4], dtype=wp.int32)
    ifa = fa[idx]
    assert isinstance(ifa, wp.indexedfabricarray) and ifa.shape == (3,)
    out = wp.zeros(3, dtype=float)
    wp.launch(_scale_indexed, dim=3, inputs=[ifa, out])
    np.testing.assert_array_equal(out.numpy(), [6.0, 0.0, 4.0])
    expect = values.copy()
    expect[[6, 0, 4]] *= -1
    np.testing.assert_array_equal(fa.numpy(), expect)
    assert keep


@wp.kernel
def _double(a: wp.fabricarray[wp.vec3], b: wp.fabricarray[wp.vec3]):
    i = wp.tid()
    b[i] = a[i] + a[i]
    b[i].y = 7.0


def test_vector_elements_and_component_stores():
    values = np.arange(15, dtype=np.float32).reshape(5, 3)
    fa, keep_a = _buckets(values, wp.vec3, [2, 3])
    fb, keep_b = _buckets(np.zeros_like(values), wp.vec3, [4, 1])
    wp.launch(_double, dim=5, inputs=[fa, fb])
    expect = values * 2
    expect[:, 1] = 7.0
    np.testing.assert_array_equal(fb.numpy(), expect)
    assert keep_a and keep_b


@wp.kernel
def _generic(a: wp.fabricarray[Any], out: wp.array[Any]):
    i = wp.tid()
    out[i] = a[i] + a[i]


def test_generic_dtype_overloads():
    for dtype, np_dtype in ((wp.int32, np.int32), (wp.float64, np.float64)):
        values = np.arange(1, 7, dtype=np_dtype)
        fa, keep = _buckets(values, dtype, [2, 2, 2])
        out = wp.zeros(6, dtype=dtype)
        wp.launch(_generic, dim=6, inputs=[fa, out])
        np.testing.assert_array_equal(out.numpy(), values * 2)
        assert keep


@wp.kernel
def _row_sums(a: Any, sums: wp.array[float]):
    i = wp.tid()
    row = a[i]
    for j in range(row.shape[0]):
        sums[i] = sums[i] + row[j]
    sums[i] = sums[i] + 100.0 * a[i, 0]


def test_array_of_arrays_rows_are_views():
    rows = [np.arange(1, n + 1, dtype=np.float32) for n in (1, 4, 2)]
    arrays = [wp.array(r) for r in rows]
    ptrs = wp.array([a.ptr for a in arrays], dtype=wp.uint64)
    lens = wp.array([a.size for a in arrays], dtype=wp.uint64)
    iface = _interface([ptrs.ptr, ptrs.ptr + 8], [1, 2], (True, "f4", 1, 1, ""),
                       array_lengths=[lens.ptr, lens.ptr + 8])
    fa = wp.fabricarrayarray(data=iface, attrib="a")
    assert fa.__gl_type__() == wp.fabricarrayarray(dtype=float).__gl_type__()
    assert fa.ndim == 2 and fa.shape == (3,)
    sums = wp.zeros(3, dtype=float)
    wp.launch(_row_sums, dim=3, inputs=[fa, sums])
    np.testing.assert_array_equal(sums.numpy(), [r.sum() + 100.0 for r in rows])
    sums.zero_()
    ifa = fa[wp.array([2, 0], dtype=wp.int32)]
    assert ifa.__gl_type__() == wp.indexedfabricarrayarray(dtype=float).__gl_type__()
    wp.launch(_row_sums, dim=2, inputs=[ifa, sums])
    np.testing.assert_array_equal(sums.numpy(), [rows[2].sum() + 100.0, 101.0, 0.0])


def test_python_scope_fill_assign_copy():
    values = np.arange(6, dtype=np.float32)
    fa, parts = _buckets(values, wp.float32, [4, 2])
    fa.fill_(3.5)
    np.testing.assert_array_equal(parts[1].numpy(), [3.5, 3.5])
    fa.assign(values[::-1].copy())
    np.testing.assert_array_equal(fa.numpy(), values[::-1])
    fa.zero_()
    wp.copy(fa, wp.array(values))
    np.testing.assert_array_equal(fa.numpy(), values)
    ifa = fa[wp.array([5, 1], dtype=wp.int32)]
    ifa.fill_(-1.0)
    np.testing.assert_array_equal(fa.numpy(), [0, -1, 2, 3, 4, -1])
    np.testing.assert_array_equal(wp.clone(ifa).numpy(), [-1, -1])
    assert fa.list() == [0, -1, 2, 3, 4, -1]
    assert wp.zeros_like(fa).shape == (6,)


@wp.struct
class _Holder:
    values: wp.fabricarray[float]
    picked: wp.indexedfabricarray[float]


@wp.kernel
def _through_struct(h: _Holder):
    i = wp.tid()
    h.values[i] = h.values[i] + 1.0
    h.picked[i] = h.picked[i] + 10.0


def test_struct_fields():
    fa, keep_a = _buckets(np.zeros(4, dtype=np.float32), wp.float32, [1, 3])
    fb, keep_b = _buckets(np.zeros(4, dtype=np.float32), wp.float32, [2, 2])
    h = _Holder()
    h.values = fa
    h.picked = fb[wp.array([3, 0], dtype=wp.int32)]
    wp.launch(_through_struct, dim=2, inputs=[h])
    np.testing.assert_array_equal(fa.numpy(), [1, 1, 0, 0])
    np.testing.assert_array_equal(fb.numpy(), [10, 0, 0, 10])
    assert keep_a and keep_b  # Fabric arrays do not own their memory
    moved = h.to("cpu")  # the same device: the same views
    assert moved is not h and moved.values is fa and moved.picked is h.picked
    assert _Holder.key == "_Holder"
    with pytest.raises(TypeError, match="expects a Warp Fabric array"):
        h.values = [1.0]


def test_annotations_and_interface_errors():
    assert wp.fabricarray[float] == wp.fabricarray(dtype=float)
    assert wp.fabricarray[float] != wp.indexedfabricarray[float]
    assert repr(wp.indexedfabricarray[float]) == "wp.indexedfabricarray[wp.float32]"
    data = wp.zeros(1, dtype=float)
    with pytest.raises(ValueError, match="five elements"):
        wp.fabricarray(_interface([data.ptr], [1], (True, "f4", 1, 0)), "a")
    with pytest.raises(ValueError, match="square element count"):
        wp.fabricarray(_interface([data.ptr], [1], (True, "f4", 6, 0, "matrix")), "a")
    with pytest.raises(ValueError, match="only support indexing using index arrays"):
        _buckets(np.zeros(2, np.float32), wp.float32, [2])[0][0]
    with pytest.raises(LaunchError, match="expects an array of type fabricarray"):
        wp.launch(_scale, dim=1, inputs=[data, 1.0])


@wp.kernel
def _weighted(a: wp.fabricarray[wp.float64], x: wp.array[wp.float64], out: wp.array[wp.float64]):
    i = wp.tid()
    out[i] = a[i] * wp.sin(x[i]) * x[i]


def test_gradients_flow_past_fabric_values():
    """Fabric memory has no gradient (as in Warp): its values are constants of the kernel, and
    the gradients of ordinary arrays match float64 finite differences."""
    weights = np.array([0.5, -2.0, 3.0], dtype=np.float64)
    fa, keep = _buckets(weights, wp.float64, [1, 2])
    x0 = np.array([0.3, 1.1, -0.7])
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_weighted, dim=3, inputs=[fa, x, out])
    tape.backward(grads={out: wp.ones(3, dtype=wp.float64)})
    h = 1e-6

    def f(v: np.ndarray) -> np.ndarray:
        res = wp.zeros(3, dtype=wp.float64)
        wp.launch(_weighted, dim=3, inputs=[fa, wp.array(v, dtype=wp.float64), res])
        return res.numpy()

    fd = np.array([(f(x0 + h * e) - f(x0 - h * e)).sum() / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6, atol=1e-9)
    assert keep


def test_arithmetic_and_map_read_fabric_elements():
    values = np.arange(5, dtype=np.float32)
    fa, keep = _buckets(values, wp.float32, [2, 3])
    np.testing.assert_array_equal((fa - 1.0).numpy(), values - 1.0)
    np.testing.assert_array_equal((fa + fa).numpy(), values * 2)
    ifa = fa[wp.array([4, 1], dtype=wp.int32)]
    np.testing.assert_array_equal((ifa * 3.0).numpy(), [12.0, 3.0])
    out = wp.zeros(5, dtype=float)
    wp.map(wp.sin, fa, out=out)
    np.testing.assert_allclose(out.numpy(), np.sin(values), rtol=1e-6)
    assert keep


def test_arrays_with_memory_are_not_annotations():
    fa, keep = _buckets(np.zeros(2, np.float32), wp.float32, [2])
    for concrete in (fa, fa[wp.array([0], dtype=wp.int32)], wp.zeros(2, dtype=float)):

        def body(a):
            pass

        body.__annotations__ = {"a": concrete}
        for decorate in (wp.kernel, wp.func):
            with pytest.raises(TypeError, match="annotation"):
                decorate(body)

        class Fields:
            pass

        Fields.__annotations__ = {"arr": concrete}
        with pytest.raises(TypeError, match="annotation"):
            wp.struct(Fields)
    assert keep


def test_struct_array_read_back_gives_type_stubs():
    """A struct array's element read back in Python cannot rebuild the Fabric view (its words
    hold only addresses): the field is a data-less array of the field's type, as in Warp."""
    fa, keep = _buckets(np.arange(4, dtype=np.float32), wp.float32, [2, 2])
    h = _Holder()
    h.values = fa
    h.picked = fa[wp.array([1, 3], dtype=wp.int32)]
    (back,) = wp.array([h], dtype=_Holder).list()
    assert isinstance(back.values, wp.fabricarray) and back.values.device is None
    assert isinstance(back.picked, wp.indexedfabricarray) and back.picked.dtype == wp.float32
    assert back.to("cpu").values is back.values
    assert keep
