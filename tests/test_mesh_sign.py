"""Signed mesh queries and per-face data: mesh_query_point (three rays), _sign_normal,
_sign_winding_number, _sign_parity against the inside/outside of a closed sphere and of a closed
box (points clearly inside or outside), both call forms (struct, and output arguments left
untouched on a miss); gradients of the closest point w.r.t. the query point against float64
central differences of a brute force; mesh_eval_velocity / _face_normal and mesh_get_* against
numpy; mesh_query_sphere (with mesh_query_next, for-loops and a kind chosen at run time) against
a brute force over every triangle. Runs on warp-lang too (GL_TEST_BACKEND=warp)."""

from typing import Any

import numpy as np
from test_mesh import brute_closest
from wpcompat import wp


def closed_sphere(n: int = 20, m: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """A closed UV sphere of radius 1, outward-facing triangles."""
    th = np.linspace(0, np.pi, m + 1)[1:-1]
    ph = np.linspace(0, 2 * np.pi, n, endpoint=False)
    pts = [[0.0, 0.0, 1.0]] + [[np.sin(t) * np.cos(f), np.sin(t) * np.sin(f), np.cos(t)]
                               for t in th for f in ph] + [[0.0, 0.0, -1.0]]

    def ring(r: int, j: int) -> int:
        return 1 + r * n + j % n

    tris = [[0, ring(0, j), ring(0, j + 1)] for j in range(n)]
    for r in range(m - 2):
        for j in range(n):
            a, b, c, d = ring(r, j), ring(r, j + 1), ring(r + 1, j), ring(r + 1, j + 1)
            tris += [[a, c, b], [b, c, d]]
    last = len(pts) - 1
    tris += [[last, ring(m - 2, j + 1), ring(m - 2, j)] for j in range(n)]
    return np.array(pts, np.float32), np.array(tris, np.int32)


def closed_box() -> tuple[np.ndarray, np.ndarray]:
    """The box [-1, 1] x [-0.5, 0.5] x [-0.25, 0.25], outward-facing triangles."""
    s = np.array([1.0, 0.5, 0.25])
    pts = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * s
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = [t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]
    return pts.astype(np.float32), np.array(tris, np.int32)


def make(pts: np.ndarray, tris: np.ndarray, winding: bool = True, vel: Any = None) -> Any:
    v = None if vel is None else wp.array(vel, dtype=wp.vec3)
    return wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(tris.ravel(), dtype=int),
                   velocities=v, support_winding_number=winding)


@wp.kernel
def signs(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), max_dist: float,
          out: wp.array(dtype=float, ndim=2), faces: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    p = xs[i]
    a = wp.mesh_query_point(mesh, p, max_dist)
    b = wp.mesh_query_point_sign_normal(mesh, p, max_dist)
    c = wp.mesh_query_point_sign_winding_number(mesh, p, max_dist)
    d = wp.mesh_query_point_sign_parity(mesh, p, max_dist)
    e = wp.mesh_query_point_no_sign(mesh, p, max_dist)
    out[i, 0] = a.sign
    out[i, 1] = b.sign
    out[i, 2] = c.sign
    out[i, 3] = d.sign
    faces[i, 0] = a.face
    faces[i, 1] = b.face
    faces[i, 2] = c.face
    faces[i, 3] = d.face
    faces[i, 4] = e.face
    found = int(0)
    if a.result:
        found += 1
    if b.result:
        found += 1
    if c.result:
        found += 1
    if d.result:
        found += 1
    faces[i, 5] = found


