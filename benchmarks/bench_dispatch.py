"""Split launches against gradloom's own serial path, on an idle machine and with cores kept busy.

    python benchmarks/bench_dispatch.py [--rounds 61] [--busy 0,1] [--quick] [--warp]

For each kernel and launch size: µs per launch with `config.num_threads = 1` (serial) and with
every core (`N` = the default), in one process, over --rounds rounds, each running every column
once in a shuffled order for ~2 ms (at least 3 launches), µs per launch in each round. Per
column the lower quartile of the rounds: on a shared machine other processes preempt this one at
random and for milliseconds, which hits whole rounds; the lower quartile is the speed of rounds
left alone, while a delay of the split path itself (waiting for a descheduled worker), which
comes back in most rounds, still shows. *N / 1* is the ratio of these (the target: ≤ 1.10
everywhere, i.e. a split launch never more than 10% slower than serial), *(mean)* the ratio of
the means over the rounds (everything included: the split path's rare long waits, and the other
processes' noise). `--busy 0,1` runs
the whole table twice: on its own, then with one background process spinning on a core (`python
-c "while True: pass"`), the normal state of a user's machine. The kernels: saxpy, integrate (vec3),
a scatter (`wp.atomic_add` of vec3 values into a quarter as many bins), a sum into one element,
a sum of a matrix product's trace into 16 elements of an n-element `wp.zeros` array (the rest never written, so its pages
stay the kernel's shared zero page), and the cloth step of warp-lang's own cloth benchmark (warp/examples/benchmarks/, run from the
installed warp-lang: `eval_springs` + `integrate_particles`, 16 substeps per frame; ms per
frame). With `--warp`, warp-lang's CPU time for the same cloth frame is measured too, in the
same rounds. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import gradloom as wp
from gradloom import config

SIZES = (1024, 4096, 16384, 65536, 262144, 1048576)
QUICK_SIZES = (4096, 65536, 1048576)
CLOTH_DIMS = (32, 64, 128)
ROUND_S = 0.002


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    v[i] = v[i] + wp.vec3(0.0, -9.8, 0.0) * dt
    x[i] = x[i] + v[i] * dt


@wp.kernel
def scatter(bins: wp.array(dtype=int), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    wp.atomic_add(f, bins[i], v[i] * wp.length(v[i]))


@wp.kernel
def total(x: wp.array(dtype=float), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, 0, x[i] * x[i])


@wp.kernel
def sparse(x: wp.array(dtype=float), e: wp.array(dtype=float)):
    i = wp.tid()
    f = wp.mat33(x[i], 1.0, 0.0, 0.0, 1.0, x[i], x[i], 0.0, 1.0)
    wp.atomic_add(e, i % 16, wp.trace(wp.transpose(f) @ f))


def kernel_cases(n: int) -> dict[str, Callable[[], None]]:
    """One launch of each kernel at n threads, as a closure."""
    rng = np.random.default_rng(0)
    x = wp.array(rng.random(n, dtype=np.float32))
    y = wp.zeros(n, dtype=float)
    p = wp.array(rng.random((n, 3), dtype=np.float32), dtype=wp.vec3)
    v = wp.array(rng.random((n, 3), dtype=np.float32), dtype=wp.vec3)
    bins = wp.array(rng.integers(0, max(n // 4, 1), n).astype(np.int32), dtype=int)
    f = wp.zeros(max(n // 4, 1), dtype=wp.vec3)
    e = wp.zeros(1, dtype=float)
    wide = wp.zeros(n, dtype=float)  # 16 elements ever written: the rest stays the zero page
    return {
        "saxpy": lambda: wp.launch(saxpy, n, inputs=[0.5, x, y]),
        "integrate": lambda: wp.launch(integrate, n, inputs=[p, v, 1e-6]),
        "scatter": lambda: wp.launch(scatter, n, inputs=[bins, v, f]),
        "sum": lambda: wp.launch(total, n, inputs=[x, e]),
        "sparse": lambda: wp.launch(sparse, n, inputs=[x, wide]),
    }


def cloth_frames(wpmod: Any, dims: tuple[int, ...]) -> dict[int, Callable[[], None]]:
    """One 16-substep frame of warp-lang's cloth benchmark per grid size, on `wpmod` (gradloom
    or warp): the example's own files, run from the installed warp-lang (its USD import stubbed,
    `import warp` pointed at wpmod), not copied here."""
    spec = importlib.util.find_spec("warp")
    if spec is None or spec.origin is None:
        return {}
    where = Path(spec.origin).parent / "examples" / "benchmarks"
    sys.modules.setdefault("pxr", types.SimpleNamespace(Usd=None, UsdGeom=None))
    host = (where / "benchmark_cloth.py").read_text().split("def run_benchmark")[0]
    ns: dict[str, Any] = {"__file__": str(where / "benchmark_cloth.py"), "__name__": "cloth"}
    exec(compile(host.replace("from pxr import Usd, UsdGeom", ""), "benchmark_cloth", "exec"), ns)
    src = (where / "benchmark_cloth_warp.py").read_text().replace("wp.clear_kernel_cache()", "")
    name = f"cloth_{wpmod.__name__}"
    tmp = Path(tempfile.mkdtemp(prefix="gl-dispatch-"))
    (tmp / f"{name}.py").write_text(src.replace("import warp as wp", f"import {wpmod.__name__} as wp"))
    sys.path.insert(0, str(tmp))
    mod = __import__(name)
    frames = {}
    for d in dims:
        cloth = ns["Cloth"](lower=(0.0, 0.0, 0.0), dx=d, dy=d, radius=0.1, stretch_stiffness=1000.0,
                            bend_stiffness=1000.0, shear_stiffness=1000.0, mass=0.1)
        integ = mod.WpIntegrator(cloth, "cpu")
        frames[d] = (lambda i=integ: i.simulate(1.0 / 60.0, 16))
    return frames


def per_call_us(fn: Callable[[], None], calls: int) -> float:
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls * 1e6


def measure(fn: Callable[[], None], threads: list[int], rounds: int,
            other: Callable[[], None] | None = None) -> dict[str, float]:
    """µs per call for each thread count (and for `other`, warp's): the lower quartile, and
    the mean (`mean <column>`), of shuffled rounds."""
    for n in threads:
        config.num_threads = n
        fn()
        fn()
    t = per_call_us(fn, 3)
    calls = max(3, int(ROUND_S * 1e6 / max(t, 1e-3)))
    samples: dict[str, list[float]] = {}
    order: list[Any] = [*threads, *([other] if other is not None else [])]
    rng = random.Random(0)
    for _ in range(rounds):
        rng.shuffle(order)  # no column always first: a periodic load cannot favour one
        for n in order:
            if isinstance(n, int):
                config.num_threads = n
                samples.setdefault(str(n), []).append(per_call_us(fn, calls))
            else:
                samples.setdefault("warp", []).append(per_call_us(n, calls))
    means = {f"mean {k}": statistics.fmean(v) for k, v in samples.items()}
    return {**{k: statistics.quantiles(v, n=4)[0] for k, v in samples.items()}, **means}


@contextlib.contextmanager
def busy_core(on: bool) -> Iterator[None]:
    """A background process spinning on one core while the block runs."""
    if not on:
        yield
        return
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        yield
    finally:
        p.kill()
        p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=61)
    ap.add_argument("--busy", default="0,1", help="0: idle, 1: one busy core; e.g. 0,1")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--warp", action="store_true", help="warp-lang's cloth frame alongside")
    ap.add_argument("--kernels", default="saxpy,integrate,scatter,sum,sparse,cloth")
    args = ap.parse_args()
    full = config.num_threads
    threads = [1, full] if full > 1 else [1]
    names = args.kernels.split(",")
    sizes = QUICK_SIZES if args.quick else SIZES
    warp_frames: dict[int, Callable[[], None]] = {}
    if args.warp:
        import warp

        warp.config.quiet = True
        warp_frames = cloth_frames(warp, CLOTH_DIMS)
    frames = cloth_frames(wp, CLOTH_DIMS) if "cloth" in names else {}
    print(f"{os.cpu_count()} cores, gradloom default {full} threads; µs per launch (cloth: "
          f"per frame), lower quartile of {args.rounds} shuffled rounds")
    for busy in (int(b) for b in args.busy.split(",")):
        with busy_core(bool(busy)):
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"\n{'one core busy' if busy else 'idle'} (load average before: {load})")
            head = f"{'kernel':10s} {'threads':>9s}" + "".join(f"{f'{n} thr':>11s}" for n in threads)
            head += f"{f'{full} / 1':>9s}{'(mean)':>9s}" if len(threads) > 1 else ""
            print(head + ("        warp  1 thr / warp" if args.warp else ""))
            for size in sizes:
                cases = kernel_cases(size)
                for name in names:
                    if name in cases:
                        report(name, size, measure(cases[name], threads, args.rounds), threads)
            for d, frame in frames.items():
                other = warp_frames.get(d)
                report(f"cloth {d}²", d * d, measure(frame, threads, args.rounds, other), threads)
    config.num_threads = full


def report(name: str, size: int, med: dict[str, float], threads: list[int]) -> None:
    row = f"{name:10s} {size:9,d}" + "".join(f"{med[str(n)]:11.1f}" for n in threads)
    if len(threads) > 1:
        n = threads[1]
        row += f"{med[str(n)] / med['1']:9.2f}{med[f'mean {n}'] / med['mean 1']:9.2f}"
    if "warp" in med:
        row += f"{med['warp']:12.1f}{med['1'] / med['warp']:12.2f}"
    print(row, flush=True)


if __name__ == "__main__":
    main()
