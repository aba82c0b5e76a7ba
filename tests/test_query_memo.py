"""mesh_query_point's remembered answers (builtins/query_memo.py): threads asking one point again
and again, among others that collide in their table (tile_map lanes that all start at one point,
as Warp's mcgp example), get the answers each point gets alone, and warp-lang's; nothing survives
a launch (a refit between launches is seen); a gradient through repeated queries is the sum of
the single queries' gradients."""

from typing import Any

import numpy as np
import pytest
from test_mesh_solid import flip, make, uv_sphere

import gradloom as wp
from gradloom.autograd import jvp

N = 64  # points; each of 8 tiles starts its 32 lanes at one of them


@wp.func
def value(mesh: wp.uint64, x: wp.vec3):
    q = wp.mesh_query_point(mesh, x, 1.0e6)
    return q.sign * float(q.face + 1) + q.u + 0.5 * q.v


@wp.kernel
def alone(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = value(mesh, xs[i])


@wp.func
def lane(k: int, mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), start: wp.vec3):
    total = value(mesh, start)
    for j in range(5):
        total += value(mesh, xs[(k * 5 + j) % N])
    return total


@wp.kernel
def lanes(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_map(lane, wp.tile_arange(32, dtype=int), mesh, xs, xs[i])
    wp.tile_store(out[i], t)


def run_alone(m: Any, xs: np.ndarray) -> np.ndarray:
    out = wp.zeros(len(xs), dtype=float)
    wp.launch(alone, dim=len(xs), inputs=[m.id, wp.array(xs, dtype=wp.vec3), out])
    return out.numpy()


def run_lanes(m: Any, xs: np.ndarray) -> np.ndarray:
    out = wp.zeros((8, 32), dtype=float)
    wp.launch_tiled(lanes, dim=[8], inputs=[m.id, wp.array(xs, dtype=wp.vec3), out],
                    block_dim=32)
    return out.numpy()


def from_alone(one: np.ndarray) -> np.ndarray:
    idx = (np.arange(32)[:, None] * 5 + np.arange(5)[None, :]) % N
    return one[:8, None] + one[idx].sum(1)[None, :]


def points(seed: int) -> np.ndarray:
    """A jittered 4 x 4 x 4 grid, shuffled: many points share two of their coordinates (a
    table that compared only some of the key would mix them up)."""
    rng = np.random.default_rng(seed)
    axes = [np.sort(rng.uniform(-1.3, 1.3, 4)) for _ in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    return rng.permutation(grid).astype(np.float32)


@pytest.mark.parametrize("mesh", [uv_sphere(), flip(uv_sphere())], ids=["solid", "rays"])
def test_repeated_queries_answer_as_alone(mesh: Any) -> None:
    xs = points(5)
    m = make(mesh)
    np.testing.assert_allclose(run_lanes(m, xs), from_alone(run_alone(m, xs)), rtol=1e-6, atol=1e-4)


def test_nothing_survives_a_launch() -> None:
    xs = points(6)
    m = make(uv_sphere())
    run_lanes(m, xs)
    pts = m.points.numpy().copy()
    m.points.assign(pts * np.float32(0.7))  # every answer changes
    m.refit()
    np.testing.assert_allclose(run_lanes(m, xs), from_alone(run_alone(make(
        (pts * np.float32(0.7), uv_sphere()[1])), xs)), rtol=1e-6, atol=1e-4)


def test_matches_warp_lang() -> None:
    warp = pytest.importorskip("warp")
    warp.config.quiet = True
    xs = points(7)
    got = run_alone(make(uv_sphere()), xs)

    @warp.kernel
    def walone(mesh: warp.uint64, xs: warp.array(dtype=warp.vec3), out: warp.array(dtype=float)):
        i = warp.tid()
        q = warp.mesh_query_point(mesh, xs[i], 1.0e6)
        out[i] = q.sign * float(q.face + 1) + q.u + 0.5 * q.v

    pts, tris = uv_sphere()
    with warp.ScopedDevice("cpu"):
        wm = warp.Mesh(points=warp.array(pts, dtype=warp.vec3),
                       indices=warp.array(tris.ravel(), dtype=warp.int32))
        out = warp.zeros(N, dtype=float)
        warp.launch(walone, dim=N, inputs=[wm.id, warp.array(xs, dtype=warp.vec3), out])
    w = out.numpy()
    # faces may differ where two tie (a shared edge or vertex); the sign never does
    same = np.abs(got - w) < 1e-4
    assert same.mean() > 0.8
    assert (np.sign(got) == np.sign(w)).all()
    np.testing.assert_allclose(run_lanes(make(uv_sphere()), xs), from_alone(got), rtol=1e-6, atol=1e-4)


@wp.kernel
def repeated(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), times: int, out: wp.array(dtype=float)):
    i = wp.tid()
    total = float(0.0)
    for _ in range(times):  # the same query again: read back from the table after the first
        q = wp.mesh_query_point(mesh, xs[i], 1.0e6)
        c = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        total += wp.length(c - xs[i]) * q.sign
    out[i] = total


def grad(m: Any, xs: np.ndarray, times: int) -> np.ndarray:
    x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(len(xs), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(repeated, dim=len(xs), inputs=[m.id, x, times, out])
    tape.backward(grads={out: wp.ones(len(xs), dtype=float)})
    return x.grad.numpy()


def test_gradient_through_repeated_queries() -> None:
    """Three times the same query: three times one query's gradient (the signed distance's:
    the closest face's outward normal at interior points)."""
    xs = np.random.default_rng(8).uniform(-0.5, 0.5, (16, 3)).astype(np.float32)
    m = make(uv_sphere())
    one = grad(m, xs, 1)
    np.testing.assert_allclose(grad(m, xs, 3), 3.0 * one, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(one, axis=1), 1.0, rtol=1e-4)


def test_jvp_through_repeated_queries() -> None:
    """Forward mode too: three times one query's tangent."""
    xs = np.random.default_rng(9).uniform(-0.5, 0.5, (16, 3)).astype(np.float32)
    v = np.random.default_rng(10).normal(size=(16, 3)).astype(np.float32)
    m = make(uv_sphere())

    def tangent(times: int) -> np.ndarray:
        out = wp.zeros(len(xs), dtype=float)
        _, t = jvp(repeated, [m.id, wp.array(xs, dtype=wp.vec3), times],
                   [None, wp.array(v, dtype=wp.vec3), None], dim=len(xs), outputs=[out])
        return t[0].numpy()

    one = tangent(1)
    np.testing.assert_allclose(tangent(3), 3.0 * one, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(one, (v * grad(m, xs, 1)).sum(1), rtol=1e-4, atol=1e-5)
