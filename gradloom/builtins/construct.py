"""Constructors and casts: scalar types, vectors, matrices, quaternions, transforms, structs."""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Var
from ..types import (
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    float32,
    resolve_annotation,
)
from .registry import builtin
from .values import Composite, Ctx, Literal, Value, describe, materialize, scalar, zeros_of


def cast_scalar(ctx: Ctx, v: Value, t: ScalarType) -> Var:
    """Numeric conversion; a literal becomes a constant of t directly."""
    if isinstance(v, Literal):
        value = v.value
        if t.is_int:
            value = int(value)
        elif t.is_float:
            value = float(value)
        else:
            value = bool(value)
        return ctx.const(value, t)
    x = scalar(ctx, v)
    if x.type == t:
        return x
    if t.kind == "b":
        return ctx.op("ne", x, ctx.const(0, x.type))
    return ctx.op("cast", x, type=t)


def construct(ctx: Ctx, t: Any, args: list[Value]) -> Value:
    """Call a type in a kernel: `float(x)`, `wp.vec3(...)`, `wp.mat33(...)`, `MyStruct()`."""
    if isinstance(t, ScalarType):
        if len(args) != 1:
            raise ctx.error(f"{t}() takes one argument, got {len(args)}")
        return cast_scalar(ctx, args[0], t)
    if isinstance(t, (VectorType, MatrixType)):
        return construct_composite(ctx, t, args)
    if isinstance(t, StructType):
        if args:
            raise ctx.error(f"{t.name}() takes no arguments in a kernel; assign fields instead")
        return zeros_of(ctx, t)
    raise ctx.error(f"cannot construct {t!r}")


def construct_composite(ctx: Ctx, t: VectorType | MatrixType, args: list[Value]) -> Composite:
    dt = t.dtype
    if not args:
        zero = ctx.const(0, dt)
        return Composite(t, (zero,) * t.length)
    if len(args) == 1 and isinstance(args[0], Composite):
        return _copy_composite(ctx, t, args[0])
    if len(args) == 1:
        fill = cast_scalar(ctx, args[0], dt) if isinstance(args[0], Literal) else \
            scalar(ctx, materialize(ctx, args[0], dt))
        if fill.type != dt:
            raise ctx.error(f"the value used to fill this {_what(t)} is expected to be of the "
                            f"type `{dt}`")
        return Composite(t, (fill,) * t.length)
    if t.kind == "transform" and len(args) == 2:
        return _flatten_parts(ctx, t, args)
    if isinstance(t, VectorType) and any(isinstance(a, Composite) for a in args):
        return _flatten_parts(ctx, t, args)  # `wp.quat(v3, w)`, `wp.vec4(v2, z, w)`
    if all(isinstance(a, Composite) for a in args):
        if isinstance(t, MatrixType):
            raise ctx.error(f"passing vectors to {t!r}() is not supported; use "
                            "wp.matrix_from_rows() or wp.matrix_from_cols()")
        return _flatten_parts(ctx, t, args)
    if len(args) != t.length:
        if isinstance(t, MatrixType):
            raise ctx.error(f"incompatible number of values given ({len(args)}) when "
                            f"constructing a matrix of shape {t.shape}")
        raise ctx.error(f"incompatible number of values given ({len(args)}) when constructing "
                        f"a vector of length {t.length}")
    comps = []
    for a in args:
        c = scalar(ctx, materialize(ctx, a, dt))
        _check_dtype(ctx, t, c)
        comps.append(c)
    return Composite(t, tuple(comps))


