"""Geometry benchmark: wp.Mesh BVH build, refit, closest-point and ray queries, gradloom vs
warp-lang CPU in one run (medians of several runs).

    python benchmarks/bench_geometry.py [--lat 250 --lon 400] [--queries 100000] [--runs 5]
                                        [--cpu-time] [--threads N]

The mesh is a unit UV sphere grid of 2 * (lat - 1) * lon triangles (≈ 200k by default); query
points lie at radius 0.8 to 1.2, rays start there in random directions. Each side is
warmed up once (the kernel compile is not timed). Both sides' query results are compared (the
closest-point distance and the ray's t), so a fast wrong answer shows. `--cpu-time` times
process CPU time instead of wall time (on a shared machine, the work each side did);
`--threads N` sets gradloom's worker threads (warp-lang's CPU launches run on one).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def sphere(n_lat: int, n_lon: int) -> tuple[np.ndarray, np.ndarray]:
    th = np.linspace(0.05, np.pi - 0.05, n_lat)
    ph = np.linspace(0, 2 * np.pi, n_lon, endpoint=False)
    t, p = np.meshgrid(th, ph, indexing="ij")
    pts = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], -1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(n_lat - 1), np.arange(n_lon), indexing="ij")
    a, b = i * n_lon + j, i * n_lon + (j + 1) % n_lon
    c, d = a + n_lon, b + n_lon
    tris = np.concatenate([np.stack([a, b, d], -1).reshape(-1, 3),
                           np.stack([a, d, c], -1).reshape(-1, 3)])
    return pts.astype(np.float32), tris.astype(np.int32)


def median_time(fn: Callable[[], Any], runs: int, clock: Callable[[], float]) -> float:
    times = []
    for _ in range(runs):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def side(wp: Any, pts: np.ndarray, tris: np.ndarray, xs: np.ndarray, dirs: np.ndarray,
         runs: int, clock: Callable[[], float]) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    @wp.kernel
    def closest(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        q = wp.mesh_query_point_no_sign(mesh, xs[i], 10.0)
        if q.result:
            out[i] = wp.length(xs[i] - wp.mesh_eval_position(mesh, q.face, q.u, q.v))

    @wp.kernel
    def rays(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), ds: wp.array(dtype=wp.vec3),
             out: wp.array(dtype=float)):
        i = wp.tid()
        q = wp.mesh_query_ray(mesh, xs[i], ds[i], 10.0)
        if q.result:
            out[i] = q.t

    p = wp.array(pts, dtype=wp.vec3, device="cpu")
    ind = wp.array(tris.ravel(), dtype=wp.int32, device="cpu")
    x = wp.array(xs, dtype=wp.vec3, device="cpu")
    d = wp.array(dirs, dtype=wp.vec3, device="cpu")
    dist, t = wp.zeros(len(xs), dtype=float, device="cpu"), wp.zeros(len(xs), dtype=float,
                                                                       device="cpu")
    mesh = wp.Mesh(points=p, indices=ind)

    def q_point() -> None:
        wp.launch(closest, dim=len(xs), inputs=[mesh.id, x, dist], device="cpu")
        wp.synchronize()

    def q_ray() -> None:
        wp.launch(rays, dim=len(xs), inputs=[mesh.id, x, d, t], device="cpu")
        wp.synchronize()

    q_point()
    q_ray()  # compile outside the timings
    res = {"build": median_time(lambda: wp.Mesh(points=p, indices=ind), runs, clock),
           "refit": median_time(mesh.refit, runs, clock),
           "closest point": median_time(q_point, runs, clock),
           "ray": median_time(q_ray, runs, clock)}
    return res, dist.numpy(), t.numpy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lat", type=int, default=250)
    ap.add_argument("--lon", type=int, default=400)
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cpu-time", action="store_true", help="time process CPU time")
    ap.add_argument("--threads", type=int, default=0, help="gradloom worker threads")
    args = ap.parse_args()
    clock = time.process_time if args.cpu_time else time.perf_counter
    pts, tris = sphere(args.lat, args.lon)
    rng = np.random.default_rng(0)
    # query points near the surface (radius 0.8 to 1.2), as in collision queries
    u = rng.normal(size=(args.queries, 3))
    r = rng.uniform(0.8, 1.2, size=(args.queries, 1))
    xs = (u / np.linalg.norm(u, axis=1, keepdims=True) * r).astype(np.float32)
    dirs = rng.normal(size=(args.queries, 3)).astype(np.float32)
    import warp

    import gradloom

    warp.config.quiet = True
    if args.threads:
        gradloom.config.num_threads = args.threads
    warp.init()
    g, gd, gt = side(gradloom, pts, tris, xs, dirs, args.runs, clock)
    w, wd, wt = side(warp, pts, tris, xs, dirs, args.runs, clock)
    timed = "process CPU time" if args.cpu_time else "wall time"
    print(f"mesh: {len(tris)} triangles, {args.queries} queries, median of {args.runs} runs "
          f"({timed}, gradloom threads: {gradloom.config.num_threads})")
    print(f"results agree: closest distance max |diff| {np.abs(gd - wd).max():.2e}, "
          f"ray t max |diff| {np.abs(gt - wt).max():.2e}")
    print(f"{'':16}{'gradloom ms':>12}{'warp ms':>10}{'ratio':>8}")
    for k in g:
        print(f"{k:16}{g[k] * 1e3:12.2f}{w[k] * 1e3:10.2f}{g[k] / w[k]:8.2f}")


if __name__ == "__main__":
    main()
