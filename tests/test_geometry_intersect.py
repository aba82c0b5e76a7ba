"""closest_point_edge_edge against a float64 reference (a fine ternary search over the first
segment's parameter, the second's projected and clamped), its distance gradient against float64
central differences of that reference, bounded gradients for nearly parallel edges, and the
degenerate cases; intersect_tri_tri against a float64 segment-through-triangle reference on
random pairs, coplanar and touching pairs, float32 and float64. Runs on warp-lang too
(GL_TEST_BACKEND=warp)."""

import numpy as np
from wpcompat import wp


@wp.kernel
def edge_edge(p1: wp.array(dtype=wp.vec3), q1: wp.array(dtype=wp.vec3),
              p2: wp.array(dtype=wp.vec3), q2: wp.array(dtype=wp.vec3), eps: float,
              out: wp.array(dtype=wp.vec3), dist: wp.array(dtype=float)):
    i = wp.tid()
    r = wp.closest_point_edge_edge(p1[i], q1[i], p2[i], q2[i], eps)
    out[i] = r
    dist[i] = r[2]


def run_edges(p1, q1, p2, q2, eps=1e-6, grad=False):
    arrs = [wp.array(x.astype(np.float32), dtype=wp.vec3, requires_grad=grad)
            for x in (p1, q1, p2, q2)]
    out = wp.zeros(len(p1), dtype=wp.vec3)
    dist = wp.zeros(len(p1), dtype=float, requires_grad=grad)
    tape = wp.Tape()
    with tape:
        wp.launch(edge_edge, dim=len(p1), inputs=[*arrs, eps, out, dist])
    if grad:
        tape.backward(grads={dist: wp.array(np.ones(len(p1), np.float32), dtype=float)})
        return out.numpy(), [a.grad.numpy() for a in arrs]
    return out.numpy(), None


def ref_dist(p1, q1, p2, q2):
    """The segments' distance in float64: a convex function of s, minimised by ternary
    search, with t the clamped projection for each s."""
    d1, d2 = q1 - p1, q2 - p2

    def at(s):
        c1 = p1 + s * d1
        e = np.dot(d2, d2)
        t = np.clip(np.dot(c1 - p2, d2) / e, 0.0, 1.0) if e > 0 else 0.0
        return np.linalg.norm(p2 + t * d2 - c1)

    lo, hi = 0.0, 1.0
    for _ in range(200):
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if at(a) < at(b):
            hi = b
        else:
            lo = a
    return at(0.5 * (lo + hi))


def test_edge_edge_distance_and_gradient_vs_float64_reference():
    rng = np.random.default_rng(0)
    n = 40
    p1, q1, p2, q2 = (rng.normal(size=(n, 3)) for _ in range(4))
    out, grads = run_edges(p1, q1, p2, q2, grad=True)
    for i in range(n):
        want = ref_dist(p1[i], q1[i], p2[i], q2[i])
        np.testing.assert_allclose(out[i, 2], want, rtol=1e-4, atol=1e-5)
        c1 = p1[i] + out[i, 0] * (q1[i] - p1[i])
        c2 = p2[i] + out[i, 1] * (q2[i] - p2[i])
        np.testing.assert_allclose(np.linalg.norm(c2 - c1), want, rtol=1e-4, atol=1e-5)
        h = 1e-6
        for k, _x in enumerate((p1, q1, p2, q2)):
            for j in range(3):
                args = [y[i].astype(np.float32).astype(np.float64) for y in (p1, q1, p2, q2)]
                up = [a.copy() for a in args]
                dn = [a.copy() for a in args]
                up[k][j] += h
                dn[k][j] -= h
                fd = (ref_dist(*up) - ref_dist(*dn)) / (2 * h)
                np.testing.assert_allclose(grads[k][i, j], fd, rtol=2e-3, atol=2e-3,
                                           err_msg=f"case {i} input {k} axis {j}")


def test_edge_edge_special_cases():
    v = np.array
    cases = [  # p1, q1, p2, q2, (s, t)
        (v([0, 0, 0]), v([1, 0, 0]), v([0.5, -1, 1]), v([0.5, 1, 1]), (0.5, 0.5)),  # crossing
        (v([0, 0, 0]), v([1, 0, 0]), v([2, 1, 0]), v([3, 1, 0]), (1.0, 0.0)),  # parallel, apart
        (v([0, 0, 0]), v([0, 0, 0]), v([0, 0, 0]), v([0, 0, 0]), (0.0, 0.0)),  # two points
        (v([0, 1, 0]), v([0, 1, 0]), v([-1, 0, 0]), v([1, 0, 0]), (0.0, 0.5)),  # point, edge
        (v([-1, 0, 0]), v([1, 0, 0]), v([0, 1, 0]), v([0, 1, 0]), (0.5, 0.0)),  # edge, point
        (v([1, 1, 0]), v([1, 1, 0]), v([0, 0, 0]), v([0.1, 0, 0]), (0.0, 1.0)),  # clamped
    ]
    p1, q1, p2, q2 = (np.array([c[k] for c in cases], np.float64) for k in range(4))
    out, _ = run_edges(p1, q1, p2, q2)
    np.testing.assert_allclose(out[:, :2], [c[4] for c in cases], atol=1e-6)
    for i in range(len(cases)):
        np.testing.assert_allclose(out[i, 2], ref_dist(p1[i], q1[i], p2[i], q2[i]), atol=1e-6)


