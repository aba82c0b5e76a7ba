"""All-reduce (sum) and broadcast of gradloom arrays, recorded on active tapes with their
adjoint communication.

all_reduce's adjoint is an all-reduce of the result's gradient: the gradient every rank's use
of the sum contributes reaches every rank's input. When every rank goes on to compute the *same*
objective from the sum (a loss all ranks seed with 1), that sum counts the objective once per
rank — the gradient comes out `size` times too large. `adjoint="replicated"` is for that case:
each rank keeps its own gradient of the result (checked equal on every rank).
"""

from __future__ import annotations

import importlib
from typing import Any

from gradloom.runtime.array.ops import zeros_like
from gradloom.runtime.array.watch import before_write
from gradloom.runtime.recording import ACTIVE_TAPES, FuncRecord

from .headers import Header
from .tensors import DistributedError, as_tensor, check_array
from .transport import Transport

ADJOINTS = {"sum": 0, "replicated": 1}


def all_reduce(comm: Transport, a: Any, out: Any = None, adjoint: str = "sum") -> Any:
    """A new array (or `out`) holding the sum of `a` over the ranks, on every rank.

    `adjoint`: "sum" (the ranks' gradients of the result are summed into each `a.grad`), or
    "replicated" (every rank uses the result the same way, so its gradient is the same on every
    rank and is passed on as it is — the case of a loss every rank seeds)."""
    a = check_array(a, "all_reduce(a)")
    if adjoint not in ADJOINTS:
        raise DistributedError(f"all_reduce(adjoint={adjoint!r}): expected 'sum' or "
                               "'replicated'")
    out = _output(a, out)
    header = Header("all_reduce", comm.next_seq(), tuple(a.shape), str(a.dtype),
                    flags=ADJOINTS[adjoint])
    comm.check_all(header)
    before_write(out)
    t = as_tensor(out)
    buf = t if t.is_contiguous() else t.new_empty(t.shape)
    buf.copy_(as_tensor(a))
    comm.all_reduce_tensor(buf, header.name)
    if buf is not t:
        t.copy_(buf)
    if a.grad is not None and out.grad is not None and ACTIVE_TAPES.get():
        record = FuncRecord(lambda: _all_reduce_adjoint(comm, a, out, header), [out, a],
                            written=1)
        for tape in ACTIVE_TAPES.get():
            tape.record(record)
    return out


def _output(a: Any, out: Any) -> Any:
    if out is None:
        return zeros_like(a)
    out = check_array(out, "all_reduce(out)")
    if out is a or out._mem is a._mem:
        raise DistributedError("all_reduce(out=...): out must not share memory with a (an "
                               "in-place all-reduce would lose the input its gradient needs)")
    if tuple(out.shape) != tuple(a.shape) or out.dtype != a.dtype:
        raise DistributedError(f"all_reduce(out=...): out has shape {out.shape} and dtype "
                               f"{out.dtype}; a has shape {a.shape} and dtype {a.dtype}")
    return out


def _all_reduce_adjoint(comm: Transport, a: Any, out: Any, forward: Header) -> None:
    if a.grad is None or out.grad is None:
        raise DistributedError("all_reduce backward: a gradient was removed after the "
                               "all-reduce was recorded")
    header = Header("all_reduce adjoint", comm.next_seq(), forward.shape, forward.dtype,
                    flags=forward.flags)
    comm.check_all(header)
    g = as_tensor(out.grad).clone()
    if forward.flags == ADJOINTS["sum"]:
        comm.all_reduce_tensor(g, header.name)
    elif comm.check:
        _check_replicated(comm, g, header)
    as_tensor(a.grad).add_(g)
    as_tensor(out.grad).zero_()  # the all-reduce wrote out: its gradient is consumed


def _check_replicated(comm: Transport, g: Any, header: Header) -> None:
    """Raise unless g is the same on every rank (adjoint="replicated" relies on it)."""
    if comm.size == 1:
        return
    torch = importlib.import_module("torch")
    both = torch.stack([g.reshape(-1), -g.reshape(-1)]).contiguous()
    comm.collective("all_reduce", both, what=f"{header.name} (check)",
                    op=importlib.import_module("torch.distributed").ReduceOp.MAX)
    if not (torch.equal(both[0], g.reshape(-1)) and torch.equal(-both[1], g.reshape(-1))):
        raise DistributedError(
            f"gradloom.distributed: {header.name}: all_reduce(adjoint='replicated') needs the "
            "result's gradient to be the same on every rank (every rank seeds the same loss), "
            "but it differs across ranks; use adjoint='sum' when each rank's use of the result "
            "is its own part of the objective")


def broadcast(comm: Transport, a: Any, src: int = 0) -> None:
    """Rank `src`'s `a` copied into `a` on every other rank (in place). Recorded: the adjoint
    sums every rank's gradient of `a` into rank src's and zeroes it on the others."""
    a = check_array(a, "broadcast(a)")
    if type(src) is not int or not 0 <= src < comm.size:
        raise DistributedError(f"broadcast(src={src!r}): expected a rank in [0, {comm.size})")
    header = Header("broadcast", comm.next_seq(), tuple(a.shape), str(a.dtype), flags=src)
    comm.check_all(header)
    if comm.size > 1:
        if comm.rank != src:
            before_write(a)
        t = as_tensor(a)
        buf = t if t.is_contiguous() else t.contiguous()
        comm.collective("broadcast", buf, comm.global_rank(src), what=header.name)
        if buf is not t:
            t.copy_(buf)
    if a.grad is not None and ACTIVE_TAPES.get():
        record = FuncRecord(lambda: _broadcast_adjoint(comm, a, header), [a])
        for tape in ACTIVE_TAPES.get():
            tape.record(record)


def _broadcast_adjoint(comm: Transport, a: Any, forward: Header) -> None:
    if a.grad is None:
        raise DistributedError("broadcast backward: the array's gradient was removed after "
                               "the broadcast was recorded")
    header = Header("broadcast adjoint", comm.next_seq(), forward.shape, forward.dtype,
                    flags=forward.flags)
    comm.check_all(header)
    if comm.size == 1:
        return
    g = as_tensor(a.grad)
    buf = g.contiguous().clone()
    src = forward.flags
    comm.collective("reduce", buf, comm.global_rank(src), what=header.name)
    if comm.rank == src:
        g.copy_(buf)
    else:
        g.zero_()  # the broadcast overwrote a here: its old values get no gradient


__all__ = ["ADJOINTS", "all_reduce", "broadcast"]
