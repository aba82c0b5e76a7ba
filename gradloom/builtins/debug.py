"""Debugging builtins: print, printf, expect_eq, expect_neq, expect_near.

Each call becomes one `print` primitive (one C printf, so a line from one thread is never split
by another's), run by forward launches only: the adjoint kernel's replay of the forward code
does not print again, except in an explicit adjoint launch, which prints as Warp's does
(wp.print's adjoint line "adj: ..." too: `PrintFormat`, pipeline.printing_kernel). Values are printed the way Warp prints them (`%g` for floats, vectors as
space-separated components, one matrix row per line, bools as True / False).
"""

from __future__ import annotations

import re
from typing import Any

from ..ir.nodes import Var
from ..ir.prims import PrintFormat
from ..types import MatrixType, ScalarType, StructType, VectorType, bool_, int32
from . import ops, tile_more
from .registry import builtin
from .values import (
    ArrayVal,
    Composite,
    Ctx,
    Literal,
    StructVal,
    TileVal,
    Value,
    describe,
    flatten,
    materialize,
    type_of,
)

# a C conversion specification: %[flags][width][.precision][length]conversion
_CONVERSION = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|j|z|t|L)?(.)")


def _spec(t: ScalarType) -> str:
    """The printf conversion for one scalar as the print primitive passes it."""
    if t.is_float:
        return "%g"
    if t.kind == "b":
        return "%s"
    wide = "ll" if t.bits == 64 else ""
    return f"%{wide}{'u' if t.kind == 'u' else 'd'}"


def _text(ctx: Ctx, name: str, t: Any) -> str:
    """The format of a whole value, ending in a newline, laid out as Warp prints it."""
    if isinstance(t, ScalarType):
        return _spec(t) + "\n"
    if isinstance(t, MatrixType):
        row = _spec(t.dtype) + " "
        return "".join(row * t.cols + "\n" for _ in range(t.rows))
    if isinstance(t, VectorType):
        s = _spec(t.dtype)
        if t.kind == "quat":
            return " ".join([s] * 4) + "\n"
        if t.kind == "transform":
            return f"({' '.join([s] * 3)}) ({' '.join([s] * 4)})\n"
        return (s + " ") * t.length + "\n"
    if isinstance(t, StructType):
        raise ctx.error(f"wp.{name}() cannot print the struct {t!r}: print its fields")
    raise ctx.error(f"wp.{name}() cannot print {t!r}")


def _values(ctx: Ctx, name: str, v: Value) -> tuple[Any, list[Var]]:
    """A value's type and its scalars, in print order."""
    m = materialize(ctx, v)
    t = type_of(m)
    if not isinstance(m, (Var, Composite)):
        raise ctx.error(f"wp.{name}() cannot print {describe(v)}")
    return t, flatten(m)


def _adjoint_text(t: Any) -> str:
    """The format of the line an adjoint launch prints of a value's adjoint: "adj:" and the
    components as Warp's adjoint of print lays them out (a matrix's later rows indented)."""
    if isinstance(t, ScalarType):
        return f"adj: {_spec(t)}\n"
    if isinstance(t, MatrixType):
        row = f" {_spec(t.dtype)}" * t.cols + "\n"
        return "".join(("adj:" if i == 0 else "    ") + row for i in range(t.rows))
    s = _spec(t.dtype)
    if t.kind == "quat":
        return "adj: " + " ".join([s] * 4) + "\n"
    if t.kind == "transform":
        return f"adj: ({' '.join([s] * 3)}) ({' '.join([s] * 4)})\n"
    return "adj:" + f" {s}" * t.length + "\n"


def _emit(ctx: Ctx, fmt: str, values: list[Var], when: Value | None = None,
          adjoint: str | None = None) -> None:
    cond = ctx.const(True, bool_) if when is None else ops.truth(ctx, when)
    ctx.b.effect("print", (cond, *values), ctx.loc, attr=PrintFormat(fmt, adjoint))


@builtin("print", "print a value (scalar, vector, matrix, quaternion, transform or string)",
         differentiable=False, signatures="(value: Any) -> None")
def print_(ctx: Ctx, *args: Any) -> None:
    if len(args) != 1:
        raise ctx.error(f"wp.print() takes one value, got {len(args)}; use wp.printf() to "
                        "print several")
    (value,) = args
    if isinstance(value, str):
        text = value.replace("%", "%%") + "\n"
        _emit(ctx, text, [], adjoint="adj: " + text)
        return
    if isinstance(value, TileVal):  # builtins/tile_more.py
        tile_more.print_tile(ctx, value)
        return
    if isinstance(value, (StructVal, ArrayVal)):  # as Warp: a placeholder, not an error
        _emit(ctx, _NO_PRINT, [], adjoint="adj: " + _NO_PRINT)
        return
    t, values = _values(ctx, "print", value)
    _emit(ctx, _text(ctx, "print", t), values, adjoint=_adjoint_text(t))


#: what wp.print() writes for a struct or an array (Warp's words)
_NO_PRINT = "<type without print implementation>\n"

_MAX_PRINTF_ARGS = 32


@builtin("printf", "print with a C format string, e.g. wp.printf(\"%d: %f\\n\", i, x)",
         differentiable=False, signatures="(fmt: str, *args: Scalar) -> None")
