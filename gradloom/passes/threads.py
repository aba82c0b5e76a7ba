"""Which memory a kernel's threads share, and so how a launch of it may be split across workers.

A launch runs as contiguous slices of its thread range on several worker threads at once
(runtime/parallel.py). That is safe, and gives the same result as one serial loop, when no
thread reads or overwrites what another thread writes. This pass proves the common case: an
access is *thread-own* when its address is `Σ index_d · stride_d` with every launch dimension's
`wp.tid()` component among the indices and every other index thread-invariant, so distinct
threads touch distinct elements (arrays with a zero stride are refused at launch).

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
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.nodes import KernelIR, Var, pointer_root, walk_ops

_WRITES = ("store", "atomic_add", "atomic_min", "atomic_max", "atomic_and", "atomic_or",
           "atomic_xor", "atomic_exch", "atomic_cas")
_MEMORY = ("load", "adj_add", "adj_read", "adj_take", *_WRITES)
# integer arithmetic whose result is thread-invariant when its operands are
_PURE = ("add", "sub", "mul", "cast", "neg", "div", "mod", "min", "max")


@dataclass(frozen=True)
class ThreadPlan:
    """How one compiled entry may be split across worker threads (see the module doc)."""

    serial: str | None = None
    scatter: tuple[int, ...] = ()
    float_atomics: bool = False


@dataclass
class _Root:
    """Every access through one argument pointer."""

    prims: set[str] = field(default_factory=set)
    all_own: bool = True
    result_used: bool = False
    float_add: bool = False


class _Addresses:
    """Classifies address offsets of one kernel body."""

    def __init__(self, kernel: KernelIR) -> None:
        ops = list(walk_ops(kernel.body))
        self.defs = {op.result.id: op for op in ops if op.result is not None}
        self.used = {a.id for op in ops for a in op.args}
        self._invariant: dict[int, bool] = {}

    def root(self, p: Var) -> int | None:
        """The argument offset pointer p derives from (None: loaded from memory)."""
        d = pointer_root(self.defs, p)
        return int(d.attr) if d is not None and d.prim == "arg" else None

    def invariant(self, v: Var) -> bool:
        """v has one value for every thread of a launch."""
        if v.id not in self._invariant:
            d = self.defs.get(v.id)
            self._invariant[v.id] = d is not None and (
                d.prim in ("arg", "const")
                or (d.prim in _PURE and all(self.invariant(a) for a in d.args)))
        return self._invariant[v.id]

    def terms(self, v: Var) -> list[Var]:
        d = self.defs.get(v.id)
        if d is not None and d.prim == "add":
            return self.terms(d.args[0]) + self.terms(d.args[1])
        return [v]

    def tid_of(self, v: Var) -> tuple[int, int] | None:
        """(component, count) when v is a wp.tid() component, possibly widened."""
        d = self.defs.get(v.id)
        if d is not None and d.prim == "cast" and v.type.kind == "i" and v.type.bits >= 32:
            d = self.defs.get(d.args[0].id)
        return d.attr if d is not None and d.prim == "tid" else None  # type: ignore[no-any-return]

    def own(self, offset: Var) -> bool:
        """Distinct threads reach distinct elements through this byte offset."""
        seen: set[tuple[int, int]] = set()
        for term in self.terms(offset):
            if self.invariant(term):
                continue
            d = self.defs.get(term.id)
            if d is None or d.prim != "mul":
                return False
            for index, stride in ((d.args[0], d.args[1]), (d.args[1], d.args[0])):
                component = self.tid_of(index)
                if component is not None and self.invariant(stride):
                    seen.add(component)
                    break
            else:
                return False
        counts = {n for _, n in seen}
        return len(counts) == 1 and len(seen) == counts.pop()


def thread_plan(kernel: KernelIR) -> ThreadPlan:
    """The plan for one entry (a forward kernel or an adjoint) as it goes to codegen."""
    addr = _Addresses(kernel)
    roots: dict[int | None, _Root] = {}
    ops = list(walk_ops(kernel.body))
    if any(op.prim == "print" for op in ops):
        # debugging output stays readable: in thread order, one line at a time
        return ThreadPlan(serial="the kernel prints")
    for op in ops:
        if op.prim not in _MEMORY or (op.prim == "load" and op.result is not None
                                      and op.result.type.kind == "p"):
            continue
        acc = roots.setdefault(addr.root(op.args[0]), _Root())
        acc.prims.add(op.prim)
        acc.all_own = acc.all_own and addr.own(op.args[1])
        if op.prim.startswith("atomic"):
            acc.float_add = acc.float_add or (op.prim == "atomic_add"
                                              and op.args[2].type.is_float)
            acc.result_used = acc.result_used or (op.result is not None
                                                  and op.result.id in addr.used)
    return _plan(roots)


def _plan(roots: dict[int | None, _Root]) -> ThreadPlan:
    serial: str | None = None
    scatter: list[int] = []
    float_atomics = False
    for offset, acc in roots.items():
        if acc.all_own and offset is not None:
            continue
        float_atomics = float_atomics or acc.float_add
        grads = acc.prims & {"adj_add", "adj_read", "adj_take"}
        reads = "load" in acc.prims or acc.result_used
        if acc.prims == {"atomic_add"} and not acc.result_used and offset is not None:
            scatter.append(offset)
        elif grads:
            if grads == {"adj_add"} and offset is not None:
                scatter.append(offset)
            elif grads != {"adj_read"}:
                serial = "threads read and add into the same gradient elements"
        elif "store" in acc.prims:
            serial = "threads store into array elements that other threads may also store into"
        elif reads and acc.prims & set(_WRITES):
            serial = "threads read array elements that other threads write"
    return ThreadPlan(serial, tuple(sorted(scatter)), float_atomics)
