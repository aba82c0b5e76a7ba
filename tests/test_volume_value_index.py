"""Index lookups and index sampling on value volumes (a voxel's index is its place among the
leaves' values, the order of `get_voxels`), `allocate_by_tiles(bg_value=None)` making an index
volume of whole tiles, the point masks of allocate_by_voxels / allocate_by_tiles and the grid
types typed backgrounds pick, checked against numpy models and warp-lang's choices."""

from __future__ import annotations

import numpy as np

import gradloom as wp


@wp.kernel
def _lookup(vid: wp.uint64, ijk: wp.array2d(dtype=wp.int32), out: wp.array(dtype=wp.int32)):
    t = wp.tid()
    out[t] = wp.volume_lookup_index(vid, ijk[t, 0], ijk[t, 1], ijk[t, 2])


@wp.kernel
def _sample(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), data: wp.array(dtype=float),
            by_index: wp.array(dtype=float), direct: wp.array(dtype=float)):  # fmt: skip
    t = wp.tid()
    by_index[t] = wp.volume_sample_index(vid, pts[t], wp.Volume.LINEAR, data, -3.0)
    direct[t] = wp.volume_sample_f(vid, pts[t], wp.Volume.LINEAR)


def test_value_volume_voxels_are_indexed_in_leaf_order():
    rng = np.random.default_rng(5)
    dense = rng.standard_normal((12, 9, 17)).astype(np.float32)
    for vol in (wp.Volume.load_from_numpy(dense, bg_value=-3.0),
                wp.Volume.load_from_numpy(np.stack([dense] * 3, -1), bg_value=(0.0, 1.0, 2.0))):  # fmt: skip
        ijk = vol.get_voxels().numpy()
        queries = np.concatenate([ijk, ijk[:5] + np.array([1000, 0, 0])]).astype(np.int32)
        out = wp.zeros(len(queries), dtype=wp.int32)
        wp.launch(_lookup, len(queries), inputs=[vol.id, wp.array(queries, dtype=wp.int32), out])
        np.testing.assert_array_equal(out.numpy(), [*range(len(ijk)), -1, -1, -1, -1, -1])


def test_index_sampling_of_a_value_volume_matches_its_own_sampling():
    rng = np.random.default_rng(6)
    dense = rng.standard_normal((10, 10, 10)).astype(np.float32)
    vol = wp.Volume.load_from_numpy(dense, bg_value=-3.0)
    ijk = vol.get_voxels().numpy()
    values = np.full(len(ijk), -3.0, np.float32)  # leaf voxels outside the array hold bg
    inside = np.all(ijk < 10, axis=1)
    values[inside] = dense[ijk[inside, 0], ijk[inside, 1], ijk[inside, 2]]
    pts = rng.uniform(-2.0, 18.0, (300, 3)).astype(np.float32)
    outs = [wp.zeros(300, dtype=float) for _ in range(2)]
    wp.launch(_sample, 300, inputs=[vol.id, wp.array(pts, dtype=wp.vec3), wp.array(values), *outs])
    np.testing.assert_allclose(outs[0].numpy(), outs[1].numpy(), rtol=1e-5, atol=1e-5)


def test_tiles_without_a_background_make_an_index_volume():
    tiles = np.array([[0, 0, 0], [8, 0, 0], [-8, 3, 0]], np.int32)
    vol = wp.Volume.allocate_by_tiles(wp.array(tiles, dtype=wp.int32), voxel_size=1.0, bg_value=None)
    assert vol.is_index and vol.dtype is None and vol.get_voxel_count() == 3 * 512
    ijk = vol.get_voxels().numpy()
    field = ijk @ np.array([1.0, -2.0, 0.5])  # linear: trilinear sampling reproduces it
    pts = np.random.default_rng(7).uniform([-6, 1, 1], [14, 6, 6], (100, 3)).astype(np.float32)
    outs = [wp.zeros(100, dtype=float) for _ in range(2)]
    wp.launch(_sample, 100, inputs=[vol.id, wp.array(pts, dtype=wp.vec3),
                                    wp.array(field.astype(np.float32)), *outs])  # fmt: skip
    np.testing.assert_allclose(outs[0].numpy(), pts.astype(np.float64) @ np.array([1.0, -2.0, 0.5]),
                               rtol=1e-5, atol=1e-4)  # fmt: skip


