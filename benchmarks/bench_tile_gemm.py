"""Tile GEMM benchmark: a float32 GEMM written with Warp's tile API (tile_load / tile_matmul /
tile_store over output tiles) on gradloom and on warp-lang's CPU, against numpy's matmul, all on
one thread, in one run (medians of several rounds, each timing numpy and gradloom once in a
shuffled order, then warp-lang's rounds; compiles not timed).

    python benchmarks/bench_tile_gemm.py [--n 512] [--tile 32] [--runs 5]

numpy's BLAS is limited to one thread through the usual environment variables, set before
numpy is imported; gradloom runs with wp.config.num_threads = 1. Results are cross-checked
against numpy's product, so a fast wrong answer shows.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402


def interleaved(fns: list[Callable[[], Any]], runs: int) -> list[float]:
    """Median seconds per call of each function; every round calls each once, in a shuffled
    order, so load on the machine falls on all of them alike."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        order = list(range(len(fns)))
        random.shuffle(order)
        for k in order:
            t0 = time.perf_counter()
            fns[k]()
            times[k].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def tile_gemm(wp: Any, a: np.ndarray, b: np.ndarray, tile: int) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    n = a.shape[0]
    steps = n // tile

    @wp.kernel(enable_backward=False)
    def gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
        i, j = wp.tid()
        acc = wp.tile_zeros(shape=(tile, tile), dtype=float)
        for k in range(steps):
            ta = wp.tile_load(A, shape=(tile, tile), offset=(i * tile, k * tile))
            tb = wp.tile_load(B, shape=(tile, tile), offset=(k * tile, j * tile))
            wp.tile_matmul(ta, tb, acc)
        wp.tile_store(C, acc, offset=(i * tile, j * tile))

    A, B = wp.array(a, device="cpu"), wp.array(b, device="cpu")
    C = wp.zeros((n, n), dtype=float, device="cpu")

    def run() -> None:
        wp.launch_tiled(gemm, dim=[steps, steps], inputs=[A, B, C], block_dim=64, device="cpu")
        wp.synchronize_device("cpu")

    run()  # compile
    return run, C.numpy


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--tile", type=int, default=32)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--no-warp", action="store_true", help="skip warp-lang (slow to compile)")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((args.n, args.n)).astype(np.float32)
    b = rng.standard_normal((args.n, args.n)).astype(np.float32)
    ref = a @ b
    flops = 2.0 * args.n ** 3

    import gradloom

    gradloom.config.num_threads = 1
    names = ["numpy matmul (1 thread)"]
    runs: list[Callable[[], Any]] = [lambda: a @ b]
    outs: list[Callable[[], np.ndarray] | None] = [None]
    run, out = tile_gemm(gradloom, a, b, args.tile)
    names.append("gradloom tiles")
    runs.append(run)
    outs.append(out)
    if not args.no_warp:
        import warp

        warp.config.quiet = True
        warp.init()
        run, out = tile_gemm(warp, a, b, args.tile)
        names.append("warp-lang tiles (CPU)")
        runs.append(run)
        outs.append(out)
    # warp-lang's column runs after the rounds of the other two: numpy's matmul called right
    # after a warp-lang CPU launch measured 8.6 ms against 1.5-2.3 ms otherwise (on this
    # AVX-512 machine; as if the launch left the vector unit in a slow state)
    times = interleaved(runs[:2], args.runs) + interleaved(runs[2:], args.runs)
    t_np = times[0]
    rows = [(n, t, None if o is None else float(np.abs(o() - ref).max()))
            for n, t, o in zip(names, times, outs, strict=True)]
    print(f"{args.n}^3 float32 GEMM, tile {args.tile}, median of {args.runs}")
    print(f"{'':26}{'ms':>10}{'GFLOP/s':>10}{'vs numpy':>10}{'max |err|':>12}")
    for name, t, err in rows:
        e = "" if err is None else f"{err:12.2e}"
        print(f"{name:26}{t * 1e3:10.2f}{flops / t / 1e9:10.2f}{t_np / t:10.3f}{e}")


if __name__ == "__main__":
    main()
