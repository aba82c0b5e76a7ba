"""Whether a kernel's threads can run side by side in the lanes of a vector, and which values
differ between those lanes (the plan codegen/lanes.py follows).

A SIMD thread loop runs W consecutive threads at once, one per vector lane, in lockstep: a value
that is the same for every thread (an argument, a constant, what a counted loop over a kernel
argument counts) stays one scalar, a value that depends on `wp.tid()` becomes a vector
(*varying*). An `if` on a varying condition runs both branches under lane masks; a loop whose
condition varies runs until no lane wants another trip. Lockstep changes the order in which
threads' memory accesses interleave, so a kernel runs in lanes only when that cannot be seen:

- no thread reads or overwrites what another thread writes (passes/threads.py: the plan is not
  serial), and memory threads share is only added into (those adds are kept per lane and done
  after each vector of threads, lane by lane, so every element receives its additions in thread
  order, as in the scalar loop: bit for bit), except where every lane adds into one element:
  the lanes' values are summed as a tree first (deterministic, other rounding than the scalar
  loop's; with `ordered`, `config.deterministic`, lane after lane instead);
- such shared additions inside a loop (their number per thread has no bound, so they cannot be
  kept) go to an address every lane shares at each trip (n-body's `pos.grad[j]`), and are done
  at once, trip by trip, as such a tree. With `ordered` such a kernel keeps the scalar loop;
- every array access goes through an array argument (or its gradient), so the entry can check at
  run time that written arrays overlap no other (codegen/lanes.py), or only reads a host object's
  own memory (a hash grid's: `PRIVATE`, which no argument shares), and no value is float16 or
  bfloat16, and no loop's condition has side effects;
- a permutation's descriptor (passes/threads.py `conditions`) is the same in every lane; the
  entry checks the plan's conditions before it takes the SIMD loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Block, If, KernelIR, Loop, Op, Var, pointer_root, walk_ops
from ..ir.prims import PRIMS, PRIVATE, Effect, MemoryRule
from .threads import Addresses, ThreadPlan

#: effects whose ops always run lane by lane (their results, if any, differ between lanes)
_LANEWISE = Effect.THREAD | Effect.STACK | Effect.ATOMIC | Effect.GRAD
_MEMORY = Effect.READ | Effect.WRITE | Effect.GRAD


@dataclass(frozen=True)
class LanePlan:
    """How one compiled entry runs in vector lanes (see the module doc)."""

    #: why the entry runs one thread at a time; None when its thread loop runs in lanes
    reason: str | None
    #: ids of the values that differ between lanes
    varying: frozenset[int] = frozenset()
    #: argument offsets of the array data pointers the entry accesses, with the gradient
    #: pointers (data offset + 8), and which of them it writes (for the run-time overlap check)
    roots: tuple[int, ...] = ()
    written: tuple[int, ...] = ()
    #: pointers (argument offsets) into memory that lanes may share and update atomically
    #: (min, max, bitwise): such atomics run lane by lane
    shared_atomics: tuple[int, ...] = ()
    #: additions every lane makes into one element reach it in lane order (`ordered`), not
    #: summed as a tree first
    ordered: bool = False
    #: what the entry checks before it takes the SIMD loop (ThreadPlan.conditions)
    conditions: tuple[tuple[int, int, int, int], ...] = ()


def lane_plan(kernel: KernelIR, threads: ThreadPlan, arrays: frozenset[int],
              ordered: bool = False) -> LanePlan:
    """The plan for one entry (a forward kernel or an adjoint) as it goes to codegen; arrays:
    the argument offsets of the data pointers of the kernel's array parameters; ordered: every
    shared addition must reach memory in the scalar loop's order (`config.deterministic`)."""
    reason = _refusal(kernel, threads, arrays, ordered)
    if reason is not None:
        return LanePlan(reason)
    roots, written = _roots(kernel)
    shared = _shared_atomics(kernel, threads)
    if isinstance(shared, str):
        return LanePlan(shared)
    reason = _unprofitable(kernel, threads, ordered)
    if reason is not None:
        return LanePlan(reason)
    return LanePlan(None, frozenset(varying_values(kernel.body)), roots, written, shared, ordered,
                    threads.conditions)


#: what a gathered access and a logged shared addition cost in lanes, against one float
#: operation done lane-wise instead of one thread at a time (measured: docs/performance.md).
#: An addition every lane makes into one element outside loops (a loss, `energy[0]`) is summed
#: as a tree of halves and added once per vector: it costs no more than the float operation it
#: replaces, so it counts as one (in lane order, with `ordered`, it is a logged addition)
GATHER_COST, SHARED_ADD_COST = 1, 3


