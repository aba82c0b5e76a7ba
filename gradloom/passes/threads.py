"""Which memory a kernel's threads share, and so how a launch of it may be split across workers.

A launch runs as contiguous slices of its thread range on several worker threads at once
(runtime/cpu/parallel.py). That is safe, and gives the same result as one serial loop, when no
thread reads or overwrites what another thread writes. This pass proves the common case: an
access is *thread-own* when its address is `Σ index_d · stride_d` with every launch dimension's
`wp.tid()` component among the indices and every other index thread-invariant, so distinct
threads touch distinct elements (arrays with a zero stride are refused at launch); an array's
accesses keep threads apart when they are all thread-own *the same way* (`a[i, j]` beside
`a[j, i]` is not: thread (i, j) reaches what thread (j, i) does). An index may also be a
*span* `tid · c + k` for a constant c with k provably in [0, c) (a constant, a counted loop's
counter: passes/int_ranges.py), as where thread j stores a c-element tile at `offset=(j * c,)`:
thread j's indices lie in [j·c, j·c + c), apart from every other thread's; the address may come
through views (`a[i]`, then `[j + k]`), whose offsets count too.

The plan it returns says, for one compiled entry:
- `serial`: why its slices must not run at once (threads read or overwrite memory other threads
  write, or replay atomics whose returned values depend on order); None when they may.
- `scatter`: argument offsets of pointers (array data or gradients) whose memory threads only
  add into (`wp.atomic_add`, `+=` on an array, or an adjoint's gradient scatter), at addresses
  they may share. Workers add into private zeroed buffers that are summed afterwards in a fixed
  order: no contention, and a result that does not depend on timing. Since no two threads then
  ever add into the same memory at once, codegen emits these adds as plain load-add-stores.
- `float_atomics`: the entry adds floats into shared elements, so its result's last bits depend
  on how the launch is split (documented in docs/differences.md).
- `loops`: the entry's threads run loops, so their cost is not bounded by the kernel's size
  (runtime/cpu/parallel.py lets such launches add into more private memory per thread).
- `conditions`: what the launch must find for the plan to hold, where an address is a thread's
  index mapped through a permutation (a primitive's `permutes` fact: `wp.hash_grid_point_id`,
  whose sorted point ids are a permutation of the grid's points): the permutation exists and
  covers the launch's extent. A launch that finds otherwise runs serially.
- `limits`: the most threads along a launch dimension for which the spans the plan relies on
  cannot wrap (an index computed in 32 bits); a larger launch runs serially.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..ir.nodes import (
    Block,
    Custom,
    If,
    KernelIR,
    Loop,
    Op,
    Var,
    pointer_root,
    regions,
    walk_ops,
)
from ..ir.prims import PRIMS, Effect
from .index_signs import wrapped_index
from .int_ranges import Ranges, widening

#: the accesses that decide how threads share memory: array data and gradients
_MEMORY = Effect.READ | Effect.WRITE | Effect.GRAD
#: wider than any integer type: no add narrows a sum
_NO_WIDTH = 1 << 10


@dataclass(frozen=True)
class ThreadPlan:
    """How one compiled entry may be split across worker threads (see the module doc)."""

    serial: str | None = None
    scatter: tuple[int, ...] = ()
    float_atomics: bool = False
    loops: bool = False
    #: float operations and memory accesses in the body (loops counted once): how much work a
    #: thread does, a fact of the code alone (runtime/cpu/parallel.py sizes chunks by it)
    work: int = 0
    #: the thread loop runs in SIMD lanes wherever the CPU has them (passes/lanes.py accepts
    #: it, and it gets the contiguous copy): a fact of the code, not of the machine, so that
    #: chunks sized with it stay the same on every CPU and with `config.simd` off
    lanes: bool = False
    #: (argument offset of a descriptor pointer, launch dimension, byte offsets of its count
    #: and of its flag in the descriptor) per permutation the plan relies on: the flag must be
    #: set and the count at least the launch's extent along that dimension
    conditions: tuple[tuple[int, int, int, int], ...] = ()
    #: (tid component, components, most values of it) the plan relies on: an index t·c + k
    #: that a thread computes in 32 bits stays below 2^31, so apart from other threads', only
    #: for t < 2^31 // c (Addresses._span)
    limits: tuple[tuple[int, int, int], ...] = ()


@dataclass
class _Root:
    """Every access through one argument pointer."""

    effects: Effect = Effect.NONE  # the union of the accesses' effects
    only_adds: bool = True  # every access only adds into memory
    loads: bool = False  # plain reads (not read-modify-writes)
    stores: bool = False  # plain writes (not read-modify-writes)
    all_own: bool = True
    result_used: bool = False
    float_add: bool = False
    mapping: frozenset[tuple[Any, ...]] | None = None  # how the accesses so far are thread-own
    limits: frozenset[tuple[int, int, int]] = frozenset()  # what their spans need (ThreadPlan)

    def same_mapping(self, mapping: frozenset[tuple[Any, ...]] | None) -> bool:
        """This access is thread-own, the same way as every earlier one (Addresses.mapping)."""
        if mapping is None or (self.mapping is not None and mapping != self.mapping):
            return False
        self.mapping = mapping
        return True


class Addresses:
    """Classifies address offsets of one kernel body. With `permutations`, a thread's index
    mapped through a permutation counts as that index, under a condition on the launch that
    `conditions` collects (see ThreadPlan). With `spans`, so does an index t·c + k with k in
    [0, c) (_span), under the limits on the launch's extent that `limits` collects."""

    def __init__(self, kernel: KernelIR, permutations: bool = False,
                 spans: bool = False) -> None:
        ops = list(walk_ops(kernel.body))
        self.defs = {op.result.id: op for op in ops if op.result is not None}
        self.used = {a.id for op in ops for a in op.args}
        self._invariant: dict[int, bool] = {}
        self.permutations = permutations
        self.conditions: set[tuple[int, int, int, int]] = set()
        self.spans = spans
        self.ranges = Ranges(kernel, self.defs)
        self.limits: set[tuple[int, int, int]] = set()
        #: an if's result -> (the if's condition, what its branches yield for it)
        self.merged: dict[int, tuple[Var, tuple[Var, ...]]] = {}
        _merges(kernel.body, self.merged)
        #: the if branches the access being classified sits in: (condition's id, 0 for then,
        #: 1 for else); thread_plan sets it per access
        self.context: frozenset[tuple[int, int]] = frozenset()

    def root(self, p: Var) -> int | None:
        """The argument offset pointer p derives from (None: loaded from memory)."""
        d = pointer_root(self.defs, p)
        return int(d.attr) if d is not None and d.prim == "arg" else None

    def invariant(self, v: Var) -> bool:
        """v has one value for every thread of a launch."""
        if v.id not in self._invariant:
            d = self.defs.get(v.id)
            # constants, parameters, and what pure ops compute from them
            self._invariant[v.id] = d is not None and (
                PRIMS[d.prim].effects in (Effect.NONE, Effect.PARAM)
                and all(self.invariant(a) for a in d.args))
        return self._invariant[v.id]

    def terms(self, v: Var) -> list[Var]:
        d = self.defs.get(v.id)
        if d is not None and d.prim == "add":
            return self.terms(d.args[0]) + self.terms(d.args[1])
        return [v]

    def tid_of(self, v: Var) -> tuple[int, int] | None:
        """(component, count) when v is a wp.tid() component, possibly widened (or, with
        `permutations`, one mapped through a permutation, possibly under Warp's negative-index
        wrap: the value is >= 0 wherever the launch's check holds)."""
        found = self.source(v)
        return None if found is None else found[1]

    def source(self, v: Var) -> tuple[tuple[tuple[int, int], ...], tuple[int, int]] | None:
        """(the permutations v's thread index went through, as (descriptor argument offset,
        table offset) pairs, outermost first; (component, count)) when v is a tid component
        or one mapped through permutations (see tid_of)."""
        d = self.defs.get(v.id)
        inner = None if d is None else wrapped_index(d, lambda w: self.defs.get(w.id))
        if inner is not None:
            v, d = inner, self.defs.get(inner.id)
        if d is not None and d.prim == "cast" and v.type.kind == "i" and v.type.bits >= 32:
            d = self.defs.get(d.args[0].id)
        if d is None:
            return None
        if d.prim == "tid":
            return (), d.attr
        index = PRIMS[d.prim].permutes
        return None if index is None or not self.permutations else self._permuted(d, index)

    def _permuted(self, d: Op, index: int
                  ) -> tuple[tuple[tuple[int, int], ...], tuple[int, int]] | None:
        """source() of a permutation's result (noting what the launch must check), when its
        descriptor is a kernel argument's value."""
        inner = self.source(d.args[index])
        desc = self.defs.get(d.args[0].id)
        arg = self.defs.get(desc.args[0].id) if desc is not None and desc.prim == "cast" \
            else None
        if inner is None or arg is None or arg.prim != "arg":
            return None
        table, count, ready = d.attr
        self.conditions.add((int(arg.attr), inner[1][0], int(count), int(ready)))
        return ((int(arg.attr), int(table)), *inner[0]), inner[1]

    def mapping(self, offset: Var) -> frozenset[tuple[Any, ...]] | None:
        """How a thread reaches this byte offset, when distinct threads reach distinct elements
        through it (else None): per thread-dependent term, its index's source and its stride.
        Accesses of one array keep threads apart only where their mappings are equal:
        `a[i, j]` and `a[j, i]` are each thread-own, but thread (i, j) reads what (j, i) writes,
        as `x[hash_grid_point_id(grid, t)]` reads what thread t' = that id writes to `x[t']`."""
        branches = self.merged.get(offset.id)
        if branches is not None:
            return self._merged_mapping(*branches)
        return self._mapping(self.terms(offset))

    def _merged_mapping(self, cond: Var, yields: tuple[Var, ...]
                        ) -> frozenset[tuple[Any, ...]] | None:
        """mapping() of an if's result. Inside a branch of an if on the same condition, the
        result is what that branch yielded: an adjoint's reverse part mirrors the forward's
        branches and takes each branch's store offset out of the forward's if, the other
        branch yielding a placeholder. Elsewhere, the mapping every yield shares."""
        for side, y in enumerate(yields):
            if (cond.id, side) in self.context:
                return self.mapping(y)
        found = [self.mapping(y) for y in yields]
        return found[0] if found[0] is not None and found.count(found[0]) == len(found) \
            else None

    def access_mapping(self, pointer: Var, offset: Var) -> frozenset[tuple[Any, ...]] | None:
        """mapping() of an access at `offset` from `pointer`; with `spans`, where the offset
        alone is not thread-own, that of the whole address: the offsets of the views the
        pointer went through (`a[i]` of a 2-D array, then `[j]`) and this one."""
        found = self.mapping(offset)
        if found is not None or not self.spans:
            return found
        terms = self.terms(offset)
        d = self.defs.get(pointer.id)
        while d is not None and d.prim == "ptr_add":
            terms += self.terms(d.args[1])
            d = self.defs.get(d.args[0].id)
        return self._mapping(terms)

    def _mapping(self, terms: list[Var]) -> frozenset[tuple[Any, ...]] | None:
        seen: set[tuple[int, int]] = set()
        parts: set[tuple[Any, ...]] = set()
        for term in terms:
            if self.invariant(term):
                continue
            d = self.defs.get(term.id)
            if d is None or d.prim != "mul":
                return None
            for index, stride in ((d.args[0], d.args[1]), (d.args[1], d.args[0])):
                found, span = self.source(index), 1
                if found is None and self.spans:
                    found, span = self._span(index) or (None, 1)
                if found is not None and self.invariant(stride):
                    seen.add(found[1])
                    # a span of 1 is the thread's own index: such accesses keep apart alike
                    parts.add((*found, self._stride(stride), *((span,) if span > 1 else ())))
                    break
            else:
                return None
        counts = {n for _, n in seen}
        return frozenset(parts) if len(counts) == 1 and len(seen) == counts.pop() else None

    def _span(self, index: Var) -> tuple[Any, int] | None:
        """(source(t), c) when index = t·c + k for a thread index t and a constant c >= 1, with
        k within [0, c) (passes/int_ranges.py): thread t's indices lie in [t·c, t·c + c), apart
        from every other thread's. Where t·c + k could pass the narrowest type's range over a
        launch's extent, the plan limits that extent (ThreadPlan.limits)."""
        d = self.defs.get(index.id)
        inner = None if d is None else wrapped_index(d, lambda w: self.defs.get(w.id))
        index = index if inner is None else inner  # the wrap leaves a value >= 0 as it is
        if index.type.kind != "i":
            return None
        terms, bits = self._int_terms(index)
        low = high = 0
        thread: tuple[Any, int] | None = None
        for term in terms:
            found = self._scaled(term)
            bounds = self.ranges.of(term) if found is None else None
            if found is not None and thread is None:
                thread = found
                bits = min(bits, term.type.bits)
            elif bounds is None:
                return None
            else:
                low, high = low + bounds[0], high + bounds[1]
        if thread is None or low < 0 or high >= thread[1]:
            return None
        most = (1 << (bits - 1)) // thread[1]  # t < most keeps t·c + k below 2^(bits-1)
        if most < 1 << 31:
            self.limits.add((*thread[0][1], most))
        return thread

    def _int_terms(self, v: Var) -> tuple[list[Var], int]:
        """The integer terms v sums, through adds and widening casts, and the narrowest width
        of those adds (a term's own bounds hold in its type: Ranges, _scaled)."""
        d = self.defs.get(v.id)
        if d is not None and (d.prim == "add" or widening(d)) and v.type.kind == "i":
            parts = [self._int_terms(a) for a in d.args]
            own = v.type.bits if d.prim == "add" else _NO_WIDTH
            return [t for ts, _ in parts for t in ts], min([own, *(b for _, b in parts)])
        return [v], _NO_WIDTH

    def _scaled(self, term: Var) -> tuple[Any, int] | None:
        """(source(t), c) when term is thread index t or t·c for a constant c >= 1."""
        found = self.source(term)
        if found is not None:
            return (found, 1) if not found[0] else None  # a permuted index's values are
        d = self.defs.get(term.id)                          # not bounded by the extent
        if d is None or d.prim != "mul" or term.type.kind != "i":
            return None
        for t, c in ((d.args[0], d.args[1]), (d.args[1], d.args[0])):
            found, scale = self.source(t), self.ranges.of(c)
            if found is not None and not found[0] and scale is not None \
                    and scale[0] == scale[1] >= 1:
                return found, scale[0]
        return None

    def _stride(self, v: Var) -> object:
        """What identifies a stride's value: a constant's value, an argument's offset, else
        the value itself."""
        d = self.defs.get(v.id)
        if d is not None and (d.prim == "const" or PRIMS[d.prim].effects == Effect.PARAM):
            return d.prim, d.attr
        return v.id

    def own(self, offset: Var) -> bool:
        """Distinct threads reach distinct elements through this byte offset."""
        return self.mapping(offset) is not None


