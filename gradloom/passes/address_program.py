"""The integer arithmetic addressing some arrays of a kernel, sliced out of it: a program that a
launch runs over all its threads at once (passes/address_eval.py) to learn which elements each
thread reads and writes.

The program keeps the kernel's structure where it matters to addresses: an `if` whose condition
it can compute runs each branch for the threads that take it, and a loop whose trip condition
and carried values it can compute runs trip by trip for the threads still in it. A condition it
cannot compute (one read from memory) runs both branches, or the loop body once, for every
thread: the program may then see accesses a launch does not make, never miss one. An address it
cannot compute (a loaded index, a float) makes the whole program impossible: None.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import SourceLoc
from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Var, regions, walk_ops
from ..ir.prims import PRIMS, Effect
from ..types import ScalarType


@dataclass(frozen=True)
class OpStep:
    """One op: its result id, primitive, operand ids, attr and result type."""

    result: int
    prim: str
    operands: tuple[int, ...]
    attr: object
    rtype: ScalarType


@dataclass(frozen=True)
class Access:
    """One memory access of a checked array, as the program computes its address."""

    array: int  # the argument offset of the array's data pointer
    reads: bool
    writes: bool
    terms: tuple[int, ...]  # ids of the values whose sum is the byte offset from the array's start
    offset: int  # a constant byte offset added to that sum
    size: int  # the bytes it reads or writes
    loc: SourceLoc


@dataclass(frozen=True)
class IfStep:
    """A branch: `cond` None where the program cannot compute it (both branches then run for
    every thread); `results`: (result, then-yield, else-yield) ids of the results it computes."""

    cond: int | None
    then: Region
    orelse: Region
    results: tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class LoopStep:
    """A loop run trip by trip (`go`: the id of the condition `cond` yields), or, with `go` None,
    its condition and body once for every thread. `carried`: (init, param, body-yield, result)
    ids of the carried values it computes."""

    go: int | None
    cond: Region
    body: Region
    carried: tuple[tuple[int, int, int, int], ...]


Step = OpStep | Access | IfStep | LoopStep
Region = tuple[Step, ...]


@dataclass(frozen=True)
class AddressProgram:
    """What a launch-time overlap check runs, and the parameters it reads (byte offset and type
    of each `arg` step: what decides its outcome, with the grid)."""

    region: Region
    params: tuple[tuple[int, ScalarType], ...]


def address_program(kernel: KernelIR, arrays: frozenset[int]) -> AddressProgram | None:
    """The program addressing every access to `arrays` (argument offsets) in a forward kernel,
    or None where an address cannot be computed ahead of the launch."""
    slicer = _Slicer(kernel)
    for op in walk_ops(kernel.body):
        root, terms = slicer.access_terms(op)
        if root in arrays and not all(t.id in slicer.known for t in terms):
            return None
    region = slicer.region(kernel.body, arrays)
    params = tuple(sorted({(int(op.attr), op.result.type) for op in walk_ops(kernel.body)
                           if PRIMS[op.prim].effects == Effect.PARAM and op.result is not None
                           and op.result.id in slicer.needed}, key=lambda p: p[0]))
    return AddressProgram(region, params)


class _Slicer:
    """Which values a launch can compute for every thread, which of them the accesses need,
    and the program's regions."""

    def __init__(self, kernel: KernelIR) -> None:
        self.defs = {op.result.id: op for op in walk_ops(kernel.body) if op.result is not None}
        self.deps: dict[int, tuple[int, ...]] = {}
        #: the values some op, branch or loop reads
        self.used = {a.id for op in walk_ops(kernel.body) for a in op.args} | _yielded(kernel.body)
        self._collect(kernel.body)
        self.known = self._fixpoint()
        self.needed: set[int] = set()

    def _collect(self, b: Block) -> None:
        """The values each value is computed from, over ops, branches and loops."""
        for s in b.stmts:
            if isinstance(s, Op):
                if s.result is not None:
                    self.deps[s.result.id] = tuple(a.id for a in s.args)
            elif isinstance(s, If):
                for r, t, e in zip(s.results, s.then.yields, s.orelse.yields, strict=True):
                    self.deps[r.id] = (s.cond.id, t.id, e.id)
                self._collect(s.then)
                self._collect(s.orelse)
            elif isinstance(s, Loop):
                go = s.cond.yields[0].id
                for i, p, y, r in zip(s.inits, s.params, s.body.yields, s.results, strict=True):
                    self.deps[p.id] = (i.id, y.id, go)
                    self.deps[r.id] = (p.id,)
                self._collect(s.cond)
                self._collect(s.body)
            elif isinstance(s, Custom):
                self._collect(s.body)
                self._collect(s.adjoint)

    def _fixpoint(self) -> set[int]:
        """The values computable over threads: integers and bools from parameters, thread
        indices and constants through primitives with rules over threads, branches and loops
        (assumed computable, then dropped until every one's inputs are)."""
        known = {v for v in self.deps if self._leaf_ok(v)}
        while True:
            drop = {v for v in known if not all(d in known for d in self.deps[v])}
            if not drop:
                return known
            known -= drop

    def _leaf_ok(self, v: int) -> bool:
        op = self.defs.get(v)
        if op is None:  # a branch's or loop's value: by its inputs
            return True
        assert op.result is not None
        if op.result.type.kind not in "iub":
            return False
        # a launch parameter or the thread index: the launch gives them (address_eval.py)
        return PRIMS[op.prim].effects in (Effect.PARAM, Effect.THREAD) or \
            PRIMS[op.prim].host_threads is not None

    def access_terms(self, op: Op) -> tuple[int | None, list[Var]]:
        """The argument offset of the array a memory access is rooted in (None: not an access
        of an argument's array), and the byte offsets whose sum is its address (`ptr_add`s,
        then the op's own)."""
        if not PRIMS[op.prim].memory or (op.result is not None and op.result.type.kind == "p"):
            return None, []
        terms = [op.args[1]]
        d = self.defs.get(op.args[0].id)
        while d is not None and d.prim == "ptr_add":
            terms.append(d.args[1])
            d = self.defs.get(d.args[0].id)
        return (int(d.attr) if d is not None and d.prim == "arg" else None), terms

    def need(self, ids: Iterator[int]) -> None:
        todo = list(ids)
        while todo:
            v = todo.pop()
            if v not in self.needed:
                self.needed.add(v)
                todo.extend(self.deps.get(v, ()))

    def region(self, b: Block, arrays: frozenset[int]) -> Region:
        """The steps of a block the checked accesses need (the needed set grows as it goes:
        an access's terms, then what a branch or loop it sits in needs)."""
        self._mark(b, arrays)
        return self._emit(b, arrays)

    def _mark(self, b: Block, arrays: frozenset[int]) -> None:
        """Mark what every checked access needs, and the conditions of the regions around
        one (where computable)."""
        for s in b.stmts:
            if isinstance(s, Op):
                root, terms = self.access_terms(s)
                if root in arrays:
                    self.need(t.id for t in terms)
            else:
                blocks = regions(s)
                before = len(self.needed)
                for inner in blocks:
                    self._mark(inner, arrays)
                if len(self.needed) > before or _has_access(self, blocks, arrays):
                    self.need(c for c in _conditions(s) if c in self.known)

    def _emit(self, b: Block, arrays: frozenset[int]) -> Region:
        out: list[Step] = []
        for s in b.stmts:
            if isinstance(s, Op):
                out.extend(self._op_steps(s, arrays))
            elif isinstance(s, If):
                step = self._if_step(s, arrays)
                if step is not None:
                    out.append(step)
            elif isinstance(s, Loop):
                loop = self._loop_step(s, arrays)
                if loop is not None:
                    out.append(loop)
            else:
                out.extend(self._emit(s.body, arrays) + self._emit(s.adjoint, arrays))
        return tuple(out)

    def _op_steps(self, s: Op, arrays: frozenset[int]) -> list[Step]:
        root, terms = self.access_terms(s)
        if root in arrays:
            value = s.result if s.result is not None else s.args[2]
            prim = PRIMS[s.prim]
            # an atomic whose old value nothing uses only writes, for what others read
            reads = prim.has(Effect.READ) and (not prim.has(Effect.WRITE) or (
                s.result is not None and s.result.id in self.used))
            return [Access(root, reads, prim.has(Effect.WRITE),
                           tuple(t.id for t in terms), int(s.attr or 0), value.type.size, s.loc)]
        if s.result is not None and s.result.id in self.needed:
            return [OpStep(s.result.id, s.prim, tuple(a.id for a in s.args), s.attr,
                           s.result.type)]
        return []

    def _if_step(self, s: If, arrays: frozenset[int]) -> IfStep | None:
        then, orelse = self._emit(s.then, arrays), self._emit(s.orelse, arrays)
        results = tuple((r.id, t.id, e.id) for r, t, e in zip(s.results, s.then.yields,
                                                              s.orelse.yields, strict=True)
                        if r.id in self.needed)
        if not then and not orelse and not results:
            return None
        cond = s.cond.id if s.cond.id in self.known else None
        return IfStep(cond, then, orelse, results)

    def _loop_step(self, s: Loop, arrays: frozenset[int]) -> LoopStep | None:
        cond, body = self._emit(s.cond, arrays), self._emit(s.body, arrays)
        carried = tuple((i.id, p.id, y.id, r.id) for i, p, y, r in zip(
            s.inits, s.params, s.body.yields, s.results, strict=True)
            if p.id in self.needed or r.id in self.needed)
        if not cond and not body and not carried:
            return None
        go = s.cond.yields[0].id
        return LoopStep(go if go in self.known else None, cond, body, carried)


def _conditions(s: If | Loop | Custom) -> tuple[int, ...]:
    """The ids of the values that decide which threads run a region's blocks."""
    if isinstance(s, If):
        return (s.cond.id,)
    if isinstance(s, Loop):
        return (s.cond.yields[0].id,)
    return ()


def _has_access(slicer: _Slicer, blocks: tuple[Block, ...], arrays: frozenset[int]) -> bool:
    return any(slicer.access_terms(op)[0] in arrays for b in blocks for op in walk_ops(b))


def _yielded(b: Block) -> set[int]:
    """The ids of every value a block or a nested one yields (and so passes on)."""
    out = {v.id for v in b.yields}
    for s in b.stmts:
        if isinstance(s, If):
            out |= _yielded(s.then) | _yielded(s.orelse) | {s.cond.id}
        elif isinstance(s, Loop):
            out |= _yielded(s.cond) | _yielded(s.body) | {v.id for v in s.inits}
        elif isinstance(s, Custom):
            out |= _yielded(s.body) | _yielded(s.adjoint) | {v.id for v in s.inputs}
    return out