def _unprofitable(kernel: KernelIR, threads: ThreadPlan, ordered: bool = False) -> str | None:
    """Why lanes would not pay: a kernel whose threads mostly gather from elements of other
    threads and add into shared memory (done lane by lane after each vector) gains less from
    its vector arithmetic than those cost. Tree-summed additions (see above) are float work
    done in lanes, not a cost."""
    addr = Addresses(kernel)
    flops = gathers = adds = 0
    tree = set() if ordered else _tree_summed(kernel, addr)
    for op in walk_ops(kernel.body):
        effects = PRIMS[op.prim].effects
        if effects == Effect.NONE and op.result is not None and op.result.type.is_float:
            flops += 1
        elif Effect.ACCUMULATE in effects and addr.root(op.args[0]) in threads.scatter:
            if id(op) in tree:
                flops += 1
            else:
                adds += 1
        elif PRIMS[op.prim].has(_MEMORY) and not (addr.own(op.args[1])
                                                  or addr.invariant(op.args[1])):
            gathers += 1
    if adds and flops <= SHARED_ADD_COST * adds + GATHER_COST * gathers:
        return (f"{adds} additions into shared memory and {gathers} gathers per thread against "
                f"{flops} float operations: faster one thread at a time")
    return None


def _tree_summed(kernel: KernelIR, addr: Addresses) -> set[int]:
    """ids of the additions into memory that codegen sums as a tree (codegen/lane_log.py
    `shared_add`): outside loops, at an address every thread shares, the only addition into
    its array."""
    adds = [o for o in walk_ops(kernel.body) if Effect.ACCUMULATE in PRIMS[o.prim].effects]
    per_root: dict[int | None, int] = {}
    for o in adds:
        root = addr.root(o.args[0])
        per_root[root] = per_root.get(root, 0) + 1
    outside = _outside_loops(kernel.body)
    return {id(o) for o in adds if id(o) in outside and addr.invariant(o.args[1])
            and per_root[addr.root(o.args[0])] == 1}


def _outside_loops(b: Block) -> set[int]:
    """ids of the ops of b that no loop encloses (branches included)."""
    out: set[int] = set()
    for s in b.stmts:
        if isinstance(s, Op):
            out.add(id(s))
        elif isinstance(s, If):
            out |= _outside_loops(s.then) | _outside_loops(s.orelse)
    return out


def _shared_atomics(kernel: KernelIR, threads: ThreadPlan) -> tuple[int, ...] | str:
    """Roots of atomics on elements several threads may reach (other than the additions
    threads.scatter lists), or why they cannot run lane by lane."""
    addr = Addresses(kernel)
    own: dict[int, bool] = {}
    atomic: dict[int, set[MemoryRule | None]] = {}
    defs = _defs(kernel)
    for op in walk_ops(kernel.body):
        effects = PRIMS[op.prim].effects
        if not PRIMS[op.prim].has(_MEMORY) or _private(defs, op.args[0]):
            continue
        root = addr.root(op.args[0])
        assert root is not None
        own[root] = own.get(root, True) and addr.own(op.args[1])
        if Effect.ATOMIC in effects:
            atomic.setdefault(root, set()).add(PRIMS[op.prim].memory_rule)
    shared = [r for r, rules in atomic.items() if not own[r] and r not in threads.scatter]
    for r in shared:
        if MemoryRule.ORDER in atomic[r]:  # exchange, compare-and-swap
            return "an atomic exchange on elements threads share (its result is thread order)"
    return tuple(sorted(shared))


def _refusal(kernel: KernelIR, threads: ThreadPlan, arrays: frozenset[int],
             ordered: bool) -> str | None:
    if threads.serial is not None:
        return f"threads depend on each other ({threads.serial})"
    if threads.limits:  # the SIMD loop does not check the launch's extent against them
        return "threads keep apart only in launches up to a size (ThreadPlan.limits)"
    ops = list(walk_ops(kernel.body))
    for op in ops:
        effects = PRIMS[op.prim].effects
        if Effect.CHECK in effects:
            return "debug-mode bounds checks"
        if Effect.IO in effects:
            return "the kernel prints"
        types = [a.type for a in op.args] + ([op.result.type] if op.result else [])
        if any(t.is_float and t.bits == 16 for t in types):
            return "float16/bfloat16 values"
    return (_memory_refusal(kernel, arrays) or _tile_refusal(kernel.body)
            or _loop_refusal(kernel, threads, ordered))


def _tile_refusal(body: Block) -> str | None:
    """Tiles run in lanes only where every lane holds the same tile: one buffer for the vector
    of threads serves them all when every access to tile memory has operands equal in all lanes
    (a tile loaded at a thread-invariant offset, n-body's) and every write happens in every lane
    alike (under no condition or loop where lanes differ)."""
    varying = varying_values(body)
    why = "tiles whose contents differ between threads (one buffer per thread, not per lane)"

    def refusal(b: Block, split: bool) -> str | None:
        for s in b.stmts:
            if isinstance(s, Op):
                effects = PRIMS[s.prim].effects
                if effects & (Effect.LOCAL | Effect.LOCAL_WRITE) and (
                        any(a.id in varying for a in s.args)
                        or (split and Effect.LOCAL_WRITE in effects)):
                    return why
            elif isinstance(s, If):
                inner = split or s.cond.id in varying
                r = refusal(s.then, inner) or refusal(s.orelse, inner)
                if r:
                    return r
            elif isinstance(s, Loop):
                inner = split or s.cond.yields[0].id in varying
                r = refusal(s.cond, inner) or refusal(s.body, inner)
                if r:
                    return r
        return None
    return refusal(body, False)


