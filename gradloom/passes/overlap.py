"""Whether a launch's threads read array elements that other threads of it write, decided at launch.

An adjoint replays each thread's forward code (autodiff/reverse.py). Where a thread reads an
element that another thread of the launch overwrites, the replay cannot know which value the
forward read, and autodiff/replay.py finds such arrays. Whether that happens often depends on
the launch, not the text: `q[s * T + t + 1, i] = f(q[s * T + t, i])` (trajectories of T steps
stored one after another) overwrites what another thread reads only when T = 1. So instead of
refusing the kernel, its adjoint carries a `LaunchCheck`: the address program of those arrays
(passes/address_program.py), which each launch's backward runs over its threads
(passes/address_eval.py) to find a thread that reads an element another thread writes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SourceLoc
from .address_eval import Part, TooLarge, run
from .address_program import AddressProgram


@dataclass(frozen=True)
class Overlap:
    """A thread that reads an element of `array` which another thread writes."""

    array: int
    reader: tuple[int, ...]  # the reading thread's index (wp.tid())
    writer: tuple[int, ...]
    loc: SourceLoc  # the read
    reads: bool = True  # False: `reader` writes the element too (an `exclusive` check)


#: the two hazards of a launch whose threads read elements other threads overwrite
REPLAY, ORDER = "replay", "order"
_ADVICE = "write the new values to a separate array, or split the kernel into two launches"


def hazard_message(kind: str, name: str | None, subject: str = "kernel", detail: str = ""
                   ) -> str:
    """Why the kernel (or one launch of it) cannot be differentiated; `detail` names threads."""
    array = f"{name!r}" if name else "an array"
    detail = f" ({detail})" if detail else ""
    if kind == ORDER:
        return (f"cannot differentiate this {subject}: it uses a value an atomic operation "
                f"returns, so its adjoint runs threads in launch order, and threads read "
                f"elements of {array} that other threads overwrite, whose gradients need the "
                f"reverse order{detail}; {_ADVICE}")
    return (f"cannot differentiate this {subject}: threads of one launch read elements of "
            f"{array} that other threads overwrite, so the adjoint cannot know which value each "
            f"thread read{detail}; {_ADVICE}")


#: how many overlap-free launches a check remembers
_REMEMBERED = 4096


@dataclass(frozen=True)
class LaunchCheck:
    """What each launch of an adjoint checks: that no thread reads an element of the arrays in
    `kinds` which another thread writes (kinds: per array offset, the hazard otherwise)."""

    program: AddressProgram
    kinds: tuple[tuple[int, str], ...]
    names: tuple[tuple[int, str], ...]
    loc: SourceLoc  # an access of the first such array: where a launch too large to check points
    #: launches found free of overlap, by what decides it (the dims and the argument values
    #: the program reads): a Tape replayed with the same steps checks each once
    clear: set[tuple[Any, ...]] = field(default_factory=set, compare=False, repr=False)

    def error(self, args: bytes, dims: tuple[int, ...], exclusive: bool = False
              ) -> tuple[str, SourceLoc] | None:
        """The message and the read's location where the launch overlaps, else None;
        `exclusive` (threads that run in no set order, as on a GPU): two threads writing one
        element overlap too."""
        key = (dims, exclusive, *(args[at:at + t.size] for at, t in self.program.params))
        if key in self.clear:
            return None
        try:
            found = find_overlap(self.program, args, dims, exclusive)
        except TooLarge as exc:
            offset, kind = self.kinds[0]
            return hazard_message(kind, dict(self.names).get(offset), "launch",
                                  f"{exc}, too many to check that they do not"), self.loc
        if found is None:
            if len(self.clear) >= _REMEMBERED:
                self.clear.clear()
            self.clear.add(key)
            return None
        verb = "reads" if found.reads else "writes"
        detail = (f"thread {_show(found.reader)} {verb} an element thread "
                  f"{_show(found.writer)} writes")
        return (hazard_message(dict(self.kinds)[found.array], dict(self.names).get(found.array),
                               "launch", detail), found.loc)


def _show(index: tuple[int, ...]) -> str:
    return str(index[0]) if len(index) == 1 else str(index)


def find_overlap(program: AddressProgram, args: bytes, dims: tuple[int, ...],
                 exclusive: bool = False) -> Overlap | None:
    """Run the program over the launch `dims` with the argument block `args` (abi.py's layout:
    each `arg` step reads its value at its offset) and find a read of another thread's write
    (with `exclusive`, also two threads' writes of one element)."""
    if math.prod(dims) <= 1:
        return None
    parts = run(program, args, dims)
    for array in sorted({p.access.array for p in parts}):
        found = _array_overlap([p for p in parts if p.access.array == array], exclusive)
        if found is not None:
            reader, writer, loc, reads = found
            return Overlap(array, _thread_index(reader, dims), _thread_index(writer, dims), loc,
                           reads)
    return None


def _thread_index(flat: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, dims))


