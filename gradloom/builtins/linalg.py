"""Vector and matrix builtins: dot, cross, length, normalize, transpose, determinant, inverse."""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import MatrixType, VectorType, float64
from . import ops
from .registry import builtin
from .values import Composite, Ctx, Value, describe

_VM = "Vector Math"
_OP = "Operators"
_S2 = "(a: Scalar, b: Scalar) -> Scalar"
# add/sub: one overload per kind of operand (both operands of one type)
_SAME2 = (_S2, "(a: Vector, b: Vector) -> Vector", "(a: Matrix, b: Matrix) -> Matrix",
          "(a: Quat, b: Quat) -> Quat", "(a: Transform, b: Transform) -> Transform")


def _vec(ctx: Ctx, name: str, v: Value) -> Composite:
    if not isinstance(v, Composite) or not isinstance(v.type, VectorType):
        raise ctx.error(f"wp.{name}() needs a vector, got {describe(v)}")
    return v


def _mat(ctx: Ctx, name: str, v: Value, square: bool = True) -> Composite:
    if not isinstance(v, Composite) or not isinstance(v.type, MatrixType):
        raise ctx.error(f"wp.{name}() needs a matrix, got {describe(v)}")
    if square and v.type.rows != v.type.cols:
        raise ctx.error(f"wp.{name}() needs a square matrix, got {v.type!r}")
    return v


def _rows(m: Composite) -> int:
    assert isinstance(m.type, MatrixType)
    return m.type.rows


def _same(ctx: Ctx, name: str, a: Composite, b: Composite) -> None:
    if a.type != b.type:
        raise ctx.error(f"wp.{name}() arguments differ: {a.type!r} and {b.type!r}")


@builtin("dot", "inner product of two vectors (or quaternions)", group=_VM,
         signatures=("(a: Vector, b: Vector) -> Float", "(a: Quat, b: Quat) -> Float"))
def dot(ctx: Ctx, a: Value, b: Value) -> Value:
    x, y = _vec(ctx, "dot", a), _vec(ctx, "dot", b)
    _same(ctx, "dot", x, y)
    return ops.dot_comps(ctx, x.comps, y.comps)


@builtin("cross", "cross product of two 3-vectors", group=_VM,
         signatures="(a: Vector3, b: Vector3) -> Vector3")
def cross(ctx: Ctx, a: Value, b: Value) -> Value:
    x, y = _vec(ctx, "cross", a), _vec(ctx, "cross", b)
    _same(ctx, "cross", x, y)
    if x.type.length != 3:
        raise ctx.error(f"wp.cross() needs 3-vectors, got {x.type!r}")
    (a0, a1, a2), (b0, b1, b2) = x.comps, y.comps

    def term(p: Var, q: Var, r: Var, s: Var) -> Var:
        return ctx.op("sub", ctx.op("mul", p, q), ctx.op("mul", r, s))

    return Composite(x.type, (term(a1, b2, a2, b1), term(a2, b0, a0, b2), term(a0, b1, a1, b0)))


@builtin("length_sq", "squared Euclidean length of a vector", group=_VM,
         signatures=("(a: Vector) -> Float", "(a: Quat) -> Float"))
def length_sq(ctx: Ctx, a: Value) -> Value:
    x = _vec(ctx, "length_sq", a)
    return ops.dot_comps(ctx, x.comps, x.comps)


@builtin("length", "Euclidean length of a vector", group=_VM,
         signatures=("(a: Vector) -> Float", "(a: Quat) -> Float"))
def length(ctx: Ctx, a: Value) -> Value:
    x = _vec(ctx, "length", a)
    return ctx.op("sqrt", ops.dot_comps(ctx, x.comps, x.comps))


@builtin("normalize", "the vector divided by its length; the zero vector stays zero (a zero "
         "quaternion gives the identity, as in Warp)", group=_VM,
         signatures=("(a: Vector) -> Vector", "(a: Quat) -> Quat"))
def normalize(ctx: Ctx, a: Value) -> Value:
    x = _vec(ctx, "normalize", a)
    n = ctx.op("sqrt", ops.dot_comps(ctx, x.comps, x.comps))
    zero, one = ctx.const(0, x.type.dtype), ctx.const(1, x.type.dtype)
    positive = ctx.op("gt", n, zero)
    safe = ctx.op("select", positive, n, one)
    if isinstance(x.type, VectorType) and x.type.kind == "quat":  # Warp's: times 1/|q|, and
        inv = ctx.op("div", one, safe)  # the identity for the zero quaternion
        fallback = (zero, zero, zero, one)
        return Composite(x.type, tuple(ctx.op("select", positive, ctx.op("mul", c, inv), f)
                                       for c, f in zip(x.comps, fallback, strict=True)))
    return Composite(x.type, tuple(ctx.op("select", positive, ctx.op("div", c, safe), zero)
                                   for c in x.comps))  # each component / |v|, as Warp


