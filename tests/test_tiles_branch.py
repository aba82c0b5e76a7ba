"""A tile assigned on one branch only (inside a loop, used in later iterations: MuJoCo Warp's
constraint kernels recompute per-contact tiles only when the contact changes) keeps its value
from the iteration that assigned it, as Warp's variables do; before any assignment it is zero."""

from __future__ import annotations

import numpy as np
from wpcompat import DEVICE, wp


@wp.kernel
def _recompute_on_change(x: wp.array(dtype=float), sel: wp.array(dtype=int),
                         out: wp.array(dtype=float), first: wp.array(dtype=float)):  # fmt: skip
    prev = int(-1)
    for j in range(6):
        if sel[j] != prev:
            prev = sel[j]
            t = wp.tile_load(x, shape=4, offset=sel[j] * 4)
        s = wp.tile_sum(t)
        out[j] = s[0]
    if sel[0] > 100:
        u = wp.tile_ones(shape=4, dtype=float)
    first[0] = wp.tile_sum(u)[0]  # never assigned here: the zero tile


def test_tile_kept_across_iterations_and_zero_before_assignment():
    x = np.arange(8, dtype=np.float32) + 1.0
    sel = np.array([0, 0, 1, 1, 1, 0], np.int32)
    out = wp.zeros(6, dtype=float, device=DEVICE)
    first = wp.zeros(1, dtype=float, device=DEVICE)
    wp.launch(_recompute_on_change, 1, inputs=[wp.array(x, dtype=float, device=DEVICE),
                                               wp.array(sel, dtype=int, device=DEVICE), out, first],
              device=DEVICE)  # fmt: skip
    blocks = x.reshape(2, 4).sum(axis=1)
    np.testing.assert_array_equal(out.numpy(), blocks[sel])
    assert first.numpy()[0] == 0.0


@wp.kernel
def _gather_rows(x: wp.array2d(dtype=float), rows: wp.array(dtype=int), y: wp.array2d(dtype=float)):
    idx = wp.tile_load(rows, shape=3)
    t = wp.tile_load_indexed(x, idx, shape=(3, 4), offset=(0, 1), axis=0)
    wp.tile_store(y, t)


def test_tile_load_indexed_gathers_and_pads():
    # rows 2, -1 (a padding sentinel: zeros) and 0 of x, columns 1.. (the last one past the end)
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    rows = np.array([2, -1, 0], np.int32)
    y = wp.zeros((3, 4), dtype=float, device=DEVICE)
    wp.launch(_gather_rows, 1, inputs=[wp.array(x, dtype=float, device=DEVICE),
                                       wp.array(rows, dtype=int, device=DEVICE), y], device=DEVICE)  # fmt: skip
    expected = np.zeros((3, 4), np.float32)
    expected[0] = x[2, 1:5]
    expected[2] = x[0, 1:5]
    np.testing.assert_array_equal(y.numpy(), expected)


@wp.kernel
def _scatter(src: wp.array(dtype=float), pos: wp.array(dtype=int), out: wp.array(dtype=float),
             acc: wp.array(dtype=float)):  # fmt: skip
    t = wp.tile_zeros(shape=6, dtype=float)
    s = wp.tile_zeros(shape=6, dtype=float)
    for e in range(4):
        wp.tile_scatter_masked(t, pos[e], src[e], e != 2)
        wp.tile_scatter_add(s, pos[e], src[e], True)
    wp.tile_store(out, t)
    wp.tile_store(acc, s)


def test_tile_scatter_masked_and_add():
    src = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    pos = np.array([5, 0, 3, 0], np.int32)
    out = wp.zeros(6, dtype=float, device=DEVICE)
    acc = wp.zeros(6, dtype=float, device=DEVICE)
    wp.launch(_scatter, 1, inputs=[wp.array(src, dtype=float, device=DEVICE),
                                   wp.array(pos, dtype=int, device=DEVICE), out, acc], device=DEVICE)  # fmt: skip
    np.testing.assert_array_equal(out.numpy(), [4.0, 0, 0, 0, 0, 1.0])  # e = 2 masked off
    np.testing.assert_array_equal(acc.numpy(), [6.0, 0, 0, 3.0, 0, 1.0])
