"""`Communicator`: the public face of a process group — its differentiable operations (halo
exchange, all-reduce, broadcast) and slab decompositions — and `init()`, which makes one."""

from __future__ import annotations

from typing import Any

from .collectives import all_reduce, broadcast
from .halo import halo_exchange
from .slabs import SlabDecomposition
from .transport import DEFAULT_TIMEOUT, Transport, connect


class Communicator(Transport):
    """The ranks of a torch.distributed process group (or this process alone).

    Every rank must run the same communication steps in the same order, forward and backward
    through the Tape; with `check` on (the default), ranks that disagree about a step's order,
    shape or dtype raise `DistributedError` instead of exchanging mismatched data."""

    def halo_exchange(self, a: Any, axis: int = 0, width: int = 1,
                      periodic: bool = False) -> None:
        """Fill the `width` ghost layers on either side of `a` along `axis` from the
        neighbouring ranks, in place (recorded on active tapes; see gradloom.distributed.halo)."""
        halo_exchange(self, a, axis=axis, width=width, periodic=periodic)

    def all_reduce(self, a: Any, out: Any = None, adjoint: str = "sum") -> Any:
        """A new array (or `out`) holding the sum of `a` over the ranks, on every rank
        (recorded; `adjoint`: "sum" or "replicated", see gradloom.distributed.collectives)."""
        return all_reduce(self, a, out=out, adjoint=adjoint)

    def broadcast(self, a: Any, src: int = 0) -> None:
        """Copy rank `src`'s `a` into `a` on every rank, in place (recorded)."""
        broadcast(self, a, src=src)

    def slabs(self, global_shape: tuple[int, ...], axis: int = 0, width: int = 1,
              periodic: bool = False) -> SlabDecomposition:
        """The slab decomposition of a global grid over this communicator's ranks."""
        return SlabDecomposition(self, global_shape, axis=axis, width=width, periodic=periodic)


def init(backend: str = "gloo", timeout: float = DEFAULT_TIMEOUT, check: bool = True,
         init_method: str | None = None, rank: int | None = None,
         world_size: int | None = None) -> Communicator:
    """The communicator of this process.

    Under torchrun (WORLD_SIZE and the rest in the environment), or given `init_method` /
    `rank` / `world_size`, this joins torch.distributed's default process group, creating it
    with `backend` and `timeout` (seconds) unless it exists already. Otherwise — a plain
    `python script.py` — the process is alone: every step is local (no process group).
    `timeout` also bounds each transfer's wait; `check`: exchange headers first (see
    `Communicator`)."""
    group = connect(backend, timeout, init_method, rank, world_size)
    return Communicator(group, timeout=timeout, check=check)


__all__ = ["Communicator", "init"]
