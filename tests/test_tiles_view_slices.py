"""slice(...) objects inside a tuple in kernel code (frontend/expr.py `expr_Tuple`), as
Warp's `wp.tile_view(t, offset=(slice(0, -1, 1),))` writes them: negative bounds count from
the end of the parent tile, and 'shape' together with a slice offset is refused."""

from __future__ import annotations

import numpy as np
import pytest
from wpcompat import DEVICE, wp

N = 16


@wp.kernel
def drop_last_k(src: wp.array1d(dtype=float), dst: wp.array1d(dtype=float)):
    t = wp.tile_load(src, shape=(N,))
    wp.tile_store(dst, wp.tile_view(t, offset=(slice(0, -1, 1),)))


@wp.kernel
def last_three_k(src: wp.array1d(dtype=float), dst: wp.array1d(dtype=float)):
    t = wp.tile_load(src, shape=(N,))
    wp.tile_store(dst, wp.tile_view(t, offset=(slice(-3, N, 1),)))


def _run(kernel, src: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    dst = wp.zeros(shape, dtype=float, device=DEVICE)
    wp.launch_tiled(kernel, dim=[1], inputs=[wp.array(src, dtype=float, device=DEVICE), dst],
                    block_dim=32, device=DEVICE)
    return dst.numpy()


def test_slices_in_an_offset_tuple_view_the_tile() -> None:
    a = np.arange(N, dtype=np.float32)
    np.testing.assert_array_equal(_run(drop_last_k, a, (N - 1,)), a[:-1])
    np.testing.assert_array_equal(_run(last_three_k, a, (3,)), a[-3:])


def test_shape_with_a_slice_offset_is_refused() -> None:
    @wp.kernel(module="unique")
    def shaped_k(src: wp.array1d(dtype=float), dst: wp.array1d(dtype=float)):
        t = wp.tile_load(src, shape=(N,))
        wp.tile_store(dst, wp.tile_view(t, offset=(slice(0, 2, 1),), shape=(2,)))

    with pytest.raises(Exception, match="'shape' together with a slice"):
        _run(shaped_k, np.zeros(N, np.float32), (2,))