def _merges(b: Block, out: dict[int, tuple[Var, tuple[Var, ...]]]) -> None:
    """Each if result's id -> (the if's condition, what its branches yield for it), in every
    nested block."""
    for s in b.stmts:
        if isinstance(s, If):
            for k, r in enumerate(s.results):
                out[r.id] = (s.cond, (s.then.yields[k], s.orelse.yields[k]))
        if not isinstance(s, Op):
            for inner in regions(s):
                _merges(inner, out)


def _in_context(b: Block, context: frozenset[tuple[int, int]]
                ) -> Iterator[tuple[Op, frozenset[tuple[int, int]]]]:
    """Every op of a block, nested ones too, in walk_ops' order, with the if branches it sits
    in: (the condition's id, 0 for then, 1 for else)."""
    for s in b.stmts:
        if isinstance(s, Op):
            yield s, context
        elif isinstance(s, If):
            yield from _in_context(s.then, context | {(s.cond.id, 0)})
            yield from _in_context(s.orelse, context | {(s.cond.id, 1)})
        else:
            for inner in regions(s):
                yield from _in_context(inner, context)


def thread_plan(kernel: KernelIR, checked: frozenset[int] = frozenset(),
                permutations: bool = False) -> ThreadPlan:
    """The plan for one entry (a forward kernel or an adjoint) as it goes to codegen; accesses
    of the arrays at the argument offsets `checked` count as thread-own (each launch checks
    that threads touch distinct elements of them: passes/overlap.py); `permutations`: the
    launch checks the plan's `conditions` and `limits` (the CPU backend's does)."""
    addr = Addresses(kernel, permutations, spans=permutations)
    roots: dict[int | None, _Root] = {}
    ops = list(walk_ops(kernel.body))
    if any(Effect.IO in PRIMS[op.prim].effects for op in ops):
        # debugging output stays readable: in thread order, one line at a time
        return ThreadPlan(serial="the kernel prints")
    for op, context in _in_context(kernel.body, frozenset()):
        effects = PRIMS[op.prim].effects
        if not PRIMS[op.prim].has(_MEMORY) or (op.prim == "load" and op.result is not None
                                     and op.result.type.kind == "p"):
            continue
        addr.context = context
        acc = roots.setdefault(addr.root(op.args[0]), _Root())
        acc.effects |= effects
        acc.only_adds = acc.only_adds and Effect.ACCUMULATE in effects
        acc.loads = acc.loads or effects & (Effect.READ | Effect.WRITE) == Effect.READ
        acc.stores = acc.stores or (Effect.WRITE in effects
                                    and not effects & (Effect.ATOMIC | Effect.GRAD))
        addr.limits = set()
        acc.all_own = acc.all_own and (addr.root(op.args[0]) in checked
                                       or acc.same_mapping(
                                           addr.access_mapping(op.args[0], op.args[1])))
        acc.limits |= addr.limits
        if Effect.ATOMIC in effects:
            acc.float_add = acc.float_add or (Effect.ACCUMULATE in effects
                                              and op.args[2].type.is_float)
            acc.result_used = acc.result_used or (op.result is not None
                                                  and op.result.id in addr.used)
    work = sum(1 for op in ops if PRIMS[op.prim].has(_MEMORY)
               or (op.result is not None and op.result.type.is_float))
    return replace(_plan(roots, _has_loop(kernel.body)), work=work,
                   conditions=tuple(sorted(addr.conditions)),
                   limits=_limits(roots))


