"""wp.Volume: NanoVDB grids built from numpy and read back (against numpy), trilinear sampling
against a float64 model, coordinate gradients against finite differences, stores into allocated
leaves, .nvdb round trips, and the assets shipped with warp-lang against warp-lang itself."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import gradloom as wp


@wp.kernel
def _probe(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), lookup: wp.array(dtype=float),
           closest: wp.array(dtype=float), linear: wp.array(dtype=float),
           grad: wp.array(dtype=wp.vec3)):  # fmt: skip
    i = wp.tid()
    p = pts[i]
    lookup[i] = wp.volume_lookup_f(vid, int(wp.floor(p[0])), int(wp.floor(p[1])), int(wp.floor(p[2])))
    closest[i] = wp.volume_sample_f(vid, p, wp.Volume.CLOSEST)
    g = wp.vec3()
    linear[i] = wp.volume_sample_grad_f(vid, p, wp.Volume.LINEAR, g)
    grad[i] = g


def _run_probe(volume: wp.Volume, pts: np.ndarray) -> list[np.ndarray]:
    n = len(pts)
    outs = [wp.zeros(n, dtype=float) for _ in range(3)] + [wp.zeros(n, dtype=wp.vec3)]
    wp.launch(_probe, n, inputs=[volume.id, wp.array(pts, dtype=wp.vec3), *outs])
    return [o.numpy() for o in outs]


def _dense_model(data: np.ndarray, bg: float, pts: np.ndarray) -> dict[str, np.ndarray]:
    """Lookups and samples of a dense array padded with bg, in float64."""
    def at(ijk: np.ndarray) -> np.ndarray:
        inside = np.all((ijk >= 0) & (ijk < np.array(data.shape)), axis=1)
        safe = np.clip(ijk, 0, np.array(data.shape) - 1)
        return np.where(inside, data[safe[:, 0], safe[:, 1], safe[:, 2]], bg)

    base = np.floor(pts).astype(np.int64)
    frac = pts - base
    linear = np.zeros(len(pts))
    for c in range(8):
        bits = np.array([(c >> 2) & 1, (c >> 1) & 1, c & 1])
        w = np.prod(np.where(bits, frac, 1 - frac), axis=1)
        linear += w * at(base + bits)
    return {"lookup": at(base), "closest": at(np.floor(pts + 0.5).astype(np.int64)), "linear": linear}


def test_dense_array_round_trip_and_sampling():
    rng = np.random.default_rng(4)
    data = rng.standard_normal((11, 6, 9)).astype(np.float32)
    vol = wp.Volume.load_from_numpy(data, min_world=(1.0, 2.0, 3.0), voxel_size=0.5, bg_value=-2.0)
    assert vol.dtype == wp.float32 and vol.get_voxel_size() == (0.5, 0.5, 0.5)
    assert sorted(map(tuple, vol.get_tiles().numpy())) == [(x, y, z) for x in (0, 8) for y in (0,)
                                                           for z in (0, 8)]  # fmt: skip
    pts = rng.uniform(-2.0, 13.0, size=(200, 3)).astype(np.float32)
    lookup, closest, linear, _ = _run_probe(vol, pts)
    want = _dense_model(data.astype(np.float64), -2.0, pts.astype(np.float64))
    np.testing.assert_array_equal(lookup, want["lookup"].astype(np.float32))
    np.testing.assert_array_equal(closest, want["closest"].astype(np.float32))
    np.testing.assert_allclose(linear, want["linear"], rtol=1e-5, atol=1e-5)


@wp.kernel
def _loss(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    w = wp.volume_index_to_world(vid, pts[i])
    v = wp.volume_sample_f(vid, wp.volume_world_to_index(vid, w * 1.0), wp.Volume.LINEAR)
    wp.atomic_add(out, 0, v * v + w[1])


def test_coordinate_gradients_match_finite_differences():
    rng = np.random.default_rng(8)
    data = rng.standard_normal((10, 10, 10)).astype(np.float32)
    vol = wp.Volume.load_from_numpy(data, min_world=(0.5, -1.0, 2.0), voxel_size=(0.5, 0.25, 2.0))
    pts = rng.uniform(1.0, 8.0, size=(12, 3)).astype(np.float32)
    x = wp.array(pts, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_loss, 12, inputs=[vol.id, x, out])
    tape.backward(loss=out)

    def f(p: np.ndarray) -> float:
        v = _dense_model(data.astype(np.float64), 0.0, p)["linear"]
        return float(np.sum(v * v + (0.25 * p[:, 1] - 1.0)))

    h = 1e-4
    fd = np.zeros_like(pts, dtype=np.float64)
    for i in range(len(pts)):
        for a in range(3):
            e = np.zeros_like(pts, dtype=np.float64)
            e[i, a] = h
            fd[i, a] = (f(pts + e) - f(pts - e)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=2e-3, atol=2e-3)


@wp.kernel
def _world_sum(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    out[0] = wp.dot(wp.volume_index_to_world(vid, pts[0]), wp.vec3(1.0, 1.0, 1.0))


def test_transform_gradient_is_the_transposed_map():
    # torus.nvdb maps index y to world z and z to -y: d(sum(M p + t))/dp is Mᵀ·1 (warp-lang's
    # tape gives M·1 here; gradloom follows the derivative, checked by differences)
    warp = pytest.importorskip("warp")
    path = Path(os.path.dirname(warp.__file__)) / "tests" / "assets" / "torus.nvdb"
    vol = wp.Volume.load_from_nvdb(path)
    mat = vol.get_grid_info().transform_matrix
    p = wp.array([(1.0, 2.0, 3.0)], dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_world_sum, 1, inputs=[vol.id, p, out])
    tape.backward(loss=out)
    np.testing.assert_allclose(p.grad.numpy()[0], mat.T @ np.ones(3), rtol=1e-6)
    assert not np.allclose(mat, mat.T)  # the case where M·1 would be wrong


@wp.kernel
def _store_and_read(vid: wp.uint64, pts: wp.array(dtype=wp.vec3i), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    p = pts[i]
    wp.volume_store(vid, p[0], p[1], p[2], wp.vec3(float(p[0]), float(p[1]), float(p[2]) * 2.0))
    out[i] = wp.volume_lookup_v(vid, p[0], p[1], p[2])


@wp.kernel
def _read_floats(vid: wp.uint64, out: wp.array(dtype=float)):
    out[wp.tid()] = wp.volume_lookup_f(vid, 1, 2, 3)


def test_stores_into_allocated_leaves_and_nvdb_round_trip(tmp_path):
    vol = wp.Volume.allocate(min=[-4, -4, -4], max=[4, 4, 4], voxel_size=0.1, bg_value=wp.vec3(9.0, 9.0, 9.0))
    assert vol.dtype == wp.vec3f and vol.get_grid_info().type_str == "Vec3f"
    pts = np.array([[1, 2, 3], [-4, 0, 4], [100, 0, 0]], np.int32)  # the last is outside every leaf
    out = wp.zeros(3, dtype=wp.vec3)
    wp.launch(_store_and_read, 3, inputs=[vol.id, wp.array(pts, dtype=wp.vec3i), out])
    np.testing.assert_array_equal(out.numpy(), [[1, 2, 6], [-4, 0, 8], [9, 9, 9]])
    for codec in ("none", "zip"):
        vol.save_to_nvdb(tmp_path / f"v_{codec}.nvdb", codec=codec)
        back = wp.Volume.load_from_nvdb(tmp_path / f"v_{codec}.nvdb")
        np.testing.assert_array_equal(back.array().numpy(), vol.array().numpy())
    # a kernel reading the grid as another value type gets zeros, not a crash
    wrong = wp.zeros(1, dtype=float)
    wp.launch(_read_floats, 1, inputs=[vol.id, wrong])
    assert wrong.numpy()[0] == 0.0


def test_bad_inputs_are_named():
    data = np.zeros((8, 8, 8), np.float32)
    with pytest.raises(ValueError, match="positive and finite"):
        wp.Volume.load_from_numpy(data, voxel_size=-0.1)
    with pytest.raises(TypeError, match="voxel_size"):
        wp.Volume.load_from_numpy(data, voxel_size="0.5")
    with pytest.raises(RuntimeError, match="not a NanoVDB file"):
        wp.Volume.load_from_nvdb(b"definitely not a volume")


def test_nanovdb_assets_against_warp_lang():
    warp = pytest.importorskip("warp")
    import volume_warp_kernels

    assets = Path(os.path.dirname(warp.__file__)) / "tests" / "assets"
    rng = np.random.default_rng(2)
    for name in ("torus.nvdb", "test_grid.nvdb"):
        ours = wp.Volume.load_from_nvdb(assets / name)
        theirs = warp.Volume.load_from_nvdb((assets / name).read_bytes(), device="cpu")
        tiles = ours.get_tiles().numpy()
        np.testing.assert_array_equal(tiles, theirs.get_tiles().numpy())
        pts = rng.uniform(tiles.min(0) - 4, tiles.max(0) + 12, size=(128, 3)).astype(np.float32)
        results = []
        for mod, kernel, dev in ((wp, volume_warp_kernels.make(wp), None),
                                 (warp, volume_warp_kernels.make(warp), "cpu")):  # fmt: skip
            vol = ours if mod is wp else theirs
            outs = [mod.zeros(128, dtype=float, device=dev), mod.zeros(128, dtype=mod.vec3, device=dev),
                    mod.zeros(128, dtype=mod.vec3, device=dev)]  # fmt: skip
            mod.launch(kernel, 128, inputs=[vol.id, mod.array(pts, dtype=mod.vec3, device=dev), *outs],
                       device=dev)  # fmt: skip
            results.append([o.numpy() for o in outs])
        for a, b in zip(*results, strict=True):
            np.testing.assert_array_equal(a, b)


@wp.kernel
def _vector_loss(vf: wp.uint64, vv: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    p = pts[i]
    a = wp.volume_sample_v(vv, p, wp.Volume.LINEAR)
    b = wp.volume_sample(vf, p, wp.Volume.LINEAR, dtype=float)
    g = wp.vec3()
    c = wp.volume_sample_grad(vf, p, wp.Volume.LINEAR, g, dtype=float)
    d = wp.volume_world_to_index_dir(vf, wp.volume_index_to_world_dir(vf, p))
    wp.atomic_add(out, 0, wp.dot(a, a) + b * c + wp.dot(d, d) + 0.0 * g[0])


def test_vector_and_generic_sampling_gradients_match_finite_differences():
    rng = np.random.default_rng(12)
    vecs = rng.standard_normal((9, 9, 9, 3)).astype(np.float32)
    scal = rng.standard_normal((9, 9, 9)).astype(np.float32)
    vv = wp.Volume.load_from_numpy(vecs, voxel_size=0.5)
    vf = wp.Volume.load_from_numpy(scal, voxel_size=(0.5, 2.0, 1.0))
    pts = rng.uniform(1.0, 7.0, size=(10, 3)).astype(np.float32)
    x = wp.array(pts, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_vector_loss, 10, inputs=[vf.id, vv.id, x, out])
    tape.backward(loss=out)

    def f(p: np.ndarray) -> float:
        a = np.stack([_dense_model(vecs[..., c].astype(np.float64), 0.0, p)["linear"] for c in range(3)], 1)
        b = _dense_model(scal.astype(np.float64), 0.0, p)["linear"]
        return float(np.sum((a * a).sum(1) + b * b + (p * p).sum(1)))

    h = 1e-4
    fd = np.zeros(pts.shape)
    for i in range(len(pts)):
        for a in range(3):
            e = np.zeros(pts.shape)
            e[i, a] = h
            fd[i, a] = (f(pts + e) - f(pts - e)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=2e-3, atol=2e-3)


@wp.kernel
def _index_probe(vid: wp.uint64, pts: wp.array(dtype=wp.vec3i), data: wp.array(dtype=float),
                 idx: wp.array(dtype=int), sampled: wp.array(dtype=float), count: wp.array(dtype=int)):  # fmt: skip
    i = wp.tid()
    p = pts[i]
    idx[i] = wp.volume_lookup_index(vid, p[0], p[1], p[2])
    uvw = wp.vec3(float(p[0]) + 0.25, float(p[1]), float(p[2]))
    sampled[i] = wp.volume_sample_index(vid, uvw, wp.Volume.LINEAR, data, -1.0)
    count[0] = wp.volume_voxel_count(vid)


def test_index_volume_numbers_voxels_and_samples_an_array():
    voxels = np.array([[5, 3, 1], [0, 0, 0], [-9, 0, 0], [1, 0, 0], [5, 3, 1]], np.int32)
    vol = wp.Volume.allocate_by_voxels(wp.array(voxels, dtype=wp.vec3i), voxel_size=0.5)
    assert vol.is_index and vol.dtype is None and vol.get_voxel_count() == 4
    # numbered leaf by leaf (leaf origins ascending), then by position in the leaf
    order = vol.get_voxels().numpy().tolist()
    assert order == [[-9, 0, 0], [0, 0, 0], [1, 0, 0], [5, 3, 1]]
    data = np.array([10.0, 20.0, 30.0, 40.0], np.float32)
    probe = np.array([[0, 0, 0], [1, 0, 0], [5, 3, 1], [2, 0, 0], [-9, 0, 0]], np.int32)
    idx, sampled, count = wp.zeros(5, dtype=int), wp.zeros(5, dtype=float), wp.zeros(1, dtype=int)
    wp.launch(_index_probe, 5, inputs=[vol.id, wp.array(probe, dtype=wp.vec3i), wp.array(data),
                                       idx, sampled, count])  # fmt: skip
    np.testing.assert_array_equal(idx.numpy(), [1, 2, 3, -1, 0])
    assert count.numpy()[0] == 4
    # x + 0.25 between voxel (x) and (x + 1): background -1 where no voxel is indexed
    np.testing.assert_allclose(sampled.numpy(), [0.75 * 20 + 0.25 * 30, 0.75 * 30 - 0.25,
                                                 0.75 * 40 - 0.25, -1.0, 0.75 * 10 - 0.25])  # fmt: skip


def test_damaged_grids_are_refused_on_load():
    vol = wp.Volume.allocate(min=[0, 0, 0], max=[20, 4, 4], voxel_size=1.0)
    good = vol.array().numpy().copy()
    assert wp.Volume(wp.array(good, dtype=wp.uint8)).get_tile_count() == vol.get_tile_count()
    tree = 672
    root = tree + int(good[tree + 24:tree + 32].view(np.int64)[0])
    bad = good.copy()
    bad[root + 64 + 8:root + 64 + 16] = np.array([12345], np.int64).view(np.uint8)  # root tile child
    with pytest.raises(RuntimeError, match="Invalid NanoVDB grid structure"):
        wp.Volume(wp.array(bad, dtype=wp.uint8))
    with pytest.raises(RuntimeError, match="Invalid NanoVDB grid structure"):
        wp.Volume(wp.array(good[:-8], dtype=wp.uint8))


@wp.kernel
def _index_loss(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), data: wp.array(dtype=float),
                bg: wp.array(dtype=float), out: wp.array(dtype=float)):  # fmt: skip
    i = wp.tid()
    g = wp.vec3()
    a = wp.volume_sample_grad_index(vid, pts[i], wp.Volume.LINEAR, data, bg[0], g)
    b = wp.volume_sample_index(vid, pts[i], wp.Volume.LINEAR, data, bg[0])
    wp.atomic_add(out, 0, a * b)


def test_index_sampling_gradients_reach_points_data_and_background():
    rng = np.random.default_rng(3)
    voxels = np.stack(np.meshgrid(np.arange(4), np.arange(4), np.arange(3), indexing="ij"), -1)
    voxels = voxels.reshape(-1, 3).astype(np.int32)
    vol = wp.Volume.allocate_by_voxels(wp.array(voxels, dtype=wp.vec3i), voxel_size=1.0)
    order = vol.get_voxels().numpy()
    data_np = rng.standard_normal(len(order)).astype(np.float64)
    pts_np = rng.uniform(0.2, 3.2, size=(6, 3))
    bg_np = np.array([0.7])

    def model(p: np.ndarray, data: np.ndarray, bg: float) -> float:
        lookup = {tuple(v): data[k] for k, v in enumerate(order)}
        total = 0.0
        for q in p:
            base = np.floor(q).astype(int)
            f = q - base
            s = 0.0
            for c in range(8):
                bits = np.array([(c >> 2) & 1, (c >> 1) & 1, c & 1])
                w = np.prod(np.where(bits, f, 1 - f))
                s += w * lookup.get(tuple(base + bits), bg)
            total += s * s
        return total

    pts = wp.array(pts_np.astype(np.float32), dtype=wp.vec3, requires_grad=True)
    data = wp.array(data_np.astype(np.float32), requires_grad=True)
    bg = wp.array(bg_np.astype(np.float32), requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_index_loss, 6, inputs=[vol.id, pts, data, bg, out])
    tape.backward(loss=out)
    p32 = pts_np.astype(np.float32).astype(np.float64)
    h = 1e-5
    fd_bg = (model(p32, data_np, 0.7 + h) - model(p32, data_np, 0.7 - h)) / (2 * h)
    np.testing.assert_allclose(bg.grad.numpy()[0], fd_bg, rtol=1e-3, atol=1e-4)
    k = 5
    e = np.zeros_like(data_np)
    e[k] = h
    fd_data = (model(p32, data_np + e, 0.7) - model(p32, data_np - e, 0.7)) / (2 * h)
    np.testing.assert_allclose(data.grad.numpy()[k], fd_data, rtol=1e-3, atol=1e-4)
    e = np.zeros_like(p32)
    e[2, 1] = h
    fd_p = (model(p32 + e, data_np, 0.7) - model(p32 - e, data_np, 0.7)) / (2 * h)
    np.testing.assert_allclose(pts.grad.numpy()[2, 1], fd_p, rtol=2e-3, atol=2e-3)