def _scale(parts: list[Part]) -> int:
    """Make each part's addresses element indices from the lowest address (bytes where the
    accesses differ in size or alignment); the span of indices."""
    low = min(int(p.where.min()) for p in parts)
    for p in parts:
        p.where -= low
    grain = parts[0].access.size
    if grain > 1 and grain & (grain - 1) == 0 and all(p.access.size == grain for p in parts) \
            and not any(np.any(p.where & (grain - 1)) for p in parts):
        for p in parts:
            p.where >>= grain.bit_length() - 1
    return max(int(p.where.max()) for p in parts) + 1


#: the dense check maps every element between the lowest and highest address: used while that
#: span is at most this many elements per address (plus a fixed allowance), else a sort
_DENSE_PER_ADDRESS = 16
_DENSE_ALLOWANCE = 1 << 20

#: a conflict: whether it is a read (else a write, of an `exclusive` check), the part of the
#: access that meets another thread's write, the position there, the other thread
Conflict = tuple[bool, Part, int, int]


def _array_overlap(parts: list[Part], exclusive: bool
                   ) -> tuple[int, int, SourceLoc, bool] | None:
    """(reader, writer, the read's location, True) of a read of an element another thread
    writes; with `exclusive`, (writer, other writer, the write's location, False) of an element
    two threads write."""
    writes = [p for p in parts if p.access.writes]
    if not writes:
        return None
    reads = [p for p in parts if p.access.reads]
    span = _scale(parts)
    count = sum(len(p.where) for p in parts)
    dense = span <= _DENSE_PER_ADDRESS * count + _DENSE_ALLOWANCE
    found = (_dense if dense else _sorted)(writes, reads, span, exclusive)
    if found is None:
        return None
    is_read, part, j, other = found
    return int(part.threads[j]), other, part.access.loc, is_read


def _dense(writes: list[Part], reads: list[Part], span: int, exclusive: bool
           ) -> Conflict | None:
    """The check on a map of every element in the span: which thread's write each holds (one
    of them, where several threads write it), and whether several threads write it."""
    threads = max(int(p.threads.max()) for p in writes)
    owner = np.full(span, -1, dtype=np.int32 if threads < 1 << 31 else np.int64)
    for p in writes:
        owner[p.where] = p.threads
    several = np.zeros(span, dtype=np.bool_)
    for p in writes:
        lost = np.flatnonzero(owner[p.where] != p.threads)  # another thread's write won
        if exclusive and lost.size:
            j = int(lost[0])
            return False, p, j, int(owner[p.where[j]])
        several[p.where[lost]] = True
    for p in reads:
        seen = owner[p.where]
        bad = np.flatnonzero((seen >= 0) & ((seen != p.threads) | several[p.where]))
        if bad.size:
            j = int(bad[0])
            other = int(seen[j]) if seen[j] != p.threads[j] else _other_writer(
                writes, int(p.where[j]), int(p.threads[j]))
            return True, p, j, other
    return None


def _other_writer(writes: list[Part], element: int, thread: int) -> int:
    """A thread other than `thread` that writes `element` (one exists)."""
    for p in writes:
        others = p.threads[(p.where == element) & (p.threads != thread)]
        if others.size:
            return int(others[0])
    raise AssertionError("no other writer")


def _sorted(writes: list[Part], reads: list[Part], span: int, exclusive: bool
            ) -> Conflict | None:
    """The check by sorting the writes: the lowest and highest thread writing each element."""
    w = np.concatenate([p.where for p in writes])
    w_thread = np.concatenate([p.threads for p in writes])
    order = np.argsort(w, kind="stable")
    w_sorted, t_sorted = w[order], w_thread[order]
    starts = np.flatnonzero(np.r_[True, w_sorted[1:] != w_sorted[:-1]])
    unique = w_sorted[starts]
    first = np.minimum.reduceat(t_sorted, starts)
    last = np.maximum.reduceat(t_sorted, starts)
    if exclusive and (shared := np.flatnonzero(first != last)).size:
        k = int(shared[0])
        part, j = _locate(writes, int(order[starts[k]]))
        mine = int(part.threads[j])
        return False, part, j, int(last[k]) if first[k] == mine else int(first[k])
    for p in reads:
        at = np.minimum(np.searchsorted(unique, p.where), len(unique) - 1)
        bad = np.flatnonzero((unique[at] == p.where)
                             & ((first[at] != p.threads) | (last[at] != p.threads)))
        if bad.size:
            j = int(bad[0])
            k = at[j]
            return True, p, j, int(first[k]) if first[k] != p.threads[j] else int(last[k])
    return None


def _locate(parts: list[Part], flat: int) -> tuple[Part, int]:
    """The part and position of element `flat` of the parts' concatenation."""
    for p in parts:
        if flat < len(p.where):
            return p, flat
        flat -= len(p.where)
    raise IndexError(flat)
