"""Python operators on kernel values (+ - * / // % ** @, comparisons, unary) with Warp's typing."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..hooks import Hook
from ..ir.nodes import Var
from ..types import MatrixType, ScalarType, VectorType, bool_
from .values import Composite, Ctx, Literal, Value, describe, scalar, type_of

_PRIM = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "mod": "mod", "pow": "pow",
         "bitand": "and", "bitor": "or", "bitxor": "xor", "lshift": "shl", "rshift": "shr"}


def _c_intdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _fold(op: str, a: Any, b: Any) -> Any:
    """Constant-fold two Python literals with the kernel's (C-like) semantics."""
    if isinstance(a, int) and isinstance(b, int) and op in ("div", "floordiv", "mod"):
        if b == 0:
            raise ZeroDivisionError
        if op == "floordiv":  # Warp floors integer //, but truncates / and %
            return a // b
        q = _c_intdiv(a, b)
        return q if op != "mod" else a - q * b
    if op == "pow" and (isinstance(a, float) or isinstance(b, float)):
        with np.errstate(all="ignore"):  # C's pow: nan for (-8.0) ** 0.5, inf for 0.0 ** -1
            return float(np.power(np.float64(a), np.float64(b)))
    if op in ("div", "floordiv", "mod") and b == 0:  # floats: IEEE inf / nan, as C++ folds
        with np.errstate(all="ignore"):
            x, y = np.float64(a), np.float64(b)
            r = {"div": x / y, "floordiv": np.floor(x / y), "mod": np.fmod(x, y)}[op]
        return float(r)
    fns: dict[str, Callable[[Any, Any], Any]] = {
        "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
        "floordiv": lambda x, y: float(math.floor(x / y)), "mod": math.fmod, "pow": operator.pow,
        "bitand": operator.and_, "bitor": operator.or_, "bitxor": operator.xor,
        "lshift": operator.lshift, "rshift": operator.rshift,
    }
    return fns[op](a, b)


def unify(ctx: Ctx, a: Value, b: Value, opname: str) -> tuple[Var, Var]:
    """Two scalars of one type: a literal takes the other's type; differing types are an error."""
    if isinstance(a, Literal) and not isinstance(b, Literal):
        return scalar(ctx, a, _scalar_type(ctx, b)), scalar(ctx, b)
    if isinstance(b, Literal) and not isinstance(a, Literal):
        return scalar(ctx, a), scalar(ctx, b, _scalar_type(ctx, a))
    va, vb = scalar(ctx, a), scalar(ctx, b)
    if va.type != vb.type:
        raise ctx.error(
            f"'{opname}' operands have different types {va.type} and {vb.type}; "
            f"convert one explicitly, e.g. {vb.type}(x)"
        )
    return va, vb


def _scalar_type(ctx: Ctx, v: Value) -> ScalarType:
    t = type_of(v)
    if not isinstance(t, ScalarType):
        raise ctx.error(f"expected a scalar, got {describe(v)}")
    return t


def _int_floordiv(ctx: Ctx, x: Var, y: Var) -> Var:
    """Warp's integer //: floor division, built from truncating div and rem."""
    q = ctx.op("div", x, y)
    if x.type.kind == "u":
        return q
    r = ctx.op("mod", x, y)
    zero = ctx.const(0, x.type)
    inexact = ctx.op("ne", r, zero)
    signs_differ = ctx.op("ne", ctx.op("lt", r, zero), ctx.op("lt", y, zero))
    adjust = ctx.op("and", inexact, signs_differ)
    return ctx.op("select", adjust, ctx.op("sub", q, ctx.const(1, x.type)), q)


def scalar_binary(ctx: Ctx, opname: str, a: Value, b: Value) -> Value:
    if isinstance(a, Literal) and isinstance(b, Literal):
        try:
            return Literal(_fold(opname, a.value, b.value))
        except ZeroDivisionError:
            raise ctx.error("division by zero in a constant expression") from None
    x, y = unify(ctx, a, b, opname)
    t = x.type
    if opname == "floordiv" and t.is_float:
        return ctx.op("floor", ctx.op("div", x, y))
    if opname == "floordiv":
        return _int_floordiv(ctx, x, y)
    if opname in ("div", "mod"):
        return ctx.op(opname, x, y)
    if opname == "pow" and not t.is_float:
        raise ctx.error(f"'**' needs float operands, got {t}")
    if opname in ("bitand", "bitor", "bitxor", "lshift", "rshift") and t.is_float:
        raise ctx.error(f"bitwise '{opname}' needs integer operands, got {t}")
    return ctx.op(_PRIM[opname], x, y)


