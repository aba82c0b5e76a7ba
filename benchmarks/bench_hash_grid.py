"""Hash grid benchmark: the force kernels of warp-lang's dem and sph examples, gradloom vs
warp-lang CPU, wall and process CPU time per launch, in alternating child processes.

    python benchmarks/bench_hash_grid.py [--rounds 3] [--launches 7] [--threads 0]

Each child loads the example from the installed wheel (examples_src.py binds `wp` to one
library), steps it one frame (so the particles have moved off their start lattice), rebuilds
the grid and launches each force kernel `--launches` times: the median wall time and the median
CPU time of the process (all its threads) per launch. CPU time is what a launch costs whatever
else the machine runs; wall time is what the user waits for (gradloom splits the launch over
its threads, warp-lang's CPU runs one). `--threads N` sets gradloom's thread count (0: its
default, every core). Both libraries' outputs after the timed launches are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
KERNELS = {"dem": ("apply_forces",), "sph": ("compute_density", "get_acceleration")}


def _inputs(m: Any, ex: Any, name: str, kernel: str) -> tuple[int, list[Any]]:
    """(dim, inputs) of a force kernel launch as the example makes it."""
    if name == "dem":
        return len(ex.x), [ex.grid.id, ex.x, ex.v, ex.f, ex.point_radius, ex.k_contact,
                           ex.k_damp, ex.k_friction, ex.k_mu]
    if kernel == "compute_density":
        return ex.n, [ex.grid.id, ex.x, ex.rho, ex.density_normalization, ex.smoothing_length]
    return ex.n, [ex.grid.id, ex.x, ex.v, ex.rho, ex.a, ex.isotropic_exp, ex.base_density,
                  ex.gravity, ex.pressure_normalization, ex.viscous_normalization,
                  ex.smoothing_length]


def child(name: str, backend: str, launches: int) -> dict[str, Any]:
    """Run in a fresh process: time the example's force kernels on one library."""
    sys.path.insert(0, str(HERE))
    import examples_src as es

    es.FILES.setdefault(name, f"core/example_{name}.py")
    with tempfile.TemporaryDirectory() as tmp:
        m = es.load(name, backend, Path(tmp))
    wp = m.wp
    out: dict[str, Any] = {}
    with wp.ScopedDevice("cpu"):
        ex = m.Example(stage_path=None)
        ex.step()
        ex.grid.build(ex.x, ex.grid_cell_size if name == "dem" else ex.smoothing_length)
        for kernel in KERNELS[name]:
            dim, inputs = _inputs(m, ex, name, kernel)
            k = getattr(m, kernel)
            wp.launch(k, dim=dim, inputs=inputs)  # compile, warm up
            wp.synchronize()
            walls, cpus = [], []
            for _ in range(launches):
                c0, t0 = time.process_time(), time.perf_counter()
                wp.launch(k, dim=dim, inputs=inputs)
                wp.synchronize()
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
            out[kernel] = (statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3)
        result = ex.f if name == "dem" else ex.a
        out["checksum"] = float(abs(result.numpy()).sum())
    return out


def run_child(name: str, backend: str, launches: int, threads: int) -> dict[str, Any]:
    env = dict(os.environ)
    if threads:
        env["GRADLOOM_NUM_THREADS"] = str(threads)
    code = (f"import json, sys; sys.path.insert(0, {str(HERE)!r}); import bench_hash_grid as b; "
            f"print('RESULT', json.dumps(b.child({name!r}, {backend!r}, {launches})))")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--launches", type=int, default=7)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--examples", default="dem,sph")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    rows: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    for r in range(args.rounds):
        for name in args.examples.split(","):
            w = run_child(name, "warp", args.launches, 0)
            g = run_child(name, "gradloom", args.launches, args.threads)
            same = abs(g["checksum"] - w["checksum"]) <= 1e-3 * abs(w["checksum"])
            for kernel in KERNELS[name]:
                rows.setdefault((name, kernel), []).append((*g[kernel], *w[kernel]))
            print(f"round {r + 1} {name}: outputs {'match' if same else 'DIFFER'} "
                  f"(checksums {g['checksum']:.6g}, {w['checksum']:.6g})", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    print("ms per launch, medians over rounds   gl wall   gl cpu  warp wall  warp cpu  "
          "warp/gl wall  warp/gl cpu")
    for (name, kernel), vals in rows.items():
        gw, gc, ww, wc = (statistics.median(v[k] for v in vals) for k in range(4))
        wall = statistics.median(v[2] / v[0] for v in vals)
        cpu = statistics.median(v[3] / v[1] for v in vals)
        print(f"{name} {kernel:<24} {gw:9.1f} {gc:8.1f} {ww:10.1f} {wc:9.1f} {wall:13.2f} "
              f"{cpu:12.2f}")


if __name__ == "__main__":
    main()
