"""Halo exchange of slab-decomposed arrays, recorded on active tapes with its adjoint (the ghost
layers' gradients go back to the ranks that own those layers and are added there).

Along the split `axis` a local array holds `width` ghost layers, its own `n` layers, then
`width` ghost layers: indices [0, w) | [w, w + n) | [w + n, 2w + n). The exchange copies a
rank's top own layers [n, n + w) into the lower ghosts of the rank above and its bottom own
layers [w, 2w) into the upper ghosts of the rank below. Without `periodic`, the first rank's
lower ghosts and the last rank's upper ghosts are left alone (boundary values the user sets,
which keep their own gradients).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradloom.runtime.array.watch import before_write
from gradloom.runtime.recording import ACTIVE_TAPES, FuncRecord

from .headers import Header
from .tensors import (
    DistributedError,
    as_tensor,
    check_array,
    recv_buffer,
    section,
    send_buffer,
    unpack,
)
from .transport import Transport

#: message tags: the direction data travels (toward higher or lower ranks), so that with two
#: ranks on a ring — both neighbours one process — the two messages cannot be swapped
UP, DOWN = 1, 2
#: the adjoint's messages get their own tags, so a forward message can never match them
ADJOINT_TAGS = 2


@dataclass
class Move:
    """One direction of an exchange: `send` goes to rank `to`; what rank `frm` sends lands
    in `recv` (None: no such neighbour)."""

    tag: int
    to: int | None
    send: Any
    frm: int | None
    recv: Any


def neighbours(comm: Transport, periodic: bool) -> tuple[int | None, int | None]:
    """(the rank below, the rank above) this one; None at a non-periodic edge."""
    r, size = comm.rank, comm.size
    lower = r - 1 if r > 0 else (size - 1 if periodic else None)
    upper = r + 1 if r < size - 1 else (0 if periodic else None)
    return lower, upper


def halo_exchange(comm: Transport, a: Any, axis: int = 0, width: int = 1,
                  periodic: bool = False) -> None:
    """Fill the ghost layers of `a` along `axis` from the neighbouring ranks, in place.

    Every rank of `comm` must call it with arrays that agree in every dimension but `axis`
    and in dtype (checked first). Recorded on the active tapes when `a` has a gradient: the
    adjoint adds each ghost layer's gradient into the owner's layer and zeroes the ghost's.
    """
    a = check_array(a, "halo_exchange(a)")
    n = _own_layers(a, axis, width)
    lower, upper = neighbours(comm, periodic)
    header = Header("halo_exchange", comm.next_seq(), tuple(a.shape), str(a.dtype), axis,
                    width, int(periodic))
    before_write(a)  # tapes keep the ghost values their recorded launches read
    t = as_tensor(a)
    moves = [Move(UP, upper, section(t, axis, n, width), lower, section(t, axis, 0, width)),
             Move(DOWN, lower, section(t, axis, width, width), upper,
                  section(t, axis, n + width, width))]
    transfer(comm, header, moves, accumulate=False)
    if a.grad is not None and ACTIVE_TAPES.get():
        record = FuncRecord(lambda: _adjoint(comm, a, header, n), [a])
        for tape in ACTIVE_TAPES.get():
            tape.record(record)


def _adjoint(comm: Transport, a: Any, forward: Header, n: int) -> None:
    """The exchange's backward step: ghost gradients travel back and add into the layers they
    were copied from; the ghosts' own gradients become zero (the exchange overwrote them)."""
    if a.grad is None:
        raise DistributedError("halo_exchange backward: the array's gradient was removed after "
                               "the exchange was recorded")
    axis, width = forward.axis, forward.width
    lower, upper = neighbours(comm, bool(forward.flags))
    header = Header("halo_exchange adjoint", comm.next_seq(), forward.shape, forward.dtype,
                    axis, width, forward.flags)
    g = as_tensor(a.grad)
    lower_ghost, upper_ghost = section(g, axis, 0, width), section(g, axis, n + width, width)
    moves = [Move(DOWN + ADJOINT_TAGS, lower, lower_ghost, upper, section(g, axis, n, width)),
             Move(UP + ADJOINT_TAGS, upper, upper_ghost, lower, section(g, axis, width, width))]
    transfer(comm, header, moves, accumulate=True)
    # after the sends completed: the ghosts a neighbour filled got no gradient of their own
    if lower is not None:
        lower_ghost.zero_()
    if upper is not None:
        upper_ghost.zero_()


def transfer(comm: Transport, header: Header, moves: list[Move], accumulate: bool) -> None:
    """Run the moves (headers first, when checking): received data replaces the `recv` views,
    or is added to them (`accumulate`)."""
    if comm.size > 1:
        comm.check_neighbours(header, [(m.to, m.frm, m.tag) for m in moves], header.axis)
    local = [m for m in moves if m.to == comm.rank]
    remote = [m for m in moves if m.to != comm.rank]
    # a rank that is its own neighbour (one periodic process): copy first, then write, so the
    # adjoint's reads of ghosts happen before anything is added
    got = [(m.recv, m.send.clone()) for m in local]
    recvs = [(m.frm, m.tag, m.recv.new_empty(m.recv.shape) if accumulate else
              recv_buffer(m.recv)) for m in remote if m.frm is not None]
    sends = [(m.to, m.tag, send_buffer(m.send)) for m in remote if m.to is not None]
    if recvs or sends:
        comm.exchange(sends, recvs, header.name)
    views = [m.recv for m in remote if m.frm is not None]
    got += [(view, buf) for view, (_, _, buf) in zip(views, recvs)]
    for view, buf in got:
        if accumulate:
            view.add_(buf)
        else:
            unpack(view, buf)


def _own_layers(a: Any, axis: int, width: int) -> int:
    """The number of layers this rank owns along axis; errors name the bad argument."""
    if type(axis) is not int or not 0 <= axis < a.ndim:
        raise DistributedError(f"halo_exchange(axis={axis!r}): expected an int in "
                               f"[0, {a.ndim}) for an array of shape {a.shape}")
    if type(width) is not int or width < 1:
        raise DistributedError(f"halo_exchange(width={width!r}): expected an int >= 1")
    n = a.shape[axis] - 2 * width
    if n < width:
        raise DistributedError(
            f"halo_exchange(a): a has {a.shape[axis]} layers along axis {axis}; with "
            f"width={width} it needs at least {3 * width} ({width} ghost layers on each side "
            f"and at least {width} of its own)")
    return n


__all__ = ["DOWN", "UP", "Move", "halo_exchange", "neighbours", "transfer"]