def run_signs(mesh: Any, xs: np.ndarray, max_dist: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
    out = wp.zeros((len(xs), 4), dtype=float)
    faces = wp.zeros((len(xs), 6), dtype=int)
    wp.launch(signs, dim=len(xs), inputs=[mesh.id, wp.array(xs, dtype=wp.vec3), max_dist, out,
                                          faces])
    return out.numpy(), faces.numpy()


def test_signs_of_a_closed_sphere() -> None:
    pts, tris = closed_sphere()
    rng = np.random.default_rng(0)
    xs = rng.uniform(-1.6, 1.6, (600, 3)).astype(np.float32)
    r = np.linalg.norm(xs, axis=1)
    keep = (r < 0.9) | (r > 1.05)  # clear of the facets (inscribed radius > 0.95)
    xs, r = xs[keep], r[keep]
    out, faces = run_signs(make(pts, tris), xs)
    want = np.where(r < 1.0, -1.0, 1.0)
    for k in range(4):
        np.testing.assert_array_equal(out[:, k], want, err_msg=f"variant {k}")
    assert (faces[:, 5] == 4).all()
    # every variant reports a face at the brute force's closest distance (faces sharing the
    # closest vertex or edge tie)
    for i in range(0, len(xs), 37):
        x = xs[i].astype(np.float64)
        best = np.linalg.norm(x - brute_closest(x, pts, tris)[0])
        for f in faces[i, :5]:
            d = np.linalg.norm(x - brute_closest(x, pts, tris[f:f + 1])[0])
            np.testing.assert_allclose(d, best, rtol=1e-5, atol=1e-6)


def test_signs_of_a_closed_box_and_winding_fallback() -> None:
    """A box: thin in z, so the axis rays of points near its faces meet edges at slants; the
    winding-number variant of a mesh built without winding data falls back to the rays."""
    pts, tris = closed_box()
    rng = np.random.default_rng(1)
    xs = rng.uniform(-1.4, 1.4, (500, 3)).astype(np.float32) * np.float32([1.0, 0.6, 0.4])
    margin = np.min(np.abs(np.abs(xs) - np.float32([1.0, 0.5, 0.25])), axis=1)
    xs = xs[margin > 0.02]
    inside = np.all(np.abs(xs) < np.float32([1.0, 0.5, 0.25]), axis=1)
    want = np.where(inside, -1.0, 1.0)
    for winding in (True, False):
        out, _ = run_signs(make(pts, tris, winding), xs)
        for k in range(4):
            np.testing.assert_array_equal(out[:, k], want, err_msg=f"variant {k} {winding}")


def test_max_dist_misses_leave_zeros() -> None:
    pts, tris = closed_sphere()
    xs = np.array([[3.0, 0.0, 0.0], [0.0, 0.0, 0.2]], np.float32)  # 2 and 0.8 from the surface
    out, faces = run_signs(make(pts, tris), xs, max_dist=1.0)
    np.testing.assert_array_equal(out[0], 0.0)
    np.testing.assert_array_equal(faces[0], [0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(out[1], -1.0)
    assert faces[1, 5] == 4


@wp.kernel
def out_form(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), max_dist: float,
             res: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    p = xs[i]
    sign, face, u, v = float(7.0), int(-7), float(7.0), float(7.0)
    ok = wp.mesh_query_point(mesh, p, max_dist, sign, face, u, v)
    res[i, 0] = sign
    res[i, 1] = float(face)
    res[i, 2] = u
    res[i, 3] = v
    s2, f2, u2, v2 = float(7.0), int(-7), float(7.0), float(7.0)
    ok2 = wp.mesh_query_point_sign_normal(mesh, p, max_dist, s2, f2, u2, v2, 1.0e-3)
    res[i, 4] = s2
    res[i, 5] = float(f2)
    s3, f3, u3, v3 = float(7.0), int(-7), float(7.0), float(7.0)
    ok3 = wp.mesh_query_point_sign_winding_number(mesh, p, max_dist, s3, f3, u3, v3, 2.0, 0.5)
    res[i, 6] = s3
    res[i, 7] = float(f3)
    s4, f4, u4, v4 = float(7.0), int(-7), float(7.0), float(7.0)
    ok4 = wp.mesh_query_point_sign_parity(mesh, p, max_dist, s4, f4, u4, v4, 3, 0.1)
    res[i, 8] = s4
    res[i, 9] = float(f4)
    res[i, 10] = float(ok) + float(ok2) + float(ok3) + float(ok4)


def test_output_argument_forms() -> None:
    pts, tris = closed_sphere()
    xs = np.array([[0.1, 0.2, 0.3], [1.5, 0.1, 0.0], [9.0, 0.0, 0.0]], np.float32)
    res = wp.zeros((3, 11), dtype=float)
    mesh = make(pts, tris)  # kept alive while the kernel reads it
    wp.launch(out_form, dim=3, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3), 2.0, res])
    got = res.numpy()
    np.testing.assert_array_equal(got[:, 10], [4, 4, 0])
    np.testing.assert_array_equal(got[0, [0, 4, 6, 8]], -1.0)
    np.testing.assert_array_equal(got[1, [0, 4, 6, 8]], 1.0)
    np.testing.assert_array_equal(got[2, :10], [7, -7, 7, 7, 7, -7, 7, -7, 7, -7])  # untouched
    for i in range(2):
        x = xs[i].astype(np.float64)
        best = np.linalg.norm(x - brute_closest(x, pts, tris)[0])
        for f in got[i, [1, 5, 7, 9]].astype(int):
            d = np.linalg.norm(x - brute_closest(x, pts, tris[f:f + 1])[0])
            np.testing.assert_allclose(d, best, rtol=1e-5, atol=1e-6)


@wp.func
def signed(mesh: wp.uint64, x: wp.vec3, q: wp.MeshQueryPoint):
    cp = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
    return q.sign * wp.length(x - cp)


@wp.kernel
def signed_dist(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    x = xs[i]
    out[i, 0] = signed(mesh, x, wp.mesh_query_point(mesh, x, 10.0))
    out[i, 1] = signed(mesh, x, wp.mesh_query_point_sign_normal(mesh, x, 10.0))
    out[i, 2] = signed(mesh, x, wp.mesh_query_point_sign_winding_number(mesh, x, 10.0))
    out[i, 3] = signed(mesh, x, wp.mesh_query_point_sign_parity(mesh, x, 10.0))


def test_signed_distance_gradient_wrt_query_point() -> None:
    """d(sign * |x - closest(x)|)/dx for each signed variant, against float64 central
    differences of the brute force (the sign taken from the radius: points clear of the
    surface)."""
    pts, tris = closed_sphere()
    mesh = make(pts, tris)
    rng = np.random.default_rng(4)
    dirs = rng.normal(size=(6, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    xs = (dirs * np.array([0.5, 0.7, 1.3, 1.6, 0.6, 1.4])[:, None]).astype(np.float32)
    x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros((6, 4), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(signed_dist, dim=6, inputs=[mesh.id, x, out])
    weights = np.float32([1.0, 2.0, -3.0, 0.5])
    tape.backward(grads={out: wp.array(np.tile(weights, (6, 1)), dtype=float)})
    got = x.grad.numpy()

    def sd(y: np.ndarray) -> float:
        return float(np.sign(np.linalg.norm(y) - 1.0) * np.linalg.norm(y - brute_closest(
            y, pts, tris)[0]))

    eps = 1e-5
    for i in range(6):
        x0 = xs[i].astype(np.float64)
        fd = [(sd(x0 + eps * e) - sd(x0 - eps * e)) / (2 * eps) for e in np.eye(3)]
        np.testing.assert_allclose(got[i], weights.sum() * np.array(fd), rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(out.numpy()[i], sd(x0), rtol=1e-4, atol=1e-5)


@wp.kernel
def per_face(mesh: wp.uint64, face: wp.array(dtype=int), uv: wp.array(dtype=wp.vec2),
             vel: wp.array(dtype=wp.vec3), nrm: wp.array(dtype=wp.vec3),
             corner: wp.array(dtype=wp.vec3, ndim=2), idx: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    f = face[i]
    vel[i] = wp.mesh_eval_velocity(mesh, f, uv[i][0], uv[i][1])
    nrm[i] = wp.mesh_eval_face_normal(mesh, f)
    for k in range(3):
        corner[i, k] = wp.mesh_get_point(mesh, 3 * f + k)
        corner[i, 3 + k] = wp.mesh_get_velocity(mesh, 3 * f + k)
        idx[i, k] = wp.mesh_get_index(mesh, 3 * f + k)


def run_per_face(mesh: Any, faces: np.ndarray, uv: np.ndarray, grad: bool = False) -> Any:
    n = len(faces)
    uva = wp.array(uv, dtype=wp.vec2, requires_grad=grad)
    vel = wp.zeros(n, dtype=wp.vec3, requires_grad=grad)
    nrm = wp.zeros(n, dtype=wp.vec3)
    corner = wp.zeros((n, 6), dtype=wp.vec3)
    idx = wp.zeros((n, 3), dtype=int)
    tape = wp.Tape()
    with tape:
        wp.launch(per_face, dim=n, inputs=[mesh.id, wp.array(faces, dtype=int), uva, vel, nrm,
                                           corner, idx])
    return tape, uva, vel, nrm, corner, idx


def test_eval_velocity_face_normal_and_getters() -> None:
    pts, tris = closed_sphere()
    rng = np.random.default_rng(5)
    v = rng.normal(size=pts.shape).astype(np.float32)
    faces = rng.integers(0, len(tris), 10).astype(np.int32)
    uv = rng.uniform(0, 0.5, (10, 2)).astype(np.float32)
    mesh = make(pts, tris, vel=v)
    tape, uva, vel, nrm, corner, idx = run_per_face(mesh, faces, uv, grad=True)
    a, b, c = (v[tris[faces, k]].astype(np.float64) for k in range(3))
    u_, v_ = uv[:, :1].astype(np.float64), uv[:, 1:].astype(np.float64)
    np.testing.assert_allclose(vel.numpy(), u_ * a + v_ * b + (1 - u_ - v_) * c, rtol=1e-5,
                               atol=1e-6)
    pa, pb, pc = (pts[tris[faces, k]].astype(np.float64) for k in range(3))
    n = np.cross(pb - pa, pc - pa)
    np.testing.assert_allclose(nrm.numpy(), n / np.linalg.norm(n, axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(idx.numpy(), tris[faces])
    np.testing.assert_array_equal(corner.numpy()[:, :3], pts[tris[faces]])
    np.testing.assert_array_equal(corner.numpy()[:, 3:], v[tris[faces]])
    # gradient of sum(w . velocity) w.r.t. (u, v): w . (a - c), w . (b - c)
    w = rng.normal(size=(10, 3)).astype(np.float32)
    tape.backward(grads={vel: wp.array(w, dtype=wp.vec3)})
    want = np.stack([np.einsum("ij,ij->i", w, a - c), np.einsum("ij,ij->i", w, b - c)], 1)
    np.testing.assert_allclose(uva.grad.numpy(), want, rtol=1e-4, atol=1e-5)


def test_velocities_absent_give_zero() -> None:
    pts, tris = closed_sphere()
    mesh = make(pts, tris)
    _, _, vel, _, corner, _ = run_per_face(mesh, np.array([0, 5], np.int32),
                                           np.full((2, 2), 0.25, np.float32))
    np.testing.assert_array_equal(vel.numpy(), 0.0)
    np.testing.assert_array_equal(corner.numpy()[:, 3:], 0.0)


@wp.kernel
def sphere_hits(mesh: wp.uint64, centers: wp.array(dtype=wp.vec3), radius: float,
                use_sphere: wp.array(dtype=int), hits: wp.array(dtype=int, ndim=2),
                hits_for: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    c = centers[i]
    if use_sphere[i] == 1:
        query = wp.mesh_query_sphere(mesh, c, radius)
    else:
        query = wp.mesh_query_aabb(mesh, c - wp.vec3(radius), c + wp.vec3(radius))
    face = int(0)
    while wp.mesh_query_next(query, face):
        hits[i, face] += 1
    for f in wp.mesh_query_sphere(mesh, c, radius):
        hits_for[i, f] += 1


def test_sphere_query_matches_brute_force() -> None:
    pts, tris = closed_sphere(16, 10)
    rng = np.random.default_rng(6)
    centers = rng.uniform(-1.2, 1.2, (12, 3)).astype(np.float32)
    radius = 0.35
    use = np.array([1] * 8 + [0] * 4, np.int32)
    hits = wp.zeros((12, len(tris)), dtype=int)
    hits_for = wp.zeros((12, len(tris)), dtype=int)
    mesh = make(pts, tris)
    wp.launch(sphere_hits, dim=12, inputs=[mesh.id, wp.array(centers, dtype=wp.vec3),
                                            radius, wp.array(use, dtype=int), hits, hits_for])
    for i in range(12):
        dist = np.array([np.linalg.norm(centers[i] - brute_closest(
            centers[i].astype(np.float64), pts, tris[f:f + 1])[0]) for f in range(len(tris))])
        near = dist <= radius
        assert (np.abs(dist - radius) > 1e-4).all()  # no borderline triangle
        np.testing.assert_array_equal(hits_for.numpy()[i], near.astype(int))
        if use[i]:
            np.testing.assert_array_equal(hits.numpy()[i], near.astype(int))
        else:
            p = pts[tris]
            box = np.all((p.min(1) <= centers[i] + radius) & (p.max(1) >= centers[i] - radius), 1)
            np.testing.assert_array_equal(hits.numpy()[i], box.astype(int))


@wp.kernel
def winding_vs_rays(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    out[i, 0] = wp.mesh_query_point_sign_winding_number(mesh, xs[i], 10.0).sign
    out[i, 1] = wp.mesh_query_point(mesh, xs[i], 10.0).sign


def test_winding_number_uses_the_meshs_winding_data() -> None:
    """A cube without its +x and +y faces: from near the centre the other four faces subtend
    about two thirds of the sphere (winding number ~0.67: inside), while only the +z axis ray
    meets a face (one vote: outside). Only a mesh built with support_winding_number has the
    data; without it the rays decide, as in Warp."""
    s = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float32)
    quads = [(0, 1, 3, 2), (0, 4, 5, 1), (0, 2, 6, 4), (1, 5, 7, 3)]  # -x, -y, -z, +z
    tris = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], np.int32)
    xs = np.array([[0.05, 0.02, -0.03], [-0.1, 0.1, 0.05]], np.float32)
    for winding, want in ((True, -1.0), (False, 1.0)):
        mesh = make(s, tris, winding)
        out = wp.zeros((2, 2), dtype=float)
        wp.launch(winding_vs_rays, dim=2, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3), out])
        np.testing.assert_array_equal(out.numpy()[:, 0], want, err_msg=f"winding data {winding}")
        np.testing.assert_array_equal(out.numpy()[:, 1], 1.0)


@wp.kernel
def no_sign_out_form(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), res: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    face, u, v = int(-7), float(7.0), float(7.0)
    ok = wp.mesh_query_point_no_sign(mesh, xs[i], 2.0, face, u, v)
    q = wp.mesh_query_point_no_sign(mesh, xs[i], 2.0)
    res[i, 0] = float(ok)
    res[i, 1] = float(face - q.face)
    res[i, 2] = u - q.u
    res[i, 3] = v - q.v
    res[i, 4] = float(face)
    ff, fu, fv = int(-7), float(7.0), float(7.0)
    ok2 = wp.mesh_query_furthest_point_no_sign(mesh, xs[i], 1.5, ff, fu, fv)
    far = wp.mesh_query_furthest_point_no_sign(mesh, xs[i], 1.5)
    res[i, 5] = float(ok2)
    res[i, 6] = float(ff - far.face)
    res[i, 7] = float(ff)


def test_no_sign_and_furthest_output_argument_forms() -> None:
    """The older forms write face, u, v as the struct form reports them, and leave them when
    nothing is found (a point 8 from the surface; a furthest point within min_dist)."""
    pts, tris = closed_sphere()
    mesh = make(pts, tris)
    xs = np.array([[0.1, 0.2, 0.3], [9.0, 0.0, 0.0]], np.float32)
    res = wp.zeros((2, 8), dtype=float)
    wp.launch(no_sign_out_form, dim=2, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3), res])
    got = res.numpy()
    np.testing.assert_array_equal(got[0, :4], [1, 0, 0, 0])
    np.testing.assert_array_equal(got[1, [0, 4]], [0, -7])
    np.testing.assert_array_equal(got[0, [5, 7]], [0, -7])  # every vertex within 1.5 of xs[0]
    np.testing.assert_array_equal(got[1, 5:7], [1, 0])
