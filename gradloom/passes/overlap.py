"""Whether a launch's threads read array elements that other threads of it write, decided at launch.

An adjoint replays each thread's forward code (autodiff/reverse.py). Where a thread reads an
element that another thread of the launch overwrites, the replay cannot know which value the
forward read, and autodiff/replay.py refuses the kernel. Whether that happens often depends on
the launch, not the text: `q[s * T + t + 1, i] = f(q[s * T + t, i])` (trajectories of T steps
stored one after another) overwrites what another thread reads only when T = 1. So instead of
refusing, autodiff keeps an `AddressProgram`: the integer arithmetic, sliced out of the forward
kernel, that computes each access's byte address (and the conditions of the branches around it)
from the thread index and the launch's arguments. At each launch's backward, `find_overlap`
runs it over every thread at once (ir/thread_rules.py) and names a thread that reads an element
another thread writes, if one does. Guards whose conditions the program cannot compute are taken
as true: the check may then see accesses the launch does not make, never miss one it makes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SourceLoc
from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Var, walk_ops
from ..ir.prims import PRIMS, Effect
from ..types import ScalarType

#: one op of the program: result id, primitive, operand ids, attr, result type
Step = tuple[int, str, tuple[int, ...], Any, ScalarType]


@dataclass(frozen=True)
class Access:
    """One memory access of a checked array, as the program computes its address."""

    array: int  # the argument offset of the array's data pointer
    reads: bool
    writes: bool
    terms: tuple[int, ...]  # ids of the values whose sum is the byte offset from the array's start
    offset: int  # a constant byte offset added to that sum
    size: int  # the bytes it reads or writes
    guards: tuple[tuple[int, bool], ...]  # (condition id, the value it must have)
    loc: SourceLoc


@dataclass(frozen=True)
class AddressProgram:
    """What a launch-time overlap check runs: the steps, then the accesses they address."""

    steps: tuple[Step, ...]
    accesses: tuple[Access, ...]


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
    #: launches found free of overlap, by what decides it (the dims and the argument values
    #: the program reads): a Tape replayed with the same steps checks each once
    clear: set[tuple[Any, ...]] = field(default_factory=set, compare=False, repr=False)

    def error(self, args: bytes, dims: tuple[int, ...], exclusive: bool = False
              ) -> tuple[str, SourceLoc] | None:
        """The message and the read's location where the launch overlaps, else None;
        `exclusive` (threads that run in no set order, as on a GPU): two threads writing one
        element overlap too."""
        key = (dims, exclusive, *(args[attr:attr + rtype.size] for _, prim, _, attr, rtype
                                  in self.program.steps if prim == "arg"))
        if key in self.clear:
            return None
        found = find_overlap(self.program, args, dims, exclusive)
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


def address_program(kernel: KernelIR, arrays: frozenset[int]) -> AddressProgram | None:
    """The program addressing every access to `arrays` (argument offsets) in a forward kernel,
    or None where an address depends on something a launch cannot compute ahead (a loaded
    value, a loop's carried value, a float)."""
    defs = {op.result.id: op for op in walk_ops(kernel.body) if op.result is not None}
    slicer = _Slicer(defs)
    accesses: list[Access] = []
    for op, guards in _guarded(kernel.body, ()):
        prim = PRIMS[op.prim]
        if not prim.memory or (op.result is not None and op.result.type.kind == "p"):
            continue
        root, terms = _address_terms(defs, op)
        if root not in arrays:
            continue
        if root is None or not all(slicer.computable(t) for t in terms):
            return None
        kept = tuple((c.id, v) for c, v in guards if slicer.computable(c))
        value = op.result if op.result is not None else op.args[2]
        accesses.append(Access(root, prim.has(Effect.READ), prim.has(Effect.WRITE),
                               tuple(t.id for t in terms), int(op.attr or 0), value.type.size,
                               kept, op.loc))
    needed = {i for a in accesses for i in (*a.terms, *(c for c, _ in a.guards))}
    return AddressProgram(slicer.steps(needed, kernel.body), tuple(accesses))


def _guarded(b: Block, guards: tuple[tuple[Var, bool], ...]
             ) -> Iterator[tuple[Op, tuple[tuple[Var, bool], ...]]]:
    """Every op with the branch conditions it runs under (loops and custom regions add none)."""
    for s in b.stmts:
        if isinstance(s, Op):
            yield s, guards
        elif isinstance(s, If):
            yield from _guarded(s.then, (*guards, (s.cond, True)))
            yield from _guarded(s.orelse, (*guards, (s.cond, False)))
        elif isinstance(s, Loop):
            yield from _guarded(s.cond, guards)
            yield from _guarded(s.body, guards)
        elif isinstance(s, Custom):
            yield from _guarded(s.body, guards)
            yield from _guarded(s.adjoint, guards)


def _address_terms(defs: dict[int, Op], op: Op) -> tuple[int | None, list[Var]]:
    """The argument offset of the array an access is rooted in (None: not an argument), and the
    byte offsets whose sum is its address from the array's start (`ptr_add`s, then the op's)."""
    terms = [op.args[1]]
    d = defs.get(op.args[0].id)
    while d is not None and d.prim == "ptr_add":
        terms.append(d.args[1])
        d = defs.get(d.args[0].id)
    return (int(d.attr) if d is not None and d.prim == "arg" else None), terms


class _Slicer:
    """Which values the program can compute over every thread, and the steps that do."""

    def __init__(self, defs: dict[int, Op]) -> None:
        self.defs = defs
        self.known: dict[int, bool] = {}

    def computable(self, v: Var) -> bool:
        if v.id not in self.known:
            d = self.defs.get(v.id)
            self.known[v.id] = v.type.kind in "iub" and d is not None and (
                d.prim in ("arg", "tid") or (PRIMS[d.prim].host_threads is not None
                                             and all(self.computable(a) for a in d.args)))
        return self.known[v.id]

    def steps(self, roots: set[int], body: Block) -> tuple[Step, ...]:
        """The ops computing `roots`, in program order."""
        needed: set[int] = set()
        todo = list(roots)
        while todo:
            i = todo.pop()
            if i not in needed:
                needed.add(i)
                todo.extend(a.id for a in self.defs[i].args)
        return tuple((op.result.id, op.prim, tuple(a.id for a in op.args), op.attr,
                      op.result.type)
                     for op in walk_ops(body) if op.result is not None and op.result.id in needed)


def find_overlap(program: AddressProgram, args: bytes, dims: tuple[int, ...],
                 exclusive: bool = False) -> Overlap | None:
    """Run the program over the launch `dims` with the argument block `args` (abi.py's layout:
    each `arg` step reads its value at its offset) and find a read of another thread's write
    (with `exclusive`, also two threads' writes of one element)."""
    if math.prod(dims) <= 1:
        return None
    env = _evaluate(program.steps, args, dims)
    for array in sorted({a.array for a in program.accesses}):
        found = _array_overlap([a for a in program.accesses if a.array == array], env, dims,
                               exclusive)
        if found is not None:
            reader, writer, loc, reads = found
            return Overlap(array, _thread_index(reader, dims), _thread_index(writer, dims), loc,
                           reads)
    return None


def _evaluate(steps: tuple[Step, ...], args: bytes, dims: tuple[int, ...]) -> dict[int, Any]:
    """Every step's value over the launch grid: arrays shaped to broadcast against `dims`, so
    that a value of one thread index component or of none costs one element per distinct
    value, not one per thread."""
    env: dict[int, Any] = {}
    with np.errstate(all="ignore"):  # integer wrap-around is the kernel's too
        for result, prim, operands, attr, rtype in steps:
            if prim == "arg":
                env[result] = np.frombuffer(args, rtype.np_dtype, 1, attr).reshape(())
            elif prim == "tid":
                env[result] = _tid(attr, dims)
            else:
                rule = PRIMS[prim].host_threads
                assert rule is not None  # the slicer keeps only such ops
                env[result] = rule([env[i] for i in operands], rtype, attr)
    return env


def _tid(attr: tuple[int, int], dims: tuple[int, ...]) -> Any:
    """wp.tid()'s component k of n over the grid, as codegen/tid_split.py computes it: the
    index along dimension k when n is the launch's dimension count, else from the flat index."""
    k, n = attr
    if n == len(dims) and n > 1:
        shape = [1] * n
        shape[k] = dims[k]
        return np.arange(dims[k], dtype=np.int32).reshape(shape)
    flat = np.arange(math.prod(dims), dtype=np.int64).reshape(dims)
    if n > 1:
        flat = flat // math.prod(dims[k + 1:n])
        if k > 0:
            flat = flat % dims[k]
    return flat.astype(np.int32)


def _thread_index(flat: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, dims))


