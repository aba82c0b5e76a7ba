"""Rebuildable volumes: `rebuild` rewrites the grid in the buffer it was allocated with (the id
kernels hold stays valid), the active topology equals the numpy count of the points' leaves and
internal nodes, rebuilt tiles hold the background given at allocation, an index volume numbers
exactly the rebuilt voxels, and topologies beyond the capacities set the REBUILD_* flags and keep
what fits."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp


@wp.kernel
def _lookup(vid: wp.uint64, pts: wp.array(dtype=wp.vec3i), out: wp.array(dtype=float)):
    i = wp.tid()
    p = pts[i]
    out[i] = wp.volume_lookup_f(vid, p[0], p[1], p[2])


@wp.kernel
def _lookup_index(vid: wp.uint64, pts: wp.array(dtype=wp.vec3i), out: wp.array(dtype=wp.int32)):
    i = wp.tid()
    p = pts[i]
    out[i] = wp.int32(wp.volume_lookup_index(vid, p[0], p[1], p[2]))


@wp.kernel
def _count(vid: wp.uint64, out: wp.array(dtype=wp.int32)):
    out[0] = wp.int32(wp.volume_voxel_count(vid))


def _stats(voxels: np.ndarray) -> tuple[int, int, int, int]:
    return (len(voxels), len(np.unique(voxels // 8, axis=0)), len(np.unique(voxels // 128, axis=0)),
            len(np.unique(voxels // 4096, axis=0)))  # fmt: skip


def test_tile_volume_rebuilds_in_place_with_its_background() -> None:
    status = wp.zeros(1, dtype=wp.uint32)
    bg = [2.5]
    vol = wp.Volume.allocate_by_tiles(wp.array([[0, 0, 0]], dtype=wp.int32), 1.0, 2.5, rebuildable=True,
                                      max_tiles=3, max_lower_nodes=3, max_upper_nodes=2, status=status)  # fmt: skip
    bg[0] = 9.0  # nothing kept refers to the caller's objects
    vid = vol.id
    assert vol.is_rebuildable and vol.get_rebuild_info() == wp.Volume.RebuildInfo("tiles", 3 * 512, 3, 3, 2)
    tiles = np.array([[8, 0, 0], [5000, 9, 0], [8, 7, 7]], np.int32)  # two distinct tiles
    vol.rebuild(wp.array(tiles, dtype=wp.int32), status=status)
    assert vol.id == vid and int(status.numpy()[0]) == wp.Volume.REBUILD_SUCCESS
    origins = np.unique(tiles // 8 * 8, axis=0)
    voxels = (origins[:, None, :] + np.indices((8, 8, 8)).reshape(3, -1).T[None]).reshape(-1, 3)
    assert tuple(vol.get_active_stats()) == _stats(voxels)
    probe = np.array([[8, 1, 2], [5003, 15, 7], [0, 0, 0]], np.int32)  # the old tile is gone
    out = wp.zeros(3, dtype=float)
    wp.launch(_lookup, 3, inputs=[vid, wp.array(probe, dtype=wp.vec3i), out])
    np.testing.assert_array_equal(out.numpy(), [2.5, 2.5, 2.5])
    got = wp.full((3, 3), -1, dtype=wp.int32)
    vol.get_tiles(out=got)
    np.testing.assert_array_equal(np.unique(got.numpy()[:2], axis=0), origins)
    assert (got.numpy()[2] == -1).all()


def test_index_volume_numbers_the_rebuilt_voxels() -> None:
    vol = wp.Volume.allocate_by_voxels(wp.array([[0, 0, 0]], dtype=wp.int32), 1.0, max_active_voxels=5)
    pts = np.array([[1, 2, 3], [40, 0, 0], [1, 2, 3], [7, 7, 8], [-3, 0, 0]], np.int32)
    mask = np.array([1, 1, 1, 0, 1], np.int32)
    vol.rebuild(wp.array(pts, dtype=wp.int32), point_mask=wp.array(mask, dtype=wp.int32))
    kept = np.unique(pts[mask != 0], axis=0)
    assert tuple(vol.get_active_stats()) == _stats(kept)
    count = wp.zeros(1, dtype=wp.int32)
    wp.launch(_count, 1, inputs=[vol.id, count])
    assert count.numpy()[0] == len(kept) and vol.get_voxel_count() == 5  # the reserved capacity
    idx = wp.zeros(5, dtype=wp.int32)
    wp.launch(_lookup_index, 5, inputs=[vol.id, wp.array(pts, dtype=wp.vec3i), idx])
    found = idx.numpy()
    assert found[3] < 0 and sorted(set(found[[0, 1, 4]].tolist())) == list(range(len(kept)))


def test_capacity_flags_and_truncation() -> None:
    status = wp.zeros(1, dtype=wp.uint32)
    vol = wp.Volume.allocate_by_voxels(wp.array([[0, 0, 0]], dtype=wp.int32), 1.0, max_active_voxels=2,
                                       max_leaf_nodes=2, max_lower_nodes=1, max_upper_nodes=1)  # fmt: skip
    far = np.array([[0, 0, 0], [1, 0, 0], [300, 0, 0]], np.int32)  # 3 voxels, 2 leaves, 2 lowers
    vol.rebuild(wp.array(far, dtype=wp.int32), status=status)
    flags = int(status.numpy()[0])
    assert flags == wp.Volume.REBUILD_VOXEL_CAPACITY_EXCEEDED | wp.Volume.REBUILD_LOWER_CAPACITY_EXCEEDED
    stats = vol.get_active_stats()
    assert stats.voxel_count <= 2 and stats.leaf_node_count <= 2 and stats.lower_node_count <= 1
    with pytest.raises(RuntimeError):
        wp.Volume.allocate_by_voxels(wp.array([[0, 0, 0]], dtype=wp.int32), 1.0).rebuild(
            wp.array([[1, 1, 1]], dtype=wp.int32))
    with pytest.raises(ValueError):
        wp.Volume.allocate_by_voxels(wp.array([[0, 0, 0]], dtype=wp.int32), 1.0, max_active_voxels=0)