@builtin("transpose", "matrix transpose", group=_VM, signatures="(m: Matrix) -> Matrix")
def transpose(ctx: Ctx, m: Value) -> Value:
    return ops.transpose(_mat(ctx, "transpose", m, square=False))


@builtin("trace", "sum of the diagonal of a square matrix", group=_VM,
         signatures="(m: Matrix) -> Float")
def trace(ctx: Ctx, m: Value) -> Value:
    x = _mat(ctx, "trace", m)
    n = _rows(x)
    acc = x.comps[0]
    for i in range(1, n):
        acc = ctx.op("add", acc, x.comps[i * n + i])
    return acc


def _minor(comps: tuple[Var, ...], n: int, row: int, col: int) -> tuple[Var, ...]:
    return tuple(comps[r * n + c] for r in range(n) if r != row for c in range(n) if c != col)


def _det(ctx: Ctx, comps: tuple[Var, ...], n: int) -> Var:
    """Determinant by cofactor expansion along the first row (explicit for n <= 4)."""
    if n == 1:
        return comps[0]
    if n == 2:
        return ctx.op("sub", ctx.op("mul", comps[0], comps[3]), ctx.op("mul", comps[1], comps[2]))
    acc: Var | None = None
    for c in range(n):
        term = ctx.op("mul", comps[c], _det(ctx, _minor(comps, n, 0, c), n - 1))
        if acc is None:
            acc = term
        else:
            acc = ctx.op("add" if c % 2 == 0 else "sub", acc, term)
    assert acc is not None
    return acc


@builtin("determinant", "determinant of a square matrix", group=_VM,
         signatures="(m: Matrix) -> Float")
def determinant(ctx: Ctx, m: Value) -> Value:
    x = _mat(ctx, "determinant", m)
    if _rows(x) == 4:
        return _det4(ctx, x.comps)
    return _det(ctx, x.comps, _rows(x))


def _det4(ctx: Ctx, c: tuple[Var, ...]) -> Var:
    """A 4x4 determinant as Warp computes it (expansion down the first column, the 2x2 minors
    of the last two columns in the matrix's type, the 3x3 cofactors in double precision and
    then rounded), so float32 results (and finite differences of them) match Warp's."""
    t = c[0].type

    def x(r: int, k: int) -> Var:
        return c[r * 4 + k]

    def minor(r: int, s: int) -> Var:  # columns 2 and 3 of rows r and s
        return ctx.op("sub", ctx.op("mul", x(r, 2), x(s, 3)), ctx.op("mul", x(s, 2), x(r, 3)))

    def wide(v: Var) -> Var:
        return v if t == float64 else ctx.op("cast", v, type=float64)

    y = {(r, s): wide(minor(r, s)) for r in range(4) for s in range(r + 1, 4)}

    def cofactor(terms: list[tuple[int, tuple[int, int], bool]]) -> Var:
        acc: Var | None = None
        for row, key, negative in terms:
            term = ctx.op("mul", wide(x(row, 1)), y[key])
            acc = term if acc is None else ctx.op("sub" if negative else "add", acc, term)
        assert acc is not None
        return acc if t == float64 else ctx.op("cast", acc, type=t)

    z30 = cofactor([(1, (0, 2), False), (2, (0, 1), True), (0, (1, 2), True)])
    z20 = cofactor([(0, (1, 3), False), (1, (0, 3), True), (3, (0, 1), False)])
    z10 = cofactor([(2, (0, 3), False), (3, (0, 2), True), (0, (2, 3), True)])
    z00 = cofactor([(1, (2, 3), False), (2, (1, 3), True), (3, (1, 2), False)])
    det = ctx.op("mul", x(3, 0), z30)
    for row, z in ((2, z20), (1, z10), (0, z00)):
        det = ctx.op("add", det, ctx.op("mul", x(row, 0), z))
    return det


@builtin("inverse", "matrix inverse (adjugate / determinant); a singular matrix gives zeros",
         group=_VM, signatures="(m: Matrix) -> Matrix")
def inverse(ctx: Ctx, m: Value) -> Value:
    x = _mat(ctx, "inverse", m)
    n, t = _rows(x), x.type.dtype
    # a 4x4 inverse cancels heavily in its cofactors: they, the determinant and the scaling are
    # computed in double precision and rounded once (as Warp computes most of them), so float32
    # results are as accurate as Warp's
    wide = n == 4 and t != float64
    comps = tuple(ctx.op("cast", c, type=float64) for c in x.comps) if wide else x.comps
    w = float64 if wide else t
    det = _det(ctx, comps, n)
    zero = ctx.const(0, w)
    singular = ctx.op("eq", det, zero)
    safe = ctx.op("select", singular, ctx.const(1, w), det)
    inv_det = ctx.op("select", singular, zero, ctx.op("div", ctx.const(1, w), safe))
    out = []
    for r in range(n):
        for c in range(n):  # adjugate: transpose of the cofactor matrix
            cof = _det(ctx, _minor(comps, n, c, r), n - 1) if n > 1 else ctx.const(1, w)
            signed = cof if (r + c) % 2 == 0 else ctx.op("neg", cof)
            value = ctx.op("mul", signed, inv_det)
            out.append(ctx.op("cast", value, type=t) if wide else value)
    return Composite(x.type, tuple(out))


