"""Large host copies and fills: gradloom's `assign`, `zero_` and `fill_` against numpy's assignment.

    python benchmarks/bench_memops.py [--mib 64] [--rounds 9] [--threads 1,2]

Each sample first runs a kernel that reads one array and writes two others of the same size
(what a forward or backward launch leaves behind: dirty lines in the caches), then times one
operation on a third array, as `tape.zero()` after a backward or a seed copy before one meets
it. Columns: numpy's `dst[...] = src` / `dst[...] = 0` on one thread, then gradloom at each
thread count (runtime/memops.py: pieces shared between threads, streamed stores from
`STREAM_BYTES` on). Medians of --rounds samples, ms; every result is checked against numpy's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import gradloom as wp


@wp.kernel
def _dirty(a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i] + 1.0
    c[i] = a[i] * 2.0


def median_ms(op: Callable[[], None], before: Callable[[], None], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        before()
        t = time.perf_counter()
        op()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=64, help="array size in MiB (float32)")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", default="1,2", help="gradloom thread counts")
    args = ap.parse_args()
    n = args.mib * (1 << 20) // 4
    rng = np.random.default_rng(0)
    a, b, c = (wp.array(rng.random(n, dtype=np.float32), dtype=float) for _ in range(3))
    src = wp.array(rng.random(n, dtype=np.float32), dtype=float)
    dst = wp.zeros(n, dtype=float)

    def dirty() -> None:
        wp.launch(_dirty, n, inputs=[a, b, c])

    d, s = dst.numpy(), src.numpy()
    rows = {
        "copy (assign)": (lambda: d.__setitem__(..., s), lambda: dst.assign(src), s),
        "zero (zero_)": (lambda: d.__setitem__(..., 0), dst.zero_, np.zeros(1, np.float32)),
        "fill (fill_)": (lambda: d.__setitem__(..., 2.5), lambda: dst.fill_(2.5),
                         np.full(1, 2.5, np.float32)),
    }
    counts = [int(t) for t in args.threads.split(",")]
    print(f"{args.mib} MiB float32, after a launch that dirtied 2 x {args.mib} MiB; ms, median of "
          f"{args.rounds}")
    print(f"{'operation':<16}{'numpy':>9}" + "".join(f"{f'gl {t} thr':>11}" for t in counts))
    for name, (numpy_op, gl_op, expected) in rows.items():
        line = f"{name:<16}{median_ms(numpy_op, dirty, args.rounds):>9.2f}"
        for t in counts:
            wp.config.num_threads = t
            line += f"{median_ms(gl_op, dirty, args.rounds):>11.2f}"
            if not np.array_equal(d, np.broadcast_to(expected, d.shape)):
                raise SystemExit(f"{name} on {t} threads: wrong result")
        print(line)


if __name__ == "__main__":
    main()
