"""Transfers among a group of processes (torch.distributed, or one process alone): point to
point and collective, with header checks, sequence numbers and timeouts."""

from __future__ import annotations

import atexit
import contextlib
import datetime
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from .headers import Header, describe_mismatch, mismatch
from .tensors import DistributedError

#: added to a transfer's tag for its header (data tags stay below it)
HEADER_TAG = 64
#: default seconds a rank waits for another before giving up (init, transfers, collectives):
#: long enough for one rank to work alone a while (a checkpoint, a plot), far shorter than
#: torch's own 30 minutes for gloo
DEFAULT_TIMEOUT = 300.0


def _torch_dist() -> Any:
    try:
        return importlib.import_module("torch.distributed")
    except ImportError as e:
        raise DistributedError("gradloom.distributed needs PyTorch (torch.distributed): "
                               "pip install torch (the CPU wheel is enough for gloo)") from e


def connect(backend: str = "gloo", timeout: float = DEFAULT_TIMEOUT,
            init_method: str | None = None, rank: int | None = None,
            world_size: int | None = None) -> Any:
    """The torch.distributed group this process belongs to, or None when it runs alone.

    Under torchrun (or with RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT set, or an
    `init_method`) this joins the torch.distributed process group (created here with
    `backend` and `timeout` seconds if torch.distributed is not initialised yet; an existing
    default group is used as it is).
    """
    launched = init_method is not None or "WORLD_SIZE" in os.environ or world_size is not None
    if not launched:
        # a process group someone else started (torch loaded already); else this process is
        # alone, and torch is not even imported
        started = sys.modules.get("torch.distributed")
        if started is None or not (started.is_available() and started.is_initialized()):
            return None
    dist = _torch_dist()
    if not dist.is_initialized():
        kwargs: dict[str, Any] = {"timeout": datetime.timedelta(seconds=timeout)}
        if init_method is not None:
            kwargs["init_method"] = init_method
        if rank is not None:
            kwargs["rank"] = rank
        if world_size is not None:
            kwargs["world_size"] = world_size
        try:
            dist.init_process_group(backend, **kwargs)
        except (RuntimeError, ValueError) as e:
            raise DistributedError(f"gradloom.distributed.init: torch.distributed could not "
                                   f"start ({backend}, timeout {timeout:g} s): {e}") from e
        atexit.register(_destroy_at_exit, dist)
    return dist.group.WORLD


def _destroy_at_exit(dist: Any) -> None:
    """Tear down the process group this module created, before the interpreter's own teardown:
    left to the C++ destructors at exit, gloo (torch 2.13, seen here: about 1 run in 8 of the
    two-rank test) aborts the process with "terminate called without an active exception"
    after every step has succeeded, and torchrun reports the rank as failed."""
    if dist.is_initialized():
        with contextlib.suppress(RuntimeError):  # a group broken by a timeout: exiting anyway
            dist.destroy_process_group()


