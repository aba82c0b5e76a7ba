"""wp.indexedarray: construction and Python-scope methods, kernel reads/writes/atomics through
index arrays in 1-4 dimensions (against numpy and warp-lang), views, structs, and gradients
into the data array (central FD)."""

# ruff: noqa: UP018

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from dual import both, warp_module
from gradfd import arr, check_program
from wpcompat import BACKEND, DEVICE, wp


def make(wp: Any) -> SimpleNamespace:
    """The test kernels, built with `wp` (gradloom or warp-lang)."""
    f64 = wp.float64

    @wp.kernel
    def scale_1d(a: wp.indexedarray(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = a[i]
        a[i] = 2.0 * a[i] + float(i)
        wp.atomic_add(a, i, 0.5)

    @wp.kernel
    def scale_2d(a: wp.indexedarray(dtype=float, ndim=2), out: wp.array2d(dtype=float)):
        i, j = wp.tid()
        out[i, j] = a[i, j] + a[i][j]
        a[i, j] = a[i, j] * 3.0
        wp.atomic_add(a, i, j, 1.0)

    @wp.kernel
    def read_3d(a: wp.indexedarray(dtype=float, ndim=3), out: wp.array3d(dtype=float),
                shape: wp.array(dtype=int)):
        i, j, k = wp.tid()
        row = a[i]
        out[i, j, k] = a[i, j, k] + 10.0 * row[j, k] + 100.0 * a[i, j][k]
        if i == 0 and j == 0 and k == 0:
            shape[0] = a.shape[0]
            shape[1] = a.shape[1]
            shape[2] = a.shape[2]
            shape[3] = row.shape[1]

    @wp.kernel
    def add_4d(a: wp.indexedarray(dtype=wp.vec2, ndim=4)):
        i, j, k, m = wp.tid()
        a[i, j, k, m] = a[i, j, k, m] + wp.vec2(float(i + j), float(k * m))
        a[i, j, k, m].y += 1.0

    @wp.kernel
    def gather(a: wp.indexedarray(dtype=f64, ndim=2), b: wp.indexedarray(dtype=wp.vec3d),
               y: wp.array(dtype=f64)):
        i = wp.tid()
        s = f64(0.0)
        for j in range(a.shape[1]):
            s += a[i, j] * a[i, j] * b[j][1]
        y[i] = s + wp.sin(b[i][0])

    @wp.kernel
    def update(a: wp.indexedarray(dtype=f64, ndim=2), w: wp.array(dtype=f64)):
        # each thread owns row i of the view: reads, overwrites and accumulates into it
        i = wp.tid()
        for j in range(a.shape[1]):
            a[i, j] = wp.exp(a[i, j] * w[j])
        wp.atomic_add(a, i, 0, a[i, 1] * w[0])

    @wp.kernel
    def update_into(a: wp.indexedarray(dtype=f64, ndim=2), w: wp.array(dtype=f64),
                    out: wp.indexedarray(dtype=f64, ndim=2)):
        # reads through one view, writes and accumulates through another
        i = wp.tid()
        for j in range(a.shape[1]):
            out[i, j] = wp.exp(a[i, j] * w[j])
        wp.atomic_add(out, i, 0, a[i, 1] * w[0])

    @wp.kernel
    def square(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
        i = wp.tid()
        y[i] = x[i] * x[i]

    return SimpleNamespace(**{k: v for k, v in locals().items() if hasattr(v, "key")})


K, W = both(make)
needs_warp = pytest.mark.skipif(W is None, reason="warp-lang is not importable")


def idx(values: list[int], wpm: Any = wp) -> Any:
    return wpm.array(np.array(values, dtype=np.int32), dtype=wpm.int32, device=DEVICE)


# -- Python scope ---------------------------------------------------------------------------------


def test_construction_and_attributes() -> None:
    data = wp.array(np.arange(60, dtype=np.float32).reshape(3, 4, 5), device=DEVICE)
    a = wp.indexedarray(data, [idx([2, 0]), None, idx([4, 4, 1])])
    assert (a.shape, a.size, a.ndim, a.dtype, len(a)) == ((2, 4, 3), 24, 3, wp.float32, 2)
    want = data.numpy()[[2, 0]][:, :, [4, 4, 1]]
    np.testing.assert_array_equal(a.numpy(), want)
    np.testing.assert_array_equal(a.contiguous().numpy(), want)
    assert a.list() == want.ravel().tolist()
    b = wp.indexedarray3d(data, idx([1]))  # one index array: the first dimension
    assert b.shape == (1, 4, 5)
    with pytest.raises(Exception, match="dimensional"):
        wp.indexedarray2d(data, [idx([0])])
    with pytest.raises(Exception, match="int32"):
        wp.indexedarray(data, [wp.array([0.0], dtype=float)])


def test_array_subscript_with_index_arrays() -> None:
    data = wp.array(np.arange(1000, dtype=np.int32).reshape(10, 10, 10), device=DEVICE)
    i = idx([0, 3, 7])
    a = data[:, i]
    assert isinstance(a, wp.indexedarray)
    np.testing.assert_array_equal(a.numpy(), data.numpy()[:, [0, 3, 7]])
    np.testing.assert_array_equal(data[i, 2:5, i].numpy(),
                                  data.numpy()[[0, 3, 7]][:, 2:5][:, :, [0, 3, 7]])
    np.testing.assert_array_equal(data[1, i].numpy(), data.numpy()[1][[0, 3, 7]])


def test_fill_zero_assign_write_through() -> None:
    data = wp.zeros((4, 3), dtype=wp.vec2, device=DEVICE)
    a = data[idx([3, 1])]
    a.fill_(wp.vec2(1.0, 2.0))
    want = np.zeros((4, 3, 2), np.float32)
    want[[3, 1]] = [1.0, 2.0]
    np.testing.assert_array_equal(data.numpy(), want)
    a.assign(np.arange(12, dtype=np.float32).reshape(2, 3, 2))
    want[[3, 1]] = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    np.testing.assert_array_equal(data.numpy(), want)
    a.zero_()
    np.testing.assert_array_equal(data.numpy(), 0)
    b = wp.zeros_like(a)
    assert isinstance(b, wp.array) and b.shape == (2, 3)
    wp.copy(a, wp.full((2, 3), wp.vec2(5.0, 6.0), dtype=wp.vec2))
    assert data.numpy()[3, 0].tolist() == [5.0, 6.0]
    assert np.array_equal(wp.clone(a).numpy(), a.numpy())


# -- kernels ---------------------------------------------------------------------------------------


def run_scale(kernels: Any, wpm: Any) -> list[np.ndarray]:
    d1 = wpm.array(np.arange(10, dtype=np.float32), device=DEVICE)
    out1 = wpm.zeros(4, dtype=float, device=DEVICE)
    wpm.launch(kernels.scale_1d, dim=4, inputs=[wpm.indexedarray(d1, [idx([9, 2, 5, 0], wpm)]),
                                                out1], device=DEVICE)
    d2 = wpm.array(np.arange(30, dtype=np.float32).reshape(5, 6), device=DEVICE)
    out2 = wpm.zeros((3, 6), dtype=float, device=DEVICE)
    a2 = wpm.indexedarray(d2, [idx([4, 0, 2], wpm), None])
    wpm.launch(kernels.scale_2d, dim=(3, 6), inputs=[a2, out2], device=DEVICE)
    d3 = wpm.array(np.arange(120, dtype=np.float32).reshape(4, 5, 6), device=DEVICE)
    out3 = wpm.zeros((2, 5, 3), dtype=float, device=DEVICE)
    shape = wpm.zeros(4, dtype=int, device=DEVICE)
    a3 = wpm.indexedarray(d3, [idx([3, 1], wpm), None, idx([5, 0, 2], wpm)])
    wpm.launch(kernels.read_3d, dim=(2, 5, 3), inputs=[a3, out3, shape], device=DEVICE)
    d4 = wpm.zeros((3, 2, 3, 2), dtype=wpm.vec2, device=DEVICE)
    a4 = wpm.indexedarray(d4, [idx([2, 0], wpm), None, idx([1, 2], wpm), idx([1], wpm)])
    wpm.launch(kernels.add_4d, dim=(2, 2, 2, 1), inputs=[a4], device=DEVICE)
    return [x.numpy() for x in (d1, out1, d2, out2, d3, out3, shape, d4)]


def test_kernels_against_numpy() -> None:
    d1, out1, d2, out2, _, out3, shape, d4 = run_scale(K, wp)
    src1 = np.arange(10, dtype=np.float32)
    np.testing.assert_array_equal(out1, src1[[9, 2, 5, 0]])
    want1 = src1.copy()
    want1[[9, 2, 5, 0]] = 2 * src1[[9, 2, 5, 0]] + np.arange(4) + 0.5
    np.testing.assert_array_equal(d1, want1)
    src2 = np.arange(30, dtype=np.float32).reshape(5, 6)
    np.testing.assert_array_equal(out2, 2 * src2[[4, 0, 2]])
    want2 = src2.copy()
    want2[[4, 0, 2]] = src2[[4, 0, 2]] * 3 + 1
    np.testing.assert_array_equal(d2, want2)
    src3 = np.arange(120, dtype=np.float32).reshape(4, 5, 6)[[3, 1]][:, :, [5, 0, 2]]
    np.testing.assert_array_equal(out3, 111 * src3)
    assert shape.tolist() == [2, 5, 3, 3]
    want4 = np.zeros((3, 2, 3, 2, 2), np.float32)
    for i, di in enumerate([2, 0]):
        for j in range(2):
            for dk in (1, 2):
                want4[di, j, dk, 1] = [i + j, 1.0]  # k * m is 0: m only takes 0
    np.testing.assert_array_equal(d4, want4)


@needs_warp
def test_kernels_against_warp() -> None:
    for got, ref in zip(run_scale(K, wp), run_scale(W, warp_module()), strict=True):
        np.testing.assert_array_equal(got, ref)


def test_indexed_array_in_struct() -> None:
    @wp.struct
    class Holder:
        view: wp.indexedarray(dtype=float)
        scale: float

    @wp.kernel
    def k(h: Holder, out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = h.view[i] * h.scale
        h.view[i] = 0.0

    data = wp.array(np.arange(6, dtype=np.float32), device=DEVICE)
    h = Holder()
    h.view = data[idx([5, 1])]
    h.scale = 2.0
    out = wp.zeros(2, dtype=float, device=DEVICE)
    wp.launch(k, dim=2, inputs=[h, out], device=DEVICE)
    assert out.numpy().tolist() == [10.0, 2.0]
    assert data.numpy().tolist() == [0.0, 0.0, 2.0, 3.0, 4.0, 0.0]


def test_launch_checks_the_indexed_type() -> None:
    data = wp.zeros(4, dtype=wp.float64, device=DEVICE)
    with pytest.raises(wp.LaunchError, match="indexedarray"):
        wp.launch(K.scale_1d, dim=1, inputs=[data[idx([0])], wp.zeros(1, dtype=float)])
    with pytest.raises(wp.LaunchError, match="indexedarray"):
        wp.launch(K.scale_1d, dim=1, inputs=[wp.zeros(4, dtype=float), wp.zeros(1, dtype=float)])


# -- gradients ---------------------------------------------------------------------------------


def test_gradients_of_reads() -> None:
    rng = np.random.default_rng(0)

    def program(arrays: list[Any]) -> list[Any]:
        a, b, i0, i1, ib = arrays
        y = wp.zeros(3, dtype=wp.float64, device=DEVICE, requires_grad=True)
        wp.launch(K.gather, dim=3, device=DEVICE,
                  inputs=[wp.indexedarray(a, [i0, i1]), wp.indexedarray(b, [ib]), y])
        return [y]

    args = [arr(rng.uniform(-1, 1, (5, 4))), arr(rng.uniform(-1, 1, (6, 3)), wp.vec3d),
            arr(np.array([4, 0, 2]), wp.int32), arr(np.array([3, 1, 1]), wp.int32),
            arr(np.array([5, 2, 0]), wp.int32)]
    res = check_program(program, args, wrt=[0, 1])
    # only the indexed elements get gradients; a repeated index (column 1) gets the sum
    assert np.count_nonzero(res.reverse[0]) == 6
    assert np.count_nonzero(res.reverse[1][[1, 3, 4]]) == 0


def test_fill_under_a_tape_overwrites_only_the_selected_elements() -> None:
    x = wp.array([1.0, 2.0, 3.0, 4.0], dtype=wp.float64, requires_grad=True, device=DEVICE)
    y = wp.zeros(4, dtype=wp.float64, requires_grad=True, device=DEVICE)
    tape = wp.Tape()
    with tape:
        wp.launch(K.square, dim=4, inputs=[x, y], device=DEVICE)
        y[idx([3, 1])].fill_(0.0)  # y[1] and y[3] no longer depend on x
    tape.backward(grads={y: wp.ones(4, dtype=wp.float64, device=DEVICE)})
    assert x.grad.numpy().tolist() == [2.0, 0.0, 6.0, 0.0]


def test_gradients_of_writes_and_atomics() -> None:
    rng = np.random.default_rng(1)

    def program(arrays: list[Any]) -> list[Any]:
        a, w, out, i0, i1 = arrays
        wp.launch(K.update_into, dim=3, device=DEVICE,
                  inputs=[wp.indexedarray(a, [i0, i1]), w, wp.indexedarray(out, [i0, i1])])
        return [out]

    args = [arr(rng.uniform(-1, 1, (4, 5))), arr(rng.uniform(-1, 1, 3)),
            arr(rng.uniform(-1, 1, (4, 5))), arr(np.array([3, 0, 1]), wp.int32),
            arr(np.array([4, 0, 2]), wp.int32)]
    check_program(program, args, wrt=[0, 1])


@pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom's error for an undefined replay")
def test_in_place_update_through_an_indexed_array_is_refused_under_a_tape() -> None:
    # the indices may repeat, so which version of an element a thread read is not known
    a = wp.array(np.linspace(0.1, 0.9, 20).reshape(4, 5), dtype=wp.float64, device=DEVICE,
                 requires_grad=True)
    w = wp.array([0.5, -0.2, 0.3], dtype=wp.float64, device=DEVICE, requires_grad=True)
    rows = wp.array([3, 0, 1], dtype=wp.int32, device=DEVICE)
    cols = wp.array([4, 0, 2], dtype=wp.int32, device=DEVICE)
    tape = wp.Tape()
    with tape:
        wp.launch(K.update, dim=3, inputs=[wp.indexedarray(a, [rows, cols]), w], device=DEVICE)
    with pytest.raises(wp.CompileError, match="'a' that other threads overwrite"):
        tape.backward(grads={a: wp.ones((4, 5), dtype=wp.float64, device=DEVICE)})
