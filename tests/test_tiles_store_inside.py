"""tile_store's two copies (builtins/tiles.py `_whole_or_each`): a tile wholly inside the array
is stored without a test per element, one that hangs over an edge (or starts before the array)
element by element, skipping what lies outside; both write exactly the elements inside."""

from __future__ import annotations

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp


@wp.kernel
def store_at_k(src: wp.array2d(dtype=float), dst: wp.array2d(dtype=float), r: int, c: int):
    t = wp.tile_load(src, shape=(3, 4))
    wp.tile_store(dst, t * 2.0, offset=(r, c))


@pytest.mark.parametrize("r,c", [(0, 0), (2, 3), (3, 1), (4, 5), (-1, 2), (1, -2), (5, 0),
                                 (-3, -4)])
def test_a_tile_store_writes_exactly_the_elements_inside_the_array(r: int, c: int) -> None:
    if BACKEND == "warp" and min(r, c) < 0:
        pytest.skip("warp-lang 1.19's CPU aborts the process on a negative tile offset")
    src = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    base = np.full((5, 7), -1.0, np.float32)
    dst = wp.array(base, dtype=float, device=DEVICE)
    wp.launch_tiled(store_at_k, dim=[1], inputs=[wp.array(src, dtype=float, device=DEVICE),
                                                 dst, r, c], block_dim=32, device=DEVICE)
    want = base.copy()
    for i in range(3):
        for j in range(4):
            if 0 <= r + i < 5 and 0 <= c + j < 7:
                want[r + i, c + j] = 2 * src[i, j]
    np.testing.assert_array_equal(dst.numpy(), want)
