"""wp.geometry.tri_tri_adjacency against a brute-force edge search, and delaunay_edge_flip: on
jittered grids and fans the result is a counter-clockwise triangulation of the same area with
every interior edge passing the empty-circumcircle test (float64 numpy determinants); a
degenerate reference blocks flips; a captured flip runs at replay."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
import gradloom.geometry as geo


def _grid(nx: int, ny: int, jitter: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    xs, ys = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1), indexing="ij")
    p = np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float64)
    inner = (xs.ravel() % nx != 0) & (ys.ravel() % ny != 0)
    p[inner] += rng.uniform(-jitter, jitter, (int(inner.sum()), 2))
    t = []
    for i in range(nx):
        for j in range(ny):
            a, b, c, d = i * (ny + 1) + j, (i + 1) * (ny + 1) + j, (i + 1) * (ny + 1) + j + 1, i * (ny + 1) + j + 1
            t += [[a, b, c], [a, c, d]]
    return p.astype(np.float32), np.array(t, np.int32)


def _area(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    a, b, c = (p[t[:, k]].astype(np.float64) for k in range(3))
    return 0.5 * ((b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0])


def _violations(p: np.ndarray, t: np.ndarray) -> int:
    p = p.astype(np.float64)
    edges: dict = {}
    for ti, tri in enumerate(t):
        for j in range(3):
            e = tuple(sorted((int(tri[(j + 1) % 3]), int(tri[(j + 2) % 3]))))
            edges.setdefault(e, []).append((ti, j))
    bad = 0
    for inc in edges.values():
        if len(inc) == 2:
            (t0, _), (t1, j1) = inc
            m = np.array([[*(p[v] - p[t[t1][j1]]), ((p[v] - p[t[t1][j1]]) ** 2).sum()] for v in t[t0]])
            bad += np.linalg.det(m) > 1e-9
    return bad


def test_adjacency_against_brute_force() -> None:
    _, t = _grid(4, 3, 0.0, 0)
    nbr, edge = geo.tri_tri_adjacency(wp.array(t, dtype=wp.int32))
    nbr, edge = nbr.numpy(), edge.numpy()
    for ti, tri in enumerate(t):
        for j in range(3):
            e = {int(tri[(j + 1) % 3]), int(tri[(j + 2) % 3])}
            other = [(u, k) for u, o in enumerate(t) for k in range(3) if u != ti
                     and {int(o[(k + 1) % 3]), int(o[(k + 2) % 3])} == e]  # fmt: skip
            assert (nbr[ti, j], edge[ti, j]) == (other[0] if other else (-1, -1))


@pytest.mark.parametrize("seed", [1, 2])
def test_flips_reach_a_delaunay_triangulation(seed: int) -> None:
    p, t = _grid(8, 7, 0.3, seed)
    assert _violations(p, t) > 0
    idx = wp.array(t, dtype=wp.int32)
    flips = int(geo.delaunay_edge_flip(wp.array(p, dtype=wp.vec2), idx).numpy()[0])
    out = idx.numpy()
    assert flips > 0 and _violations(p, out) == 0
    assert (_area(p, out) > 0).all()
    assert _area(p, out).sum() == pytest.approx(_area(p, t).sum(), rel=1e-9)
    assert int(geo.delaunay_edge_flip(wp.array(p, dtype=wp.vec2), idx).numpy()[0]) == 0


def test_degenerate_reference_blocks_the_flip() -> None:
    p = np.array([[-3.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, -1.0]], np.float32)
    t = np.array([[0, 1, 2], [1, 0, 3]], np.int32)
    idx = wp.array(t, dtype=wp.int32)
    ref = wp.array(np.array([[-3.0, 0.0], [3.0, 0.0], [0.0, 0.0], [0.0, 0.0]], np.float32), dtype=wp.vec2)
    assert int(geo.delaunay_edge_flip(wp.array(p, dtype=wp.vec2), idx, ref_positions=ref).numpy()[0]) == 0
    assert int(geo.delaunay_edge_flip(wp.array(p, dtype=wp.vec2), idx).numpy()[0]) == 1
    assert sorted(map(sorted, idx.numpy().tolist())) == [[0, 2, 3], [1, 2, 3]]
    with pytest.raises(ValueError):
        geo.delaunay_edge_flip(wp.array(p, dtype=wp.vec2), idx, max_passes=0)


def test_captured_flip_runs_at_replay() -> None:
    p, t = _grid(5, 4, 0.3, 3)
    idx = wp.array(t, dtype=wp.int32)
    pos = wp.array(p, dtype=wp.vec2)
    with wp.ScopedCapture() as capture:
        count = geo.delaunay_edge_flip(pos, idx)
    np.testing.assert_array_equal(idx.numpy(), t)  # recorded, not run
    wp.capture_launch(capture.graph)
    assert count.numpy()[0] > 0 and _violations(p, idx.numpy()) == 0