class Transport:
    """A group of ranks that run the same communication steps in the same order.

    `group`: a torch.distributed process group, or None for one process alone. `check`: each
    transfer first exchanges a fixed-size header (the operation, its sequence number, shape and
    dtype) so that ranks that disagree raise a clear error instead of mixing up data (one more
    small message, or one more all-gather, per transfer). Without it, gloo (torch 2.13, seen
    here) silently leaves the rest of a receive buffer longer than the message as it was,
    and aborts the whole process (an uncatchable C++ exception) on a message longer than the
    buffer.
    `timeout`: seconds a transfer waits for a peer.
    """

    def __init__(self, group: Any, timeout: float = DEFAULT_TIMEOUT, check: bool = True) -> None:
        self.group = group
        self.timeout = float(timeout)
        self.check = check
        self.seq = 0  # operations so far (forward and adjoint): equal on every rank
        if group is None:
            self.rank, self.size = 0, 1
        else:
            dist = _torch_dist()
            self.rank, self.size = dist.get_rank(group), dist.get_world_size(group)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rank={self.rank}, size={self.size})"

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def global_rank(self, rank: int) -> int:
        """The torch.distributed global rank of a rank of this group."""
        if self.group is None:
            return rank
        return int(_torch_dist().get_global_rank(self.group, rank))

    # -- point to point ---------------------------------------------------------------------

    def exchange(self, sends: Sequence[tuple[int, int, Any]],
                 recvs: Sequence[tuple[int, int, Any]], what: str) -> None:
        """Send and receive tensors at once: (peer rank, tag, tensor) each. Every receive is
        posted before any send, so two ranks sending to each other never block; a peer that
        does not answer within the timeout raises instead of hanging."""
        dist = _torch_dist()
        works = [dist.irecv(t, self.global_rank(peer), group=self.group, tag=tag)
                 for peer, tag, t in recvs]
        works += [dist.isend(t, self.global_rank(peer), group=self.group, tag=tag)
                  for peer, tag, t in sends]
        peers = sorted({p for p, _, _ in (*sends, *recvs)})
        for work in works:
            self._wait(work, what, peers)

    def _wait(self, work: Any, what: str, peers: list[int]) -> None:
        try:
            work.wait(timeout=datetime.timedelta(seconds=self.timeout))
        except RuntimeError as e:
            raise DistributedError(
                f"gradloom.distributed: rank {self.rank} gave up on {what} with rank(s) "
                f"{peers} ({e}). Another rank may have failed or be running other "
                "communication steps: every rank must run the same steps in the same order, "
                "forward and backward. The process group cannot be used after this.") from e

    def check_neighbours(self, mine: Header, moves: Sequence[tuple[int | None, int | None, int]],
                         axis: int) -> None:
        """Exchange headers along each move (rank sent to, rank received from, tag), then raise
        on any disagreement other than the local extent along the split `axis`."""
        if not self.check:
            return
        torch = importlib.import_module("torch")
        out = torch.tensor(mine.encode(), dtype=torch.int64)
        sends = [(to, HEADER_TAG + tag, out) for to, _, tag in moves if to is not None]
        recvs = [(frm, HEADER_TAG + tag, torch.zeros_like(out))
                 for _, frm, tag in moves if frm is not None]
        self.exchange(sends, recvs, f"{mine.name} (header)")
        for peer, _, got in recvs:
            other = Header.decode(got.tolist())
            problem = mismatch(mine, other, axis)
            if problem:
                raise DistributedError(describe_mismatch(mine, other, self.rank, peer, problem))

    # -- collectives ------------------------------------------------------------------------

    def check_all(self, mine: Header) -> None:
        """All-gather every rank's header; raise on any disagreement."""
        if not self.check or self.size == 1:
            return
        torch = importlib.import_module("torch")
        out = torch.tensor(mine.encode(), dtype=torch.int64)
        rows = [torch.zeros_like(out) for _ in range(self.size)]
        self.collective("all_gather", rows, out, what=f"{mine.name} (header)")
        for peer, row in enumerate(rows):
            other = Header.decode(row.tolist())
            problem = mismatch(mine, other)
            if problem:
                raise DistributedError(describe_mismatch(mine, other, self.rank, peer, problem))

    def collective(self, name: str, *args: Any, what: str, **kwargs: Any) -> None:
        """torch.distributed.<name>(*args) on this group; its timeout is the process group's."""
        dist = _torch_dist()
        try:
            getattr(dist, name)(*args, group=self.group, **kwargs)
        except RuntimeError as e:
            raise DistributedError(
                f"gradloom.distributed: rank {self.rank}: {what} failed ({e}). Another rank "
                "may have failed or be running other communication steps: every rank must "
                "run the same steps in the same order, forward and backward.") from e

    def all_reduce_tensor(self, t: Any, what: str) -> None:
        """Sum a tensor over the ranks, in place."""
        if self.size > 1:
            self.collective("all_reduce", t, what=what)

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        if self.size > 1:
            self.collective("barrier", what="barrier")

    def all_gather_array(self, a: Any, dtype: str) -> list[Any]:
        """Every rank's copy of a CPU tensor of the same shape (headers checked first; not
        differentiable). `dtype`: the array's gradloom dtype, for the header."""
        if self.size == 1:
            return [a]
        self.check_all(Header("gather", self.next_seq(), tuple(a.shape), dtype))
        rows = [a.new_empty(a.shape) for _ in range(self.size)]
        self.collective("all_gather", rows, a.contiguous(), what="all_gather")
        return rows


__all__ = ["DEFAULT_TIMEOUT", "Transport", "connect"]
