"""Forward mode's cost: one `jvp` of a program (two kernels) against its forward alone, and one
`hvp` against forward + backward on a `wp.Tape`, gradloom only (warp-lang has no forward mode).
Prints medians of several runs in milliseconds and the ratios (the targets: JVP <= 1.5x the
forward, HVP <= 4x forward + backward).

    python benchmarks/bench_forward_mode.py [--n 1000000] [--runs 9]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import gradloom as wp
from gradloom.autograd import hvp, jvp


@wp.kernel
def stretch(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * x[i] + wp.exp(-x[i] * x[i])


@wp.kernel
def energy(y: wp.array(dtype=float), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, 0, y[i] * y[i])


def program(x: wp.array, grad: bool = False) -> wp.array:
    y = wp.zeros(x.shape, dtype=float, requires_grad=grad)
    wp.launch(stretch, x.shape, inputs=[x, y])
    e = wp.zeros(1, dtype=float, requires_grad=grad)
    wp.launch(energy, x.shape, inputs=[y, e])
    return e


def _median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # compile, warm up
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def forward_backward(x: wp.array) -> None:
    tape = wp.Tape()
    with tape:
        e = program(x, grad=True)
    tape.backward(loss=e)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = wp.array(rng.uniform(-1, 1, args.n).astype(np.float32), dtype=float)
    xg = wp.array(x.numpy(), dtype=float, requires_grad=True)
    v = rng.normal(size=args.n).astype(np.float32)
    fwd = _median_ms(lambda: program(x), args.runs)
    tan = _median_ms(lambda: jvp(program, [x], [v]), args.runs)
    fb = _median_ms(lambda: forward_backward(xg), args.runs)
    hv = _median_ms(lambda: hvp(program, [x], [v]), args.runs)
    print(f"n={args.n}, median of {args.runs} runs (ms)")
    print(f"forward          {fwd:8.2f}")
    print(f"jvp              {tan:8.2f}   {tan / fwd:5.2f}x forward")
    print(f"forward+backward {fb:8.2f}")
    print(f"hvp              {hv:8.2f}   {hv / fb:5.2f}x forward+backward")


if __name__ == "__main__":
    main()
