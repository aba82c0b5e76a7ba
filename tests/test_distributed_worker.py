"""One rank of the gradloom.distributed tests (tests/test_distributed.py starts two of these).

    python tests/test_distributed_worker.py SCENARIO RANK SIZE INIT_METHOD OUTDIR

Each scenario runs its communication steps and saves what it saw to OUTDIR/rank<R>.npz (plus
error messages in OUTDIR/rank<R>.json); the test compares them with references it computes on
its own. No test functions here: pytest collects nothing from this file.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import gradloom as wp

wp.config.quiet = True

F64 = wp.float64
# case A: 2-D periodic diffusion split along axis 0
A_SHAPE, A_STEPS, A_DT = (8, 6), 3, 0.15
# case B: 3-D vec3d, split along axis 1 (slabs not contiguous), width 2, not periodic
B_SHAPE, B_W = (3, 10, 4), (0.5, -1.0, 2.0)
B_COEF = (0.3, -0.7, 1.0, 0.4, -0.2)
# case E: 1-D vec2d, periodic, 7 cells over 2 ranks (4 + 3)
E_N = 7


@wp.kernel
def diffuse2d(u: wp.array2d(dtype=F64), kappa: wp.array2d(dtype=F64), dt: F64, ghosts: int,
              out: wp.array2d(dtype=F64)):
    i, j = wp.tid()
    n, nx = u.shape[0], u.shape[1]
    r = i + ghosts
    rd = r - 1
    ru = r + 1
    if ghosts == 0:
        rd = (i + n - 1) % n
        ru = (i + 1) % n
    jl = (j + nx - 1) % nx
    jr = (j + 1) % nx
    c = u[r, j]
    h = F64(0.5)
    f = h * (kappa[r, j] + kappa[ru, j]) * (u[ru, j] - c)
    f -= h * (kappa[r, j] + kappa[rd, j]) * (c - u[rd, j])
    f += h * (kappa[r, j] + kappa[r, jr]) * (u[r, jr] - c)
    f -= h * (kappa[r, j] + kappa[r, jl]) * (c - u[r, jl])
    out[r, j] = c + dt * f


@wp.kernel
def square_sum2d(u: wp.array2d(dtype=F64), ghosts: int, loss: wp.array(dtype=F64)):
    i, j = wp.tid()
    v = u[i + ghosts, j]
    wp.atomic_add(loss, 0, v * v * v)


@wp.kernel
def stencil3d(a: wp.array3d(dtype=wp.vec3d), w: wp.vec3d, coef: wp.array(dtype=F64),
              loss: wp.array(dtype=F64)):
    i, j, k = wp.tid()
    s = F64(0.0)
    for d in range(5):
        s += coef[d] * wp.dot(a[i, j + d, k], w)
    wp.atomic_add(loss, 0, s * s)


@wp.kernel
def pairs1d(a: wp.array(dtype=wp.vec2d), loss: wp.array(dtype=F64)):
    i = wp.tid()
    c = i + 1
    f = wp.dot(a[c - 1], a[c + 1]) + F64(0.5) * wp.dot(a[c], a[c])
    wp.atomic_add(loss, 0, f * f)


@wp.kernel
def scaled_square(p: wp.array(dtype=F64), x: wp.array(dtype=F64), loss: wp.array(dtype=F64)):
    i = wp.tid()
    v = p[0] * x[i]
    wp.atomic_add(loss, 0, v * v)


def global_a() -> tuple[np.ndarray, np.ndarray]:
    """Case A's u0 and κ (global; the test builds the same)."""
    rng = np.random.default_rng(11)
    return rng.random(A_SHAPE), 0.5 + 0.5 * rng.random(A_SHAPE)


def global_b() -> np.ndarray:
    return np.random.default_rng(12).standard_normal((*B_SHAPE, 3))


def global_e() -> np.ndarray:
    return np.random.default_rng(13).standard_normal((E_N, 2))