def test_point_masks_leave_out_points():
    pts = wp.array(np.array([[0, 0, 0], [1, 2, 3], [1, 2, 3], [4, 5, 6], [7, 8, 9]], np.int32), dtype=wp.int32)
    mask = wp.array(np.array([1, 1, 0, 0, 1], np.int32), dtype=wp.int32)
    vol = wp.Volume.allocate_by_voxels(pts, voxel_size=1.0, point_mask=mask)
    assert sorted(map(tuple, vol.get_voxels().numpy())) == [(0, 0, 0), (1, 2, 3), (7, 8, 9)]
    tiles = wp.array(np.array([[0, 0, 0], [8, 0, 0], [16, 0, 0], [16, 0, 0]], np.int32), dtype=wp.int32)
    tile_mask = wp.array(np.array([1, 0, 1, 0], np.int32), dtype=wp.int32)
    vol = wp.Volume.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=None, point_mask=tile_mask)
    assert sorted(map(tuple, vol.get_tiles().numpy())) == [(0, 0, 0), (16, 0, 0)]
    assert vol.get_voxel_count() == 1024
    none = wp.zeros(4, dtype=wp.int32)
    empty = wp.Volume.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=1.0, point_mask=none)
    assert empty.get_tile_count() == 0 and empty.get_tiles().numpy().shape == (0, 3)
    assert wp.Volume.allocate_by_voxels(tiles, voxel_size=1.0, point_mask=none).get_voxel_count() == 0


@wp.kernel
def _background_f64(vid: wp.uint64, out: wp.array(dtype=wp.float64)):
    out[0] = wp.volume_lookup(vid, 100000, 0, 0, dtype=wp.float64)


def test_typed_backgrounds_pick_their_grid_type():
    pts = wp.array(np.array([[0, 0, 0], [8, 0, 0]], np.int32), dtype=wp.int32)
    cases = [(wp.uint32(7), "uint32", wp.uint32), (wp.int64(7), "int64", wp.int64),
             (wp.float64(7.5), "double", wp.float64), (wp.vec3d(1.0, 2.0, 3.0), "Vec3d", wp.vec3d),
             (7, "int32", wp.int32), (7.0, "float", wp.float32), (wp.vec3(1.0, 2.0, 3.0), "Vec3f", wp.vec3f)]  # fmt: skip
    for bg, type_str, dtype in cases:
        for vol in (wp.Volume.allocate_by_tiles(pts, 1.0, bg),
                    wp.Volume.allocate(min=[0, 0, 0], max=[3, 3, 3], voxel_size=1.0, bg_value=bg)):  # fmt: skip
            assert vol.get_grid_info().type_str == type_str and vol.dtype == dtype
    vol = wp.Volume.allocate_by_tiles(pts, 1.0, wp.float64(0.1))
    out = wp.zeros(1, dtype=wp.float64)
    wp.launch(_background_f64, 1, inputs=[vol.id, out])
    assert out.numpy()[0] == 0.1  # exact: a double grid, not a float one


def test_active_stats_count_the_tree():
    pts = wp.array(np.array([[-1, -2, -3], [0, 0, 0], [1, 2, 3], [1, 2, 3], [4, 5, 6], [128, 0, 0]], np.int32),
                   dtype=wp.int32)  # fmt: skip
    vol = wp.Volume.allocate_by_voxels(pts, voxel_size=1.0)
    assert not vol.is_rebuildable and vol.get_rebuild_info() == wp.Volume.RebuildInfo(None, 0, 0, 0, 0)
    # 5 voxels in 3 leaves (origins -8,-8,-8 / 0,0,0 / 128,0,0), 3 lower nodes, 2 upper nodes
    assert vol.get_active_stats() == wp.Volume.ActiveStats(5, 3, 3, 2)
    tiles = wp.Volume.allocate_by_tiles(pts, voxel_size=1.0, bg_value=2.0)
    assert tiles.get_active_stats() == (3 * 512, 3, 3, 2)
    dense = wp.Volume.load_from_numpy(np.ones((9, 9, 9), np.float32))
    assert dense.get_active_stats() == (8 * 512, 8, 1, 1)  # whole leaves, as warp-lang counts
