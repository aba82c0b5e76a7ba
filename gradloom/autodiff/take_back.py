"""Adjoint peephole: a gradient taken (read and zeroed) and at once added back unchanged is read.

The reverse sweep of an in-place update `y[i] = y[i] + a * x[i]` takes y's gradient for the
store (it reads the slot and zeroes it: the old y[i] reached the new one only through the load)
and then, for the load, adds that same value back into the same slot. The slot ends as it began
(0 + g = g, apart from turning a gradient of -0.0 into +0.0), yet the two writes cost a pass of
stores over the whole gradient array: a quarter of the memory traffic of saxpy's adjoint.
Replacing the take by a read and dropping the add changes no value a thread computes.

A pair is folded only within one block, both addressing the same gradient pointer at offsets
that are the same value (the same variable, or the same pure operations on the same values) with
the same constant part. Between them may come pure operations, gradient accesses through the
same pointer and offset at other bytes (a vector's other components), and additions into other
gradients at pairwise disjoint bytes: should one of those gradients be this one (an array passed
twice, which a Tape allows for an in-place update), at most one of them lands in the slot, and
0 + a + g and g + a are the same number.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Stmt, Var, walk_ops
from ..ir.prims import PRIMS, Effect

#: how deep `_same_value` compares the operations two offsets are computed by
_DEPTH = 8


def fold_take_back(adjoint: KernelIR) -> KernelIR:
    """The adjoint with each take-then-add-back pair (see the module doc) made one read."""
    defs = {op.result.id: op for op in walk_ops(adjoint.body) if op.result is not None}
    return replace(adjoint, body=_Folder(defs).block(adjoint.body))


class _Folder:
    def __init__(self, defs: dict[int, Op]) -> None:
        self.defs = defs

    def block(self, b: Block) -> Block:
        stmts = [self.stmt(s) for s in b.stmts]
        dropped: set[int] = set()
        for k, s in enumerate(stmts):
            if isinstance(s, Op) and s.prim == "adj_take":
                back = self.added_back(stmts, k)
                if back is not None:
                    stmts[k] = replace(s, prim="adj_read")
                    dropped.add(back)
        return Block(tuple(s for k, s in enumerate(stmts) if k not in dropped), b.yields)

    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, Op):
            return s
        if isinstance(s, If):
            return replace(s, then=self.block(s.then), orelse=self.block(s.orelse))
        if isinstance(s, Loop):
            return replace(s, cond=self.block(s.cond), body=self.block(s.body))
        assert isinstance(s, Custom)
        return replace(s, body=self.block(s.body), adjoint=self.block(s.adjoint))

    def added_back(self, stmts: list[Stmt], k: int) -> int | None:
        """The index of the `adj_add` that puts the value taken at stmts[k] straight back into
        its slot, with only what the module doc allows in between; None when there is none."""
        take = stmts[k]
        assert isinstance(take, Op)
        foreign: list[Op] = []  # additions into other gradients, pairwise disjoint
        for j in range(k + 1, len(stmts)):
            s = stmts[j]
            if not isinstance(s, Op):
                return None
            if PRIMS[s.prim].pure:
                continue
            if not PRIMS[s.prim].has(Effect.GRAD):  # gradient memory at (pointer, offset) + attr
                return None
            if s.args[0] is take.args[0]:
                if (s.prim == "adj_add" and s.args[2] is take.result and s.attr == take.attr
                        and self.same_value(s.args[1], take.args[1])):
                    return j
                if not self.disjoint(s, take):
                    return None
            elif s.prim == "adj_add" and all(self.disjoint(s, f) for f in foreign):
                foreign.append(s)
            else:
                return None
        return None

    def disjoint(self, a: Op, b: Op) -> bool:
        """Whether two gradient accesses touch different bytes: through one pointer, at one
        offset value, at constant parts that do not overlap."""
        return (a.args[0] is b.args[0] and self.same_value(a.args[1], b.args[1])
                and isinstance(a.attr, int) and isinstance(b.attr, int)
                and (a.attr + _size(a) <= b.attr or b.attr + _size(b) <= a.attr))

    def same_value(self, a: Var, b: Var, depth: int = _DEPTH) -> bool:
        """Whether a and b hold the same value: one variable, or pure operations alike."""
        if a is b:
            return True
        da, db = self.defs.get(a.id), self.defs.get(b.id)
        if da is None or db is None or depth == 0:
            return False
        return (da.prim == db.prim and PRIMS[da.prim].pure and _same_attr(da.attr, db.attr)
                and a.type == b.type and len(da.args) == len(db.args)
                and all(self.same_value(x, y, depth - 1)
                        for x, y in zip(da.args, db.args, strict=True)))


def _same_attr(x: object, y: object) -> bool:
    """Equal constants, told apart where == does not (0.0 and -0.0; NaN is never the same)."""
    return type(x) is type(y) and x == y and repr(x) == repr(y)


def _size(op: Op) -> int:
    """The bytes a gradient access touches."""
    value = op.args[2] if op.prim == "adj_add" else op.result
    assert value is not None
    return value.type.size
