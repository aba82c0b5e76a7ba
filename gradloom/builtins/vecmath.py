"""Vector and matrix helpers: norms, diagonals, skew, argmin/argmax."""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import MatrixType, VectorType, uint32
from . import linalg, ops
from .registry import builtin
from .values import Composite, Ctx, Literal, Value, describe, materialize

_VM = "Vector Math"


def _vec(ctx: Ctx, name: str, v: Value, floats: bool = True) -> Composite:
    if not isinstance(v, Composite) or not isinstance(v.type, VectorType):
        raise ctx.error(f"wp.{name}() needs a vector, got {describe(v)}")
    if floats and not v.type.dtype.is_float:
        raise ctx.error(f"wp.{name}() needs a float vector, got a value of type {v.type!r}")
    return v


def _mat(ctx: Ctx, name: str, v: Value, square: bool) -> Composite:
    if not isinstance(v, Composite) or not isinstance(v.type, MatrixType):
        raise ctx.error(f"wp.{name}() needs a matrix, got {describe(v)}")
    if square and v.type.rows != v.type.cols:
        raise ctx.error(f"wp.{name}() needs a square matrix, got {v.type!r}")
    return v


def _delta(ctx: Ctx, name: str, x: Composite, delta: Value | float) -> Var:
    """The threshold as a scalar of the vector's dtype (a literal adopts it; keyword arguments
    arrive as plain Python numbers)."""
    value: Value
    if isinstance(delta, Literal):
        value = Literal(float(delta.value))
    elif isinstance(delta, (int, float)):
        value = Literal(float(delta))
    else:
        value = delta
    d = materialize(ctx, value, x.type.dtype)
    if not isinstance(d, Var) or d.type != x.type.dtype:
        raise ctx.error(f"wp.{name}(): delta must be a {x.type.dtype} scalar like the vector, "
                        f"got {describe(delta)}")
    return d


def _safe_norm(ctx: Ctx, sq: Var) -> Var:
    """sqrt(sq), with sqrt(1) taken where sq == 0 so that no 0/0 reaches the adjoint; callers
    select away from this value at zero."""
    zero = ctx.const(0, sq.type)
    return ctx.op("sqrt", ctx.op("select", ctx.op("gt", sq, zero), sq, ctx.const(1, sq.type)))


@builtin("ddot", "double dot product of two matrices: sum of a[i,j] * b[i,j]", group=_VM,
         signatures="(a: Matrix, b: Matrix) -> Float")
def ddot(ctx: Ctx, a: Value, b: Value) -> Value:
    x, y = _mat(ctx, "ddot", a, False), _mat(ctx, "ddot", b, False)
    if x.type != y.type:
        raise ctx.error(f"wp.ddot() arguments differ: {x.type!r} and {y.type!r}")
    return ops.dot_comps(ctx, x.comps, y.comps)


@builtin("diag", "square matrix with the vector's components on the diagonal", group=_VM,
         signatures="(v: Vector) -> Matrix")
def diag(ctx: Ctx, v: Value) -> Value:
    x = _vec(ctx, "diag", v, floats=False)
    n, zero = x.type.length, ctx.const(0, x.type.dtype)
    kind = "spatial" if x.type.kind == "spatial" else "mat"
    comps = tuple(x.comps[r] if r == c else zero for r in range(n) for c in range(n))
    return Composite(MatrixType(n, n, x.type.dtype, kind), comps)


@builtin("get_diag", "the diagonal of a square matrix as a vector", group=_VM,
         signatures="(m: Matrix) -> Vector")
def get_diag(ctx: Ctx, m: Value) -> Value:
    x = _mat(ctx, "get_diag", m, True)
    assert isinstance(x.type, MatrixType)
    n = x.type.rows
    kind = "spatial" if x.type.kind == "spatial" else "vec"
    return Composite(VectorType(n, x.type.dtype, kind), tuple(x.comps[i * n + i] for i in range(n)))


@builtin("skew", "the cross-product matrix of a 3-vector: skew(a) @ b == cross(a, b)", group=_VM,
         signatures="(v: Vector3) -> Matrix33")
def skew(ctx: Ctx, v: Value) -> Value:
    x = _vec(ctx, "skew", v, floats=False)
    if x.type.length != 3:
        raise ctx.error(f"wp.skew() needs a 3-vector, got {x.type!r}")
    a, b, c = x.comps
    zero = ctx.const(0, x.type.dtype)
    comps = (zero, ctx.op("neg", c), b, c, zero, ctx.op("neg", a), ctx.op("neg", b), a, zero)
    return Composite(MatrixType(3, 3, x.type.dtype), comps)


