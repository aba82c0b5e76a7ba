"""Scalar math builtins (sqrt, sin, pow, min, clamp, ...), applied per component to vectors."""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import bool_
from .ops import scalar_binary, truth, unify
from .registry import builtin
from .values import Composite, Ctx, Literal, Value, describe, scalar

_UNARY_DOCS = {
    "sqrt": "square root", "cbrt": "cube root", "sin": "sine", "cos": "cosine",
    "tan": "tangent", "asin": "arcsine", "acos": "arccosine", "atan": "arctangent",
    "sinh": "hyperbolic sine", "cosh": "hyperbolic cosine", "tanh": "hyperbolic tangent",
    "exp": "e to the x", "log": "natural logarithm", "log2": "base-2 logarithm",
    "log10": "base-10 logarithm", "floor": "round down", "ceil": "round up",
    "round": "round half away from zero", "rint": "round half to even", "trunc": "round toward 0",
    "erf": "error function",
}


def _float_arg(ctx: Ctx, name: str, v: Value) -> Var:
    x = scalar(ctx, v, None) if not isinstance(v, Literal) else None
    if x is None:
        assert isinstance(v, Literal)
        x = scalar(ctx, Literal(float(v.value)))
    if not x.type.is_float:
        raise ctx.error(f"wp.{name}() needs a float argument, got {x.type} "
                        f"(convert with float(x))")
    return x


def _per_component(ctx: Ctx, name: str, v: Value, fn: object) -> Value:
    if isinstance(v, Composite):
        return Composite(v.type, tuple(fn(ctx, c) for c in v.comps))  # type: ignore[operator]
    return fn(ctx, v)  # type: ignore[operator,no-any-return]


def _make_unary(name: str) -> None:
    def emit_scalar(ctx: Ctx, v: Value) -> Var:
        return ctx.op(name, _float_arg(ctx, name, v))

    def fn(ctx: Ctx, x: Value) -> Value:
        return _per_component(ctx, name, x, emit_scalar)

    builtin(name, _UNARY_DOCS[name], differentiable=name not in
            ("floor", "ceil", "round", "rint", "trunc"), signatures="(x: Float) -> Float")(fn)


for _name in _UNARY_DOCS:
    _make_unary(_name)


@builtin("abs", "absolute value (per component for vectors)", signatures="(x: Scalar) -> Scalar")
def abs_(ctx: Ctx, x: Value) -> Value:
    return _per_component(ctx, "abs", x, lambda c, v: c.op("abs", scalar(c, v)))


@builtin("pow", "x raised to the power y", signatures="(x: Float, y: Float) -> Float")
def pow_(ctx: Ctx, x: Value, y: Value) -> Value:
    if isinstance(x, Composite):
        return Composite(x.type, tuple(scalar(ctx, pow_(ctx, c, y)) for c in x.comps))
    a, b = unify(ctx, x, y, "pow")
    if not a.type.is_float:
        raise ctx.error(f"wp.pow() needs float arguments, got {a.type}")
    return ctx.op("pow", a, b)


@builtin("atan2", "the angle of (x, y): atan2(y, x)", signatures="(y: Float, x: Float) -> Float")
def atan2(ctx: Ctx, y: Value, x: Value) -> Value:
    a, b = unify(ctx, y, x, "atan2")
    return ctx.op("atan2", a, b)


def _minmax(ctx: Ctx, prim: str, a: Value, b: Value | None) -> Value:
    if b is None:
        if not isinstance(a, Composite):
            raise ctx.error(f"wp.{prim}() with one argument needs a vector, got {describe(a)}")
        acc = a.comps[0]
        for c in a.comps[1:]:
            acc = ctx.op(prim, acc, c)
        return acc
    if isinstance(a, Composite) and isinstance(b, Composite):
        if a.type != b.type:
            raise ctx.error(f"wp.{prim}() arguments differ: {a.type!r} and {b.type!r}")
        return Composite(a.type, tuple(ctx.op(prim, x, y)
                                       for x, y in zip(a.comps, b.comps, strict=True)))
    x, y = unify(ctx, a, b, prim)
    return ctx.op(prim, x, y)


@builtin("min", "smaller of two values, or the smallest component of a vector")
def min_(ctx: Ctx, a: Value, b: Value | None = None) -> Value:
    return _minmax(ctx, "min", a, b)


@builtin("max", "larger of two values, or the largest component of a vector")
def max_(ctx: Ctx, a: Value, b: Value | None = None) -> Value:
    return _minmax(ctx, "max", a, b)


@builtin("clamp", "x limited to [low, high]", signatures="(x, low, high)")
def clamp(ctx: Ctx, x: Value, low: Value, high: Value) -> Value:
    return _minmax(ctx, "min", _minmax(ctx, "max", x, low), high)


@builtin("mod", "C-style remainder (sign of the dividend)")
def mod(ctx: Ctx, a: Value, b: Value) -> Value:
    return scalar_binary(ctx, "mod", a, b)


@builtin("isnan", "true where x is NaN", differentiable=False)
def isnan(ctx: Ctx, x: Value) -> Value:
    return ctx.op("isnan", _float_arg(ctx, "isnan", x))


@builtin("isinf", "true where x is +-infinity", differentiable=False)
def isinf(ctx: Ctx, x: Value) -> Value:
    return ctx.op("isinf", _float_arg(ctx, "isinf", x))


@builtin("isfinite", "true where x is neither NaN nor infinite", differentiable=False)
def isfinite(ctx: Ctx, x: Value) -> Value:
    v = _float_arg(ctx, "isfinite", x)
    bad = ctx.op("or", ctx.op("isnan", v), ctx.op("isinf", v))
    return ctx.op("not", bad)


@builtin("sign", "-1, 0 or 1 with the sign of x")
def sign(ctx: Ctx, x: Value) -> Value:
    v = scalar(ctx, x)
    zero, one = ctx.const(0, v.type), ctx.const(1, v.type)
    neg = ctx.op("select", ctx.op("lt", v, zero), ctx.op("neg", one), zero)
    return ctx.op("select", ctx.op("gt", v, zero), one, neg)


@builtin("select", "Warp's select(cond, value_if_false, value_if_true)")
def select(ctx: Ctx, cond: Value, if_false: Value, if_true: Value) -> Value:
    return where(ctx, cond, if_true, if_false)


@builtin("where", "where(cond, value_if_true, value_if_false)")
def where(ctx: Ctx, cond: Value, if_true: Value, if_false: Value) -> Value:
    c = truth(ctx, cond)
    if isinstance(if_true, Composite) or isinstance(if_false, Composite):
        if not (isinstance(if_true, Composite) and isinstance(if_false, Composite)) or \
                if_true.type != if_false.type:
            raise ctx.error("wp.where() branches must have the same type")
        return Composite(if_true.type, tuple(
            ctx.op("select", c, a, b) for a, b in zip(if_true.comps, if_false.comps, strict=True)))
    a, b = unify(ctx, if_true, if_false, "where")
    if c.type != bool_:
        raise ctx.error("wp.where() condition must be a bool")
    return ctx.op("select", c, a, b)