def _limits(roots: dict[int | None, _Root]) -> tuple[tuple[int, int, int], ...]:
    """The limits that the arrays whose accesses must keep threads apart (those written) rely
    on; an array that is only read may be read anywhere."""
    need = set().union(*(acc.limits for acc in roots.values()
                         if acc.all_own and Effect.WRITE in acc.effects))
    return tuple(sorted(need))


def _has_loop(b: Block) -> bool:
    """Whether a block or a region nested in it is a loop."""
    for s in b.stmts:
        if isinstance(s, Loop):
            return True
        if isinstance(s, If) and (_has_loop(s.then) or _has_loop(s.orelse)):
            return True
        if isinstance(s, Custom) and (_has_loop(s.body) or _has_loop(s.adjoint)):
            return True
    return False


def _plan(roots: dict[int | None, _Root], loops: bool) -> ThreadPlan:
    serial: str | None = None
    scatter: list[int] = []
    float_atomics = False
    for offset, acc in roots.items():
        if acc.all_own and offset is not None:
            continue
        float_atomics = float_atomics or acc.float_add
        writes = Effect.WRITE in acc.effects
        if offset is not None and acc.only_adds and not acc.result_used:
            scatter.append(offset)  # adds only, in any order: into private buffers
        elif Effect.GRAD in acc.effects:
            if writes:
                serial = "threads read and add into the same gradient elements"
        elif acc.stores:
            serial = "threads store into array elements that other threads may also store into"
        elif (acc.loads or acc.result_used) and writes:
            serial = "threads read array elements that other threads write"
    return ThreadPlan(serial, tuple(sorted(scatter)), float_atomics, loops)