@dataclass
class _Part:
    """The elements one access touches over the launch, and the threads touching them."""

    where: Any  # byte offsets from the array's start; elements from the lowest, once _scale ran
    threads: Any  # the flat index of the thread of each
    access: Access


def _parts(accesses: list[Access], env: dict[int, Any], dims: tuple[int, ...]) -> list[_Part]:
    every = np.arange(math.prod(dims), dtype=np.int64)
    parts = []
    for a in accesses:
        addr: Any = np.int64(a.offset)
        for t in a.terms:
            addr = addr + env[t].astype(np.int64)
        if addr.shape == dims:
            where = addr.reshape(-1)  # a fresh array: shifted in place later
        else:
            where = np.empty(dims, dtype=np.int64)
            where[...] = addr
            where = where.reshape(-1)
        threads = every
        if a.guards:
            mask = np.ones(dims, dtype=np.bool_)
            for cond, value in a.guards:
                mask &= env[cond].astype(np.bool_) == value
            mask = mask.reshape(-1)
            where, threads = where[mask], every[mask]
        parts.append(_Part(where, threads, a))
    return [p for p in parts if len(p.where)]


def _scale(parts: list[_Part]) -> int:
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
Conflict = tuple[bool, _Part, int, int]


def _array_overlap(accesses: list[Access], env: dict[int, Any], dims: tuple[int, ...],
                   exclusive: bool) -> tuple[int, int, SourceLoc, bool] | None:
    """(reader, writer, the read's location, True) of a read of an element another thread
    writes; with `exclusive`, (writer, other writer, the write's location, False) of an element
    two threads write."""
    parts = _parts(accesses, env, dims)
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


def _dense(writes: list[_Part], reads: list[_Part], span: int, exclusive: bool
           ) -> Conflict | None:
    """The check on a map of every element in the span: which thread's write each holds (one
    of them, where several threads write it), and whether several threads write it."""
    owner = np.full(span, -1, dtype=np.int64)
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


def _other_writer(writes: list[_Part], element: int, thread: int) -> int:
    """A thread other than `thread` that writes `element` (one exists)."""
    for p in writes:
        others = p.threads[(p.where == element) & (p.threads != thread)]
        if others.size:
            return int(others[0])
    raise AssertionError("no other writer")


def _sorted(writes: list[_Part], reads: list[_Part], span: int, exclusive: bool
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


def _locate(parts: list[_Part], flat: int) -> tuple[_Part, int]:
    """The part and position of element `flat` of the parts' concatenation."""
    for p in parts:
        if flat < len(p.where):
            return p, flat
        flat -= len(p.where)
    raise IndexError(flat)
