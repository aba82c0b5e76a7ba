"""wp.Mesh and the mesh query builtins: closest points against a numpy brute force over every
triangle (float64), the BVH's structure, refit after moving the points, and gradients of the
closest point with respect to the query point against float64 central differences of the
brute force."""

from typing import Any

import numpy as np
import pytest
from wpcompat import wp


def sphere_mesh(n_lat: int = 12, n_lon: int = 16, seed: int = 0) -> tuple[Any, Any]:
    """A jittered UV sphere (no ties between faces for generic query points)."""
    rng = np.random.default_rng(seed)
    th = np.linspace(0.15, np.pi - 0.15, n_lat)
    ph = np.linspace(0, 2 * np.pi, n_lon, endpoint=False)
    t, p = np.meshgrid(th, ph, indexing="ij")
    pts = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], -1).reshape(-1, 3)
    pts = pts + rng.normal(scale=0.02, size=pts.shape)
    tris = []
    for i in range(n_lat - 1):
        for j in range(n_lon):
            a, b = i * n_lon + j, i * n_lon + (j + 1) % n_lon
            c, d = a + n_lon, b + n_lon
            tris += [(a, b, d), (a, d, c)]
    return pts.astype(np.float32), np.array(tris, np.int32)


def seg_closest(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ab = b - a
    t = np.clip(np.einsum("...k,...k", x - a, ab) / np.einsum("...k,...k", ab, ab), 0, 1)
    return a + t[..., None] * ab


def brute_closest(x: np.ndarray, pts: np.ndarray, tris: np.ndarray) -> tuple[np.ndarray, int]:
    """The closest point of the mesh to x (float64): per triangle, the plane projection when it
    falls inside, else the closest of the three edges' closest points."""
    a, b, c = (pts.astype(np.float64)[tris[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    proj = x - np.einsum("ij,ij->i", x - a, n)[:, None] * n
    inside = np.ones(len(a), bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("ij,ij->i", np.cross(v - u, proj - u), n) >= 0
    cands = [seg_closest(x, a, b), seg_closest(x, b, c), seg_closest(x, c, a)]
    best = cands[0]
    for cnd in cands[1:]:
        closer = np.linalg.norm(cnd - x, axis=1) < np.linalg.norm(best - x, axis=1)
        best = np.where(closer[:, None], cnd, best)
    best = np.where(inside[:, None], proj, best)
    f = int(np.argmin(np.linalg.norm(best - x, axis=1)))
    return best[f], f


@wp.kernel
def query(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), max_dist: float,
          found: wp.array(dtype=int), face: wp.array(dtype=int), cp: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, xs[i], max_dist)
    face[i] = q.face
    if q.result:
        found[i] = 1
        cp[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)


def run_query(mesh: Any, xs: np.ndarray, max_dist: float = 10.0) -> tuple[Any, Any, Any]:
    n = len(xs)
    found, face = wp.zeros(n, dtype=int), wp.zeros(n, dtype=int)
    cp = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
    x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
    wp.launch(query, dim=n, inputs=[mesh.id, x, max_dist], outputs=[found, face, cp])
    return found.numpy(), face.numpy(), cp.numpy()


def make_mesh(pts: np.ndarray, tris: np.ndarray) -> Any:
    return wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(tris.ravel(),
                                                                      dtype=wp.int32))


def test_closest_point_matches_brute_force() -> None:
    pts, tris = sphere_mesh()
    mesh = make_mesh(pts, tris)
    xs = np.random.default_rng(1).normal(size=(300, 3)).astype(np.float32) * 0.8
    found, _face, cp = run_query(mesh, xs)
    assert found.all()
    for i, x in enumerate(xs.astype(np.float64)):
        ref, _ = brute_closest(x, pts, tris)
        # the distance is what is unique (a tie may pick either face)
        assert abs(np.linalg.norm(cp[i] - x) - np.linalg.norm(ref - x)) < 2e-5
        assert np.linalg.norm(cp[i] - ref) < 1e-3


def test_max_dist_and_not_found() -> None:
    pts, tris = sphere_mesh()
    mesh = make_mesh(pts, tris)
    xs = np.array([[0, 0, 0], [0, 0, 3.0], [0.9, 0.1, 0.1]], np.float32)
    found, face, _ = run_query(mesh, xs, max_dist=0.5)
    dists = [np.linalg.norm(brute_closest(x, pts, tris)[0] - x) for x in xs.astype(np.float64)]
    assert list(found) == [int(d < 0.5) for d in dists] == [0, 0, 1]
    assert face[0] == face[1] == 0  # Warp's value when nothing is found


def test_refit_follows_moved_points() -> None:
    pts, tris = sphere_mesh()
    mesh = make_mesh(pts, tris)
    moved = pts * 2.0 + np.float32(0.5)
    mesh.points.assign(moved)
    mesh.refit()
    xs = np.random.default_rng(2).normal(size=(50, 3)).astype(np.float32)
    _, _, cp = run_query(mesh, xs)
    for i, x in enumerate(xs.astype(np.float64)):
        ref, _ = brute_closest(x, moved, tris)
        assert abs(np.linalg.norm(cp[i] - x) - np.linalg.norm(ref - x)) < 5e-5


def test_bvh_skip_pointers_cover_every_triangle_once() -> None:
    pts, tris = sphere_mesh(7, 9)
    nodes = make_mesh(pts, tris)._nodes
    leaves = nodes["prim"][nodes["prim"] >= 0]
    assert sorted(leaves) == list(range(len(tris)))
    assert nodes["skip"][0] == len(nodes)
    inner = np.where(nodes["prim"] < 0)[0]
    for i in inner:  # every inner node's box holds the boxes of its subtree
        sub = slice(i + 1, nodes["skip"][i])
        assert (nodes["lower"][sub] >= nodes["lower"][i]).all()
        assert (nodes["upper"][sub] <= nodes["upper"][i]).all()


def test_closest_point_gradient_wrt_query_point() -> None:
    """d(w . closest(x))/dx through the barycentrics, against float64 central differences of
    the brute force (points away from edges, where the closest point is smooth in x)."""
    pts, tris = sphere_mesh()
    mesh = make_mesh(pts, tris)
    rng = np.random.default_rng(3)
    xs = (rng.normal(size=(8, 3)) * 0.5).astype(np.float32)
    w = rng.normal(size=(8, 3)).astype(np.float32)
    x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
    found, face = wp.zeros(8, dtype=int), wp.zeros(8, dtype=int)
    cp = wp.zeros(8, dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(query, dim=8, inputs=[mesh.id, x, 10.0], outputs=[found, face, cp])
    tape.backward(grads={cp: wp.array(w, dtype=wp.vec3)})
    got = x.grad.numpy()
    eps = 1e-5
    for i in range(8):
        x0 = xs[i].astype(np.float64)
        fd = np.array([(w[i] @ brute_closest(x0 + eps * e, pts, tris)[0]
                        - w[i] @ brute_closest(x0 - eps * e, pts, tris)[0]) / (2 * eps)
                       for e in np.eye(3)])
        np.testing.assert_allclose(got[i], fd, rtol=1e-3, atol=1e-3)


def test_bad_inputs_raise_clear_errors() -> None:
    pts, tris = sphere_mesh(4, 5)
    with pytest.raises(ValueError, match="indices"):
        wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(tris.ravel()[:-1],
                                                                      dtype=wp.int32))
    with pytest.raises(ValueError, match="vertex index"):
        wp.Mesh(points=wp.array(pts[:3], dtype=wp.vec3),
                indices=wp.array(tris.ravel(), dtype=wp.int32))


def test_single_triangle_mesh() -> None:
    """The root is a leaf: both the greedy descent and the walk start there."""
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    tris = np.array([[0, 1, 2]], np.int32)
    mesh = make_mesh(pts, tris)
    xs = np.array([[0.2, 0.2, 0.5], [2.0, 2.0, 0.0]], np.float32)
    found, face, cp = run_query(mesh, xs)
    assert list(found) == [1, 1] and list(face) == [0, 0]
    np.testing.assert_allclose(cp, [[0.2, 0.2, 0], [0.5, 0.5, 0]], atol=1e-6)


@wp.kernel
def furthest(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), min_dist: float,
             found: wp.array(dtype=int), fp: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.mesh_query_furthest_point_no_sign(mesh, xs[i], min_dist)
    if q.result:
        found[i] = 1
        fp[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)


def test_furthest_point_matches_numpy() -> None:
    pts, tris = sphere_mesh()
    mesh = make_mesh(pts, tris)
    xs = np.random.default_rng(8).normal(size=(50, 3)).astype(np.float32)
    found, fp = wp.zeros(50, dtype=int), wp.zeros(50, dtype=wp.vec3)
    wp.launch(furthest, dim=50, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3), 0.0],
              outputs=[found, fp])
    used = pts[np.unique(tris)].astype(np.float64)  # the furthest point is a vertex
    want = np.linalg.norm(used[None] - xs[:, None].astype(np.float64), axis=-1).max(1)
    assert found.numpy().all()
    np.testing.assert_allclose(np.linalg.norm(fp.numpy() - xs, axis=1), want, rtol=1e-5)
    found.zero_()
    wp.launch(furthest, dim=50, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3), 100.0],
              outputs=[found, fp])
    assert not found.numpy().any()  # nothing further than min_dist