def test_edge_edge_nearly_parallel_gradients_stay_bounded():
    """Edges parallel to within sin θ in [1e-7, 1e-2]: finite gradients, each input's at most
    a few units (the distance moves at most as fast as an endpoint)."""
    rng = np.random.default_rng(7)
    n = 200
    p1 = rng.normal(size=(n, 3))
    d1 = rng.normal(size=(n, 3))
    amp = 10.0 ** rng.uniform(-7, -2, n)
    d2 = d1 * rng.uniform(0.5, 2.0, (n, 1)) + amp[:, None] * rng.normal(size=(n, 3))
    p2 = p1 + rng.normal(size=(n, 3))
    out, grads = run_edges(p1, p1 + d1, p2, p2 + d2, grad=True)
    for g in grads:
        assert np.isfinite(g).all()
        assert np.abs(g).max() < 10.0
    for i in range(0, n, 10):
        np.testing.assert_allclose(out[i, 2], ref_dist(p1[i], p1[i] + d1[i], p2[i], p2[i] + d2[i]),
                                   rtol=1e-3, atol=1e-4)


@wp.kernel
def tri_tri(v: wp.array(dtype=wp.vec3, ndim=2), out: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    out[i, 0] = wp.intersect_tri_tri(v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4], v[i, 5])
    out[i, 1] = wp.intersect_tri_tri(wp.vec3d(v[i, 0]), wp.vec3d(v[i, 1]), wp.vec3d(v[i, 2]),
                                     wp.vec3d(v[i, 3]), wp.vec3d(v[i, 4]), wp.vec3d(v[i, 5]))


def run_tri_tri(pairs):
    out = wp.zeros((len(pairs), 2), dtype=int)
    wp.launch(tri_tri, dim=len(pairs), inputs=[wp.array(np.float32(pairs), dtype=wp.vec3), out])
    return out.numpy()


def seg_hits_tri(a, b, t):
    """Whether segment ab crosses triangle t (float64, generic positions)."""
    e1, e2 = t[1] - t[0], t[2] - t[0]
    d = b - a
    h = np.cross(d, e2)
    det = np.dot(e1, h)
    if abs(det) < 1e-12:
        return False
    s = a - t[0]
    u = np.dot(s, h) / det
    q = np.cross(s, e1)
    w = np.dot(d, q) / det
    x = np.dot(e2, q) / det
    return bool(u >= 0 and w >= 0 and u + w <= 1 and 0 <= x <= 1)


def ref_tri_tri(t, u):
    """Non-coplanar triangles meet iff an edge of one crosses the other."""
    return any(seg_hits_tri(t[k], t[(k + 1) % 3], u) for k in range(3)) or any(
        seg_hits_tri(u[k], u[(k + 1) % 3], t) for k in range(3))


def test_tri_tri_random_pairs_vs_reference():
    rng = np.random.default_rng(1)
    pairs = rng.normal(size=(300, 6, 3)) * np.array([1.0, 1.0, 1.0])
    pairs[:, 3:] += rng.normal(scale=0.7, size=(300, 1, 3))
    pairs = np.float32(pairs).astype(np.float64)
    got = run_tri_tri(pairs)
    want = np.array([ref_tri_tri(p[:3], p[3:]) for p in pairs], int)
    assert 30 < want.sum() < 270  # both outcomes well represented
    np.testing.assert_array_equal(got[:, 0], want)
    np.testing.assert_array_equal(got[:, 1], want)


def test_tri_tri_coplanar_and_touching():
    tri = [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
    pairs = [
        [*tri, [0.2, 0.2, 0], [1.2, 0.2, 0], [0.2, 1.2, 0]],  # coplanar, overlapping
        [*tri, [2, 2, 0], [3, 2, 0], [2, 3, 0]],  # coplanar, apart
        [*tri, [0.6, 0.6, 0], [1.6, 0.6, 0], [0.6, 1.6, 0]],  # coplanar, apart across the edge
        [*tri, [0.5, 0.5, -1], [0.5, 0.5, 1], [2, 2, 0]],  # through the hypotenuse's midpoint
        [*tri, [0.2, 0.2, 0.5], [1, 1, 0.5], [0.2, 1, 1]],  # above, parallel-ish
        [*tri, [0.25, 0.25, -1], [0.25, 0.25, 1], [-1, -1, 0]],  # pierces the interior
        # warp-lang's own test pair, and its separated mirror
        [[0, 0, 0], [1, 0, 0], [0, 0, 1], [0.5, -0.5, 0], [0.5, -0.5, 1], [0.5, 0.5, 0]],
        [[0, 0, 0], [1, 0, 0], [0, 0, 1], [-0.5, -0.5, 0], [-0.5, -0.5, 1], [-0.5, 0.5, 0]],
    ]
    got = run_tri_tri(np.array(pairs, np.float64))
    np.testing.assert_array_equal(got[:, 0], [1, 0, 0, 1, 0, 1, 1, 0])
    np.testing.assert_array_equal(got[:, 1], [1, 0, 0, 1, 0, 1, 1, 0])
