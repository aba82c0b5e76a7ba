"""Forward mode (jvp) through mesh closest-point and ray queries: their nearest-first walk keeps
its stack in thread-local memory (integers only), which the tangent kernel passes through.
Expected tangents are analytic: above a flat triangle's interior, the distance grows with the
height and not with the sideways position; a vertical ray's t grows with the start's height."""

from __future__ import annotations

import numpy as np

import gradloom as wp
from gradloom.autograd import jvp


@wp.kernel
def _distance(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, xs[i], 10.0)
    out[i] = wp.length(xs[i] - wp.mesh_eval_position(mesh, q.face, q.u, q.v))


@wp.kernel
def _ray_t(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_ray(mesh, xs[i], wp.vec3(0.0, 0.0, -1.0), 10.0)
    out[i] = q.t


def _plane() -> wp.Mesh:
    """Two large triangles in the plane z = 0 (the square [-2, 2]^2)."""
    pts = np.array([[-2, -2, 0], [2, -2, 0], [2, 2, 0], [-2, 2, 0]], np.float32)
    tris = np.array([0, 1, 2, 0, 2, 3], np.int32)
    return wp.Mesh(wp.array(pts, dtype=wp.vec3), wp.array(tris, dtype=wp.int32))


def _tangents(kernel, mesh: wp.Mesh, xs: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = wp.zeros(len(xs), dtype=float)
    _, t = jvp(kernel, [mesh.id, wp.array(xs, dtype=wp.vec3)],
               [None, wp.array(v.astype(np.float32), dtype=wp.vec3)], dim=len(xs),
               outputs=[out])
    return t[0].numpy()


def test_closest_point_distance_tangent() -> None:
    mesh = _plane()
    xs = np.array([[0.3, -0.2, 0.5], [-1.0, 0.7, 1.5], [0.1, 0.9, 0.25]], np.float32)
    up = np.tile([0.0, 0.0, 1.0], (3, 1))
    side = np.tile([1.0, 0.5, 0.0], (3, 1))
    np.testing.assert_allclose(_tangents(_distance, mesh, xs, up), 1.0, atol=1e-5)
    np.testing.assert_allclose(_tangents(_distance, mesh, xs, side), 0.0, atol=1e-5)


def test_ray_t_tangent() -> None:
    mesh = _plane()
    xs = np.array([[0.3, -0.2, 0.5], [-1.0, 0.7, 1.5]], np.float32)
    up = np.tile([0.0, 0.0, 1.0], (2, 1))
    side = np.tile([1.0, 0.0, 0.0], (2, 1))
    np.testing.assert_allclose(_tangents(_ray_t, mesh, xs, up), 1.0, atol=1e-5)
    np.testing.assert_allclose(_tangents(_ray_t, mesh, xs, side), 0.0, atol=1e-5)