def broadcast_x(rank: int) -> np.ndarray:
    return (rank + 1.0) * np.array([1.0, 2.0, -0.5])


def case_a(comm: Any, out: dict[str, Any]) -> None:
    """2-D periodic diffusion: loss (replicated) and gradients for u0 and κ."""
    u0g, kg = global_a()
    slabs = comm.slabs(A_SHAPE, axis=0, width=1, periodic=True)
    u0 = slabs.scatter(u0g, dtype=F64, requires_grad=True)
    kappa = slabs.scatter(kg, dtype=F64, requires_grad=True)
    own = (slabs.count, A_SHAPE[1])
    tape = wp.Tape()
    with tape:
        slabs.halo_exchange(kappa)
        u = u0
        for _ in range(A_STEPS):
            slabs.halo_exchange(u)
            nxt = wp.zeros(slabs.local_shape, dtype=F64, requires_grad=True)
            wp.launch(diffuse2d, dim=own, inputs=[u, kappa, A_DT, 1], outputs=[nxt])
            u = nxt
        local = wp.zeros(1, dtype=F64, requires_grad=True)
        wp.launch(square_sum2d, dim=own, inputs=[u, 1], outputs=[local])
        loss = comm.all_reduce(local, adjoint="replicated")
    tape.backward(loss)
    out["a_loss"] = loss.numpy().copy()
    out["a_grad_u0"] = slabs.gather(u0.grad)
    out["a_grad_kappa"] = slabs.gather(kappa.grad)


def case_b(comm: Any, out: dict[str, Any]) -> None:
    """3-D vec3d, axis 1, width 2, not periodic; all_reduce(adjoint="sum") seeded on rank 0."""
    slabs = comm.slabs(B_SHAPE, axis=1, width=2, periodic=False)
    a = slabs.scatter(global_b(), dtype=wp.vec3d, requires_grad=True)
    coef = wp.array(np.array(B_COEF), dtype=F64)
    tape = wp.Tape()
    with tape:
        slabs.halo_exchange(a)
        local = wp.zeros(1, dtype=F64, requires_grad=True)
        wp.launch(stencil3d, dim=(B_SHAPE[0], slabs.count, B_SHAPE[2]),
                  inputs=[a, wp.vec3d(*B_W), coef], outputs=[local])
        loss = comm.all_reduce(local)
    seed = np.array([1.0 if comm.rank == 0 else 0.0])
    tape.backward(grads={loss: seed})
    out["b_loss"] = loss.numpy().copy()
    out["b_grad"] = slabs.gather(a.grad)


def case_e(comm: Any, out: dict[str, Any]) -> None:
    """1-D vec2d, periodic, uneven slabs: the ghosts' values, loss and gradient."""
    slabs = comm.slabs((E_N,), axis=0, width=1, periodic=True)
    a = slabs.scatter(global_e(), dtype=wp.vec2d, requires_grad=True)
    tape = wp.Tape()
    with tape:
        slabs.halo_exchange(a)
        local = wp.zeros(1, dtype=F64, requires_grad=True)
        wp.launch(pairs1d, dim=slabs.count, inputs=[a], outputs=[local])
        loss = comm.all_reduce(local, adjoint="replicated")
    out["e_local_after_exchange"] = a.numpy().copy()
    out["e_start"] = np.array([slabs.start, slabs.count])
    tape.backward(loss)
    out["e_loss"] = loss.numpy().copy()
    out["e_grad"] = slabs.gather(a.grad)


def broadcast_run(comm: Any, adjoint: str, seed_all: bool) -> tuple[np.ndarray, np.ndarray]:
    """p (3.0 on rank 0, -1.0 elsewhere) broadcast from rank 0, loss Σ_r Σ_i (p x_ri)²."""
    p = wp.array(np.array([3.0 if comm.rank == 0 else -1.0]), dtype=F64, requires_grad=True)
    x = wp.array(broadcast_x(comm.rank), dtype=F64)
    tape = wp.Tape()
    with tape:
        comm.broadcast(p, src=0)
        local = wp.zeros(1, dtype=F64, requires_grad=True)
        wp.launch(scaled_square, dim=3, inputs=[p, x], outputs=[local])
        loss = comm.all_reduce(local, adjoint=adjoint)
    seed = np.array([1.0 if seed_all or comm.rank == 0 else 0.0])
    tape.backward(grads={loss: seed})
    return p.numpy().copy(), p.grad.numpy().copy()


