"""bsr_mv, bsr_mm and a CG solve on a 3-D Laplacian (>= 1M non-zeros): gradloom against warp-lang's
CPU in one run, each side in its own child process, medians of several runs.

    python benchmarks/bench_sparse.py              # n = 56 (175,616 rows, 1,210,496 non-zeros)
    python benchmarks/bench_sparse.py --n 40 --runs 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def laplacian_3d(n: int):
    """Triplets of the 7-point Laplacian on an n^3 grid (numpy only)."""
    import numpy as np

    idx = np.arange(n**3).reshape(n, n, n)
    rows, cols, vals = [idx.ravel()], [idx.ravel()], [np.full(n**3, 6.0)]
    for axis in range(3):
        lo = [slice(None)] * 3
        hi = [slice(None)] * 3
        lo[axis], hi[axis] = slice(0, n - 1), slice(1, n)
        a, b = idx[tuple(lo)].ravel(), idx[tuple(hi)].ravel()
        rows += [a, b]
        cols += [b, a]
        vals += [np.full(a.size, -1.0)] * 2
    return (np.concatenate(rows).astype(np.int32), np.concatenate(cols).astype(np.int32),
            np.concatenate(vals).astype(np.float32))


def _median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def child(side: str, n: int, runs: int) -> dict:
    import numpy as np

    if side == "warp":
        import warp as wp

        wp.config.quiet = True
        wp.init()
    else:
        import gradloom as wp
    import_sparse = __import__(f"{'warp' if side == 'warp' else 'gradloom'}.sparse", fromlist=["*"])
    linear = __import__(f"{'warp' if side == 'warp' else 'gradloom'}.optim.linear", fromlist=["*"])
    sparse = import_sparse
    r, c, v = laplacian_3d(n)
    N = n**3
    with wp.ScopedDevice("cpu"):
        rows, cols, vals = wp.array(r), wp.array(c), wp.array(v, dtype=wp.float32)
        t0 = time.perf_counter()
        A = sparse.bsr_from_triplets(N, N, rows, cols, vals)
        first_build = time.perf_counter() - t0
        build = _median_time(lambda: sparse.bsr_from_triplets(N, N, rows, cols, vals), runs)
        nnz = A.nnz_sync()
        x = wp.array(np.random.default_rng(0).random(N, dtype=np.float32), dtype=wp.float32)
        y = wp.zeros(N, dtype=wp.float32)
        sparse.bsr_mv(A, x, y)  # warm-up (compiles)
        mv = _median_time(lambda: sparse.bsr_mv(A, x, y), runs * 5)
        y_np = y.numpy().copy()
        C = sparse.bsr_mm(A, A)  # warm-up
        mm = _median_time(lambda: sparse.bsr_mm(A, A), runs)
        work = sparse.bsr_mm_work_arrays()
        sparse.bsr_mm(A, A, C, work_arrays=work)
        mm_reuse = _median_time(lambda: sparse.bsr_mm(A, A, C, work_arrays=work, reuse_topology=True),
                                runs)
        b = wp.array(np.ones(N, dtype=np.float32), dtype=wp.float32)

        def solve():
            xs = wp.zeros(N, dtype=wp.float32)
            return linear.cg(A, b, xs, tol=0.0, atol=0.0, maxiter=100, check_every=10,
                             use_cuda_graph=False)

        solve()  # warm-up
        cg = _median_time(solve, runs)
        its = solve()[0]
    return {"side": side, "rows": N, "nnz": int(nnz), "mm_nnz": int(C.nnz_sync()),
            "first_build_s": first_build, "build_s": build, "mv_s": mv, "mm_s": mm,
            "mm_reuse_s": mm_reuse, "cg100_s": cg, "cg_iterations": int(its),
            "mv_checksum": float(np.abs(y_np).sum())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--n", type=int, default=56, help="grid size per axis (default 56)")
    p.add_argument("--runs", type=int, default=5, help="runs per measurement (mv: 5x)")
    p.add_argument("--child", choices=("gradloom", "warp"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n, args.runs)))
        return
    res = {}
    for side in ("gradloom", "warp"):
        out = subprocess.run([sys.executable, __file__, "--child", side, "--n", str(args.n),
                              "--runs", str(args.runs)], capture_output=True, text=True)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if out.returncode or not lines:
            print(f"{side} failed:\n{out.stderr[-2000:]}")
            return
        res[side] = json.loads(lines[-1])
    g, w = res["gradloom"], res["warp"]
    print(f"3-D Laplacian n={args.n}: {g['rows']:,} rows, {g['nnz']:,} non-zeros "
          f"(A*A: {g['mm_nnz']:,}); medians of {args.runs} runs (bsr_mv: {5 * args.runs})")
    print(f"{'measure':32s} {'gradloom':>12s} {'warp-lang':>12s} {'ratio':>8s}")
    for key, name in (("mv_s", "bsr_mv (y = A x)"), ("mm_s", "bsr_mm (A @ A, new topology)"),
                      ("mm_reuse_s", "bsr_mm (reuse_topology)"),
                      ("cg100_s", "cg, 100 iterations"),
                      ("build_s", "bsr_from_triplets")):
        print(f"{name:32s} {g[key] * 1e3:10.2f}ms {w[key] * 1e3:10.2f}ms {g[key] / w[key]:8.2f}")
    same = abs(g["mv_checksum"] - w["mv_checksum"]) <= 1e-4 * abs(w["mv_checksum"])
    print(f"bsr_mv results agree: {same}; CG iterations {g['cg_iterations']} / {w['cg_iterations']}")


if __name__ == "__main__":
    main()
