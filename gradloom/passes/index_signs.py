"""Drops Warp's negative-index wrap where the index is provably >= 0 at that point.

An array index the frontend cannot prove non-negative is wrapped as Warp wraps it,
`i + (i < 0 ? extent : 0)` (builtins/memory.py). The wrap costs little by itself but hides the
address's form: `a[i * n + k]` in a loop over k is no longer consecutive in k, so LLVM cannot
vectorise the loop, and passes/threads.py cannot prove the address thread-own. This pass knows
more than the frontend does at the point of the access, because it sees whole loops: thread ids,
non-negative constants and unsigned values are >= 0; so are sums, products, quotients,
remainders, minima and maxima of such; a loop counter that starts >= 0 and whose next value is
>= 0 whenever it is (checked as a fixpoint over the loop); and, inside a loop body, a bound the
counter is below (`k < n` with k >= 0 gives n >= 1). Where the wrapped index is among these,
uses of the wrapped value become uses of the index (the wrap is left dead, for drop_dead).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Stmt, Var
from ..types import ScalarType

#: integer operations whose result is >= 0 when every operand is
_KEEPS_NONNEGATIVE = frozenset({"add", "mul", "div", "mod", "min", "max"})
#: comparisons `a < b` / `a <= b` that, with a >= 0 true in a loop body, make b >= 0 there
_BOUNDS = {"lt": (0, 1), "le": (0, 1), "gt": (1, 0), "ge": (1, 0)}


def drop_proven_wraps(kernel: KernelIR) -> KernelIR:
    signs = _Signs()
    signs.block(kernel.body, set(), record=True)
    if not signs.drops:
        return kernel
    return replace(kernel, body=_rewrite_block(kernel.body, signs.drops))


class _Signs:
    def __init__(self) -> None:
        self.defs: dict[Var, Op] = {}
        #: the result of a wrap `i + select(i < 0, extent, 0)` -> i, for i proven >= 0
        self.drops: dict[Var, Var] = {}

    def block(self, b: Block, known: set[Var], record: bool) -> None:
        for s in b.stmts:
            if isinstance(s, Op):
                self.op(s, known, record)
            elif isinstance(s, If):
                then, orelse = set(known), set(known)
                self.block(s.then, then, record)
                self.block(s.orelse, orelse, record)
                known.update(r for r, a, c in zip(s.results, s.then.yields, s.orelse.yields,
                                                  strict=True) if a in then and c in orelse)
            elif isinstance(s, Loop):
                self.loop(s, known, record)
            else:
                self.custom(s, known, record)

    def op(self, s: Op, known: set[Var], record: bool) -> None:
        if s.result is None:
            return
        self.defs[s.result] = s
        if _nonnegative(s, known):
            known.add(s.result)
        if record:
            index = self._wrapped_index(s)
            if index is not None and index in known:
                self.drops[s.result] = index

    def loop(self, s: Loop, known: set[Var], record: bool) -> None:
        params = {p for p, init in zip(s.params, s.inits, strict=True) if init in known}
        while True:  # optimistic: drop a parameter whose next value is not known >= 0, repeat
            body = self._trip(s, known | params, record=False)
            kept = {p for p, y in zip(s.params, s.body.yields, strict=True)
                    if p in params and y in body}
            if kept == params:
                break
            params = kept
        self._trip(s, known | params, record)
        known.update(r for p, r in zip(s.params, s.results, strict=True) if p in params)

    def _trip(self, s: Loop, inner: set[Var], record: bool) -> set[Var]:
        cond = set(inner)
        self.block(s.cond, cond, record)
        body = inner | self._bounds(s.cond, cond)
        self.block(s.body, body, record)
        return body

    def _bounds(self, cond: Block, known: set[Var]) -> set[Var]:
        """Values the loop condition, true in the body, shows to be >= 0 there."""
        op = self.defs.get(cond.yields[0]) if cond.yields else None
        if op is None or op.prim not in _BOUNDS:
            return set()
        low, high = (op.args[i] for i in _BOUNDS[op.prim])
        return {high} if low in known and high.type.is_int else set()

    def custom(self, s: Custom, known: set[Var], record: bool) -> None:
        self.block(s.body, set(known), record)
        self.block(s.adjoint, set(known), record)

    def _wrapped_index(self, s: Op) -> Var | None:
        return wrapped_index(s, self.defs.get)


def wrapped_index(s: Op, define: Callable[[Var], Op | None]) -> Var | None:
    """i when s is `add(i, select(lt(i, 0), extent, 0))` (Warp's wrap), else None; `define`
    gives a value's defining op."""
    if s.prim != "add" or len(s.args) != 2:
        return None
    index, chosen = s.args
    select = define(chosen)
    if select is None or select.prim != "select" or not _zero(select.args[2], define):
        return None
    test = define(select.args[0])
    if test is None or test.prim != "lt" or test.args[0] is not index:
        return None
    return index if _zero(test.args[1], define) else None


def _zero(v: Var, define: Callable[[Var], Op | None]) -> bool:
    op = define(v)
    return op is not None and op.prim == "const" and op.attr == 0 and v.type.is_int


def _nonnegative(s: Op, known: set[Var]) -> bool:
    t = s.result.type if s.result is not None else None
    if not isinstance(t, ScalarType) or not t.is_int:  # (an array descriptor a tile of
        return False                                     # structs moves whole is no index)
    if t.kind == "u" or s.prim == "tid":
        return True
    if s.prim == "const":
        return isinstance(s.attr, int) and s.attr >= 0
    if s.prim == "cast":
        src = s.args[0]
        if not src.type.is_int or src not in known:
            return False
        # an unsigned value as a signed one of its own width may be negative
        return src.type.bits < t.bits or (src.type.bits == t.bits and src.type.kind != "u")
    return s.prim in _KEEPS_NONNEGATIVE and all(a in known for a in s.args)


def _use(v: Var, drops: dict[Var, Var]) -> Var:
    return drops.get(v, v)


def _rewrite_block(b: Block, drops: dict[Var, Var]) -> Block:
    return Block(tuple(_rewrite(s, drops) for s in b.stmts),
                 tuple(_use(y, drops) for y in b.yields))


def _rewrite(s: Stmt, drops: dict[Var, Var]) -> Stmt:
    if isinstance(s, Op):
        args = tuple(_use(a, drops) for a in s.args)
        return s if args == s.args else Op(s.prim, args, s.result, s.loc, s.attr)
    if isinstance(s, If):
        return If(_use(s.cond, drops), _rewrite_block(s.then, drops),
                  _rewrite_block(s.orelse, drops), s.results, s.loc)
    if isinstance(s, Loop):
        return Loop(tuple(_use(v, drops) for v in s.inits), s.params,
                    _rewrite_block(s.cond, drops), _rewrite_block(s.body, drops), s.results,
                    s.loc)
    return Custom(tuple(_use(v, drops) for v in s.inputs), _rewrite_block(s.body, drops),
                  s.results, s.seeds, _rewrite_block(s.adjoint, drops), s.loc)
