"""The distributed diffusion example over MPI (mpi4py), with its own differentiable halo
exchange and loss reduction recorded through `Tape.record_func`.

Run from the repository root (pip install "gradloom[distributed-mpi]": mpi4py and the mpich
wheel):

    mpiexec -n 2 python examples/distributed_diffusion_mpi.py --check
    mpiexec -n 2 python examples/distributed_diffusion_mpi.py

The problem, kernels, check and plot are examples/distributed_diffusion.py's; only the
communication differs. It shows how users of another communication library make its steps
differentiable: each forward step records, with `tape.record_func(backward, arrays)`, a
function that `tape.backward()` calls at that point of the reverse sweep, and that function
performs the step's adjoint communication:

* halo exchange: forward, each rank's edge rows go to its neighbours' ghost rows; backward, the
  ghost rows' gradients go back to the ranks owning those rows, are added there, and the ghost
  gradients become zero. Messages carry a tag per direction: with two ranks on a ring, both
  neighbours are the same process, and untagged messages could be swapped.
* loss all-reduce: every rank seeds the same global loss, so each rank's local loss gets the
  loss's gradient as it is — all-reducing it as well would multiply the gradient by the number
  of ranks.

Every rank must run backward through the same steps in the same order (the tape guarantees it
when every rank recorded the same steps), or the ranks wait on each other for ever: MPI has no
timeout here (gradloom.distributed has).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
from distributed_diffusion import NX, NY, Problem, parse, run

import gradloom as wp

OUTPUT = Path(__file__).resolve().parent / "output" / "distributed_diffusion_mpi.png"
UP, DOWN, UP_ADJOINT, DOWN_ADJOINT = 11, 12, 13, 14  # one tag per direction and pass


class MpiRanks:
    """An mpi4py communicator with the `rank` / `size` the shared example code reads."""

    def __init__(self, comm: Any) -> None:
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        self.lower, self.upper = (self.rank - 1) % self.size, (self.rank + 1) % self.size


class MpiSlabs:
    """Rows of the global grid cut into one slab per rank, one ghost row above and below."""

    def __init__(self, ranks: MpiRanks) -> None:
        base, extra = divmod(NY, ranks.size)
        counts = [base + (1 if r < extra else 0) for r in range(ranks.size)]
        self.ranks, self.counts = ranks, counts
        self.start, self.count = sum(counts[:ranks.rank]), counts[ranks.rank]
        self.local_shape = (self.count + 2, NX)

    def scatter(self, values: np.ndarray, dtype: Any = None,
                requires_grad: bool = False) -> Any:
        local = np.zeros(self.local_shape)
        local[1:-1] = values[self.start:self.start + self.count]
        return wp.array(local, dtype=dtype, requires_grad=requires_grad)

    def gather(self, a: Any) -> np.ndarray:
        own = np.ascontiguousarray(a.numpy()[1:-1])
        return np.concatenate(self.ranks.comm.allgather(own), axis=0)


def halo_exchange(ranks: MpiRanks, a: Any, tape: Any) -> None:
    """Fill a's ghost rows from the neighbours (periodic), recording the adjoint on `tape`.
    The ghost rows are written through a numpy view: they must not have been read by a
    launch the tape recorded before (here they never are: each step's array is new)."""
    v, comm = a.numpy(), ranks.comm
    n = v.shape[0] - 2
    comm.Sendrecv(v[n], dest=ranks.upper, sendtag=UP, recvbuf=v[0], source=ranks.lower,
                  recvtag=UP)
    comm.Sendrecv(v[1], dest=ranks.lower, sendtag=DOWN, recvbuf=v[n + 1],
                  source=ranks.upper, recvtag=DOWN)
    if tape is not None and a.grad is not None:
        tape.record_func(lambda: halo_adjoint(ranks, a), [a])


def halo_adjoint(ranks: MpiRanks, a: Any) -> None:
    g, comm = a.grad.numpy(), ranks.comm
    n = g.shape[0] - 2
    from_upper, from_lower = np.empty_like(g[0]), np.empty_like(g[0])
    comm.Sendrecv(g[0].copy(), dest=ranks.lower, sendtag=DOWN_ADJOINT, recvbuf=from_upper,
                  source=ranks.upper, recvtag=DOWN_ADJOINT)
    comm.Sendrecv(g[n + 1].copy(), dest=ranks.upper, sendtag=UP_ADJOINT, recvbuf=from_lower,
                  source=ranks.lower, recvtag=UP_ADJOINT)
    g[0] = 0.0  # the exchange overwrote the ghost rows: their old values get no gradient
    g[n + 1] = 0.0
    g[n] += from_upper
    g[1] += from_lower


def loss_sum(ranks: MpiRanks, local: Any, tape: Any) -> Any:
    """The global loss (the sum of the ranks' losses) on every rank, recorded on `tape`."""
    from mpi4py import MPI

    total = wp.zeros(1, dtype=wp.float64, requires_grad=local.grad is not None)
    ranks.comm.Allreduce(local.numpy(), total.numpy(), op=MPI.SUM)
    if tape is not None and local.grad is not None:

        def backward() -> None:
            # every rank seeds this same loss: its gradient passes on as it is (an all-reduce
            # of it would count the loss once per rank)
            local.grad.numpy()[...] += total.grad.numpy()
            total.grad.zero_()

        tape.record_func(backward, [total, local])
    return total


def mpi_pieces(ranks: MpiRanks) -> tuple[MpiSlabs, Problem]:
    slabs = MpiSlabs(ranks)
    problem = Problem(slabs.local_shape, 1, lambda a, tape: halo_exchange(ranks, a, tape),
                      lambda local, tape: loss_sum(ranks, local, tape))
    return slabs, problem


def main(argv: list[str] | None = None, output: Path = OUTPUT) -> int:
    args = parse(argv, __doc__ or "")
    try:
        from mpi4py import MPI
    except ImportError:
        print("this example needs mpi4py: pip install 'gradloom[distributed-mpi]'",
              file=sys.stderr)
        return 2
    wp.config.num_threads = max(1, wp.config.num_threads // MPI.COMM_WORLD.Get_size())
    return run(MpiRanks(MPI.COMM_WORLD), args, output, pieces=mpi_pieces)


if __name__ == "__main__":
    sys.exit(main())
