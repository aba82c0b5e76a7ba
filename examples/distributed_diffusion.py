"""Recover a diffusivity field from where heat went, the grid split over several processes.

Run from the repository root:

    python examples/distributed_diffusion.py                       # one process
    torchrun --standalone --nproc-per-node 2 examples/distributed_diffusion.py
    torchrun --standalone --nproc-per-node 2 examples/distributed_diffusion.py --check

A 2-D periodic grid holds a temperature field u and a diffusivity field κ (one value per cell).
Explicit steps u ← u + dt·∇·(κ∇u) carry an initial temperature forward; the loss is the mean
squared difference between the final field and a target made with an unknown "true" κ. Adam
moves κ until the final fields agree.

The rows of the grid are cut into one slab per process (`gradloom.distributed`): each rank
keeps its own rows between one ghost row above and one below, and `halo_exchange` fills the
ghost rows from the neighbouring ranks before every step. The exchanges, and the all-reduce
that adds the ranks' losses, are recorded on the `wp.Tape`: `tape.backward` runs their adjoint
communication (each ghost row's gradient goes back to the rank owning that row), so every
rank ends with the exact gradient of the global loss with respect to its own part of κ.

`--check` compares the distributed loss and gradient, at two values of κ, with a
single-process run of the same kernels on the whole grid (periodic rows indexed directly, no
halos): relative errors must be at most 1e-10 (float64), else the script exits with status 1.
Without `--check` it optimises and writes examples/output/distributed_diffusion.png: the true
and recovered κ, and the loss per iteration.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import gradloom as wp

wp.config.quiet = True

NY, NX = 48, 40  # the global grid
STEPS = 40
DT = 0.2  # explicit steps stay stable while 4·DT·κ < 1
KAPPA_GUESS = 0.5  # the first guess: a uniform κ
ITERATIONS = 60
LEARNING_RATE = 0.02
PRINT_EVERY = 10
CHECK_RTOL = 1e-10
OUTPUT = Path(__file__).resolve().parent / "output" / "distributed_diffusion.png"


@wp.func
def rows(i: int, ghosts: int, n: int):
    """(this row, the row below, the row above): ghost rows around a slab, else periodic."""
    if ghosts == 1:
        return i + 1, i, i + 2
    return i, (i + n - 1) % n, (i + 1) % n


@wp.kernel
def diffuse(u: wp.array2d(dtype=wp.float64), kappa: wp.array2d(dtype=wp.float64),
            dt: wp.float64, ghosts: int, out: wp.array2d(dtype=wp.float64)):
    """One explicit step on the rows a thread grid covers (conservative face fluxes)."""
    i, j = wp.tid()
    nx = u.shape[1]
    r, rd, ru = rows(i, ghosts, u.shape[0])
    jl = (j + nx - 1) % nx
    jr = (j + 1) % nx
    half = wp.float64(0.5)
    c = u[r, j]
    k = kappa[r, j]
    flux = half * (k + kappa[ru, j]) * (u[ru, j] - c) - half * (k + kappa[rd, j]) * (c - u[rd, j])
    flux += half * (k + kappa[r, jr]) * (u[r, jr] - c) - half * (k + kappa[r, jl]) * (c - u[r, jl])
    out[r, j] = c + dt * flux


@wp.kernel
def squared_error(u: wp.array2d(dtype=wp.float64), target: wp.array2d(dtype=wp.float64),
                  ghosts: int, scale: wp.float64, loss: wp.array(dtype=wp.float64)):
    i, j = wp.tid()
    d = u[i + ghosts, j] - target[i + ghosts, j]
    wp.atomic_add(loss, 0, scale * d * d)


def initial_temperature() -> np.ndarray:
    """A checkerboard of warm and cool patches (the global grid): heat flows everywhere, so
    every cell's κ leaves its mark on the final field."""
    y, x = np.mgrid[0:NY, 0:NX] / np.array([NY, NX])[:, None, None]
    return np.sin(6 * np.pi * x) * np.sin(6 * np.pi * y) + 0.5 * np.sin(2 * np.pi * (x + y))


