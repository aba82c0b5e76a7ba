"""wp.mesh_query_aabb / mesh_query_aabb_next and `for face in query:`: the candidate faces
against numpy (every triangle whose bounding box overlaps the query box)."""

# ruff: noqa: UP018  (Warp-style `int(0)` declares an int32 loop variable)

import numpy as np
from test_mesh import make_mesh, sphere_mesh
from wpcompat import wp


@wp.kernel
def count_loop(mesh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
               hits: wp.array2d(dtype=int)):
    i = wp.tid()
    for f in wp.mesh_query_aabb(mesh, lo[i], hi[i]):
        hits[i, f] += 1


@wp.kernel
def count_next(mesh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
               hits: wp.array2d(dtype=int)):
    i = wp.tid()
    q = wp.mesh_query_aabb(mesh, lo[i], hi[i])
    f = int(0)
    while wp.mesh_query_aabb_next(q, f):
        hits[i, f] += 1


def test_aabb_candidates_match_numpy() -> None:
    pts, tris = sphere_mesh()
    mesh = make_mesh(pts, tris)
    rng = np.random.default_rng(0)
    c = rng.normal(size=(40, 3)).astype(np.float32) * 0.8
    h = rng.uniform(0.05, 0.4, size=(40, 3)).astype(np.float32)
    lo, hi = c - h, c + h
    p = pts[tris]
    tlo, thi = p.min(1), p.max(1)
    want = ((tlo[None] <= hi[:, None]) & (thi[None] >= lo[:, None])).all(-1).astype(int)
    assert want.sum() > 0
    for kernel in (count_loop, count_next):
        hits = wp.zeros((40, len(tris)), dtype=int)
        wp.launch(kernel, dim=40, inputs=[mesh.id, wp.array(lo, dtype=wp.vec3),
                                          wp.array(hi, dtype=wp.vec3), hits])
        np.testing.assert_array_equal(hits.numpy(), want)  # each candidate exactly once
