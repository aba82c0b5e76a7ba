"""Tile arithmetic: elementwise operators and tile_map, reductions, tile_matmul.

Each is a loop nest over the tile's constant shape (builtins/tile_loops.py) whose body applies
the scalar operation, so derivatives come from the scalar rules and the local-memory rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import CompileValueError
from ..ir.builder import BACKWARD, DIFFERENTIATED
from ..ir.nodes import Var
from ..types import ScalarType, StructType, TileType, float32, int32
from . import ops
from .registry import Builtin, builtin
from .tile_loops import convert, each, fold, get, linear, new_tile, read, write
from .tiles import _T, no_struct, tile_arg
from .values import (
    Composite,
    Ctx,
    Literal,
    StructVal,
    TileVal,
    Value,
    describe,
    flatten,
    materialize,
    rebuild,
    scalar,
    type_of,
    zeros_of,
)

Element = Var | Composite | StructVal
ElementFn = Callable[[list[Element]], Element]


def _map(ctx: Ctx, tiles: list[TileVal], fn: ElementFn) -> TileVal:
    """A new tile: fn of the elements of `tiles` (one shape) at each index."""
    shape = tiles[0].type.shape
    out = new_tile(ctx, TileType(_result_type(ctx, tiles, fn), shape))
    each(ctx, shape, lambda i: write(ctx, out, i, convert(
        ctx, fn([get(ctx, t, i) for t in tiles]), out.type.dtype)))
    return out


def _result_type(ctx: Ctx, tiles: list[TileVal], fn: ElementFn) -> Any:
    """The element type fn gives, found by applying it to probe values in a scratch block."""
    ctx.b.open_block()
    try:
        v = fn([_probe(ctx, t.type.dtype) for t in tiles])
    finally:
        ctx.b.close_block()
    if not isinstance(v, (Var, Composite, StructVal)):
        raise ctx.error(f"a tile operation must give a scalar, vector, matrix or struct per "
                        "element, "
                        f"got {describe(v)}")
    return type_of(v)


def _probe(ctx: Ctx, t: Any) -> Element:
    z = zeros_of(ctx, t)
    assert isinstance(z, (Var, Composite, StructVal))
    return z


def _same_shape(ctx: Ctx, a: TileVal, b: TileVal, what: str) -> None:
    if a.type.shape != b.type.shape:
        raise ctx.error(f"{what}: tile shapes {a.type.shape} and {b.type.shape} differ")


#: Warp's bitwise operators of two integer tiles
_BITWISE = ("bitand", "bitor", "bitxor")


def binary(ctx: Ctx, opname: str, a: Value, b: Value) -> TileVal:
    """`a + b`, `a - b` of two tiles; `a * b`, `a / b` of two tiles (elementwise) or of a tile
    and a scalar (either side); `a & b`, `a | b`, `a ^ b` of two integer tiles, as Warp's
    operators."""
    if opname in _BITWISE and isinstance(a, TileVal) and isinstance(b, TileVal) and \
            not isinstance(a.type.dtype, StructType) and not _part(a.type.dtype).is_float:
        _same_shape(ctx, a, b, f"tile {opname}")
        return _map(ctx, [a, b], lambda v: element_op(ctx, opname, v[0], v[1]))
    if opname not in ("add", "sub", "mul", "div"):
        if any(isinstance(v, TileVal) and isinstance(v.type.dtype, StructType) for v in (a, b)):
            raise ctx.error(f"the operator '{opname}' (bitwise inplace or other) is not defined "
                            "for tiles of a Warp struct type")
        raise ctx.error(f"the operator '{opname}' is not defined for tiles")
    if isinstance(a, TileVal) and isinstance(b, TileVal):
        _same_shape(ctx, a, b, f"tile {opname}")
        if opname in ("mul", "div") and not (_is_scalar(a.type.dtype)
                                             or _is_scalar(b.type.dtype)):
            raise ctx.error(f"tile {opname}: of two tiles of {a.type.dtype!r} and "
                            f"{b.type.dtype!r}, one's element type must be scalar")
        return _map(ctx, [a, b], lambda v: element_op(ctx, opname, v[0], v[1]))
    if opname in ("mul", "div"):
        other = b if isinstance(a, TileVal) else a
        tile_side = a if isinstance(a, TileVal) else b
        assert isinstance(tile_side, TileVal)
        if not isinstance(other, Literal) and not _is_scalar(type_of(other)) \
                and not _is_scalar(tile_side.type.dtype):
            verb = "multiply" if opname == "mul" else "divide"
            left, right = (f"tile<{tile_side.type.dtype!r}>", repr(type_of(other))) \
                if isinstance(a, TileVal) else (repr(type_of(other)),
                                                f"tile<{tile_side.type.dtype!r}>")
            raise ctx.error(f"Cannot {verb} {left} by {right}: at least one operand must be a "
                            "scalar type")
    if opname in ("add", "sub"):  # as Warp: a scalar meets a tile in * and / only
        raise ctx.error(f"tile {opname} needs two tiles, got {describe(a)} and {describe(b)} "
                        "(use wp.tile_full for a constant tile)")
    if isinstance(a, TileVal):
        s = scalar(ctx, b, _part(a.type.dtype)) if isinstance(b, Literal) else b
        return _map(ctx, [a], lambda v: element_op(ctx, opname, v[0], s))
    assert isinstance(b, TileVal)
    s = scalar(ctx, a, _part(b.type.dtype)) if isinstance(a, Literal) else a
    return _map(ctx, [b], lambda v: element_op(ctx, opname, s, v[0]))


def _is_scalar(t: Any) -> bool:
    return isinstance(t, ScalarType)


def _part(t: Any) -> Any:
    """The scalar type of a tile element type (a vector's or matrix's component type)."""
    return getattr(t, "dtype", t)


def element_op(ctx: Ctx, opname: str, x: Value, y: Value) -> Element:
    if isinstance(x, StructVal) and isinstance(y, StructVal):  # Warp: field by field
        if opname not in ("add", "sub"):
            raise ctx.error(f"tile {opname}: tiles of Warp struct type {x.type!r} add and "
                            "subtract field by field only")
        return StructVal(x.type, tuple(
            a if isinstance(a, Var) and (a.type.kind == "b" or a.type.bits < 32)
            and not a.type.is_float else element_op(ctx, opname, a, b)  # carried, as Warp
            for a, b in zip(x.fields, y.fields, strict=True)))
    r = materialize(ctx, ops.binary(ctx, opname, x, y))
    assert isinstance(r, (Var, Composite))
    return r


def unary(ctx: Ctx, opname: str, a: TileVal) -> TileVal:
    if opname == "pos":
        return a
    if opname != "neg":
        raise ctx.error(f"the operator '{opname}' is not defined for tiles")
    return _map(ctx, [a], lambda v: _element(ctx, ops.unary(ctx, "neg", v[0])))


def _element(ctx: Ctx, v: Value) -> Element:
    m = materialize(ctx, v)
    if not isinstance(m, (Var, Composite, StructVal)):
        raise ctx.error(f"a tile element must be a scalar, vector or matrix, got {describe(v)}")
    return m


def call_op(ctx: Ctx, op: Any, args: list[Any]) -> Element:
    """Apply a builtin (`wp.sin`) or a user @wp.func to scalar arguments."""
    if isinstance(op, Builtin):
        r = op.fn(ctx, *args)
    elif hasattr(op, "_lower") and hasattr(op, "overloads"):
        r = op._lower(ctx, list(args), {})
    else:
        raise ctx.error(f"the first argument must be a builtin or a @wp.func, got {op!r}")
    return _element(ctx, r)


@builtin("tile_map", "apply op (a builtin or @wp.func) to the elements of one or more tiles of "
         "one shape: a new tile", group=_T,
         signatures=("(op: Any, a: Tile) -> Tile", "(op: Any, a: Tile, b: Tile) -> Tile"))
def tile_map(ctx: Ctx, op: Any, *tiles: Any) -> TileVal:
    """Arguments that are not tiles (after the first) reach every call unchanged, as Warp."""
    first = tile_arg(ctx, tiles[0] if tiles else None, "a")
    ts = [first, *(t for t in tiles[1:] if isinstance(t, TileVal))]
    for t in ts[1:]:
        _same_shape(ctx, first, t, "wp.tile_map()")
    where = [k for k, t in enumerate(tiles) if isinstance(t, TileVal)]

    def call(v: list[Element]) -> Element:
        args: list[Any] = list(tiles)
        for k, e in zip(where, v, strict=True):
            args[k] = e
        return call_op(ctx, op, args)
    return _map(ctx, ts, call)


# -- reductions ---------------------------------------------------------------------------------


def _reduce(ctx: Ctx, a: TileVal, axis: Any, combine: Callable[[Any, Any], Any]) -> TileVal:
    """Fold combine over all elements (a tile of shape (1,)) or along a constant axis."""
    if axis is None:
        out = new_tile(ctx, TileType(a.type.dtype, (1,)))
        first = get(ctx, a, [0] * a.type.ndim)

        def step(i: list[Var], c: list[Var]) -> list[Var]:
            acc = rebuild(first, iter(c))
            nxt = combine(acc, get(ctx, a, i))
            origin = _is_origin(ctx, i)
            return [ctx.op("select", origin, x, y)
                    for x, y in zip(flatten(acc), flatten(nxt), strict=True)]
        total = rebuild(first, iter(fold(ctx, a.type.shape, flatten(first), step)))
        write(ctx, out, [0], total)  # type: ignore[arg-type]
        return out
    ax = axis.value if isinstance(axis, Literal) else axis
    if not isinstance(ax, int) or not 0 <= ax < a.type.ndim:
        raise ctx.error(f"axis must be a constant in [0, {a.type.ndim}), got {describe(axis)}")
    rest = a.type.shape[:ax] + a.type.shape[ax + 1:] or (1,)
    out = new_tile(ctx, TileType(a.type.dtype, rest))

    def one(i: list[Var]) -> None:
        def at(k: Var | int) -> list[Var | int]:
            idx: list[Var | int] = [*i[:ax], k, *i[ax:]]
            return idx[:a.type.ndim]
        first = get(ctx, a, at(0))

        def step(k: list[Var], c: list[Var]) -> list[Var]:
            nxt = get(ctx, a, at(ctx.op("add", k[0], ctx.const(1, int32))))
            return flatten(combine(rebuild(first, iter(c)), nxt))
        total = rebuild(first, iter(fold(ctx, (a.type.shape[ax] - 1,), flatten(first), step)))
        write(ctx, out, i if a.type.ndim > 1 else [0], total)  # type: ignore[arg-type]
    each(ctx, rest, one)
    return out


def _is_origin(ctx: Ctx, i: list[Var]) -> Var:
    """Whether index i is all zeros (the element a fold starts from)."""
    ok: Var | None = None
    for k in i:
        c = ctx.op("eq", k, ctx.const(0, int32))
        ok = c if ok is None else ctx.op("and", ok, c)
    assert ok is not None
    return ok


@builtin("tile_sum", "the sum of a tile's elements (a tile of shape (1,)), or along an axis",
         group=_T, signatures=("(a: Tile) -> Tile", "(a: Tile, axis: Int) -> Tile"))
def tile_sum(ctx: Ctx, a: Any, axis: Any = None) -> TileVal:
    return _reduce(ctx, tile_arg(ctx, a, "a"), axis, lambda x, y: element_op(ctx, "add", x, y))


@builtin("tile_min", "the smallest element of a tile (a tile of shape (1,))", group=_T,
         signatures="(a: Tile) -> Tile")
def tile_min(ctx: Ctx, a: Any) -> TileVal:
    t = tile_arg(ctx, a, "a")
    no_struct(ctx, t.type.dtype, "tile_min")
    return _reduce(ctx, t, None, lambda x, y: ctx.op("min", x, y))


@builtin("tile_max", "the largest element of a tile (a tile of shape (1,))", group=_T,
         signatures="(a: Tile) -> Tile")
def tile_max(ctx: Ctx, a: Any) -> TileVal:
    t = tile_arg(ctx, a, "a")
    no_struct(ctx, t.type.dtype, "tile_max")
    return _reduce(ctx, t, None, lambda x, y: ctx.op("max", x, y))


@builtin("tile_reduce", "fold op (a builtin or @wp.func of two values) over a tile's elements "
         "(a tile of shape (1,)), or along an axis", group=_T,
         signatures=("(op: Any, a: Tile) -> Tile", "(op: Any, a: Tile, axis: Int) -> Tile"))
def tile_reduce(ctx: Ctx, op: Any, a: Any, axis: Any = None) -> TileVal:
    t = tile_arg(ctx, a, "a")
    et = t.type.dtype

    def combine(x: Any, y: Any) -> Any:
        if isinstance(et, StructType) and isinstance(op, Builtin):
            raise ctx.error(f"tile_reduce(): no overload of wp.{op.name} takes two values of "
                            f"the Warp struct type {et!r}")
        r = call_op(ctx, op, [x, y])
        if type_of(r) != et:
            raise ctx.error(f"tile_reduce(): the operator must return the tile element type "
                            f"{et!r}, got {type_of(r)!r}")
        return r
    return _reduce(ctx, t, axis, combine)


def _arg_pick(ctx: Ctx, a: TileVal, better: str) -> TileVal:
    """The row-major position of the first extreme element (int32, a tile of shape (1,))."""
    no_struct(ctx, a.type.dtype, "tile_argmin" if better == "lt" else "tile_argmax")
    out = new_tile(ctx, TileType(int32, (1,)))
    best = [read(ctx, a, [0] * a.type.ndim), ctx.const(0, int32)]

    def step(i: list[Var], c: list[Var]) -> list[Var]:
        v = read(ctx, a, i)
        take = ctx.op(better, v, c[0])
        return [ctx.op("select", take, v, c[0]),
                ctx.op("select", take, linear(ctx, a.type.shape, i), c[1])]
    write(ctx, out, [0], fold(ctx, a.type.shape, best, step)[1])
    return out


@builtin("tile_argmin", "the row-major index of a tile's smallest element (a tile of shape (1,) "
         "of int32; the first on ties)", group=_T, differentiable=False,
         signatures="(a: Tile) -> Tile")
def tile_argmin(ctx: Ctx, a: Any) -> TileVal:
    return _arg_pick(ctx, tile_arg(ctx, a, "a"), "lt")


@builtin("tile_argmax", "the row-major index of a tile's largest element (a tile of shape (1,) "
         "of int32; the first on ties)", group=_T, differentiable=False,
         signatures="(a: Tile) -> Tile")
def tile_argmax(ctx: Ctx, a: Any) -> TileVal:
    return _arg_pick(ctx, tile_arg(ctx, a, "a"), "gt")


_ONE = Literal(1.0)


# -- matmul -------------------------------------------------------------------------------------


def _gemm(ctx: Ctx, a: TileVal, b: TileVal, out: TileVal, alpha: Var, beta: Var | None) -> None:
    """out = alpha * a @ b (+ beta * out; with beta 0, out is not read, as Warp).

    Register-blocked: each trip of the k loop updates an rm x rn block of accumulators (carried
    values) from rm elements of a and rn of b, so each loaded value feeds several products."""
    (m, k), (k2, n) = a.type.shape, b.type.shape
    if k != k2 or out.type.shape != (m, n):
        raise ctx.error(f"wp.tile_matmul(): shapes {a.type.shape} @ {b.type.shape} -> "
                        f"{out.type.shape} do not fit")
    t = out.type.dtype
    if _fast_gemm(ctx, a, b, out, alpha, beta):
        return
    rm = next(r for r in (4, 2, 1) if m % r == 0)
    rn = next(r for r in (4, 2, 1) if n % r == 0)

    def block(bi: list[Var]) -> None:
        rows = [_scaled_index(ctx, bi[0], rm, q) for q in range(rm)]
        cols = [_scaled_index(ctx, bi[1], rn, q) for q in range(rn)]

        def step(kk: list[Var], acc: list[Var]) -> list[Var]:
            av = [convert(ctx, read(ctx, a, [r, kk[0]]), t) for r in rows]
            bv = [convert(ctx, read(ctx, b, [kk[0], c]), t) for c in cols]
            return [ctx.op("add", acc[x * rn + y], ctx.op("mul", av[x], bv[y]))
                    for x in range(rm) for y in range(rn)]
        zero = ctx.const(0, t)
        acc = fold(ctx, (k,), [zero] * (rm * rn), step)
        for x, r in enumerate(rows):
            for y, c in enumerate(cols):
                v = ctx.op("mul", alpha, acc[x * rn + y])
                if beta is not None:  # beta = 0 overwrites out unread (NaN or inf stay out)
                    kept = ctx.op("mul", beta, read(ctx, out, [r, c]))
                    kept = ctx.op("select", ctx.op("eq", beta, zero), zero, kept)
                    v = ctx.op("add", v, kept)
                write(ctx, out, [r, c], v)
    each(ctx, (m // rm, n // rn), block)


def _fast_gemm(ctx: Ctx, a: TileVal, b: TileVal, out: TileVal, alpha: Var,
               beta: Var | None) -> bool:
    """Emit the product as one `lgemm` op (codegen/tile_gemm.py: a register-blocked, vectorised
    kernel on the CPU, plain loops for the GPU) where it can: float32/float64 tiles of one type
    at constant places, out apart from a and b, and IR that autodiff will not see (it
    differentiates the scalar loops of _gemm instead)."""
    t = out.type.dtype
    if DIFFERENTIATED.get() or t.name not in ("float32", "float64") or \
            a.type.dtype != t or b.type.dtype != t or \
            any(x.dyn is not None for x in (a, b, out)) or out.base in (a.base, b.base):
        return False
    (m, k), n = a.type.shape, b.type.shape[1]
    attr = (m, n, k, a.offset, *a.strides, b.offset, *b.strides, out.offset, *out.strides,
            beta is not None)
    ctx.b.effect("lgemm", (a.base, b.base, out.base, alpha,
                           beta if beta is not None else ctx.const(0, t)), ctx.loc, attr=attr)
    return True


def _scaled_index(ctx: Ctx, i: Var, r: int, q: int) -> Var:
    """i * r + q (int32)."""
    v = i if r == 1 else ctx.op("mul", i, ctx.const(r, int32))
    return v if q == 0 else ctx.op("add", v, ctx.const(q, int32))


def _check_precision(ctx: Ctx, precision: Any, dtypes: list[Any]) -> None:
    """Warp's `precision=`: None, 'default' or 'tf32' (tensor-core rounding on GPUs; the CPU
    computes in float32 either way), given as a literal; 'tf32' only for float32 tiles."""
    p = precision.value if isinstance(precision, Literal) else precision
    if p is None:
        return
    want = "wp.tile_matmul(): precision must be the string literal 'default' or 'tf32'"
    if not isinstance(p, str):
        raise CompileValueError(f"{want}, got a non-literal argument", ctx.loc)
    if p not in ("default", "tf32"):
        raise CompileValueError(f"{want}, got {p!r}", ctx.loc)
    if p == "tf32" and any(d != float32 for d in dtypes):
        raise ctx.error(f"wp.tile_matmul(): precision='tf32' requires float32 tiles, got "
                        f"{', '.join(sorted({repr(d) for d in dtypes}))}")


@builtin("tile_matmul", "matrix product of 2-D tiles: tile_matmul(a, b) returns alpha * a @ b; "
         "tile_matmul(a, b, out, alpha, beta) sets out = alpha * a @ b + beta * out", group=_T,
         signatures=("(a: Tile, b: Tile) -> Tile", "(a: Tile, b: Tile, out: Tile) -> None"))
def tile_matmul(ctx: Ctx, a: Any, b: Any, out: Any = None, alpha: Any = _ONE,
                beta: Any = _ONE, precision: Any = None) -> TileVal | None:
    x, y = tile_arg(ctx, a, "a"), tile_arg(ctx, b, "b")
    tiles = [x, y, *([out] if isinstance(out, TileVal) else [])]
    if any(not isinstance(v.type.dtype, ScalarType) for v in tiles):
        raise ctx.error("wp.tile_matmul() does not support complex tiles or other non-scalar "
                        f"elements, got {[v.type.dtype for v in tiles]}; use scalar tiles")
    _check_precision(ctx, precision, [v.type.dtype for v in tiles])
    res_t = out.type.dtype if isinstance(out, TileVal) else x.type.dtype
    if res_t.name == "bfloat16":
        raise ctx.error("wp.tile_matmul() does not support a bfloat16 'out' tile (given or "
                        "made by the returning form); accumulate into a float32 tile")
    if BACKWARD.get() and any(v.type.dtype.name == "bfloat16" for v in (x, y)):
        # as Warp: the adjoints of a and b would accumulate in bfloat16
        raise ctx.error("wp.tile_matmul() does not support bfloat16 'a' or 'b' tiles when the "
                        "backward pass is enabled; build the kernel with enable_backward=False "
                        "(on it or its module) or load the tiles as float32")
    mixed = isinstance(out, TileVal) and all(
        isinstance(d, ScalarType) and d.is_float for d in (x.type.dtype, y.type.dtype,
                                                           out.type.dtype))
    if x.type.ndim != 2 or y.type.ndim != 2 or (x.type.dtype != y.type.dtype and not mixed):
        raise ctx.error(f"wp.tile_matmul() needs 2-D tiles of one dtype, got {x.type!r} and "
                        f"{y.type!r}")
    # mixed float precisions (Warp: float16 @ float32 into float64): computed in out's type
    t = out.type.dtype if mixed else x.type.dtype
    alpha, beta = (ctx.const(float(v), t) if isinstance(v, (int, float)) else v
                   for v in (alpha, beta))
    al = scalar(ctx, alpha, t)
    if out is None or not isinstance(out, TileVal):
        if out is not None:  # tile_matmul(a, b, alpha) positionally
            al = scalar(ctx, out, t)
        res = new_tile(ctx, TileType(t, (x.type.shape[0], y.type.shape[1])))
        _gemm(ctx, x, y, res, al, None)
        return res
    _gemm(ctx, x, y, out, al, scalar(ctx, beta, t))
    return None