def true_kappa() -> np.ndarray:
    """A smooth diffusivity field in [0.2, 0.8] (the global grid)."""
    y, x = np.mgrid[0:NY, 0:NX] / np.array([NY, NX])[:, None, None]
    return 0.5 + 0.3 * np.sin(2 * np.pi * x) * np.cos(2 * np.pi * y)


class Problem:
    """The forward simulation and loss on one rank's rows. `exchange(a, tape)` fills a's ghost
    rows (None: the whole grid, no ghosts); `reduce(local_loss, tape)` sums the ranks' losses.
    `tape`: the Tape recording, or None (gradloom.distributed finds it by itself; the mpi4py
    variant records its steps on it with `tape.record_func`)."""

    def __init__(self, shape: tuple[int, int], ghosts: int,
                 exchange: Callable[[Any, Any], None] | None,
                 reduce: Callable[[Any, Any], Any]) -> None:
        self.shape, self.ghosts, self.exchange, self.reduce = shape, ghosts, exchange, reduce
        self.own = (shape[0] - 2 * ghosts, shape[1])

    def run(self, u0: Any, kappa: Any, target: Any | None = None,
            requires_grad: bool = True, tape: Any = None) -> tuple[Any, Any]:
        """(the final field, the global loss): the loss is None without a target."""
        u = u0
        if self.exchange is not None:
            self.exchange(kappa, tape)
        for _ in range(STEPS):
            if self.exchange is not None:
                self.exchange(u, tape)
            nxt = wp.zeros(self.shape, dtype=wp.float64, requires_grad=requires_grad)
            wp.launch(diffuse, dim=self.own, inputs=[u, kappa, DT, self.ghosts], outputs=[nxt])
            u = nxt
        if target is None:
            return u, None
        local = wp.zeros(1, dtype=wp.float64, requires_grad=requires_grad)
        wp.launch(squared_error, dim=self.own,
                  inputs=[u, target, self.ghosts, 1.0 / (NY * NX)], outputs=[local])
        return u, self.reduce(local, tape)

    def loss_and_grad(self, u0: Any, kappa: Any, target: Any) -> tuple[float, np.ndarray]:
        """The global loss and its gradient with respect to this rank's κ (whole local array)."""
        kappa.grad.zero_()
        tape = wp.Tape()
        with tape:
            _, loss = self.run(u0, kappa, target, tape=tape)
        tape.backward(loss)
        return float(loss.numpy()[0]), kappa.grad.numpy().copy()


def torch_pieces(comm: Any) -> tuple[Any, Any]:
    """This rank's slab decomposition and problem, communicating through gradloom.distributed
    (the all-reduce of the loss: every rank seeds it, so its adjoint is "replicated")."""
    slabs = comm.slabs((NY, NX), axis=0, width=1, periodic=True)
    problem = Problem(slabs.local_shape, 1, lambda a, tape: slabs.halo_exchange(a),
                      lambda local, tape: comm.all_reduce(local, adjoint="replicated"))
    return slabs, problem


def reference(kappa_global: np.ndarray, target_global: np.ndarray) -> tuple[float, np.ndarray]:
    """Loss and gradient on the whole grid in this process alone (no halos, no transfers)."""
    problem = Problem((NY, NX), 0, None, lambda local, tape: local)
    kappa = wp.array(kappa_global, dtype=wp.float64, requires_grad=True)
    u0 = wp.array(initial_temperature(), dtype=wp.float64)
    target = wp.array(target_global, dtype=wp.float64)
    return problem.loss_and_grad(u0, kappa, target)


def relative_error(got: np.ndarray | float, want: np.ndarray | float) -> float:
    got, want = np.asarray(got), np.asarray(want)
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300))


