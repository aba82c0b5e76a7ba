"""wp.geometry.sparse_marching_cubes, lipschitz_octree and sparse_marching_cubes_from_cells:
the octree's leaves contain every cell a dense numpy scan finds crossed, the sparse mesh is the
dense mesh (same vertices, same triangles as sets), is closed, and gradients through corner
values match float64 finite differences of the edge interpolation, landing on the first entry
that names each shared corner."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
import gradloom.geometry as geom


@wp.kernel
def _sphere_values(points: wp.array(dtype=wp.vec3), radius: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(points[i] - wp.vec3(0.03, -0.02, 0.01)) - radius


def _sphere(radius: float = 0.5):
    def evaluate(points: wp.array) -> wp.array:
        out = wp.empty(points.shape[0], dtype=float, device=points.device)
        wp.launch(_sphere_values, dim=points.shape[0], inputs=[points, radius, out], device=points.device)
        return out

    return evaluate


def _dense_values(n: tuple[int, int, int], lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    idx = np.indices(n).transpose(1, 2, 3, 0).astype(np.float32)
    delta = ((upper - lower) / (np.array(n) - 1)).astype(np.float32)
    pts = lower.astype(np.float32) + delta * idx
    out = wp.empty(int(np.prod(n)), dtype=float)
    wp.launch(_sphere_values, dim=out.shape[0], inputs=[wp.array(pts.reshape(-1, 3), dtype=wp.vec3), 0.5, out])
    return out.numpy().reshape(n)


def _tri_set(tris: np.ndarray) -> set:
    """Triangles up to rotation (the winding kept)."""
    return {tuple(np.roll(t, -int(np.argmin(t)))) for t in tris}


@pytest.mark.parametrize("n", [(17, 17, 17), (11, 15, 21)])
def test_sparse_equals_dense(n: tuple[int, int, int]) -> None:
    lower, upper = np.array([-1.0, -1.1, -0.9]), np.array([1.0, 1.2, 1.0])
    v, i, stats = geom.sparse_marching_cubes(_sphere(), *n, lower=tuple(lower), upper=tuple(upper),
                                             return_stats=True)  # fmt: skip
    field = wp.array(_dense_values(n, lower, upper), dtype=float)
    dv, di = geom.IsoSurfaceMarchingCubes.extract(field, 0.0, lower=tuple(lower), upper=tuple(upper))
    sv, st = v.numpy(), i.numpy().reshape(-1, 3)
    # the same crossed edges, numbered in the same order
    np.testing.assert_allclose(sv, dv.numpy(), atol=1e-5)
    assert len(st) == len(set(map(tuple, st))) and _tri_set(st) == _tri_set(di.numpy().reshape(-1, 3))
    assert stats["field_evaluations"] < int(np.prod(n))


def test_octree_brackets_every_crossed_cell() -> None:
    depth, width = 5, 2.0
    cells, h = geom.lipschitz_octree(_sphere(), (-1.0, -1.0, -1.0), width, depth)
    assert h == pytest.approx(width / 32)
    kept = {tuple(c) for c in cells.numpy()}
    values = _dense_values((33, 33, 33), np.full(3, -1.0), np.full(3, 1.0))
    inside = values < 0
    corners = [inside[a:a + 32, b:b + 32, c:c + 32] for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    count = sum(x.astype(int) for x in corners)
    crossed = {tuple(c) for c in np.argwhere((count > 0) & (count < 8))}
    assert crossed and crossed <= kept


def _edges_closed(tris: np.ndarray) -> bool:
    edges = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    fwd = {tuple(e) for e in edges}
    return len(fwd) == len(edges) and all((b, a) in fwd for a, b in fwd)


def test_from_cells_gradients_reach_the_first_entry() -> None:
    offsets = np.array(geom.IsoSurfaceMarchingCubes.CUBE_CORNER_OFFSETS)
    g = np.arange(6)
    cells = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    rng = np.random.default_rng(1)
    node = np.linalg.norm(np.indices((7, 7, 7)).transpose(1, 2, 3, 0) - 3.1, axis=-1) - 2.2
    node += 0.2 * rng.standard_normal(node.shape)
    corner = cells[:, None, :] + offsets[None]
    vals = node[corner[..., 0], corner[..., 1], corner[..., 2]].astype(np.float32)
    cv = wp.array(vals, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        v, _i = geom.sparse_marching_cubes_from_cells(cells, cv, origin=(0.5, 0.0, -1.0), cell_width=0.25,
                                                     threshold=0.1)  # fmt: skip
    w = rng.standard_normal((v.shape[0], 3))
    tape.backward(grads={v: wp.array(w.astype(np.float32), dtype=wp.vec3)})
    got = cv.grad.numpy()
    # float64 model: vertex on edge (p, p + e_a) at t = (0.1 - f(p)) / (f(p + e_a) - f(p))
    verts = v.numpy().astype(np.float64)
    expect = np.zeros_like(vals, dtype=np.float64)
    first = {}
    for c in range(len(cells)):
        for k in range(8):
            first.setdefault(tuple(corner[c, k]), (c, k))
    f = node.astype(np.float32).astype(np.float64)
    for vi, p in enumerate(verts):
        q = (p - np.array([0.5, 0.0, -1.0])) / 0.25
        a = int(np.argmax(np.abs(q - np.round(q))))  # the axis along which the vertex is interpolated
        lo = np.round(q).astype(int)
        lo[a] = int(np.floor(q[a] + 1e-9))
        hi = lo.copy()
        hi[a] += 1
        f0, f1 = f[tuple(lo)], f[tuple(hi)]
        d0 = 0.25 * (0.1 - f1) / (f1 - f0) ** 2  # d position[a] / d f0
        d1 = -0.25 * (0.1 - f0) / (f1 - f0) ** 2
        expect[first[tuple(lo)]] += w[vi, a] * d0
        expect[first[tuple(hi)]] += w[vi, a] * d1
    np.testing.assert_allclose(got, expect, rtol=2e-3, atol=2e-3 * np.abs(expect).max())


def test_sparse_mesh_of_a_closed_surface_is_closed() -> None:
    _v, i = geom.sparse_marching_cubes(_sphere(0.6), 33, 33, 33, lower=(-1.0, -1.0, -1.0), upper=(1.0, 1.0, 1.0))
    assert _edges_closed(i.numpy().reshape(-1, 3))


def test_refusals() -> None:
    @wp.func
    def single(p: wp.vec3) -> float:
        return wp.length(p)

    with pytest.raises(TypeError):
        geom.sparse_marching_cubes(single, 9, 9, 9)
    with pytest.raises(ValueError):
        geom.sparse_marching_cubes(_sphere(), 1, 9, 9)
    with pytest.raises(ValueError):
        geom.lipschitz_octree(_sphere(), (0.0, 0.0, 0.0), 1.0, 3, lipschitz_bound=-1.0)
    with pytest.raises(ValueError):
        geom.sparse_marching_cubes_from_cells(np.zeros((1, 3)), np.zeros((1, 8)), cell_width=0.0)
    with pytest.raises(ValueError):
        geom.sparse_marching_cubes_from_cells(np.zeros((0, 3)), np.zeros(3))
