"""wp.mesh_query_ray: nearest hits against a numpy brute force over every triangle (plane
intersection + edge-side tests, float64), misses, and gradients of t and the barycentrics with
respect to the ray's origin and direction against float64 central differences of the brute
force."""

from typing import Any

import numpy as np
from test_mesh import make_mesh, sphere_mesh
from wpcompat import wp


def brute_ray(o: np.ndarray, d: np.ndarray, pts: np.ndarray, tris: np.ndarray,
              max_t: float) -> tuple[float, int, np.ndarray]:
    """(t, face, weights of the three vertices) of the nearest hit, or (inf, -1, 0)."""
    a, b, c = (pts.astype(np.float64)[tris[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.einsum("ij,ij->i", a - o, n) / (n @ d)
    x = o + t[:, None] * d
    area = np.einsum("ij,ij->i", n, n)
    w = [np.einsum("ij,ij->i", np.cross(v - u, x - u), n) / area
         for u, v in ((b, c), (c, a), (a, b))]  # weights of a, b, c
    ok = (t >= 0) & (t <= max_t) & (w[0] >= 0) & (w[1] >= 0) & (w[2] >= 0)
    if not ok.any():
        return np.inf, -1, np.zeros(3)
    f = int(np.argmin(np.where(ok, t, np.inf)))
    return float(t[f]), f, np.array([w[0][f], w[1][f], w[2][f]])


@wp.kernel
def cast(mesh: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
         max_t: float, hit: wp.array(dtype=int), face: wp.array(dtype=int),
         tuv: wp.array(dtype=wp.vec3), sign: wp.array(dtype=float),
         normal: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    r = wp.mesh_query_ray(mesh, o[i], d[i], max_t)
    if r.result:
        hit[i] = 1
    face[i] = r.face
    tuv[i] = wp.vec3(r.t, r.u, r.v)
    sign[i] = r.sign
    normal[i] = r.normal


def run(mesh: Any, o: np.ndarray, d: np.ndarray, max_t: float) -> list[Any]:
    n = len(o)
    outs = [wp.zeros(n, dtype=int), wp.zeros(n, dtype=int),
            wp.zeros(n, dtype=wp.vec3, requires_grad=True), wp.zeros(n, dtype=float),
            wp.zeros(n, dtype=wp.vec3)]
    ins = [wp.array(o, dtype=wp.vec3, requires_grad=True),
           wp.array(d, dtype=wp.vec3, requires_grad=True)]
    return [ins, outs]


def test_ray_hits_match_brute_force() -> None:
    pts, tris = sphere_mesh()
    mesh = make_mesh(pts, tris)
    rng = np.random.default_rng(0)
    o = (rng.normal(size=(200, 3)) * 0.6).astype(np.float32)
    d = (rng.normal(size=(200, 3)) * 2).astype(np.float32)
    d[:5, 0] = 0.0  # axis-parallel components
    ins, outs = run(mesh, o, d, 2.0)
    wp.launch(cast, dim=200, inputs=[mesh.id, *ins, 2.0], outputs=outs)
    hit, face, tuv, sign, normal = (a.numpy() for a in outs)
    for i in range(200):
        t, f, w = brute_ray(o[i].astype(np.float64), d[i].astype(np.float64), pts, tris, 2.0)
        assert hit[i] == (f >= 0)
        if f < 0:
            assert face[i] == 0 and not tuv[i].any()
            continue
        assert abs(tuv[i][0] - t) < 1e-5
        if face[i] == f:  # a hit on a shared edge may name either face
            np.testing.assert_allclose(tuv[i][1:], w[:2], atol=1e-4)
        tri = pts[tris[face[i]]].astype(np.float64)
        n = np.cross(tri[1] - tri[0], tri[2] - tri[0])
        np.testing.assert_allclose(normal[i], n / np.linalg.norm(n), atol=1e-5)
        assert sign[i] == (1.0 if d[i] @ n < 0 else -1.0)


def test_ray_gradients_wrt_origin_and_direction() -> None:
    pts, tris = sphere_mesh()
    mesh = make_mesh(pts, tris)
    rng = np.random.default_rng(5)
    o = (rng.normal(size=(6, 3)) * 0.3).astype(np.float32)
    d = rng.normal(size=(6, 3)).astype(np.float32)
    w = rng.normal(size=(6, 3)).astype(np.float32)
    ins, outs = run(mesh, o, d, 10.0)
    tape = wp.Tape()
    with tape:
        wp.launch(cast, dim=6, inputs=[mesh.id, *ins, 10.0], outputs=outs)
    tape.backward(grads={outs[2]: wp.array(w, dtype=wp.vec3)})

    def objective(i: int, oi: np.ndarray, di: np.ndarray) -> float:
        t, _, wts = brute_ray(oi, di, pts, tris, 10.0)
        return float(w[i] @ np.array([t, wts[0], wts[1]]))

    eps = 1e-5
    for i in range(6):
        o0, d0 = o[i].astype(np.float64), d[i].astype(np.float64)
        fd_o = [(objective(i, o0 + eps * e, d0) - objective(i, o0 - eps * e, d0)) / (2 * eps)
                for e in np.eye(3)]
        fd_d = [(objective(i, o0, d0 + eps * e) - objective(i, o0, d0 - eps * e)) / (2 * eps)
                for e in np.eye(3)]
        np.testing.assert_allclose(ins[0].grad.numpy()[i], fd_o, rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(ins[1].grad.numpy()[i], fd_d, rtol=2e-3, atol=2e-3)


@wp.kernel
def count_any(mesh: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
              counts: wp.array(dtype=int), anyhit: wp.array(dtype=int),
              legacy: wp.array(dtype=wp.vec3), legacy_face: wp.array(dtype=int)):
    i = wp.tid()
    counts[i] = wp.mesh_query_ray_count_intersections(mesh, o[i], d[i])
    if wp.mesh_query_ray_anyhit(mesh, o[i], d[i], 1.0):
        anyhit[i] = 1
    t = float(-1.0)
    u = float(0.0)
    v = float(0.0)
    sign = float(0.0)
    n = wp.vec3()
    f = int(-1)
    wp.mesh_query_ray(mesh, o[i], d[i], 1.0, t, u, v, sign, n, f)
    legacy[i] = wp.vec3(t, u, v)
    legacy_face[i] = f


def test_count_anyhit_and_the_output_argument_form() -> None:
    pts, tris = sphere_mesh()
    mesh = make_mesh(pts, tris)
    rng = np.random.default_rng(7)
    o = (rng.normal(size=(60, 3)) * 0.9).astype(np.float32)
    d = rng.normal(size=(60, 3)).astype(np.float32)
    outs = [wp.zeros(60, dtype=int), wp.zeros(60, dtype=int), wp.zeros(60, dtype=wp.vec3),
            wp.zeros(60, dtype=int)]
    wp.launch(count_any, dim=60, inputs=[mesh.id, wp.array(o, dtype=wp.vec3),
                                         wp.array(d, dtype=wp.vec3)], outputs=outs)
    counts, anyhit, legacy, face = (a.numpy() for a in outs)
    for i in range(60):
        o64, d64 = o[i].astype(np.float64), d[i].astype(np.float64)
        t_near, f_near, _ = brute_ray(o64, d64, pts, tris, 1.0)
        # every crossing: remove the nearest hit and cast again, with no bound on t
        n_hits, rest = 0, tris
        while np.isfinite(brute_ray(o64, d64, pts, rest, np.inf)[0]):
            _, f, _ = brute_ray(o64, d64, pts, rest, np.inf)
            rest = np.delete(rest, f, axis=0)
            n_hits += 1
        assert counts[i] == n_hits
        assert anyhit[i] == int(f_near >= 0)
        if f_near >= 0:
            assert abs(legacy[i][0] - t_near) < 1e-5
        else:
            assert legacy[i][0] == -1.0 and face[i] == -1  # outputs untouched on a miss
    assert 0 < anyhit.sum() < 60