def check(comm: Any, pieces: Callable[[Any], tuple[Any, Any]] = torch_pieces) -> bool:
    """Distributed against single-process loss and gradient at two κ; True when they agree."""
    slabs, problem = pieces(comm)
    u0 = slabs.scatter(initial_temperature(), dtype=wp.float64, requires_grad=False)
    target_global = make_target(comm, pieces)
    target = slabs.scatter(target_global, dtype=wp.float64)
    rng = np.random.default_rng(7)
    ok = True
    for name, kappa_global in (("uniform guess", np.full((NY, NX), KAPPA_GUESS)),
                               ("random κ", 0.3 + 0.4 * rng.random((NY, NX)))):
        kappa = slabs.scatter(kappa_global, dtype=wp.float64, requires_grad=True)
        loss, grad = problem.loss_and_grad(u0, kappa, target)
        grad_global = slabs.gather(wp.array(grad, dtype=wp.float64))
        want_loss, want_grad = reference(kappa_global, target_global)
        errors = (relative_error(loss, want_loss), relative_error(grad_global, want_grad))
        if comm.rank == 0:
            print(f"{name}: loss {loss:.12e} (single process {want_loss:.12e}), relative "
                  f"error {errors[0]:.1e}; gradient relative error {errors[1]:.1e} "
                  f"[{comm.size} ranks]")
        ok = ok and max(errors) <= CHECK_RTOL and bool(np.any(want_grad != 0))
    return ok


def make_target(comm: Any, pieces: Callable[[Any], tuple[Any, Any]] = torch_pieces
                ) -> np.ndarray:
    """The final field under the true κ (global; computed by the distributed forward)."""
    slabs, problem = pieces(comm)
    u0 = slabs.scatter(initial_temperature(), dtype=wp.float64)
    kappa = slabs.scatter(true_kappa(), dtype=wp.float64)
    final, _ = problem.run(u0, kappa, requires_grad=False)
    return slabs.gather(final)


def optimise(comm: Any, iterations: int = ITERATIONS, show_progress: bool = True,
             pieces: Callable[[Any], tuple[Any, Any]] = torch_pieces) -> dict[str, Any]:
    """Adam on κ; returns the losses and the global recovered κ."""
    slabs, problem = pieces(comm)
    u0 = slabs.scatter(initial_temperature(), dtype=wp.float64)
    target = slabs.scatter(make_target(comm, pieces), dtype=wp.float64)
    kappa = slabs.scatter(np.full((NY, NX), KAPPA_GUESS), dtype=wp.float64, requires_grad=True)
    opt = wp.optim.Adam([kappa], lr=LEARNING_RATE)
    losses = []
    for it in range(iterations):
        loss, _ = problem.loss_and_grad(u0, kappa, target)
        losses.append(loss)
        if show_progress and comm.rank == 0 and it % PRINT_EVERY == 0:
            print(f"iteration {it:3d}: loss {loss:.4e}")
        opt.step([kappa.grad])
    return {"losses": losses, "kappa": slabs.gather(kappa), "ranks": comm.size}


def save_plot(result: dict[str, Any], output: Path) -> str:
    """Write the figure (matplotlib when installed, else the examples' numpy renderer)."""
    from distributed_diffusion_plot import save_diffusion_figure

    return save_diffusion_figure(output, true_kappa(), result["kappa"], result["losses"],
                                 result["ranks"])


def share_cores() -> None:
    """Give each of the processes on this machine its share of the cores."""
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    wp.config.num_threads = max(1, wp.config.num_threads // local)


def parse(argv: list[str] | None, doc: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare loss and gradient with a single-process run")
    parser.add_argument("--iterations", type=int, default=ITERATIONS)
    return parser.parse_args(argv)


def run(comm: Any, args: argparse.Namespace, output: Path,
        pieces: Callable[[Any], tuple[Any, Any]] = torch_pieces) -> int:
    """`--check` or the optimisation with its plot; the exit status (the same on every rank)."""
    if args.check:
        ok = check(comm, pieces)
        if comm.rank == 0:
            print("check passed" if ok else "check FAILED")
        return 0 if ok else 1
    result = optimise(comm, args.iterations, pieces=pieces)
    if comm.rank == 0:
        print(f"loss {result['losses'][0]:.4e} -> {result['losses'][-1]:.4e} over "
              f"{len(result['losses'])} iterations on {comm.size} rank(s)")
        backend = save_plot(result, output)
        print(f"wrote {output} ({backend})")
    return 0


def main(argv: list[str] | None = None, output: Path = OUTPUT) -> int:
    args = parse(argv, __doc__ or "")
    import gradloom.distributed as gd

    share_cores()
    return run(gd.init(), args, output)


if __name__ == "__main__":
    sys.exit(main())
