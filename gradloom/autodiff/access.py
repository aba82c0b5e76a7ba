"""Which arrays a kernel reads, writes and updates atomically: what its adjoint needs kept."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import CompileError, SourceLoc
from ..ir.nodes import Block, Custom, If, KernelIR, Op, Var, pointer_root, walk_ops
from ..ir.prims import PRIMS, Effect, MemoryRule
from ..passes.threads import Addresses


@dataclass
class ArrayAccess:
    """How a kernel touches one array, found from the loads/stores on its data pointer."""

    loads: bool = False
    stores: bool = False  # plain stores and the atomics other than min/max
    minmax: bool = False  # atomic_min / atomic_max
    result_used: bool = False  # an atomic's returned old value is used
    shared: bool = False  # some access's address may be another thread's element too

    @property
    def working(self) -> bool:
        """The adjoint must replay this array's writes on a copy of its pre-launch contents,
        because the kernel reads values that it (or its own atomics) wrote."""
        return (self.loads or self.result_used) and self.stores

    @property
    def needs_before(self) -> bool:
        """The adjoint reads the array's contents from before the launch."""
        return self.loads or self.result_used

    @property
    def flags(self) -> frozenset[str]:
        names = ("loads", "stores", "minmax", "result_used", "working", "shared")
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
        if op.result is not None and Effect.WRITE not in PRIMS[op.prim].effects:
            if op.result.type.kind == "p":
                return False  # reading an array that lives inside a struct in memory
            if not op.result.type.is_float and _runtime_pointer(self, op.args[0]):
                return False  # integers read through a handle (a HashGrid's arrays)
        return True

    def working(self, p: Var, loc: SourceLoc | None = None) -> bool:
        return self.arrays[self.root(p, loc)].working


def _used_ids(b: Block, out: set[int]) -> None:
    out.update(v.id for v in b.yields)
    for s in b.stmts:
        if isinstance(s, Op):
            out.update(a.id for a in s.args)
        elif isinstance(s, If):
            out.add(s.cond.id)
            _used_ids(s.then, out)
            _used_ids(s.orelse, out)
        elif isinstance(s, Custom):
            out.update(v.id for v in s.inputs)
            _used_ids(s.body, out)
            _used_ids(s.adjoint, out)
        else:
            out.update(v.id for v in s.inits)
            _used_ids(s.cond, out)
            _used_ids(s.body, out)


def _runtime_pointer(ka: KernelAccess, p: Var) -> bool:
    """p is computed at run time (e.g. from a uint64 handle), not rooted in an argument."""
    d = pointer_root(ka.defs, p)
    return d is None or d.prim != "arg"


def analyze(kernel: KernelIR) -> KernelAccess:
    ka = KernelAccess()
    ops = list(walk_ops(kernel.body))
    ka.defs = {op.result.id: op for op in ops if op.result is not None}
    used: set[int] = set()
    _used_ids(kernel.body, used)
    addresses = Addresses(kernel)
    for op in ops:
        if not ka.tracked(op):
            continue
        effects = PRIMS[op.prim].effects
        acc = ka.arrays.setdefault(ka.root(op.args[0], op.loc), ArrayAccess())
        if not effects & Effect.WRITE:
            acc.loads = True
        elif PRIMS[op.prim].memory_rule is not MemoryRule.PICK:
            acc.stores = True
        else:
            acc.minmax = True
        if Effect.ATOMIC in effects and op.result is not None and op.result.id in used:
            acc.result_used = True
        acc.shared = acc.shared or not addresses.own(op.args[1])
    return ka
