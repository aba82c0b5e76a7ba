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
from .registry import REGISTRY, builtin
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


def construct_typed(ctx: Ctx, t: Any, args: list[Value], kwargs: dict[str, Any]) -> Value:
    """Call a type object in a kernel: quaternion and transform types take their builtin's
    forms (`wp.transform(p=..., q=...)`, `wp.quatd(v, w)`), the others `construct`'s."""
    if isinstance(t, VectorType) and t.kind in ("quat", "transform"):
        name = "quaternion" if t.kind == "quat" else "transformation"
        if "dtype" in kwargs:
            raise ctx.error(f"{t!r}() takes no dtype= (it is {t.dtype})")
        return REGISTRY[name].fn(ctx, *args, dtype=t.dtype, **kwargs)  # type: ignore[no-any-return]
    if isinstance(t, (VectorType, MatrixType)) and kwargs:  # `mat32d(c, shape=(3, 2))`
        return _typed_with_keywords(ctx, t, args, kwargs)
    if kwargs:
        raise ctx.error(f"{t!r}() takes no keyword arguments")
    return construct(ctx, t, args)


def _typed_with_keywords(ctx: Ctx, t: VectorType | MatrixType, args: list[Value],
                         kwargs: dict[str, Any]) -> Value:
    """A typed constructor given the keywords of `wp.vector` / `wp.matrix`, which must agree
    with its type."""
    size = "shape" if isinstance(t, MatrixType) else "length"
    for key, value in kwargs.items():
        if key not in (size, "dtype"):
            raise ctx.error(f"{t!r}() takes no keyword '{key}' (only {size}= and dtype=)")
        ok = _dtype_kw(ctx, value) == t.dtype if key == "dtype" else (
            tuple(value) == t.shape if size == "shape" else value == t.length)
        if not ok:
            raise ctx.error(f"{t!r}(): {key}={value!r} does not match the type")
    return construct(ctx, t, args)


def construct_composite(ctx: Ctx, t: VectorType | MatrixType, args: list[Value]) -> Composite:
    """`wp.vec3(...)`, `wp.mat22(...)` and the typed forms of `wp.vector` / `wp.matrix`: zeros,
    a copy (cast to t's dtype), a fill, or components (Warp's rules and messages)."""
    dt = t.dtype
    if not args:
        zero = ctx.const(0, dt)
        return Composite(t, (zero,) * t.length)
    if len(args) == 1 and isinstance(args[0], Composite):
        src = args[0]
        if src.type.length != t.length or src.type.shape != t.shape:
            raise ctx.error(f"cannot convert {src.type!r} to {t!r}: {_copy_mismatch(t, src.type)}")
        return Composite(t, tuple(cast_scalar(ctx, c, dt) for c in src.comps))
    if len(args) == 1:
        fill = cast_scalar(ctx, args[0], dt) if isinstance(args[0], Literal) else \
            scalar(ctx, materialize(ctx, args[0], dt))
        _check_dtype(ctx, t, fill, fill=True)
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
        raise ctx.error(f"{t!r}(): {_count_mismatch(t, len(args))}")
    comps = []
    for a in args:
        c = scalar(ctx, materialize(ctx, a, dt))
        _check_dtype(ctx, t, c)
        comps.append(c)
    return Composite(t, tuple(comps))


def _word(t: VectorType | MatrixType) -> str:
    """What Warp's messages call a value of type t."""
    if isinstance(t, MatrixType):
        return "matrix"
    return {"quat": "quaternion", "transform": "transform"}.get(t.kind, "vector")


def _size(t: VectorType | MatrixType) -> str:
    return f"shape {t.shape}" if isinstance(t, MatrixType) else f"length {t.length}"


def _copy_mismatch(t: VectorType | MatrixType, src: VectorType | MatrixType) -> str:
    # Warp's wording (its tests match it): the target's size first, then the source's
    return f"incompatible {_word(t)} of {_size(t)} given when copy constructing a " \
           f"{_word(src)} of {_size(src)}"