def _copy_composite(ctx: Ctx, t: VectorType | MatrixType, src: Composite) -> Composite:
    """`wp.vec3h(v)`, `wp.mat33(m)`: a copy converting the components (Warp's words when the
    sizes differ)."""
    if isinstance(t, MatrixType) and isinstance(src.type, MatrixType) and \
            src.type.shape != t.shape:
        raise ctx.error(f"incompatible matrix of shape {t.shape} given when copy constructing "
                        f"a matrix of shape {src.type.shape}")
    if isinstance(t, VectorType) and isinstance(src.type, VectorType) and \
            src.type.length != t.length:
        raise ctx.error(f"incompatible vector of length {t.length} given when copy "
                        f"constructing a vector of length {src.type.length}")
    if src.type.length != t.length or src.type.shape != t.shape:
        raise ctx.error(f"cannot convert {src.type!r} to {t!r}")
    return Composite(t, tuple(cast_scalar(ctx, c, t.dtype) for c in src.comps))


def _what(t: VectorType | MatrixType) -> str:
    """What Warp's messages call a value of type t."""
    if isinstance(t, MatrixType):
        return "matrix"
    return {"quat": "quaternion", "transform": "transform"}.get(t.kind, "vector")


def _check_dtype(ctx: Ctx, t: VectorType | MatrixType, c: Var) -> None:
    if c.type != t.dtype:
        raise ctx.error(f"{t!r}(): a component is {c.type}: all values used to initialize this "
                        f"{_what(t)} are expected to be of the type `{t.dtype}`")


def _flatten_parts(ctx: Ctx, t: VectorType | MatrixType, args: list[Value]) -> Composite:
    comps: list[Var] = []
    for a in args:
        if isinstance(a, Composite):
            comps.extend(a.comps)
        else:
            comps.append(scalar(ctx, materialize(ctx, a, t.dtype)))
    if len(comps) != t.length:
        raise ctx.error(f"{t!r}() takes {t.length} components, got {len(comps)}")
    for c in comps:
        _check_dtype(ctx, t, c)
    return Composite(t, tuple(comps))


def _dtype_kw(ctx: Ctx, dtype: Any) -> ScalarType:
    try:
        t = resolve_annotation(dtype)
    except TypeError:
        raise ctx.error(f"unknown dtype {dtype!r}") from None
    if not isinstance(t, ScalarType):
        raise ctx.error(f"dtype must be a scalar type, got {dtype!r}")
    return t


@builtin("vector", "a vector from components: vector(*comps, length=, dtype=)",
         group="Vector Math", signatures="(*args: Scalar, length: Int, dtype: Any) -> Vector")
def vector(ctx: Ctx, *args: Value, length: int | None = None, dtype: Any = None) -> Value:
    if not args and length is None:
        raise ctx.error("the `length` argument must be specified when zero-initializing a "
                        "vector")
    if len(args) > 1 and dtype is None and all(isinstance(a, Literal) for a in args) and \
            len({type(a.value) for a in args if isinstance(a, Literal)}) > 1:
        raise ctx.error("all values given when constructing a vector must have the same type")
    dt = _dtype_kw(ctx, dtype) if dtype is not None else _first_type(ctx, args)
    n = length if length is not None else len(args)
    if length is None and len(args) == 1 and isinstance(args[0], Composite) and \
            isinstance(args[0].type, VectorType):
        n = args[0].type.length  # a copy (or cast): wp.vector(v, dtype=wp.float16)
    return construct_composite(ctx, VectorType(n, dt), list(args))


@builtin("matrix", "a matrix from components: matrix(*comps, shape=, dtype=)",
         group="Vector Math",
         signatures="(*args: Scalar, shape: (Int, Int), dtype: Any) -> Matrix")
def matrix(ctx: Ctx, *args: Value, shape: tuple[int, int] | None = None,
           dtype: Any = None) -> Value:
    if shape is None and len(args) == 1 and isinstance(args[0], Composite) and \
            isinstance(args[0].type, MatrixType):
        shape = (args[0].type.rows, args[0].type.cols)  # a copy: wp.matrix(m)
    if shape is None:
        raise ctx.error("the `shape` argument must be specified when initializing a matrix by "
                        "value")
    dt = _dtype_kw(ctx, dtype) if dtype is not None else _first_type(ctx, args)
    return construct_composite(ctx, MatrixType(shape[0], shape[1], dt), list(args))


