"""wp.geometry.IsoSurfaceNets: closed, manifold, outward-wound meshes (Euler characteristic,
edge use, signed volume against the analytic one) on spheres and random sign fields; every
vertex lies in a crossed cell; gradients from vertices to the field against central
differences of the extraction itself; the quad/triangle forms agree."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import gradloom as wp
import gradloom.geometry as geom

SN = geom.IsoSurfaceNets


def _extract(values: np.ndarray, threshold: float = 0.0, **kw: object) -> tuple[np.ndarray, np.ndarray]:
    v, i = SN.extract(wp.array(values.astype(np.float32), dtype=float), threshold, **kw)
    return v.numpy().astype(np.float64), i.numpy()


def _edge_use(quads: np.ndarray) -> Counter:
    use: Counter = Counter()
    for q in quads:
        for k in range(4):
            a, b = int(q[k]), int(q[(k + 1) % 4])
            use[(min(a, b), max(a, b))] += 1
    return use


def _sphere(n: int, centre: np.ndarray, r: float) -> np.ndarray:
    return np.linalg.norm(np.indices((n, n, n)).transpose(1, 2, 3, 0) - centre, axis=-1) - r


def test_sphere_is_closed_outward_and_near_the_sphere() -> None:
    c, r = np.array([15.3, 16.1, 14.8]), 9.0
    verts, quads = _extract(_sphere(32, c, r), topology="quad")
    quads = quads.reshape(-1, 4)
    use = _edge_use(quads)
    assert set(use.values()) == {2}
    assert len(verts) - len(use) + len(quads) == 2
    _, tris = _extract(_sphere(32, c, r))
    t = tris.reshape(-1, 3)
    p = verts - c
    volume = np.einsum("ij,ij->i", p[t[:, 0]], np.cross(p[t[:, 1]], p[t[:, 2]])).sum() / 6
    assert volume == pytest.approx(4 / 3 * np.pi * r**3, rel=2e-2)
    assert np.abs(np.linalg.norm(p, axis=1) - r).max() < 0.1


@pytest.mark.parametrize("seed", range(3))
def test_random_sign_fields_give_closed_manifolds(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.ones((8, 8, 8))
    values[1:-1, 1:-1, 1:-1] = rng.choice([-1.0, 1.0], size=(6, 6, 6), p=[0.4, 0.6])
    verts, quads = _extract(values, topology="quad")
    quads = quads.reshape(-1, 4)
    assert set(_edge_use(quads).values()) == {2}
    assert np.unique(quads).tolist() == list(range(len(verts)))
    for q in quads:  # four different vertices around each crossed edge
        assert len(set(q.tolist())) == 4
    # every vertex lies in a cell that has both inside and outside corners
    cell = np.floor(verts).astype(int)
    inside = values < 0
    for i, j, k in cell:
        block = inside[i:i + 2, j:j + 2, k:k + 2]
        assert block.any() and not block.all()


def test_triangles_split_the_quads() -> None:
    values = _sphere(12, np.array([5.5, 5.2, 5.9]), 3.3)
    vq, q = _extract(values, topology="quad")
    vt, t = _extract(values)
    np.testing.assert_array_equal(vq, vt)
    q, t = q.reshape(-1, 4), t.reshape(-1, 6)
    np.testing.assert_array_equal(t, q[:, [0, 1, 2, 0, 2, 3]])
    iso = SN(12, 12, 12, topology="quad")
    iso.surface(wp.array(values.astype(np.float32), dtype=float), 0.0)
    np.testing.assert_array_equal(iso.indices.numpy(), q.ravel())
    with pytest.raises(ValueError):
        SN.extract(wp.zeros((4, 4, 4), dtype=float), 0.0, topology="hexagon")


def test_open_surface_drops_vertices_without_faces() -> None:
    values = np.indices((6, 6, 6))[0] - 2.4 + 0.0 * np.indices((6, 6, 6))[1]  # a plane x = 2.4
    verts, quads = _extract(values, topology="quad")
    assert np.unique(quads).tolist() == list(range(len(verts)))
    np.testing.assert_allclose(verts[:, 0], 2.4, atol=1e-6)


def test_gradients_against_central_differences() -> None:
    rng = np.random.default_rng(4)
    base = _sphere(9, np.array([4.2, 3.9, 4.1]), 2.6) + 0.2 * rng.standard_normal((9, 9, 9))
    base = np.where(np.abs(base) < 0.05, 0.05, base)  # keep every node off the threshold
    field = wp.array(base.astype(np.float32), dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        v, _ = SN.extract(field, 0.0)
    w = rng.standard_normal((v.shape[0], 3))
    tape.backward(grads={v: wp.array(w.astype(np.float32), dtype=wp.vec3)})
    got = field.grad.numpy()

    def loss(values: np.ndarray) -> float:
        verts, _ = _extract(values)
        return float((verts * w).sum())

    nodes = np.argwhere(np.abs(got) > 1e-3)
    h = 1e-2
    for idx in nodes[rng.choice(len(nodes), 12, replace=False)]:
        up, dn = base.copy(), base.copy()
        up[tuple(idx)] += h
        dn[tuple(idx)] -= h
        fd = (loss(up) - loss(dn)) / (2 * h)
        assert got[tuple(idx)] == pytest.approx(fd, rel=3e-2, abs=3e-2)