def _count_mismatch(t: VectorType | MatrixType, count: int) -> str:
    return f"incompatible number of values given ({count}) when constructing a {_word(t)} of " \
           f"{_size(t)}"


def _check_dtype(ctx: Ctx, t: VectorType | MatrixType, c: Var, fill: bool = False) -> None:
    if c.type != t.dtype:
        what = (f"the value used to fill this {_word(t)} is" if fill else
                f"all values used to initialize this {_word(t)} are")
        raise ctx.error(f"{t!r}(): got {c.type}; {what} expected to be of the type `{t.dtype}`")


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


def infer_dtype(ctx: Ctx, args: tuple[Value, ...], word: str) -> ScalarType:
    """The one scalar type of constructor arguments given no dtype=: the variables' (literals
    adopt it), or the literals' own when all are literals; Warp's message when they differ."""
    found = [(a.type.dtype if isinstance(a, Composite) else scalar(ctx, a).type)
             for a in args if not isinstance(a, Literal)]
    if not found:
        found = [a.default_type for a in args if isinstance(a, Literal)]
    if len(set(found)) > 1:
        raise ctx.error(f"all values given when constructing a {word} must have the same type")
    return found[0] if found else float32


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
    dt = _dtype_kw(ctx, dtype) if dtype is not None else None
    if len(args) == 1 and isinstance(args[0], Composite):  # a copy, cast to dtype=
        src = args[0].type
        length = src.length if length is None else length
        dt = dt or src.dtype
    elif length is None and len(args) < 2:
        what = "zero-initializing" if not args else "filling"
        raise ctx.error(f"wp.vector(): the `length` argument must be specified when {what} a "
                        "vector" + ("" if not args else " with a value"))
    elif args and not any(isinstance(a, Composite) for a in args):
        if length is not None and length != len(args) and len(args) > 1:
            raise ctx.error(f"wp.vector(): {_count_mismatch(VectorType(length, float32), len(args))}")
        length = len(args) if length is None else length
    if dt is None and args:
        dt = infer_dtype(ctx, args, "vector")
    if length is None:  # scalars and vectors mixed: their components
        length = sum(a.type.length if isinstance(a, Composite) else 1 for a in args)
    return construct_composite(ctx, VectorType(length, dt or float32), list(args))


@builtin("matrix", "a matrix from components: matrix(*comps, shape=, dtype=)",
         group="Vector Math",
         signatures="(*args: Scalar, shape: (Int, Int), dtype: Any) -> Matrix")
def matrix(ctx: Ctx, *args: Value, shape: tuple[int, int] | None = None,
           dtype: Any = None) -> Value:
    dt = _dtype_kw(ctx, dtype) if dtype is not None else None
    if len(args) == 1 and isinstance(args[0], Composite) and isinstance(args[0].type, MatrixType):
        src = args[0].type
        shape = src.shape if shape is None else shape  # type: ignore[assignment]
        dt = dt or src.dtype
    elif shape is None:
        what = ("zero-initializing a matrix" if not args else "filling a matrix with a value"
                if len(args) == 1 else "initializing a matrix by value")
        raise ctx.error(f"wp.matrix(): the `shape` argument must be specified when {what}")
    if dt is None and args:
        dt = infer_dtype(ctx, args, "matrix")
    assert shape is not None
    return construct_composite(ctx, MatrixType(shape[0], shape[1], dt or float32), list(args))


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
def identity(ctx: Ctx, n: Any = 3, dtype: Any = float32) -> Value:
    n = n.value if isinstance(n, Literal) else n  # a constant reaches here as a literal
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise ctx.error(f"wp.identity(n=...) takes a constant positive size, got {describe(n)}")
    dt = _dtype_kw(ctx, dtype)
    one, zero = ctx.const(1, dt), ctx.const(0, dt)
    comps = tuple(one if r == c else zero for r in range(n) for c in range(n))
    return Composite(MatrixType(n, n, dt), comps)
