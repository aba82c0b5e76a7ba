"""Compile time and run time at the default cap on two thread loops (`CONTIGUOUS_MAX_OPS`) against
a cap of 2,000 operations (one loop for larger kernels), in fresh processes with empty caches.

    python benchmarks/bench_compile.py [--rounds 3]

Kernels: `wp.curlnoise` on `vec4` with 2 octaves (6,004 primitive operations forward, 16,042 in
its adjoint: two loops, SIMD lanes among them, at the default cap; one loop at the 2,000 cap), and
saxpy, integrate and neo_hookean from kernels_src.py (small: two loops either way, so their run
time must not move).
Per child: the first launch (lowering, LLVM, loading: *compile s*), then the median of 7 launches
(*run ms*; 65,536 points, 262,144 elements, one thread); curlnoise also the first
`tape.backward` (its adjoint's compile) and the median of 5 backward passes. The two settings
alternate over --rounds rounds; medians. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from kernels_src import KERNELS_SRC  # noqa: E402

CURL_SRC = '''
import gradloom as wp


@wp.kernel
def curl4(p: wp.array(dtype=wp.vec4), out: wp.array(dtype=wp.vec3), seed: int):
    i = wp.tid()
    s = wp.rand_init(seed)
    out[i] = wp.curlnoise(s, p[i], wp.uint32(2), 2.0, 0.5)
'''

CHILD = r'''
import json, statistics, sys, time
import numpy as np
sys.path[:0] = [sys.argv[1]]
from gradloom.codegen import entry_cpu
if sys.argv[2] == "old":
    entry_cpu.CONTIGUOUS_MAX_OPS = 2000
import gradloom as wp
from gradloom import config
config.num_threads = 1
import bench_kernels as bk, curlk

def first_and_median(fn, runs=7):
    t = time.perf_counter(); fn(); first = time.perf_counter() - t
    ts = []
    for _ in range(runs):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return first, statistics.median(ts) * 1e3

rng = np.random.default_rng(0)
n = 1 << 16
p = wp.array(rng.random((n, 4), dtype=np.float32), dtype=wp.vec4, requires_grad=True)
out = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
res = {}
res["curl4 compile s"], res["curl4 run ms"] = first_and_median(
    lambda: wp.launch(curlk.curl4, n, inputs=[p, out, 1]))
tape = wp.Tape()
with tape:
    wp.launch(curlk.curl4, n, inputs=[p, out, 1])
seed = wp.ones(n, dtype=wp.vec3)
def backward():
    tape.zero()
    tape.backward(grads={out: seed})
res["curl4 adjoint compile s"], res["curl4 backward ms"] = first_and_median(backward, 5)
m = 1 << 18
a = wp.array(rng.random(m, dtype=np.float32))
y = wp.array(rng.random(m, dtype=np.float32))
x = wp.array(rng.random((m, 3), dtype=np.float32), dtype=wp.vec3)
v = wp.array(rng.random((m, 3), dtype=np.float32), dtype=wp.vec3)
F = wp.array(np.eye(3, dtype=np.float32) + 0.1 * rng.random((m, 3, 3), dtype=np.float32),
             dtype=wp.mat33)
E = wp.zeros(1, dtype=float)
res["saxpy compile s"], res["saxpy run ms"] = first_and_median(
    lambda: wp.launch(bk.saxpy, m, inputs=[2.0, a, y]))
res["integrate compile s"], res["integrate run ms"] = first_and_median(
    lambda: wp.launch(bk.integrate, m, inputs=[x, v, wp.vec3(0.0, -9.8, 0.0), 0.01]))
res["neo_hookean compile s"], res["neo_hookean run ms"] = first_and_median(
    lambda: wp.launch(bk.neo_hookean, m, inputs=[F, 1.0, 2.0, E]))
print(json.dumps(res))
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gl-compile-"))
    (work / "bench_kernels.py").write_text(KERNELS_SRC.replace("__BACKEND__", "gradloom"))
    (work / "curlk.py").write_text(CURL_SRC)
    (work / "child.py").write_text(CHILD)
    sys.path.insert(0, str(HERE))
    env_path = os.pathsep.join([str(HERE.parent), str(HERE), os.environ.get("PYTHONPATH", "")])
    results: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.rounds):
        for mode in ("default", "old"):
            env = dict(os.environ, GRADLOOM_CACHE_DIR=tempfile.mkdtemp(dir=work),
                       PYTHONPATH=env_path)
            p = subprocess.run([sys.executable, str(work / "child.py"), str(work), mode],
                               capture_output=True, text=True, env=env)
            if p.returncode:
                sys.exit(p.stderr[-2000:])
            for k, x in json.loads(p.stdout.strip().splitlines()[-1]).items():
                results.setdefault(k, {}).setdefault(mode, []).append(x)
    print(f"median of {args.rounds} fresh processes per setting, 1 thread")
    print(f"{'':28s}{'default cap':>20s}{'cap 2,000':>20s}")
    for k, cols in results.items():
        print(f"{k:28s}{statistics.median(cols['default']):20.3f}"
              f"{statistics.median(cols['old']):20.3f}")


if __name__ == "__main__":
    main()