def compare(ctx: Ctx, prim: str, a: Value, b: Value) -> Value:
    """Scalar comparison gives a bool; vector ==/!= compares all components, like Warp."""
    if isinstance(a, Composite) and isinstance(b, Composite) and prim in ("eq", "ne"):
        if a.type != b.type:
            raise ctx.error(f"cannot compare {a.type!r} with {b.type!r}")
        eqs = [ctx.op("eq", x, y) for x, y in zip(a.comps, b.comps, strict=True)]
        acc = eqs[0]
        for e in eqs[1:]:
            acc = ctx.op("and", acc, e)
        return acc if prim == "eq" else ctx.op("not", acc)
    if isinstance(a, Literal) and isinstance(b, Literal):
        ta, tb = a.default_type, b.default_type
        if (ta == bool_) != (tb == bool_):  # as for variables: a number is not a bool
            raise ctx.error(f"'{prim}' operands have different types {ta} and {tb}; convert "
                            f"one explicitly, e.g. {tb}(x)")
        ops = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
               "gt": operator.gt, "ge": operator.ge}
        return Literal(bool(ops[prim](a.value, b.value)))
    x, y = unify(ctx, a, b, prim)
    return ctx.op(prim, x, y)


def elementwise(ctx: Ctx, opname: str, a: Composite, b: Value) -> Composite:
    """Component-wise op between a composite and a same-typed composite or a scalar."""
    if isinstance(b, Composite):
        if b.type != a.type:
            raise ctx.error(f"'{opname}' operands have different types {a.type!r} and {b.type!r}")
        pairs = zip(a.comps, b.comps, strict=True)
        comps = [scalar_binary(ctx, opname, x, y) for x, y in pairs]
    else:
        comps = [scalar_binary(ctx, opname, x, b) for x in a.comps]
    return Composite(a.type, tuple(scalar(ctx, c) for c in comps))


def matmul(ctx: Ctx, a: Composite, b: Composite) -> Composite:
    """mat @ vec, vec @ mat, or mat @ mat."""
    if isinstance(a.type, MatrixType) and isinstance(b.type, VectorType):
        if a.type.cols != b.type.length or a.type.dtype != b.type.dtype:
            raise ctx.error(f"cannot multiply {a.type!r} by {b.type!r}")
        rows = [dot_comps(ctx, a.comps[r * a.type.cols:(r + 1) * a.type.cols], b.comps)
                for r in range(a.type.rows)]
        kind = "spatial" if a.type.kind == "spatial" else "vec"  # spatial_matrix @ spatial_vector
        return Composite(VectorType(a.type.rows, a.type.dtype, kind), tuple(rows))
    if isinstance(a.type, VectorType) and isinstance(b.type, MatrixType):
        return matmul(ctx, transpose(b), a)
    if isinstance(a.type, MatrixType) and isinstance(b.type, MatrixType):
        if a.type.cols != b.type.rows or a.type.dtype != b.type.dtype:
            raise ctx.error(f"cannot multiply {a.type!r} by {b.type!r}")
        n, m, k = a.type.rows, b.type.cols, a.type.cols
        out = [dot_comps(ctx, a.comps[r * k:(r + 1) * k], b.comps[c::m])
               for r in range(n) for c in range(m)]
        spatial = "spatial" in (a.type.kind, b.type.kind) and (n, m) == (6, 6)
        return Composite(MatrixType(n, m, a.type.dtype, "spatial" if spatial else "mat"),
                         tuple(out))
    raise ctx.error(f"cannot matrix-multiply {a.type!r} and {b.type!r}")


def dot_comps(ctx: Ctx, xs: tuple[Var, ...], ys: tuple[Var, ...]) -> Var:
    acc = ctx.op("mul", xs[0], ys[0])
    for x, y in zip(xs[1:], ys[1:], strict=True):
        acc = ctx.op("add", acc, ctx.op("mul", x, y))
    return acc


