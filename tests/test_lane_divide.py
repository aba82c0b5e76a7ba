"""Integer / and % in the SIMD thread loop (computed in double: codegen/lane_ops.py) against C's
truncating division, for every sign and size, a zero divisor (0, as in the scalar loop), and the
wave example's `tid % width`, `tid // width` with a kernel-argument divisor."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradloom as wp


def _c_div(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C's truncating quotient and remainder in int64 integer arithmetic; 0 for y == 0."""
    xs, ys = x.astype(np.int64), y.astype(np.int64)
    safe = np.where(ys == 0, 1, ys)
    q = np.sign(xs) * np.sign(safe) * (np.abs(xs) // np.abs(safe))
    r = xs - q * safe
    return np.where(ys == 0, 0, q), np.where(ys == 0, 0, r)


@wp.kernel
def divide(x: wp.array(dtype=Any), y: wp.array(dtype=Any), q: wp.array(dtype=Any),
           r: wp.array(dtype=Any)):
    i = wp.tid()
    q[i] = x[i] / y[i]
    r[i] = x[i] % y[i]


_NP = {wp.int32: np.int32, wp.uint32: np.uint32, wp.int16: np.int16, wp.int8: np.int8,
       wp.uint8: np.uint8}


@pytest.mark.parametrize("simd", [True, False], ids=["simd", "scalar"])
@pytest.mark.parametrize("dtype", list(_NP), ids=lambda t: t.__name__)
def test_integer_division_matches_c(simd, dtype):
    npt = _NP[dtype]
    info = np.iinfo(npt)
    rng = np.random.default_rng(3)
    edges = np.array([0, 1, 2, 7, info.max, info.max - 1, info.min + 1 if info.min else 3],
                     dtype=np.int64)
    xs = np.concatenate([edges, rng.integers(info.min, int(info.max) + 1, 200)])
    ys = np.concatenate([np.array([1, 2, 7, 0, 1, 3, 5]),
                         rng.integers(info.min, int(info.max) + 1, 200)])
    if info.min < 0:
        xs = np.concatenate([xs, -edges[1:-1], -edges[1:-1]])
        ys = np.concatenate([ys, np.full(len(edges) - 2, -1), np.full(len(edges) - 2, -7)])
    keep = ~((xs == info.min) & (ys == -1))  # overflows in C too
    x, y = xs[keep].astype(npt), ys[keep].astype(npt)
    old = wp.config.simd
    wp.config.simd = simd
    try:
        q, r = wp.zeros(len(x), dtype=dtype), wp.zeros(len(x), dtype=dtype)
        wp.launch(divide, len(x), inputs=[wp.array(x, dtype=dtype),
                                                  wp.array(y, dtype=dtype), q, r])
    finally:
        wp.config.simd = old
    want_q, want_r = _c_div(x, y)
    np.testing.assert_array_equal(q.numpy().astype(np.int64), want_q.astype(npt).astype(np.int64))
    np.testing.assert_array_equal(r.numpy().astype(np.int64), want_r.astype(npt).astype(np.int64))


@wp.kernel
def split_flat(width: int, x: wp.array(dtype=int), y: wp.array(dtype=int)):
    tid = wp.tid()
    x[tid] = tid % width
    y[tid] = tid // width


def test_flat_index_split_by_an_argument():
    n, width = 128 * 129 + 5, 129
    x, y = wp.zeros(n, dtype=int), wp.zeros(n, dtype=int)
    wp.launch(split_flat, n, inputs=[width, x, y])
    t = np.arange(n)
    np.testing.assert_array_equal(x.numpy(), t % width)
    np.testing.assert_array_equal(y.numpy(), t // width)