def _arg_extreme(ctx: Ctx, name: str, v: Value, better: str) -> Var:
    """Index (uint32) of the first smallest/largest component; NaNs are skipped (all NaN: 0)."""
    x = _vec(ctx, name, v, floats=False)
    best, index = x.comps[0], ctx.const(0, uint32)
    for k, c in enumerate(x.comps[1:], start=1):
        take = ctx.op(better, c, best)
        if x.type.dtype.is_float:  # a NaN best is replaced by any number; a NaN c never wins
            take = ctx.op("or", take, ctx.op("and", ctx.op("isnan", best),
                                             ctx.op("not", ctx.op("isnan", c))))
        best = ctx.op("select", take, c, best)
        index = ctx.op("select", take, ctx.const(k, uint32), index)
    return index


@builtin("argmin", "index (uint32) of the smallest component; NaNs are skipped", group=_VM,
         differentiable=False, signatures="(v: Vector) -> Int")
def argmin(ctx: Ctx, v: Value) -> Value:
    return _arg_extreme(ctx, "argmin", v, "lt")


@builtin("argmax", "index (uint32) of the largest component; NaNs are skipped", group=_VM,
         differentiable=False, signatures="(v: Vector) -> Int")
def argmax(ctx: Ctx, v: Value) -> Value:
    return _arg_extreme(ctx, "argmax", v, "gt")


@builtin("norm_l1", "L1 norm: sum of |v_i|", group=_VM, signatures="(v: Vector) -> Float")
def norm_l1(ctx: Ctx, v: Value) -> Value:
    x = _vec(ctx, "norm_l1", v)
    acc = ctx.op("abs", x.comps[0])
    for c in x.comps[1:]:
        acc = ctx.op("add", acc, ctx.op("abs", c))
    return acc


@builtin("norm_l2", "L2 norm: sqrt(sum of v_i^2), the same as wp.length", group=_VM,
         signatures="(v: Vector) -> Float")
def norm_l2(ctx: Ctx, v: Value) -> Value:
    return linalg.length(ctx, _vec(ctx, "norm_l2", v))


@builtin("norm_huber", "Huber norm: |v|^2/2 where |v| <= delta, else delta*(|v| - delta/2)",
         group=_VM, signatures="(v: Vector, delta: Float = 1.0) -> Float")
def norm_huber(ctx: Ctx, v: Value, delta: Value | float = 1.0) -> Value:
    x = _vec(ctx, "norm_huber", v)
    d = _delta(ctx, "norm_huber", x, delta)
    sq = ops.dot_comps(ctx, x.comps, x.comps)
    half = ctx.const(0.5, x.type.dtype)
    inner = ctx.op("mul", half, sq)  # from |v|^2 directly: smooth at the zero vector
    outer = ctx.op("mul", d, ctx.op("sub", _safe_norm(ctx, sq), ctx.op("mul", half, d)))
    return ctx.op("select", ctx.op("le", sq, ctx.op("mul", d, d)), inner, outer)


@builtin("norm_pseudo_huber", "pseudo-Huber norm: delta * sqrt(1 + |v|^2 / delta^2)", group=_VM,
         signatures="(v: Vector, delta: Float = 1.0) -> Float")
def norm_pseudo_huber(ctx: Ctx, v: Value, delta: Value | float = 1.0) -> Value:
    x = _vec(ctx, "norm_pseudo_huber", v)
    return _pseudo_huber(ctx, x, _delta(ctx, "norm_pseudo_huber", x, delta))


def _pseudo_huber(ctx: Ctx, x: Composite, d: Var) -> Var:
    sq = ops.dot_comps(ctx, x.comps, x.comps)
    ratio = ctx.op("div", sq, ctx.op("mul", d, d))
    return ctx.op("mul", d, ctx.op("sqrt", ctx.op("add", ctx.const(1, d.type), ratio)))


@builtin("smooth_normalize", "v divided by its pseudo-Huber norm (smooth at the zero vector)",
         group=_VM, signatures="(v: Vector, delta: Float = 1.0) -> Vector")
def smooth_normalize(ctx: Ctx, v: Value, delta: Value | float = 1.0) -> Value:
    x = _vec(ctx, "smooth_normalize", v)
    h = _pseudo_huber(ctx, x, _delta(ctx, "smooth_normalize", x, delta))
    return Composite(x.type, tuple(ctx.op("div", c, h) for c in x.comps))

