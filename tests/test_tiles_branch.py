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