def transpose(m: Composite) -> Composite:
    assert isinstance(m.type, MatrixType)
    r, c = m.type.rows, m.type.cols
    comps = tuple(m.comps[i * c + j] for j in range(c) for i in range(r))
    return Composite(MatrixType(c, r, m.type.dtype, m.type.kind), comps)


def binary(ctx: Ctx, opname: str, a: Value, b: Value) -> Value:
    """Dispatch a Python binary operator on kernel values."""
    if opname == "matmul":
        if isinstance(a, Composite) and isinstance(b, Composite):
            return matmul(ctx, a, b)
        raise ctx.error(f"'@' needs matrices/vectors, got {describe(a)} and {describe(b)}")
    if isinstance(a, Composite) or isinstance(b, Composite):
        return _composite_binary(ctx, opname, a, b)
    return scalar_binary(ctx, opname, a, b)


def _composite_binary(ctx: Ctx, opname: str, a: Value, b: Value) -> Value:
    if isinstance(a, Composite) and isinstance(b, Composite):
        if opname == "mul" and isinstance(a.type, VectorType) and \
                a.type.kind in ("quat", "transform"):
            return _rotation_product(ctx, a, b)
        if opname == "mul" and (isinstance(a.type, MatrixType) or isinstance(b.type, MatrixType)):
            return matmul(ctx, a, b)
        if opname in ("add", "sub", *_COMPONENTWISE):  # `%`, bit operators: per component
            return elementwise(ctx, opname, a, b)
        raise ctx.error(f"'{opname}' is not defined between {a.type!r} and {b.type!r} "
                        "(use cw_mul / cw_div for component-wise products)")
    if isinstance(a, Composite):
        if opname in ("mul", "div", *_COMPONENTWISE):
            return elementwise(ctx, opname, a, b)
    elif isinstance(b, Composite) and opname in ("mul", "div"):
        comps = [scalar(ctx, scalar_binary(ctx, opname, a, c)) for c in b.comps]
        return Composite(b.type, tuple(comps))
    raise ctx.error(f"'{opname}' is not defined between {describe(a)} and {describe(b)}")


#: operators that act per component between two composites of one type (as in Warp)
_COMPONENTWISE = ("mod", "bitand", "bitor", "bitxor", "lshift", "rshift")


#: quat * quat is the Hamilton product, transform * transform their composition (Warp): the
#: feature modules that define them sit above this one and fill these
QUAT_PRODUCT: Hook[Callable[[Ctx, Composite, Value], Composite]] = Hook(
    "quat * quat", "gradloom.builtins.quat")
TRANSFORM_PRODUCT: Hook[Callable[[Ctx, Composite, Value], Composite]] = Hook(
    "transform * transform", "gradloom.builtins.transform")


def _rotation_product(ctx: Ctx, a: Composite, b: Composite) -> Composite:
    product = QUAT_PRODUCT if a.type.kind == "quat" else TRANSFORM_PRODUCT
    return product.get()(ctx, a, b)


def unary(ctx: Ctx, opname: str, a: Value) -> Value:
    if isinstance(a, Literal):
        fns: dict[str, Callable[[Any], Any]] = {"neg": operator.neg, "pos": operator.pos, "not": operator.not_,
               "invert": operator.invert}
        return Literal(fns[opname](a.value))
    if opname == "pos":
        return a
    if isinstance(a, Composite):
        if opname == "invert" and not a.type.dtype.is_float:  # `~v`: per component
            return Composite(a.type, tuple(ctx.op("not", c) for c in a.comps))
        if opname != "neg":
            raise ctx.error(f"'{opname}' is not defined for {a.type!r}")
        return Composite(a.type, tuple(ctx.op("neg", c) for c in a.comps))
    x = scalar(ctx, a)
    if opname == "neg":
        return ctx.op("neg", x)
    if opname == "not":
        return ctx.op("not", truth(ctx, x))
    if x.type.is_float:
        raise ctx.error(f"'~' needs an integer operand, got {x.type}")
    return ctx.op("not", x)


def truth(ctx: Ctx, v: Value) -> Var:
    """A value as a bool condition: numbers compare against zero, like C and Warp."""
    if isinstance(v, Literal):
        return ctx.const(bool(v.value), bool_)
    x = scalar(ctx, v)
    if x.type == bool_:
        return x
    return ctx.op("ne", x, ctx.const(0, x.type))
