"""Which arrays a kernel reads, writes and updates atomically: what its adjoint needs kept."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import CompileError, SourceLoc
from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Var, pointer_root, walk_ops
from ..ir.prims import NO_GRADIENT, PRIMS, Effect, MemoryRule
from ..passes.threads import Addresses


@dataclass
class ArrayAccess:
    """How a kernel touches one array, found from the loads/stores on its data pointer."""

    loads: bool = False
    stores: bool = False  # plain stores and the atomics other than min/max
    # float atomic_min / atomic_max, where the adjoint compares each thread's value with the
    # launch's final one (else they count as a load and a store: see `_per_thread_picks`)
    minmax: bool = False
    result_used: bool = False  # an atomic's returned old value is used
    shared: bool = False  # some access's address may be another thread's element too
    # in this kernel, every read of any array comes before every write (a kernel-wide fact,
    # kept per array so that launches see it among each array's flags)
    reads_first: bool = False
    # a plain float store at an element other threads may store too (not at a slot an
    # atomic_add handed out): the last store wins, so its gradient belongs to the last thread
    contested_store: bool = False

    @property
    def working(self) -> bool:
        """The adjoint must replay this array's writes on a copy of its pre-launch contents,
        because the kernel reads values that it (or its own atomics) wrote."""
        return (self.loads or self.result_used) and self.stores


    @property
    def flags(self) -> frozenset[str]:
        names = ("loads", "stores", "minmax", "result_used", "working", "shared", "reads_first",
                 "contested_store")
        return frozenset(n for n in names if getattr(self, n))


@dataclass
class KernelAccess:
    """Per array (keyed by its data pointer's byte offset in the arguments): its access."""

    arrays: dict[int, ArrayAccess] = field(default_factory=dict)
    defs: dict[int, Op] = field(default_factory=dict)

    def root(self, p: Var, loc: SourceLoc | None = None) -> int:
        """The argument offset of the array that pointer p points into (loc: the access)."""
        d = pointer_root(self.defs, p)
        if d is None or d.prim != "arg":
            raise CompileError("cannot differentiate an access to an array that is chosen at "
                               "run time or stored inside another array", loc)
        return int(d.attr)

    def tracked(self, op: Op) -> bool:
        """op reads or writes array data whose gradient autodiff follows."""
        if not PRIMS[op.prim].memory:
            return False
        root = pointer_root(self.defs, op.args[0])
        if root is not None and root.prim == "cast" and root.attr == NO_GRADIENT:
            return False  # memory without a gradient (Fabric arrays, as in Warp)
        if op.result is not None and Effect.WRITE not in PRIMS[op.prim].effects:
            if op.result.type.kind == "p":
                return False  # reading an array that lives inside a struct in memory
            if not op.result.type.is_float and _runtime_pointer(self, op.args[0]):
                return False  # integers read through a handle (a HashGrid's arrays)
        return True

    def working(self, p: Var, loc: SourceLoc | None = None) -> bool:
        return self.arrays[self.root(p, loc)].working


def _live_ids(body: Block) -> set[int]:
    """Ids of the variables something may read. A value that only a branch or a loop trip
    yields counts only if its result (or, in a loop, the next trip's parameter) is read: a
    variable assigned in a loop and never read again does not make an atomic's result used."""
    live: set[int] = {v.id for v in body.yields}
    while True:
        before = len(live)
        _mark_live(body, live)
        if len(live) == before:
            return live


def _mark_live(b: Block, live: set[int]) -> None:
    """One pass of `_live_ids` over a block (the caller repeats it to a fixpoint)."""
    for s in b.stmts:
        if isinstance(s, Op):
            live.update(a.id for a in s.args)
        elif isinstance(s, If):
            live.add(s.cond.id)
            for branch in (s.then, s.orelse):
                live.update(y.id for y, r in zip(branch.yields, s.results, strict=True)
                            if r.id in live)
                _mark_live(branch, live)
        elif isinstance(s, Custom):
            live.update(v.id for v in s.inputs)
            live.update(v.id for v in s.adjoint.yields)
            live.update(y.id for y, r in zip(s.body.yields, s.results, strict=True)
                        if r.id in live)
            _mark_live(s.body, live)
            _mark_live(s.adjoint, live)
        else:
            carried = [p.id in live or r.id in live for p, r in zip(s.params, s.results,
                                                                     strict=True)]
            live.update(v.id for v, keep in zip(s.inits, carried, strict=True) if keep)
            live.update(v.id for v in s.cond.yields)
            live.update(v.id for v, keep in zip(s.body.yields, carried, strict=True) if keep)
            _mark_live(s.cond, live)
            _mark_live(s.body, live)


def _spans(b: Block, at: list[int], out: list[tuple[Op, int, int]]) -> None:
    """(op, first, last position it may run at) in program order; an op in a loop (or in a
    @wp.func_grad region) may run anywhere in the loop's span."""
    for s in b.stmts:
        if isinstance(s, Op):
            at[0] += 1
            out.append((s, at[0], at[0]))
        elif isinstance(s, If):
            _spans(s.then, at, out)
            _spans(s.orelse, at, out)
        else:
            inner: list[tuple[Op, int, int]] = []
            start = at[0] + 1
            for block in (s.body, s.adjoint) if isinstance(s, Custom) else (s.cond, s.body):
                _spans(block, at, inner)
            out += [(op, start, at[0]) for op, _, _ in inner]


def _reads_first(ka: KernelAccess, kernel: KernelIR) -> bool:
    """Every tracked read of array memory runs before every tracked write."""
    spans: list[tuple[Op, int, int]] = []
    _spans(kernel.body, [0], spans)
    last_read, first_write = 0, 1 << 62
    for op, first, last in spans:
        if ka.tracked(op):
            if Effect.WRITE in PRIMS[op.prim].effects:
                first_write = min(first_write, first)
            else:
                last_read = max(last_read, last)
    return last_read < first_write


def _runtime_pointer(ka: KernelAccess, p: Var) -> bool:
    """p is computed at run time (e.g. from a uint64 handle), not rooted in an argument."""
    d = pointer_root(ka.defs, p)
    return d is None or d.prim != "arg"


def _from_counters(b: Block, consts: set[int], out: set[int] | None = None) -> set[int]:
    """Ids of values computed from what an atomic_add/sub returned (slot counters: each thread
    gets its own slot), followed through ops in program order and through ifs: an if's result
    is a slot where a branch yields one and the others a slot or a constant (the "no slot" -1
    of a counter function that returns on several paths, as newton's counter_increment)."""
    out = set() if out is None else out
    for s in b.stmts:
        if isinstance(s, Op):
            if s.result is None:
                continue
            counter = Effect.ATOMIC in PRIMS[s.prim].effects and \
                PRIMS[s.prim].memory_rule is MemoryRule.ACCUMULATE
            if counter or any(a.id in out for a in s.args):
                out.add(s.result.id)
        elif isinstance(s, If):
            _from_counters(s.then, consts, out)
            _from_counters(s.orelse, consts, out)
            for k, r in enumerate(s.results):
                ys = (s.then.yields[k].id, s.orelse.yields[k].id)
                if any(y in out for y in ys) and all(y in out or y in consts for y in ys):
                    out.add(r.id)
        else:
            for inner in (s.cond, s.body) if isinstance(s, Loop) else (s.body, s.adjoint):
                _from_counters(inner, consts, out)
    return out


def analyze(kernel: KernelIR) -> KernelAccess:
    ka = KernelAccess()
    ops = list(walk_ops(kernel.body))
    ka.defs = {op.result.id: op for op in ops if op.result is not None}
    used = _live_ids(kernel.body)
    addresses = Addresses(kernel)
    counted = _from_counters(kernel.body, {op.result.id for op in ops if op.prim == "const"
                                           and op.result is not None})
    for op in ops:
        if not ka.tracked(op):
            continue
        effects = PRIMS[op.prim].effects
        acc = ka.arrays.setdefault(ka.root(op.args[0], op.loc), ArrayAccess())
        if not PRIMS[op.prim].has(Effect.WRITE):
            acc.loads = True
        elif PRIMS[op.prim].memory_rule is not MemoryRule.PICK or not op.args[2].type.is_float:
            acc.stores = True  # integer min/max: a read-modify-write like atomic_or
        else:
            acc.minmax = True
        if Effect.ATOMIC in effects and op.result is not None and op.result.id in used:
            acc.result_used = True
        own = addresses.own(op.args[1])
        acc.shared = acc.shared or not own
        acc.contested_store = acc.contested_store or (
            PRIMS[op.prim].memory_rule is MemoryRule.OVERWRITE and not own
            and op.args[2].type.is_float and op.args[1].id not in counted)
    reads_first = _reads_first(ka, kernel)
    for acc in ka.arrays.values():
        acc.reads_first = reads_first
    _per_thread_picks(ka, ops, addresses)
    return ka


def _per_thread_picks(ka: KernelAccess, ops: list[Op], addresses: Addresses) -> None:
    """A float atomic_min/max on an array the kernel also reads or writes, or whose returned
    old value it uses, is exact when every access of that array reaches the thread's own
    element by one mapping: no other thread touches the element, so the op is a read of the
    old value and a store of the winner, and its array a working one (the adjoint replays it
    on a copy of the pre-launch contents: reverse.py's rule needs the old value)."""
    mappings: dict[int, set[object]] = {}
    for op in ops:
        if ka.tracked(op):
            mappings.setdefault(ka.root(op.args[0], op.loc), set()).add(
                addresses.mapping(op.args[1]))
    for off, acc in ka.arrays.items():
        found = mappings.get(off, set())
        if acc.minmax and (acc.loads or acc.stores or acc.result_used) and \
                len(found) == 1 and None not in found:
            acc.minmax, acc.loads, acc.stores = False, True, True
