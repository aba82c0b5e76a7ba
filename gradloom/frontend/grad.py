"""`wp.grad(f)(args)` in kernels: the gradient of a scalar function at args, in the forward code.

f is lowered as any call is (its ops join the kernel), then a reverse sweep over exactly those
ops applies each primitive's rule from `ir/prims.py` with a seed of 1 on f's result, emitting
the adjoint ops right after them. As in Warp, f's result must be a scalar; its body may be
any straight-line code (funcs and builtins included, no branches or loops left after lowering).
"""

from __future__ import annotations

from typing import Any

from ..builtins.values import Composite, Ctx, Literal, TupleVal, Value, describe, materialize
from ..errors import CompileError
from ..ir.builder import Builder
from ..ir.nodes import Block, Op, Var
from ..ir.prims import PRIMS
from ..types import ScalarType


class _Emit:
    """The `ir.prims.Emit` a derivative rule writes through: ops go to the kernel being lowered,
    and primal values are the forward values themselves."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx

    def op(self, prim: str, *args: Var, type: ScalarType | None = None) -> Var:
        return self.ctx.op(prim, *args, type=type)

    def const(self, value: float, t: ScalarType) -> Var:
        return self.ctx.const(value, t)

    def primal(self, v: Var) -> Var:
        return v


def fresh_inputs(ctx: Ctx, args: list[Any]) -> list[Value]:
    """Each argument as values of its own (`x + -0.0`, exact), so that passing one variable
    twice still gives one partial derivative per argument; literals get their default type."""
    out: list[Value] = []
    for a in args:
        a = materialize(ctx, a) if isinstance(a, Literal) else a
        if isinstance(a, Var) and a.type.is_float:
            out.append(ctx.op("add", a, ctx.const(-0.0, a.type)))
        elif isinstance(a, Composite) and a.type.dtype.is_float:
            out.append(Composite(a.type, tuple(ctx.op("add", c, ctx.const(-0.0, c.type))
                                               for c in a.comps)))
        else:
            raise CompileError(f"wp.grad(): arguments must be float scalars or vectors, got "
                               f"{describe(a)}", ctx.loc)
    return out


def splice(b: Builder, inner: Block) -> None:
    """Append a closed block's statements to the block that is open in b."""
    outer = b.close_block()
    b.reopen_block(Block(outer.stmts + inner.stmts, ()))


def gradients(ctx: Ctx, ops: Block, result: Value, inputs: list[Value]) -> Value:
    """d result / d input for each input (one value, or a tuple of them), by a reverse sweep
    over the statements that computed result."""
    if not (isinstance(result, Var) and result.type.is_float):
        raise CompileError(f"wp.grad(): the function must return a float scalar, got "
                           f"{describe(result)}", ctx.loc)
    e = _Emit(ctx)
    adj: dict[int, Var] = {result.id: ctx.const(1.0, result.type)}
    for s in reversed(ops.stmts):
        _reverse_stmt(ctx, e, s, adj)
    grads = [_gather(ctx, v, adj) for v in inputs]
    return grads[0] if len(grads) == 1 else TupleVal(tuple(grads))


def _reverse_stmt(ctx: Ctx, e: _Emit, s: Any, adj: dict[int, Var]) -> None:
    if not isinstance(s, Op):  # a branch, loop or custom-gradient region
        results = getattr(s, "results", ())
        if any(r.id in adj for r in results):
            raise CompileError("wp.grad(): the function's body must be straight-line code (no "
                               "branches, loops or custom gradients)", ctx.loc)
        return
    if s.result is None or s.result.id not in adj:
        return
    rule = PRIMS[s.prim].vjp
    if rule is None:
        return  # no gradient through it (integer, bool and pointer results, memory reads)
    for arg, g in zip(s.args, rule(e, s, adj[s.result.id]), strict=False):
        if g is None or not arg.type.is_float:
            continue
        old = adj.get(arg.id)
        adj[arg.id] = g if old is None else ctx.op("add", old, g)


def _gather(ctx: Ctx, v: Value, adj: dict[int, Var]) -> Value:
    if isinstance(v, Composite):
        return Composite(v.type, tuple(_one(ctx, c, adj) for c in v.comps))
    assert isinstance(v, Var)
    return _one(ctx, v, adj)


def _one(ctx: Ctx, v: Var, adj: dict[int, Var]) -> Var:
    return adj.get(v.id) or ctx.const(0.0, v.type)