def case_c(comm: Any, out: dict[str, Any], errors: dict[str, str]) -> None:
    """broadcast's adjoint, the world-size factor of a sum adjoint seeded on every rank, and
    the error of a replicated adjoint whose gradients differ."""
    out["c_p"], out["c_grad"] = broadcast_run(comm, "replicated", seed_all=True)
    _, out["c_grad_sum_every_rank"] = broadcast_run(comm, "sum", seed_all=True)
    _, out["c_grad_sum_rank0"] = broadcast_run(comm, "sum", seed_all=False)
    try:
        broadcast_run(comm, "replicated", seed_all=False)
    except wp.GradloomError as e:
        errors["replicated_differs"] = str(e)


def scenario_grads(comm: Any, outdir: Path) -> None:
    out: dict[str, Any] = {}
    errors: dict[str, str] = {}
    case_a(comm, out)
    case_b(comm, out)
    case_e(comm, out)
    comm.check = False  # the same transfers without headers
    unchecked: dict[str, Any] = {}
    case_b(comm, unchecked)
    out["b_grad_unchecked"] = unchecked["b_grad"]
    comm.check = True
    case_c(comm, out, errors)
    np.savez(outdir / f"rank{comm.rank}.npz", **out)
    (outdir / f"rank{comm.rank}.json").write_text(json.dumps(errors))


def scenario_mismatch(comm: Any, outdir: Path) -> None:
    """Ranks that disagree: a halo shape, an all-reduce shape, the count of steps run, then
    different steps (which can only time out)."""
    from gradloom.distributed import DistributedError

    errors: dict[str, str] = {}
    a = wp.zeros((4, 6 + comm.rank), dtype=F64)
    try:
        comm.halo_exchange(a, axis=0, width=1, periodic=True)
    except DistributedError as e:
        errors["halo_shape"] = str(e)
    try:
        comm.all_reduce(wp.zeros(2 + comm.rank, dtype=F64))
    except DistributedError as e:
        errors["all_reduce_shape"] = str(e)
    try:
        comm.halo_exchange(wp.zeros((4, 6), dtype=(F64, wp.float32)[comm.rank]))
    except DistributedError as e:
        errors["halo_dtype"] = str(e)
    comm.seq += comm.rank  # as if rank 1 had run one step more than rank 0
    try:
        comm.halo_exchange(wp.zeros((4, 6), dtype=F64), periodic=True)
    except DistributedError as e:
        errors["order"] = str(e)
    t0 = time.perf_counter()
    try:
        if comm.rank == 0:
            comm.all_reduce(wp.zeros(2, dtype=F64))
        else:
            comm.halo_exchange(wp.zeros((4, 6), dtype=F64), periodic=True)
    except DistributedError as e:
        errors["different_steps"] = str(e)
    errors["seconds"] = f"{time.perf_counter() - t0:.2f}"
    (outdir / f"rank{comm.rank}.json").write_text(json.dumps(errors))


def main(argv: list[str]) -> int:
    scenario, rank, size, init_method, outdir = argv
    import gradloom.distributed as gd

    wp.config.num_threads = 1  # two processes share the machine
    timeout = 2.0 if scenario == "mismatch" else 60.0
    comm = gd.init(init_method=init_method, rank=int(rank),
                   world_size=int(size), timeout=timeout)
    {"grads": scenario_grads, "mismatch": scenario_mismatch}[scenario](comm, Path(outdir))
    if scenario == "mismatch":
        # after a timeout the process group holds operations that never finish; its teardown
        # at exit may abort the process, which is not what this test is about
        sys.stdout.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