def _first_type(ctx: Ctx, args: tuple[Value, ...]) -> ScalarType:
    """The scalar type of the first typed argument; with literals only, the first literal's
    (`wp.vector(True, False)` is a bool vector, `wp.vector(1, 2)` int32), as in Warp."""
    for a in args:
        if not isinstance(a, Literal):
            m = materialize(ctx, a)
            return m.type.dtype if isinstance(m, Composite) else scalar(ctx, m).type
    if args and isinstance(args[0], Literal):
        return resolve_annotation(type(args[0].value))  # type: ignore[no-any-return]
    return float32


def _rows_or_cols(ctx: Ctx, name: str, args: tuple[Value, ...], cols: bool) -> Composite:
    vecs = [a for a in args if isinstance(a, Composite) and isinstance(a.type, VectorType)]
    if not vecs or len(vecs) != len(args):
        raise ctx.error(f"wp.{name}() takes vectors, got {', '.join(describe(a) for a in args)}")
    n, dt = vecs[0].type.length, vecs[0].type.dtype
    if any(v.type.length != n or v.type.dtype != dt for v in vecs):
        raise ctx.error(f"wp.{name}() vectors must share one length and dtype")
    if cols:
        comps = tuple(v.comps[r] for r in range(n) for v in vecs)
        return Composite(MatrixType(n, len(vecs), dt), comps)
    return Composite(MatrixType(len(vecs), n, dt), tuple(c for v in vecs for c in v.comps))


@builtin("matrix_from_rows", "a matrix whose rows are the given vectors", group="Vector Math",
         signatures="(*args: Vector) -> Matrix")
def matrix_from_rows(ctx: Ctx, *args: Value) -> Value:
    return _rows_or_cols(ctx, "matrix_from_rows", args, cols=False)


@builtin("matrix_from_cols", "a matrix whose columns are the given vectors", group="Vector Math",
         signatures="(*args: Vector) -> Matrix")
def matrix_from_cols(ctx: Ctx, *args: Value) -> Value:
    return _rows_or_cols(ctx, "matrix_from_cols", args, cols=True)


@builtin("identity", "the n×n identity matrix: identity(n=3, dtype=float)", group="Vector Math",
         differentiable=False, signatures="(n: Int, dtype: Any) -> Matrix")
def identity(ctx: Ctx, n: int = 3, dtype: Any = float32) -> Value:
    dt = _dtype_kw(ctx, dtype)
    one, zero = ctx.const(1, dt), ctx.const(0, dt)
    comps = tuple(one if r == c else zero for r in range(n) for c in range(n))
    return Composite(MatrixType(n, n, dt), comps)


def construct_keywords(ctx: Ctx, t: VectorType | MatrixType, args: list[Value],
                       kwargs: dict[str, Any]) -> Value:
    """A type called with keywords, as Warp's constructors take them: `mat32d(m, shape=(3, 2))`,
    `wp.vec3(x, length=3, dtype=float)`, `wp.transform(p=v, q=r)` (q defaults to identity)."""
    kw = dict(kwargs)
    if t.kind == "transform":
        p, q = [*args, None, None][:2]
        p, q = kw.pop("p", p), kw.pop("q", q)
        if q is None:
            zero, one = ctx.const(0, t.dtype), ctx.const(1, t.dtype)
            q = Composite(VectorType(4, t.dtype, "quat"), (zero, zero, zero, one))
        args = [a for a in (p, q) if a is not None]
    for key, value in kw.items():
        if key == "dtype" and _dtype_kw(ctx, value) == t.dtype:
            continue
        if key == "shape" and isinstance(t, MatrixType) and tuple(value) == t.shape:
            continue
        if key == "length" and isinstance(t, VectorType) and value == t.length:
            continue
        raise ctx.error(f"{t!r}() does not take {key}={value!r}")
    return construct_composite(ctx, t, args)
