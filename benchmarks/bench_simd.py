"""SIMD thread loops against the scalar loop: the benchmark kernels with `config.simd` on and off.

    python benchmarks/bench_simd.py [--rounds 9] [--threads 1] [--quick] [--only nbody,cloth]

The kernels of bench_core.py (kernels_src.py, gradloom side only), forward and forward+backward
(a new wp.Tape, the forward launches, tape.backward), in one process: each round runs every
(kernel, mode, simd) cell in a shuffled order, a few launches each, and keeps the fastest; per
cell the median over the rounds. Alternating in one process keeps the load of a shared machine
out of the ratio. `--threads 1` (the default) measures one core; the split launches of
`--threads 2` add the pool's noise. Before timing, every kernel's outputs and input gradients
are compared bit for bit between the two settings: they are equal except where every lane adds
into one element, which the lanes sum as a tree (nbody's adjoint, neo_hookean's energy:
docs/performance.md, "Which results can change").
See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import importlib
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

import host_data  # noqa: E402
from kernels_src import KERNELS_SRC  # noqa: E402
from specs import FULL, KERNELS, QUICK  # noqa: E402

from gradloom import config  # noqa: E402
from gradloom.codegen.cpu import lane_width  # noqa: E402


def kernel_module() -> Any:
    """kernels_src's module, written out with `import gradloom as wp`."""
    work = Path(tempfile.mkdtemp(prefix="gradloom-bench-simd-"))
    (work / "bench_kernels.py").write_text(KERNELS_SRC.replace("__BACKEND__", "gradloom"))
    sys.path.insert(0, str(work))
    return importlib.import_module("bench_kernels")


def cells(bk: Any, sizes: dict[str, int]) -> dict[tuple[str, str], Callable[[], Any]]:
    """(kernel, mode) -> a function running it once and returning the arrays to compare."""
    out: dict[tuple[str, str], Callable[[], Any]] = {}
    cases = bk.make_cases(sizes)
    for name, case in cases.items():
        def fwd(case: Any = case) -> list[np.ndarray]:
            case.launch()
            return [case.out.numpy()]
        out[(name, "fwd")] = fwd
        grad = bk.make_grad_case(name, host_data.grad_data(name, sizes[name]))

        def fwd_bwd(grad: Any = grad) -> list[np.ndarray]:
            grad.backward(grad.forward_on_tape())
            return [a.grad.numpy() for a in grad.wrt.values()]
        out[(name, "fwd+bwd")] = fwd_bwd
    return out


def use(simd: bool) -> None:
    if config.simd != simd:
        config.simd = simd  # kernels build again (loaded from the disk cache after the first)


def check(bk: Any, sizes: dict[str, int]) -> list[str]:
    """Cells whose results differ between the two settings (fresh inputs for each)."""
    bad = []
    for key in cells(bk, sizes):
        results = []
        for simd in (False, True):
            use(simd)
            fresh = cells(bk, {key[0]: sizes[key[0]]})
            results.append([np.array(a, copy=True) for a in fresh[key]()])
        for a, b in zip(*results, strict=True):
            if not np.array_equal(a.view(np.uint8), b.view(np.uint8)):
                bad.append(f"{key[0]} {key[1]}")
    return bad


def time_rounds(run: dict[tuple[str, str], Callable[[], Any]], rounds: int,
                budget: float) -> dict[tuple[str, str, bool], list[float]]:
    """Per (kernel, mode, simd): the fastest launch of each round, in ms."""
    times: dict[tuple[str, str, bool], list[float]] = {}
    order = [(key, simd) for key in run for simd in (False, True)]
    for _ in range(rounds):
        random.shuffle(order)
        for key, simd in order:
            use(simd)
            fn = run[key]
            fn()  # warm (and the first launch after a rebuild)
            best, spent, n = float("inf"), 0.0, 0
            while n < 3 or (spent < budget and n < 50):
                t0 = time.perf_counter()
                fn()
                dt = time.perf_counter() - t0
                best, spent, n = min(best, dt), spent + dt, n + 1
            times.setdefault((*key, simd), []).append(best * 1e3)
    return times


def table(run: dict[tuple[str, str], Any], times: dict[tuple[str, str, bool], list[float]],
          sizes: dict[str, int]) -> str:
    lines = [f"{'kernel':<24}{'mode':<9}{'scalar ms':>11}{'simd ms':>11}{'speed-up':>10}"]
    for name, mode in run:
        a = statistics.median(times[(name, mode, False)])
        b = statistics.median(times[(name, mode, True)])
        label = f"{name} {sizes[name]:,}"
        lines.append(f"{label:<24}{mode:<9}{a:>11.3f}{b:>11.3f}{a / b:>9.2f}x")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="the smaller --quick sizes")
    parser.add_argument("--only", default="", help="comma-separated kernel names")
    args = parser.parse_args()
    config.num_threads = args.threads
    names = [n for n in KERNELS if not args.only or n in args.only.split(",")]
    sizes = {n: (QUICK if args.quick else FULL)[n] for n in names}
    bk = kernel_module()
    run = cells(bk, sizes)
    bad = check(bk, sizes)
    print(f"gradloom SIMD width {lane_width() or 'none'} (config.simd on) against the scalar "
          f"loop, {args.threads} thread(s), median of {args.rounds} rounds")
    print("results bit for bit equal: " + ("yes" if not bad else "NO: " + ", ".join(bad)))
    print(table(run, time_rounds(run, args.rounds, 0.05), sizes))


if __name__ == "__main__":
    main()
