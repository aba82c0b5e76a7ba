"""warp-lang's tile examples on gradloom and on warp-lang's CPU: ms per call, one run, one thread.

    python benchmarks/bench_tile_examples.py [--runs 5] [--bodies 2048] [--height 64] [--cpu-time]

Each example is read from the installed wheel (examples_src.py) with `wp` bound to either
backend, and its own kernels are launched as its `__main__` block or `Example` does: matmul
(`tile_gemm` on the example's 56 x 48 x 20 problem), cholesky (the 32 x 32 factor and solve),
nbody (`Example.step()`, --bodies bodies), mcgp (`Example.render()` of one slice, --height
pixels high). Compiles are not timed (one call first). Every round times every column once,
in a shuffled order, the same number of calls (at least 2 ms); the table shows medians over
the rounds. Columns: gradloom at its default
thread count and at one thread, warp-lang's CPU backend (serial); speedup = warp-lang's time
over gradloom's (default, 1 thread). Each row checks that every column's output agrees with
warp-lang's (max |a - b| <= 1e-3 max |b|), so a fast wrong answer shows as WRONG.

--cpu-time times with the process's CPU time (time.process_time) instead of the wall clock: on
a machine shared with other busy processes, the time they take from this one is not counted
(the default-thread column then counts the CPU time of all of gradloom's threads).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import examples_src

#: one call of the example's work, and its output read back afterwards (not timed)
Run = tuple[Callable[[], None], Callable[[], np.ndarray]]


def matmul(mod: Any, wp: Any, _: argparse.Namespace) -> Run:
    m, k, n = mod.TILE_M * 7, mod.TILE_K * 6, mod.TILE_N * 5
    rng = np.random.default_rng(42)
    a = wp.array(rng.random((m, k), dtype=np.float32))
    b = wp.array(rng.random((k, n), dtype=np.float32).astype(np.float16))
    c = wp.zeros((m, n), dtype=wp.float64)

    def run() -> None:
        wp.launch_tiled(mod.tile_gemm, dim=(m // mod.TILE_M, n // mod.TILE_N), inputs=[a, b],
                        outputs=[c], block_dim=mod.TILE_THREADS)
    return run, c.numpy


def cholesky(mod: Any, wp: Any, _: argparse.Namespace) -> Run:
    t = mod.TILE
    a = wp.array2d(np.ones((t, t)) + 5 * np.eye(t), dtype=mod.wp_type)
    l_ = wp.zeros((t, t), dtype=mod.wp_type)
    x = wp.array1d(np.arange(t, dtype=np.float64), dtype=mod.wp_type)
    y = wp.zeros(t, dtype=mod.wp_type)

    def run() -> None:
        wp.launch_tiled(mod.cholesky, dim=[1, 1], inputs=[a, l_, x, y], block_dim=mod.BLOCK_DIM)
    return run, lambda: np.concatenate([l_.numpy().ravel(), y.numpy()])


def nbody(mod: Any, wp: Any, args: argparse.Namespace) -> Run:
    ex = mod.Example(headless=True, num_bodies=args.bodies)

    return ex.step, lambda: ex.pos_array_0.numpy()


def mcgp(mod: Any, wp: Any, args: argparse.Namespace) -> Run:
    with contextlib.redirect_stdout(io.StringIO()):
        ex = mod.Example(1, height=args.height, slices=3, sphere_resolution=16)

    def run() -> None:
        ex.seed = 1  # every call renders the same samples (render() reads the pixels back)
        with contextlib.redirect_stdout(io.StringIO()):
            ex.render(1)  # the slice z = 0 (through the middle)
    return run, lambda: ex.images[1]


EXAMPLES = {"tile_matmul": matmul, "tile_cholesky": cholesky, "tile_nbody": nbody,
            "tile_mcgp": mcgp}


Clock = Callable[[], float]


def sample(wp: Any, run: Callable[[], None], reps: int, clock: Clock = time.perf_counter
           ) -> float:
    """Seconds per call over reps calls (by `clock`)."""
    t0 = clock()
    for _ in range(reps):
        run()
    wp.synchronize_device("cpu")
    return (clock() - t0) / reps


def interleaved(cols: list[tuple[Any, int, Run]], runs: int, threads: Any,
                clock: Clock) -> list[float]:
    """Median seconds per call of each column; every round times every gradloom column once,
    in a shuffled order (load on the machine then falls on all alike), the same calls each;
    warp-lang's column (the last) is warmed up and timed after them (bench_tile_gemm.py: code
    run right after a warp-lang CPU launch was measured slower)."""
    wp, n, (run, _) = cols[0]
    threads(n)
    run()  # compile
    wp.synchronize_device("cpu")
    reps = min(1000, max(1, int(2e-3 / max(sample(wp, run, 1), 1e-7))))
    return (_rounds(cols[:-1], runs, threads, reps, True, clock) +
            _rounds(cols[-1:], runs, threads, reps, False, clock))


def _rounds(cols: list[tuple[Any, int, Run]], runs: int, threads: Any, reps: int,
            first_ready: bool, clock: Clock) -> list[float]:
    """The rounds of these columns, each first brought to the two calls (a compile and a
    sample) the first column made (`first_ready`: it did here): nbody's state moves each call."""
    for k, (wp, n, (run, _)) in enumerate(cols):
        if first_ready and k == 0:
            continue
        threads(n)
        run()
        run()
        wp.synchronize_device("cpu")
    times: list[list[float]] = [[] for _ in cols]
    for _ in range(runs):
        order = list(range(len(cols)))
        random.shuffle(order)
        for k in order:
            wp, n, (run, _) = cols[k]
            threads(n)
            times[k].append(sample(wp, run, reps, clock))
    return [statistics.median(t) for t in times]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--bodies", type=int, default=2048)
    p.add_argument("--height", type=int, default=16)
    p.add_argument("--examples", nargs="+", default=list(EXAMPLES))
    p.add_argument("--cpu-time", action="store_true",
                   help="time with the process's CPU time instead of the wall clock")
    args = p.parse_args()
    import warp

    import gradloom

    default_threads = gradloom.config.num_threads
    warp.config.quiet = True
    warp.init()
    tmp = Path(tempfile.mkdtemp(prefix="gl_tile_examples_"))
    cols = [("gradloom", default_threads), ("gradloom", 1), ("warp", 1)]
    heads = [f"gradloom {default_threads}t", "gradloom 1t", "warp-lang"]
    print(f"{'example (ms)':16}" + "".join(f"{h:>13}" for h in heads) +
          f"{'speedup':>9}{'1t':>7}  check")
    def threads(n: int) -> None:
        gradloom.config.num_threads = n

    for name in args.examples:
        jobs = []
        for backend, n in cols:
            wp = gradloom if backend == "gradloom" else warp
            threads(n)
            with contextlib.redirect_stdout(io.StringIO()):
                mod = examples_src.load(name, backend, tmp)
            with wp.ScopedDevice("cpu"):
                jobs.append((wp, n, EXAMPLES[name](mod, wp, args)))
        with warp.ScopedDevice("cpu"), gradloom.ScopedDevice("cpu"):
            ts = interleaved(jobs, args.runs, threads,
                             time.process_time if args.cpu_time else time.perf_counter)
        threads(default_threads)
        outs = [job[1]() for _, _, job in jobs]
        ow = outs[-1]
        ok = all(np.abs(o - ow).max() <= 1e-3 * max(np.abs(ow).max(), 1e-30) for o in outs)
        print(f"{name:16}" + "".join(f"{t * 1e3:13.3f}" for t in ts) +
              f"{ts[-1] / ts[0]:9.2f}{ts[-1] / ts[1]:7.2f}  {'ok' if ok else 'WRONG'}")

if __name__ == "__main__":
    main()
