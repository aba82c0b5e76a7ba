"""Cost per launch of a small kernel: plain `wp.launch`, a recorded `Launch.launch()`, and a
replayed CPU graph (`wp.capture_launch` of N captured launches) — gradloom, and warp-lang when
it is installed. Prints the median of several runs, in microseconds per launch.

    python benchmarks/bench_capture.py [--launches 1000] [--runs 15]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from collections.abc import Callable
from typing import Any


def _median_us(fn: Callable[[], None], launches: int, runs: int) -> float:
    fn()  # warm up
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - t0) / launches / 1000)
    return statistics.median(samples)


def measure(wp: Any, launches: int, runs: int) -> dict[str, float]:
    @wp.kernel
    def bump(x: wp.array(dtype=float), s: float):
        i = wp.tid()
        x[i] = x[i] + s

    a = wp.zeros(16, dtype=float, device="cpu")
    wp.launch(bump, dim=16, inputs=[a, 1.0], device="cpu")
    cmd = wp.launch(bump, dim=16, inputs=[a, 1.0], device="cpu", record_cmd=True)
    with wp.ScopedCapture(device="cpu") as capture:
        for _ in range(launches):
            wp.launch(bump, dim=16, inputs=[a, 1.0], device="cpu")

    def plain() -> None:
        for _ in range(launches):
            wp.launch(bump, dim=16, inputs=[a, 1.0], device="cpu")

    def recorded() -> None:
        for _ in range(launches):
            cmd.launch()

    return {
        "wp.launch": _median_us(plain, launches, runs),
        "Launch.launch()": _median_us(recorded, launches, runs),
        "capture_launch, per captured launch": _median_us(
            lambda: wp.capture_launch(capture.graph), launches, runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    import gradloom

    sides = {"gradloom": measure(gradloom, args.launches, args.runs)}
    if importlib.util.find_spec("warp") is not None:
        import warp

        warp.config.quiet = True
        sides["warp-lang"] = measure(warp, args.launches, args.runs)
    names = list(sides)
    print(f"{'us per launch (median of ' + str(args.runs) + ' runs)':40s}"
          + "".join(f"{n:>12s}" for n in names))
    for row in sides["gradloom"]:
        print(f"{row:40s}" + "".join(f"{sides[n][row]:12.3f}" for n in names))


if __name__ == "__main__":
    main()
