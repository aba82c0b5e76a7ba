"""Forward mode's cost: one `jvp` of a program (two kernels) against its forward alone, and one
`hvp` against forward + backward on a `wp.Tape`, gradloom only (warp-lang has no forward mode).
Prints medians of several interleaved rounds in milliseconds and the median of each round's
ratio (the targets: JVP <= 1.5x the forward, HVP <= 4x forward + backward).

    python benchmarks/bench_forward_mode.py [--n 1000000] [--runs 9] [--threads N] [--cpu-time]

`--cpu-time` times each call by the process's CPU time rather than the wall clock: on a shared
machine what other processes take is then not counted (with `--threads 1`, the cost itself).
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


def _interleaved_ms(cases: dict[str, Callable[[], object]], runs: int,
                    clock: Callable[[], float] = time.perf_counter) -> dict[str, list[float]]:
    """Each case once to compile and warm up, then `runs` rounds of every case in turn, so a
    change of load on a shared machine reaches all cases alike; milliseconds per sample."""
    for fn in cases.values():
        fn()
    samples: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(runs):
        for k, fn in cases.items():
            t0 = clock()
            fn()
            samples[k].append((clock() - t0) * 1e3)
    return samples


def forward_backward(x: wp.array) -> None:
    tape = wp.Tape()
    with tape:
        e = program(x, grad=True)
    tape.backward(loss=e)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--threads", type=int, default=0,
                        help="config.num_threads (0: the default, every core)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time by the process's CPU time instead of the wall clock")
    args = parser.parse_args()
    if args.threads:
        wp.config.num_threads = args.threads
    rng = np.random.default_rng(0)
    x = wp.array(rng.uniform(-1, 1, args.n).astype(np.float32), dtype=float)
    xg = wp.array(x.numpy(), dtype=float, requires_grad=True)
    v = rng.normal(size=args.n).astype(np.float32)
    samples = _interleaved_ms({
        "forward": lambda: program(x), "jvp": lambda: jvp(program, [x], [v]),
        "fb": lambda: forward_backward(xg), "hvp": lambda: hvp(program, [x], [v])}, args.runs,
        time.process_time if args.cpu_time else time.perf_counter)
    med = {k: statistics.median(s) for k, s in samples.items()}
    # the ratio within each round (same load), then its median
    jr = statistics.median(j / f for j, f in zip(samples["jvp"], samples["forward"], strict=True))
    hr = statistics.median(h / f for h, f in zip(samples["hvp"], samples["fb"], strict=True))
    clock = "process CPU time" if args.cpu_time else "wall clock"
    print(f"n={args.n}, median of {args.runs} interleaved rounds (ms, {clock}); ratio: median "
          "of the rounds' ratios")
    print(f"forward          {med['forward']:8.2f}")
    print(f"jvp              {med['jvp']:8.2f}   {jr:5.2f}x forward")
    print(f"forward+backward {med['fb']:8.2f}")
    print(f"hvp              {med['hvp']:8.2f}   {hr:5.2f}x forward+backward")


if __name__ == "__main__":
    main()