def printf(ctx: Ctx, fmt: Any = None, *args: Any) -> None:
    if not isinstance(fmt, str):
        raise ctx.error(f"wp.printf() needs a string literal as its format, got {describe(fmt)}")
    if len(args) > _MAX_PRINTF_ARGS:  # Warp's limit (and its words), kept for portability
        raise ctx.error(f"wp.printf() got {len(args)} values: the maximum number of variadic "
                        f"arguments that can be passed to `printf` is {_MAX_PRINTF_ARGS}")
    out, values, rest = [], [], list(args)
    pos = 0
    for m in _CONVERSION.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        if m.group(5) == "%":
            out.append("%%")
            continue
        if "*" in (m.group(2), m.group(3)):
            raise ctx.error("wp.printf(): '*' widths and precisions are not supported")
        if not rest:
            raise ctx.error(f"wp.printf(): the format has more conversions than the "
                            f"{len(args)} values given")
        arg = rest.pop(0)
        if isinstance(arg, str):  # a string literal is written into the format itself
            if m.group(5) != "s":
                raise ctx.error(f"wp.printf(): a string needs %s, not {m.group(0)!r}")
            spec = "%" + m.group(1) + (m.group(2) or "") + (f".{m.group(3)}" if m.group(3) else "")
            out.append(((spec + "s") % arg).replace("%", "%%"))
            continue
        out.append(m.group(0))
        values.append(_printf_arg(ctx, arg))
    if rest:
        raise ctx.error(f"wp.printf(): {len(rest)} more values than the format's conversions")
    out.append(fmt[pos:])
    _emit(ctx, "".join(out), values)


def _printf_arg(ctx: Ctx, arg: Any) -> Var:
    m = materialize(ctx, arg) if isinstance(arg, (Var, Literal)) else arg
    if not isinstance(m, Var):
        raise ctx.error(f"wp.printf() prints scalars, got {describe(arg)}; use wp.print() for "
                        "vectors and matrices")
    return ctx.op("cast", m, type=int32) if m.type == bool_ else m  # C promotes bool to int


def _pair(ctx: Ctx, name: str, a: Value, b: Value) -> tuple[Any, list[Var], list[Var]]:
    ta, va = _values(ctx, name, a)
    tb, vb = _values(ctx, name, b)
    if ta != tb:
        raise ctx.error(f"wp.{name}() arguments have different types {ta!r} and {tb!r}: "
                        "Can't test equality for objects with different types")
    return ta, va, vb


def _expect(ctx: Ctx, name: str, equal_fails: bool, a: Value, b: Value) -> None:
    t, va, vb = _pair(ctx, name, a, b)
    differs = ctx.op("ne", va[0], vb[0])
    for x, y in zip(va[1:], vb[1:], strict=True):
        differs = ctx.op("or", differs, ctx.op("ne", x, y))
    fails = ctx.op("not", differs) if equal_fails else differs
    text = _text(ctx, name, t)
    _emit(ctx, f"Error, {name}() failed:\n\t Expected: {text}\t Actual: {text}", [*vb, *va],
          fails)


@builtin("expect_eq", "print an error (and go on) when a != b", differentiable=False,
         signatures=("(a: Scalar, b: Scalar) -> None", "(a: Vector, b: Vector) -> None",
                     "(a: Matrix, b: Matrix) -> None"))
def expect_eq(ctx: Ctx, a: Value, b: Value) -> None:
    _expect(ctx, "expect_eq", False, a, b)


@builtin("expect_neq", "print an error (and go on) when a == b", differentiable=False,
         signatures=("(a: Scalar, b: Scalar) -> None", "(a: Vector, b: Vector) -> None",
                     "(a: Matrix, b: Matrix) -> None"))
def expect_neq(ctx: Ctx, a: Value, b: Value) -> None:
    _expect(ctx, "expect_neq", True, a, b)


@builtin("expect_near", "print an error (and go on) when a and b differ by more than tolerance "
         "in some component (NaN counts as a difference)", differentiable=False,
         signatures=("(a: Float, b: Float, tolerance: Float) -> None",
                     "(a: Vector, b: Vector, tolerance: Float) -> None",
                     "(a: Matrix, b: Matrix, tolerance: Float) -> None"))
def expect_near(ctx: Ctx, a: Value, b: Value, tolerance: Value | None = None) -> None:
    t, va, vb = _pair(ctx, "expect_near", a, b)
    if tolerance is None:  # Warp's default
        tolerance = Literal(1e-6)
    dtype = t if isinstance(t, ScalarType) else t.dtype
    if not dtype.is_float:
        raise ctx.error(f"wp.expect_near() compares floats, got {t!r}")
    tol = materialize(ctx, tolerance, dtype)
    if type_of(tol) != dtype:
        raise ctx.error(f"wp.expect_near() tolerance must be {dtype}, got {describe(tolerance)}")
    assert isinstance(tol, Var)
    diffs = [ctx.op("abs", ctx.op("sub", x, y)) for x, y in zip(va, vb, strict=True)]
    # `not (d <= tol)` so that a NaN difference fails the check
    fails = ctx.op("not", ctx.op("le", diffs[0], tol))
    worst = diffs[0]
    for d in diffs[1:]:
        fails = ctx.op("or", fails, ctx.op("not", ctx.op("le", d, tol)))
        worst = ctx.op("max", worst, d)
    text = _text(ctx, "expect_near", t)
    label = "Absolute difference" if isinstance(t, ScalarType) else "Max absolute difference"
    fmt = (f"Error, expect_near() failed with tolerance %g\n    Expected: {text}    Actual: "
           f"{text}    {label}: %g\n")
    _emit(ctx, fmt, [tol, *vb, *va, worst], fails)