def _root(defs: dict[int, Op], p: Var) -> int | None:
    d = pointer_root(defs, p)
    return int(d.attr) if d is not None and d.prim == "arg" else None


def _defs(kernel: KernelIR) -> dict[int, Op]:
    return {op.result.id: op for op in walk_ops(kernel.body) if op.result is not None}


def _private(defs: dict[int, Op], p: Var) -> bool:
    """p points into a host object's own memory: it is read through pointers loaded from the
    object's descriptor, itself cast from its id with attr PRIVATE."""
    d = pointer_root(defs, p)
    while d is not None and d.prim == "load":
        d = pointer_root(defs, d.args[0])
    return d is not None and d.prim == "cast" and d.attr == PRIVATE


def _memory_refusal(kernel: KernelIR, arrays: frozenset[int]) -> str | None:
    defs = _defs(kernel)
    pointers = arrays | {off + 8 for off in arrays}  # data and gradient pointers
    permutes = [op for op in walk_ops(kernel.body) if PRIMS[op.prim].permutes is not None]
    varying = varying_values(kernel.body) if permutes else set()
    if any(op.args[0].id in varying for op in permutes):
        return "a permutation whose descriptor differs between threads"
    for op in walk_ops(kernel.body):
        if not PRIMS[op.prim].has(_MEMORY):
            continue
        private_read = PRIMS[op.prim].effects == Effect.READ and _private(defs, op.args[0])
        if not private_read and _root(defs, op.args[0]) not in pointers:
            return ("memory reached through a pointer that is not an array parameter (a struct "
                    "field, an indexed array, a mesh)")
    return None


def _loop_refusal(kernel: KernelIR, threads: ThreadPlan, ordered: bool) -> str | None:
    """Shared additions inside loops (at an address that differs between lanes, or any when
    `ordered`), loops whose condition has side effects."""
    defs, varying = _defs(kernel), varying_values(kernel.body)

    def refusal(b: Block, depth: int) -> str | None:
        for s in b.stmts:
            if isinstance(s, Op):
                if (depth and Effect.ACCUMULATE in PRIMS[s.prim].effects
                        and _root(defs, s.args[0]) in threads.scatter):
                    if ordered:
                        return "threads add into shared memory inside a loop (deterministic)"
                    if s.args[0].id in varying or s.args[1].id in varying:
                        return "threads add into shared memory inside a loop, where lanes differ"
            elif isinstance(s, If):
                why = refusal(s.then, depth) or refusal(s.orelse, depth)
                if why:
                    return why
            elif isinstance(s, Loop):
                if any(PRIMS[op.prim].side_effect for op in walk_ops(s.cond)):
                    return "a loop condition with side effects"
                why = refusal(s.cond, depth + 1) or refusal(s.body, depth + 1)
                if why:
                    return why
        return None
    return refusal(kernel.body, 0)


def _roots(kernel: KernelIR) -> tuple[tuple[int, ...], tuple[int, ...]]:
    defs = _defs(kernel)
    roots: set[int] = set()
    written: set[int] = set()
    for op in walk_ops(kernel.body):
        effects = PRIMS[op.prim].effects
        if not PRIMS[op.prim].has(_MEMORY) or _private(defs, op.args[0]):
            continue
        root = _root(defs, op.args[0])
        assert root is not None  # _memory_refusal
        roots.add(root)
        if Effect.WRITE in effects:
            written.add(root)
    return tuple(sorted(roots)), tuple(sorted(written))


def varying_values(body: Block) -> set[int]:
    """Ids of the values that may differ between the threads of one vector of lanes."""
    varying: set[int] = set()
    while _mark(body, varying):
        pass
    return varying


def _mark(b: Block, varying: set[int]) -> bool:
    """One sweep marking varying values; whether it marked any new one."""
    changed = False

    def mark(vs: tuple[Var, ...] | list[Var], cond: bool) -> None:
        nonlocal changed
        for v in vs:
            if cond and v.id not in varying:
                varying.add(v.id)
                changed = True

    for s in b.stmts:
        if isinstance(s, Op):
            if s.result is not None:
                mark([s.result], PRIMS[s.prim].has(_LANEWISE)
                     or any(a.id in varying for a in s.args))
        elif isinstance(s, If):
            changed |= _mark(s.then, varying) | _mark(s.orelse, varying)
            split = s.cond.id in varying
            for r, y1, y2 in zip(s.results, s.then.yields, s.orelse.yields, strict=True):
                mark([r], split or y1.id in varying or y2.id in varying)
        elif isinstance(s, Loop):
            changed |= _mark(s.cond, varying) | _mark(s.body, varying)
            split = s.cond.yields[0].id in varying
            for p, i, y, r in zip(s.params, s.inits, s.body.yields, s.results, strict=True):
                mark([p, r], split or i.id in varying or y.id in varying or p.id in varying)
    return changed
