"""Conditions in kernels: the truth of a value (arrays included), `and` / `or`, and C's
conversions when scalars of different types are compared."""

from __future__ import annotations

from ..builtins import ops
from ..builtins.values import ArrayVal, Ctx, Literal, Value
from ..ir.nodes import Var


def compare_operands(ctx: Ctx, a: Value, b: Value) -> tuple[Value, Value]:
    """Scalars of different types compared as C compares them (Warp emits C++ comparisons):
    an integer with a float in the float type, two floats or two integers of one signedness in
    the wider type, a signed with a narrower unsigned in the signed type. Other mixes are left
    to the comparison to reject (a signed with an unsigned as wide, which C would compare as
    unsigned, turning -1 into a huge number)."""
    if not (isinstance(a, Var) and isinstance(b, Var)) or a.type == b.type:
        return a, b
    ta, tb = a.type, b.type
    if "b" in (ta.kind, tb.kind):
        return a, b
    if ta.is_float or tb.is_float:
        floats = [t for t in (ta, tb) if t.is_float]
        target = max(floats, key=lambda t: t.bits)
    elif ta.kind == tb.kind:
        target = max(ta, tb, key=lambda t: t.bits)
    else:
        signed, unsigned = (ta, tb) if ta.kind == "i" else (tb, ta)
        if signed.bits <= unsigned.bits:
            return a, b
        target = signed
    return tuple(v if v.type == target else ctx.op("cast", v, type=target)  # type: ignore[return-value]
                 for v in (a, b))


def truth(ctx: Ctx, v: Value) -> Var:
    """A value as a condition; an array is true when it has elements (`if arr and ...`)."""
    if isinstance(v, ArrayVal):
        size = v.shape[0]
        for s in v.shape[1:]:
            size = ctx.op("mul", size, s)
        return ctx.op("ne", size, ctx.const(0, size.type))
    return ops.truth(ctx, v)


def logical_and(ctx: Ctx, a: Value, b: Value) -> Value:
    if isinstance(a, Literal) and isinstance(b, Literal):
        return Literal(bool(a.value) and bool(b.value))
    return ctx.op("and", truth(ctx, a), truth(ctx, b))


def logical_or(ctx: Ctx, a: Value, b: Value) -> Value:
    if isinstance(a, Literal) and isinstance(b, Literal):
        return Literal(bool(a.value) or bool(b.value))
    return ctx.op("or", truth(ctx, a), truth(ctx, b))
