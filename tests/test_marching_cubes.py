"""wp.geometry.IsoSurfaceMarchingCubes (and wp.MarchingCubes): every table case traced on random
sign fields gives a closed surface whose winding number is 1 around each inside node and 0
around each outside one (solid angles, numpy); a sphere's mesh lies on the sphere with the
analytic area and volume; vertex gradients against float64 finite differences of the edge
interpolation; bounds, deprecated names and field checks as Warp documents them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradloom as wp
import gradloom.geometry as geom
from gradloom.geometry import mc_tables

MC = geom.IsoSurfaceMarchingCubes


def _mesh(values: np.ndarray, threshold: float = 0.0, **bounds: object) -> tuple[np.ndarray, np.ndarray]:
    v, i = MC.extract(wp.array(values.astype(np.float32), dtype=float), threshold, **bounds)
    return v.numpy().astype(np.float64), i.numpy().reshape(-1, 3)


def _winding(points: np.ndarray, verts: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """Generalised winding number of a triangle mesh around each point (Van Oosterom-Strackee)."""
    out = np.zeros(len(points))
    for k, p in enumerate(points):
        a, b, c = (verts[tris[:, m]] - p for m in range(3))
        la, lb, lc = (np.linalg.norm(x, axis=1) for x in (a, b, c))
        num = np.einsum("ij,ij->i", a, np.cross(b, c))
        den = la * lb * lc + np.einsum("ij,ij->i", a, b) * lc + np.einsum("ij,ij->i", b, c) * la \
            + np.einsum("ij,ij->i", c, a) * lb
        out[k] = 2.0 * np.arctan2(num, den).sum() / (4.0 * np.pi)
    return out


def _closed(tris: np.ndarray) -> bool:
    """Every directed edge appears once and its reverse once: closed and consistently wound."""
    edges = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    fwd = {tuple(e) for e in edges}
    return len(fwd) == len(edges) and all((b, a) in fwd for a, b in fwd)


def test_tables_have_warps_shape() -> None:
    assert len(MC.CUBE_CORNER_OFFSETS) == 8 and len(MC.EDGE_TO_CORNERS) == 12
    assert len(MC.CASE_TO_TRI_RANGE) == 257 and len(MC.TRI_LOCAL_INDICES) == 2460
    assert MC.CASE_TO_TRI_RANGE[0] == MC.CASE_TO_TRI_RANGE[1] == 0
    assert MC.CASE_TO_TRI_RANGE[255] == MC.CASE_TO_TRI_RANGE[256]
    for a, b in MC.EDGE_TO_CORNERS:  # each edge joins two corners one unit apart
        d = np.subtract(MC.CUBE_CORNER_OFFSETS[b], MC.CUBE_CORNER_OFFSETS[a])
        assert sorted(d) == [0, 0, 1]


def test_every_case_is_used_and_fits_its_corners() -> None:
    for case in range(256):
        lo, hi = MC.CASE_TO_TRI_RANGE[case], MC.CASE_TO_TRI_RANGE[case + 1]
        for e in MC.TRI_LOCAL_INDICES[3 * lo:3 * hi]:
            a, b = MC.EDGE_TO_CORNERS[e]
            assert ((case >> a) & 1) != ((case >> b) & 1), (case, e)  # only crossed edges
        crossed = sum(((case >> a) & 1) != ((case >> b) & 1) for a, b in MC.EDGE_TO_CORNERS)
        used = set(MC.TRI_LOCAL_INDICES[3 * lo:3 * hi])
        assert len(used) == crossed, case  # every crossed edge carries a vertex


@pytest.mark.parametrize("seed", range(4))
def test_random_sign_fields_are_closed_and_enclose_their_inside_nodes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.ones((7, 7, 7))
    values[1:-1, 1:-1, 1:-1] = rng.choice([-1.0, 1.0], size=(5, 5, 5), p=[0.45, 0.55])
    verts, tris = _mesh(values)
    assert _closed(tris)
    nodes = np.argwhere(np.ones(values.shape, bool)).astype(np.float64)
    w = _winding(nodes, verts, tris)
    np.testing.assert_allclose(w, (values.ravel() < 0).astype(float), atol=1e-6)


def test_all_256_cases_appear_and_close() -> None:
    # one isolated cell per case, each padded by outside nodes: every case's surface is closed
    values = np.ones((4 * 16 + 1, 4 * 16 + 1, 3))
    for case in range(256):
        x, y = 4 * (case % 16) + 1, 4 * (case // 16) + 1
        for c, (ox, oy, oz) in enumerate(mc_tables.CUBE_CORNER_OFFSETS):
            values[x + ox, y + oy, oz] = -1.0 if (case >> c) & 1 else 1.0
    values[:, :, 0] = 1.0  # keep the bottom layer outside: shift the cells up one layer
    values = np.concatenate([values, np.ones((values.shape[0], values.shape[1], 1))], axis=2)
    values[:, :, 1:3] = values[:, :, 0:2].copy()
    values[:, :, 0] = 1.0
    verts, tris = _mesh(values)
    assert _closed(tris)
    inside = np.argwhere(values < 0).astype(np.float64)
    np.testing.assert_allclose(_winding(inside, verts, tris), 1.0, atol=1e-6)


def _sphere(n: int, centre: np.ndarray, radius: float) -> np.ndarray:
    idx = np.indices((n, n, n)).transpose(1, 2, 3, 0).astype(np.float64)
    return np.linalg.norm(idx - centre, axis=-1) - radius


def test_sphere_lies_on_the_sphere_with_its_area_and_volume() -> None:
    n, r = 48, 14.0
    c = np.array([23.5, 24.2, 22.9])
    verts, tris = _mesh(_sphere(n, c, r))
    assert _closed(tris)
    assert np.abs(np.linalg.norm(verts - c, axis=1) - r).max() < 0.02
    a, b, d = (verts[tris[:, k]] - c for k in range(3))
    area = np.linalg.norm(np.cross(b - a, d - a), axis=1).sum() / 2
    volume = np.einsum("ij,ij->i", a, np.cross(b, d)).sum() / 6  # > 0: wound outward
    assert area == pytest.approx(4 * np.pi * r * r, rel=5e-3)
    assert volume == pytest.approx(4 / 3 * np.pi * r**3, rel=5e-3)


def test_bounds_map_the_corner_nodes() -> None:
    # a plane x = 2.25 (node units) in a (6, 5, 4) grid mapped onto [-1, 1] x [0, 8] x [3, 4]
    values = np.indices((6, 5, 4))[0] - 2.25
    verts, _ = _mesh(values, lower=(-1.0, 0.0, 3.0), upper=(1.0, 8.0, 4.0))
    np.testing.assert_allclose(verts[:, 0], -1.0 + 2.25 * 2.0 / 5.0, rtol=1e-6)
    assert verts[:, 1].min() == pytest.approx(0.0) and verts[:, 1].max() == pytest.approx(8.0)
    assert verts[:, 2].min() == pytest.approx(3.0) and verts[:, 2].max() == pytest.approx(4.0)


def _reference_verts(values: np.ndarray, edges: np.ndarray, thr: float) -> np.ndarray:
    i, j, k, a = edges.T
    p0 = np.stack([i, j, k], 1).astype(np.float64)
    p1 = p0 + np.eye(3)[a]
    f0 = values[i, j, k]
    f1 = values[tuple(p1.astype(int).T)]
    t = (thr - f0) / (f1 - f0)
    return p0 + t[:, None] * (p1 - p0)


def test_vertex_gradients_against_finite_differences() -> None:
    from gradloom.geometry.marching_cubes import topology

    rng = np.random.default_rng(3)
    values = _sphere(10, np.array([4.6, 4.4, 4.8]), 3.1) + 0.3 * rng.standard_normal((10, 10, 10))
    thr = 0.05
    field = wp.array(values.astype(np.float32), dtype=float, requires_grad=True)
    weights = rng.standard_normal((1, 3))
    with wp.Tape() as tape:
        v, _ = MC.extract(field, thr)
    nv = v.shape[0]
    w = np.repeat(weights, nv, axis=0)
    tape.backward(grads={v: wp.array(w.astype(np.float32), dtype=wp.vec3)})
    got = field.grad.numpy()
    edges, _ = topology(values.astype(np.float32), thr)
    base = values.astype(np.float32).astype(np.float64)
    expect = np.zeros_like(base)
    h = 1e-6
    for idx in {tuple(e[:3]) for e in edges} | {tuple(e[:3] + np.eye(3, dtype=int)[e[3]]) for e in edges}:
        up, dn = base.copy(), base.copy()
        up[idx] += h
        dn[idx] -= h
        diff = _reference_verts(up, edges, thr) - _reference_verts(dn, edges, thr)
        expect[idx] = (diff * w).sum() / (2 * h)
    np.testing.assert_allclose(got, expect, rtol=2e-3, atol=2e-3 * np.abs(expect).max())


def test_area_gradient_with_respect_to_radius() -> None:
    @wp.kernel
    def sphere_field(field: wp.array3d(dtype=float), radius: wp.array(dtype=float)):
        i, j, k = wp.tid()
        p = wp.vec3(float(i), float(j), float(k)) * (2.0 / 39.0) - wp.vec3(1.0, 1.0, 1.0)
        field[i, j, k] = wp.length(p) - radius[0]

    @wp.kernel
    def area(verts: wp.array(dtype=wp.vec3), tris: wp.array(dtype=wp.int32), out: wp.array(dtype=float)):
        t = wp.tid()
        a = verts[tris[3 * t]]
        b = verts[tris[3 * t + 1]]
        c = verts[tris[3 * t + 2]]
        wp.atomic_add(out, 0, 0.5 * wp.length(wp.cross(b - a, c - a)))

    r = 0.6
    radius = wp.array([r], dtype=float, requires_grad=True)
    field = wp.zeros((40, 40, 40), dtype=float, requires_grad=True)
    total = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(sphere_field, dim=field.shape, inputs=[field, radius])
        v, i = MC.extract(field, 0.0, lower=(-1.0, -1.0, -1.0), upper=(1.0, 1.0, 1.0))
        wp.launch(area, dim=i.shape[0] // 3, inputs=[v, i, total])
    tape.backward(total)
    assert total.numpy()[0] == pytest.approx(4 * np.pi * r * r, rel=1e-2)
    assert radius.grad.numpy()[0] == pytest.approx(8 * np.pi * r, rel=1e-2)


def test_stateful_interface_resize_and_empty_output() -> None:
    iso = MC(8, 8, 8)
    field = wp.array(_sphere(8, np.array([3.5, 3.5, 3.5]), 2.0).astype(np.float32), dtype=float)
    iso.surface(field, 0.0)
    assert iso.verts.shape[0] > 0 and iso.indices.dtype == wp.int32
    iso.surface(field, 1000.0)
    assert iso.verts.shape == (0,) and iso.indices.shape == (0,)
    with pytest.raises(ValueError, match="does not match"):
        MC(9, 8, 8).surface(field, 0.0)
    iso.resize(16, 16, 16)
    assert (iso.nx, iso.ny, iso.nz) == (16, 16, 16)
    assert isinstance(iso, geom.IsoSurfaceBase)
    with pytest.raises(TypeError):
        geom.IsoSurfaceBase(8, 8, 8)  # abstract


@pytest.mark.parametrize("shape", [(1, 8, 8), (8, 1, 8), (8, 8, 1), (0, 8, 8)])
def test_fields_thinner_than_a_cell_are_refused(shape: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError, match="at least 2 nodes on each axis"):
        MC.extract(wp.zeros(shape, dtype=float), 0.0)


def test_deprecated_names_warn_and_forward() -> None:
    with pytest.warns(DeprecationWarning, match="Use `lower` instead"):
        iso = MC(8, 8, 8, domain_bounds_lower_corner=(-1.0, -2.0, -3.0))
    assert iso.lower == (-1.0, -2.0, -3.0)
    with pytest.raises(TypeError, match="Cannot specify both `upper` and `domain_bounds_upper_corner`"):
        MC(8, 8, 8, upper=(1.0, 1.0, 1.0), domain_bounds_upper_corner=(2.0, 2.0, 2.0))
    field = wp.array(_sphere(8, np.array([3.5, 3.5, 3.5]), 2.0).astype(np.float32), dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        v, i = MC.extract_surface_marching_cubes(field, 0.0)
    v2, i2 = MC.extract(field, 0.0)
    np.testing.assert_array_equal(v.numpy(), v2.numpy())
    np.testing.assert_array_equal(i.numpy(), i2.numpy())


def test_top_level_alias_warns_and_is_the_class() -> None:
    with pytest.warns(DeprecationWarning, match="wp.MarchingCubes is deprecated"):
        alias = wp.MarchingCubes
    assert alias is MC
    assert wp.geometry is geom
