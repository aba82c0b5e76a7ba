"""Fixed-size local arrays in kernels (`wp.zeros(shape=..., dtype=...)` inside a kernel): reads,
writes and component updates with constant and runtime indices, rows and slices, structs,
passing to and returning from funcs, forward values against warp-lang, gradients against
central FD, and compile errors."""

# ruff: noqa: UP018

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from dual import both, warp_module
from gradfd import arr, check_program
from wpcompat import DEVICE, wp


def make(wp: Any) -> SimpleNamespace:
    """The test kernels, built with `wp` (gradloom or warp-lang)."""
    f64 = wp.float64

    @wp.struct
    class Sample:
        offset: int
        dist: float

    @wp.func
    def fill_ramp(a: wp.array2d(dtype=int)):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                a[i][j] = i * a.shape[1] + j

    @wp.func
    def make_samples():
        a = wp.zeros(shape=(2, 3), dtype=Sample)
        count = float(a.shape[0] * a.shape[1] - 1)
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                a[i][j].offset = i * a.shape[1] + j
                a[i][j].dist = float(a[i][j].offset) / count
        return a

    @wp.func
    def first(a: wp.array(dtype=wp.vec2)):
        return a[0]

    @wp.kernel
    def layout(out: wp.array(dtype=int)):
        # out: the 6 elements, a row, a slice, shapes (unused dimensions are 0)
        a = wp.zeros(shape=(2, 3), dtype=int)
        fill_ramp(a)
        for k in range(6):
            out[k] = a[k // 3, k % 3]
        r = a[1]
        out[6] = r[0] + r[1] * 10 + r[2] * 100
        s = a[:2, 1:]
        out[7] = s[0, 0] + s[0, 1] * 10 + s[1, 0] * 100 + s[1, 1] * 1000
        out[8] = a.shape[0] * 10 + a.shape[1]
        out[9] = r.shape[0] * 10 + r.shape[1]
        out[10] = s.shape[0] * 100 + s.shape[1] * 10 + s.shape[2]

    @wp.kernel
    def structs(out: wp.array(dtype=float), offsets: wp.array(dtype=int)):
        a = make_samples()
        t = wp.tid()
        out[t] = a[t // 3][t % 3].dist
        offsets[t] = a[t // 3, t % 3].offset

    @wp.kernel
    def vectors(x: wp.array(dtype=wp.vec2), out: wp.array(dtype=wp.vec2)):
        t = wp.tid()
        a = wp.zeros(shape=(3,), dtype=wp.vec2)
        for i in range(3):
            a[i] = x[i] * float(t + 1)
        a[t % 3].y += 100.0
        a[2][0] = a[2][0] * 2.0
        out[t] = first(a) + a[t % 3]

    @wp.kernel
    def mix(x: wp.array(dtype=f64), idx: wp.array(dtype=int), y: wp.array(dtype=f64)):
        # runtime indices, read-modify-write and overwrites of one array inside a loop
        t = wp.tid()
        buf = wp.zeros(shape=(4,), dtype=f64)
        for i in range(4):
            buf[i] = x[t * 4 + i] * x[t * 4 + i]
        for r in range(3):
            j = idx[r]
            buf[j] = buf[j] * f64(2.0) + buf[(j + 1) % 4]
            buf[(j + 2) % 4] += wp.sin(buf[j])
        acc = f64(0.0)
        for i in range(4):
            acc += buf[i] * f64(i + 1)
        y[t] = acc

    @wp.kernel
    def matrix_rows(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
        t = wp.tid()
        m = wp.zeros(shape=(3, 2), dtype=wp.vec2d)
        for i in range(3):
            for j in range(2):
                m[i, j] = wp.vec2d(x[i * 2 + j], x[(i * 2 + j + t) % 6])
        row = m[t % 3]
        m[(t + 1) % 3][1].x = row[0].y * row[1].x
        y[t] = wp.dot(m[0, 0], m[1, 1]) + m[2][1][0] * m[(t + 2) % 3, 0].y

    return SimpleNamespace(**{k: v for k, v in locals().items() if hasattr(v, "key")})


K, W = both(make)
needs_warp = pytest.mark.skipif(W is None, reason="warp-lang is not importable")


def run(kernels: Any, wpm: Any) -> list[np.ndarray]:
    out = wpm.zeros(11, dtype=int, device=DEVICE)
    wpm.launch(kernels.layout, dim=1, inputs=[out], device=DEVICE)
    dist = wpm.zeros(6, dtype=float, device=DEVICE)
    offsets = wpm.zeros(6, dtype=int, device=DEVICE)
    wpm.launch(kernels.structs, dim=6, inputs=[dist, offsets], device=DEVICE)
    x = wpm.array(np.array([[1, 2], [3, 4], [5, 6]], np.float32), dtype=wpm.vec2, device=DEVICE)
    vec = wpm.zeros(4, dtype=wpm.vec2, device=DEVICE)
    wpm.launch(kernels.vectors, dim=4, inputs=[x, vec], device=DEVICE)
    xs = wpm.array(np.linspace(-1.0, 1.3, 12), dtype=wpm.float64, device=DEVICE)
    y = wpm.zeros(3, dtype=wpm.float64, device=DEVICE)
    wpm.launch(kernels.mix, dim=3, inputs=[xs, wpm.array([2, 0, 3], dtype=int), y],
               device=DEVICE)
    ym = wpm.zeros(3, dtype=wpm.float64, device=DEVICE)
    wpm.launch(kernels.matrix_rows, dim=3, inputs=[xs, ym], device=DEVICE)
    return [a.numpy() for a in (out, dist, offsets, vec, y, ym)]


def test_layout_rows_slices_and_funcs() -> None:
    out, dist, offsets, vec, _, _ = run(K, wp)
    assert out.tolist() == [0, 1, 2, 3, 4, 5, 543, 5421, 23, 30, 220]
    np.testing.assert_allclose(dist, np.arange(6) / 5.0, rtol=1e-6)
    assert offsets.tolist() == list(range(6))
    x = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    for t in range(4):
        a = x * (t + 1)
        a[t % 3, 1] += 100
        a[2, 0] *= 2
        np.testing.assert_allclose(vec[t], a[0] + a[t % 3])


@needs_warp
def test_matches_warp() -> None:
    for got, ref in zip(run(K, wp), run(W, warp_module()), strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-12)


@pytest.mark.parametrize("kernel,n,dim", [("mix", 12, 3), ("matrix_rows", 6, 3)])
def test_gradients(kernel: str, n: int, dim: int) -> None:
    # Warp 1.19 gets `mix` wrong (a fixed array overwritten in a dynamic loop); see
    # docs/differences.md
    rng = np.random.default_rng(0)
    extra = [arr(np.array([2, 0, 3]), wp.int32)] if kernel == "mix" else []

    def program(arrays: list[Any]) -> list[Any]:
        y = wp.zeros(dim, dtype=wp.float64, device=DEVICE, requires_grad=True)
        wp.launch(getattr(K, kernel), dim=dim, inputs=[*arrays, y], device=DEVICE)
        return [y]

    res = check_program(program, [arr(rng.uniform(-1, 1, n)), *extra], wrt=[0])
    assert np.abs(res.reverse[0]).max() > 0.1


def test_errors() -> None:
    @wp.kernel
    def runtime_shape(out: wp.array(dtype=int)):
        t = wp.tid()
        a = wp.zeros(shape=(t,), dtype=int)  # <- here
        out[0] = a[0]

    @wp.kernel
    def too_big(out: wp.array(dtype=float)):
        a = wp.zeros(shape=(100, 100), dtype=float)
        out[0] = a[0, 0]

    @wp.kernel
    def out_of_range(out: wp.array(dtype=float)):
        a = wp.zeros(shape=(2, 3), dtype=float)
        out[0] = a[1, 3]

    @wp.kernel
    def pointer(out: wp.array(dtype=float)):
        a = wp.zeros(shape=4, dtype=float)
        out[0] = float(a.ptr)

    cases = [(runtime_shape, "must be specified as a constant"), (too_big, "exceeds the limit"),
             (out_of_range, "out of range"), (pointer, ".ptr")]
    for k, phrase in cases:
        with pytest.raises(wp.CompileError, match=phrase) as info:
            wp.launch(k, dim=1, inputs=[wp.zeros(1, dtype=int if k is runtime_shape else float)])
        assert info.value.loc.file == __file__
