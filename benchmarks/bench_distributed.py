"""Weak scaling of gradloom.distributed: a fixed slab per process, 1 and 2 processes.

    python benchmarks/bench_distributed.py              # torchrun children, 1 and 2 processes
    python benchmarks/bench_distributed.py --procs 1 2 4 --repeats 9 --rows 512 --cols 512

Each child (started by torchrun, gloo on 127.0.0.1; and by `mpiexec` when mpi4py is installed,
for the same problem with the mpi4py exchange of examples/distributed_diffusion_mpi.py) runs a
2-D periodic diffusion whose rows are cut into one slab of ROWS x COLS cells (--rows, --cols) per process, and
times one iteration: STEPS explicit steps (a halo exchange and a launch each) under a wp.Tape,
the all-reduce of the loss, then tape.backward() through all of it. Every process uses one
gradloom thread, so N processes use N cores: with perfect weak scaling the time per iteration
stays the same. It also times the halo exchange alone, with and without the header check, and
the same iteration with the exchanges left out (the computation alone). Medians of the repeats;
rank 0 prints one JSON line, this script the table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROWS, COLS, STEPS = 128, 256, 20
MARK = "BENCH_DISTRIBUTED "
HERE = Path(__file__).resolve().parent


def child(args: argparse.Namespace) -> None:
    import gradloom as wp

    wp.config.quiet = True
    wp.config.num_threads = 1
    sys.path.insert(0, str(HERE.parent / "examples"))
    comm, exchange, reduce, rank, size = _communication(args.child)
    iteration = _iteration(wp, exchange, reduce, rank, args.rows, args.cols)
    result: dict[str, Any] = {"kind": args.child, "size": size}
    result["iteration_ms"] = _median_ms(iteration, args.repeats, comm)
    result["compute_only_ms"] = _median_ms(lambda: iteration(False), args.repeats, comm)
    halo = wp.zeros((args.rows + 2, args.cols), dtype=wp.float64)
    result["exchange_us"] = 1000 * _median_ms(lambda: exchange(halo, None), args.repeats,
                                              comm, batch=50)
    if args.child == "torch":
        comm.check = False
        result["exchange_unchecked_us"] = 1000 * _median_ms(lambda: exchange(halo, None),
                                                            args.repeats, comm, batch=50)
    if rank == 0:
        print(MARK + json.dumps(result), flush=True)


def _iteration(wp: Any, exchange: Any, reduce: Any, rank: int, rows: int, cols: int) -> Any:
    """iteration(with_exchange=True): one forward + backward of the benchmark problem."""
    import numpy as np
    from distributed_diffusion import diffuse, squared_error

    shape = (rows + 2, cols)
    rng = np.random.default_rng(rank)
    u0 = wp.array(rng.random(shape), dtype=wp.float64)
    kappa = wp.array(0.1 + 0.1 * rng.random(shape), dtype=wp.float64, requires_grad=True)
    target = wp.zeros(shape, dtype=wp.float64)

    def iteration(with_exchange: bool = True) -> None:
        tape = wp.Tape()
        with tape:
            if with_exchange:
                exchange(kappa, tape)
            u = u0
            for _ in range(STEPS):
                if with_exchange:
                    exchange(u, tape)
                nxt = wp.zeros(shape, dtype=wp.float64, requires_grad=True)
                wp.launch(diffuse, dim=(rows, cols), inputs=[u, kappa, 0.2, 1], outputs=[nxt])
                u = nxt
            local = wp.zeros(1, dtype=wp.float64, requires_grad=True)
            wp.launch(squared_error, dim=(rows, cols), inputs=[u, target, 1, 1.0],
                      outputs=[local])
            loss = reduce(local, tape) if with_exchange else local
        tape.backward(loss)

    return iteration


def _communication(kind: str) -> tuple[Any, Any, Any, int, int]:
    """(comm, exchange(a, tape), reduce(local, tape), rank, size) for torch or mpi."""
    if kind == "torch":
        import gradloom.distributed as gd

        comm = gd.init()
        return (comm, lambda a, tape: comm.halo_exchange(a, periodic=True),
                lambda x, tape: comm.all_reduce(x, adjoint="replicated"), comm.rank, comm.size)
    from distributed_diffusion_mpi import MpiRanks, halo_exchange, loss_sum
    from mpi4py import MPI

    ranks = MpiRanks(MPI.COMM_WORLD)
    return (ranks, lambda a, tape: halo_exchange(ranks, a, tape),
            lambda x, tape: loss_sum(ranks, x, tape), ranks.rank, ranks.size)


def _median_ms(fn: Any, repeats: int, comm: Any, batch: int = 1) -> float:
    """Median wall time of one call of fn in ms: `repeats` samples of `batch` calls after a
    warm-up, the ranks lined up before each sample (the slowest rank decides, as in a real
    run; a batch keeps the barrier's own cost out of short calls)."""
    fn()
    times = []
    for _ in range(repeats):
        _barrier(comm)
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        _barrier(comm)
        times.append((time.perf_counter() - t0) / batch)
    return 1000 * statistics.median(times)


def _barrier(comm: Any) -> None:
    if hasattr(comm, "barrier"):
        comm.barrier()
    else:
        comm.comm.Barrier()


def launch(kind: str, procs: int, args: argparse.Namespace) -> dict[str, Any] | None:
    script = [sys.executable, str(Path(__file__).resolve()), "--child", kind,
              "--repeats", str(args.repeats), "--rows", str(args.rows), "--cols", str(args.cols)]
    if kind == "torch":
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(procs), *script[1:]]
    else:
        cmd = [shutil.which("mpiexec") or "mpiexec", "-n", str(procs), *script]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith(MARK):
            return dict(json.loads(line[len(MARK):]))
    print(f"{kind} x{procs} failed ({out.returncode}):\n{out.stdout[-2000:]}"
          f"{out.stderr[-3000:]}", file=sys.stderr)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=["torch", "mpi"])
    parser.add_argument("--procs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rows", type=int, default=ROWS, help="own rows per process")
    parser.add_argument("--cols", type=int, default=COLS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    kinds = ["torch"]
    try:
        import mpi4py  # noqa: F401

        kinds.append("mpi")
    except ImportError:
        print("mpi4py not installed: torch.distributed (gloo) only")
    print(f"weak scaling: {args.rows}x{args.cols} float64 cells per process, {STEPS} steps, forward + "
          f"backward per iteration; medians of {args.repeats}")
    print(f"{'comm':6} {'procs':>5} {'iteration ms':>13} {'efficiency':>10} "
          f"{'compute-only ms':>16} {'exchange µs':>12} {'unchecked µs':>13}")
    for kind in kinds:
        base = None
        for n in args.procs:
            r = launch(kind, n, args)
            if r is None:
                continue
            base = base or r["iteration_ms"]
            unchecked = r.get("exchange_unchecked_us")
            print(f"{kind:6} {n:5d} {r['iteration_ms']:13.1f} {base / r['iteration_ms']:10.2f} "
                  f"{r['compute_only_ms']:16.1f} {r['exchange_us']:12.0f} "
                  f"{'' if unchecked is None else f'{unchecked:.0f}':>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
