"""The launch path's quick checks give what the general ones give: arrays made by
`wp.array1d`-`array4d` (subclasses of array) are recalled like plain arrays
(runtime/launch/packing.py), grids given as tuples and lists of ints pass `_dims` unconverted
and everything else still goes through its checks (runtime/launch/launch.py), and
`launch_tiled` adds the block dimension to int, list and tuple grids alike."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import GradloomError, LaunchError
from gradloom.runtime.launch import packing


@wp.kernel
def scale2d(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float), s: wp.array1d(dtype=float)):
    i, j = wp.tid()
    y[i, j] = s[0] * x[i, j]


@wp.kernel
def grid_ids(out: wp.array(dtype=int)):
    i, j, k = wp.tid()
    out[(i * 3 + j) * 2 + k] = i * 100 + j * 10 + k


@wp.kernel
def tile_rows(out: wp.array2d(dtype=float)):
    i, lane = wp.tid()
    out[i, lane] = float(i + 1)


def test_arrays_made_by_array2d_are_recalled(monkeypatch: pytest.MonkeyPatch) -> None:
    x = wp.array2d(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=float)
    y = wp.array2d(np.zeros((2, 3), np.float32), dtype=float)
    s = wp.array1d(np.full(1, 2.0, np.float32), dtype=float)
    assert type(x) is not wp.array  # the subclass the quick path has to accept
    for _ in range(2):
        wp.launch(scale2d, (2, 3), inputs=[x, y, s])
    converted = []
    original = packing.Packer.values
    monkeypatch.setattr(packing.Packer, "values",
                        lambda self, args: converted.append(1) or original(self, args))
    wp.launch(scale2d, (2, 3), inputs=[y, x, s])  # new arrays' order: packed afresh
    wp.launch(scale2d, (2, 3), inputs=[y, x, s])
    assert converted == [1]
    np.testing.assert_array_equal(x.numpy(), np.arange(6).reshape(2, 3) * 4.0)


@pytest.mark.parametrize("dim", [(4, 3, 2), [4, 3, 2], (np.int64(4), 3, 2)])
def test_grids_of_ints_in_any_form_launch_alike(dim: object) -> None:
    out = wp.zeros(24, dtype=int)
    wp.launch(grid_ids, dim, inputs=[out])
    want = [i * 100 + j * 10 + k for i in range(4) for j in range(3) for k in range(2)]
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("dim", [(4, True, 2), (4, -3, 2), (1, 1, 1, 1, 1), (), (4, 3.0, 2),
                                 (2**32, 2**32, 1)])
def test_grids_the_quick_path_cannot_take_are_refused(dim: object) -> None:
    with pytest.raises(LaunchError, match="launch dim must be"):
        wp.launch(grid_ids, dim, inputs=[wp.zeros(24, dtype=int)])


@pytest.mark.parametrize("dim", [3, [3], (3,)])
def test_launch_tiled_adds_the_block_to_any_grid(dim: object) -> None:
    out = wp.zeros((3, 1), dtype=float)
    wp.launch_tiled(tile_rows, dim=dim, inputs=[out], block_dim=64)
    np.testing.assert_array_equal(out.numpy().ravel(), [1.0, 2.0, 3.0])


def test_launch_tiled_refuses_a_grid_of_four_dimensions() -> None:
    with pytest.raises(GradloomError, match="at most 3"):
        wp.launch_tiled(tile_rows, dim=[1, 1, 1, 1], inputs=[wp.zeros((1, 1), dtype=float)],
                        block_dim=64)