@builtin("inverse_approx", "Warp's fast approximate inverse; here the exact inverse (as accurate "
         "as wp.inverse, which is within Warp's contract)", group=_VM,
         signatures="(m: Matrix) -> Matrix")
def inverse_approx(ctx: Ctx, m: Value) -> Value:
    _mat(ctx, "inverse_approx", m)
    return inverse(ctx, m)


@builtin("mul", "product: scalar*x, matrix@vector, matrix@matrix, quaternion (Hamilton) product, "
         "transform composition", group=_OP, signatures=(
    _S2, "(a: Scalar, b: Vector) -> Vector", "(a: Vector, b: Scalar) -> Vector",
    "(a: Scalar, b: Matrix) -> Matrix", "(a: Matrix, b: Scalar) -> Matrix",
    "(a: Matrix, b: Vector) -> Vector", "(a: Vector, b: Matrix) -> Vector",
    "(a: Matrix, b: Matrix) -> Matrix", "(a: Scalar, b: Quat) -> Quat",
    "(a: Quat, b: Scalar) -> Quat", "(a: Quat, b: Quat) -> Quat",
    "(a: Scalar, b: Transform) -> Transform", "(a: Transform, b: Scalar) -> Transform",
    "(a: Transform, b: Transform) -> Transform"))
def mul(ctx: Ctx, a: Value, b: Value) -> Value:
    return ops.binary(ctx, "mul", a, b)


@builtin("add", "sum of two values of one type", group=_OP, signatures=_SAME2)
def add(ctx: Ctx, a: Value, b: Value) -> Value:
    return ops.binary(ctx, "add", a, b)


@builtin("sub", "difference of two values of one type", group=_OP, signatures=_SAME2)
def sub(ctx: Ctx, a: Value, b: Value) -> Value:
    return ops.binary(ctx, "sub", a, b)


@builtin("div", "quotient (C-style for integers); vector/matrix by scalar, scalar by each component",
         group=_OP, signatures=(_S2, "(a: Vector, b: Scalar) -> Vector",
                                "(a: Scalar, b: Vector) -> Vector", "(a: Matrix, b: Scalar) -> Matrix",
                                "(a: Scalar, b: Matrix) -> Matrix", "(a: Quat, b: Scalar) -> Quat",
                                "(a: Scalar, b: Quat) -> Quat"))
def div(ctx: Ctx, a: Value, b: Value) -> Value:
    return ops.binary(ctx, "div", a, b)


@builtin("neg", "negation", group=_OP, signatures=(
    "(x: Scalar) -> Scalar", "(x: Vector) -> Vector", "(x: Matrix) -> Matrix",
    "(x: Quat) -> Quat"))
def neg(ctx: Ctx, a: Value) -> Value:
    return ops.unary(ctx, "neg", a)


@builtin("outer", "outer product of two vectors", group=_VM,
         signatures="(a: Vector, b: Vector) -> Matrix")
def outer(ctx: Ctx, a: Value, b: Value) -> Value:
    x, y = _vec(ctx, "outer", a), _vec(ctx, "outer", b)
    comps = tuple(ctx.op("mul", p, q) for p in x.comps for q in y.comps)
    return Composite(MatrixType(x.type.length, y.type.length, x.type.dtype), comps)


@builtin("cw_mul", "component-wise product", group=_VM,
         signatures=("(a: Vector, b: Vector) -> Vector", "(a: Matrix, b: Matrix) -> Matrix"))
def cw_mul(ctx: Ctx, a: Value, b: Value) -> Value:
    if not isinstance(a, Composite):
        raise ctx.error(f"wp.cw_mul() needs vectors or matrices, got {describe(a)}")
    return ops.elementwise(ctx, "mul", a, b)


@builtin("cw_div", "component-wise quotient", group=_VM,
         signatures=("(a: Vector, b: Vector) -> Vector", "(a: Matrix, b: Matrix) -> Matrix"))
def cw_div(ctx: Ctx, a: Value, b: Value) -> Value:
    if not isinstance(a, Composite):
        raise ctx.error(f"wp.cw_div() needs vectors or matrices, got {describe(a)}")
    return ops.elementwise(ctx, "div", a, b)
