"""Tile storage and the IR loops over it: buffers, element addresses, element loops, folds.

A tile's elements live in a thread-local buffer (the `local` primitive, placed at the top of the
kernel: one per op site, reused by every loop trip), and every tile operation is an ordinary IR
loop of `lload`/`lstore` over constant bounds. Reverse mode then differentiates tiles with the
rules of those two primitives (ir/prims.py); the buffer's second half holds the adjoints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..ir.nodes import Var
from ..types import (
    ArrayType,
    IndexedArrayType,
    MatrixType,
    ScalarType,
    StructType,
    TileType,
    VectorType,
    int32,
    int64,
)
from ..types.layout import leaves
from .values import ZERO_TILE, ArrayVal, Composite, Ctx, StructVal, TileVal, flatten, while_loop

#: the most bytes of data one tile may hold (its buffer is twice that: data and adjoints)
MAX_TILE_BYTES = 256 * 1024

Index = Sequence[Var | int]


def row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a packed row-major tile of this shape."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def new_tile(ctx: Ctx, t: TileType) -> TileVal:
    """A fresh packed tile (zeroed at the start of every thread; callers fill it)."""
    if not t.shape or any(not isinstance(d, int) or d <= 0 for d in t.shape):
        raise ctx.error(f"a tile's shape must be constant positive sizes, got {t.shape}")
    if not _storable(t.dtype):
        raise ctx.error(f"tiles of {t.dtype!r} are not supported here (scalars, vectors, "
                        "matrices and structs of them are)")
    nbytes = t.count * t.dtype.size
    if nbytes > MAX_TILE_BYTES:
        raise ctx.error(f"a {t!r} holds {nbytes} bytes; a tile may hold at most "
                        f"{MAX_TILE_BYTES} (thread-local memory on the CPU)")
    span = (nbytes + 63) // 64 * 64  # the adjoint half starts 64-byte aligned
    base = ctx.b.hoist("local", ctx.loc, attr=span)
    return TileVal(t, base, span, 0, row_major(t.shape))


ZERO_TILE.fill(new_tile)  # a variable defined on one branch only starts as a zero tile


def _storable(t: Any) -> bool:
    """Whether a tile buffer can hold elements of type t (a struct: all of its fields; an array
    field as its descriptor's words, as an array of such structs holds it)."""
    if isinstance(t, StructType):
        return all(_storable(ft) for _, ft in t.fields)
    if isinstance(t, (ArrayType, IndexedArrayType)):
        return True
    part = t.dtype if isinstance(t, (VectorType, MatrixType)) else t
    return isinstance(part, ScalarType)


def _i64(ctx: Ctx, v: Var | int) -> Var:
    if isinstance(v, int):
        return ctx.const(v, int64)
    return v if v.type == int64 else ctx.op("cast", v, type=int64)


def address(ctx: Ctx, tile: TileVal, idx: Index) -> Var:
    """The byte offset of element idx in tile's buffer (int64): constant parts fold here."""
    const = tile.offset
    terms: list[Var] = []
    for i, s in zip(idx, tile.strides, strict=True):
        if isinstance(i, int):
            const += i * s
        elif s == 1:
            terms.append(_i64(ctx, i))
        elif s != 0:
            terms.append(ctx.op("mul", _i64(ctx, i), ctx.const(s, int64)))
    if tile.dyn is not None:
        terms.append(tile.dyn)
    size = tile.type.dtype.size
    out: Var | None = None
    for term in terms:
        out = term if out is None else ctx.op("add", out, term)
    if out is None:
        return ctx.const(const * size, int64)
    if const:
        out = ctx.op("add", out, ctx.const(const, int64))
    return ctx.op("mul", out, ctx.const(size, int64))


def read(ctx: Ctx, tile: TileVal, idx: Index) -> Var:
    """A scalar tile's element (the linear-algebra and scan loops work on scalars)."""
    v = get(ctx, tile, idx)
    if not isinstance(v, Var):
        raise ctx.error(f"this tile operation needs scalar elements, got a {tile.type!r}")
    return v


def get(ctx: Ctx, tile: TileVal, idx: Index) -> Any:
    """An element: a scalar, a vector/matrix read component by component, or a struct read
    field by field (at its fields' C-layout offsets)."""
    return _get_at(ctx, tile, address(ctx, tile, idx), tile.type.dtype)


def _get_at(ctx: Ctx, tile: TileVal, at: Var, t: Any) -> Any:
    if isinstance(t, ScalarType):
        return ctx.op("lload", tile.base, at, attr=tile.span, type=t)
    if isinstance(t, StructType):
        offs = t.offsets
        return StructVal(t, tuple(_get_at(ctx, tile, _plus(ctx, at, offs[n]), ft)
                                  for n, ft in t.fields))
    if isinstance(t, (ArrayType, IndexedArrayType)):  # the descriptor's words (types.leaves)
        return ArrayVal.from_words(t, [ctx.op("lload", tile.base, _plus(ctx, at, k),
                                              attr=tile.span, type=w) for k, w in leaves(t)])
    comps = tuple(ctx.op("lload", tile.base, _plus(ctx, at, k * t.dtype.size), attr=tile.span,
                         type=t.dtype) for k in range(t.length))
    return Composite(t, comps)


def write(ctx: Ctx, tile: TileVal, idx: Index, value: Any) -> None:
    _write_at(ctx, tile, address(ctx, tile, idx), value)


def _write_at(ctx: Ctx, tile: TileVal, at: Var, value: Any) -> None:
    if isinstance(value, StructVal):
        offs = value.type.offsets
        for (n, _), v in zip(value.type.fields, value.fields, strict=True):
            _write_at(ctx, tile, _plus(ctx, at, offs[n]), v)
        return
    if isinstance(value, ArrayVal):
        for (k, _), w in zip(leaves(value.type), flatten(value), strict=True):
            ctx.b.effect("lstore", (tile.base, _plus(ctx, at, k), w), ctx.loc, attr=tile.span)
        return
    parts = [value] if isinstance(value, Var) else list(value.comps)
    size = parts[0].type.size
    for k, v in enumerate(parts):
        ctx.b.effect("lstore", (tile.base, _plus(ctx, at, k * size), v), ctx.loc,
                     attr=tile.span)


def write_part(ctx: Ctx, tile: TileVal, idx: Index, k: int, value: Var) -> None:
    """Component k (row-major) of a vector/matrix element: `t[i][1] = x`."""
    at = _plus(ctx, address(ctx, tile, idx), k * value.type.size)
    ctx.b.effect("lstore", (tile.base, at, value), ctx.loc, attr=tile.span)


def _plus(ctx: Ctx, at: Var, k: int) -> Var:
    return at if k == 0 else ctx.op("add", at, ctx.const(k, int64))


def count_loop(ctx: Ctx, n: int | Var, inits: list[Var],
               body: Callable[[Var, list[Var]], list[Var]]) -> list[Var]:
    """for i in range(n) (an int32 i), carrying inits through body(i, carried) -> carried."""
    bound = ctx.const(n, int32) if isinstance(n, int) else n
    one = ctx.const(1, int32)

    def step(ps: list[Var]) -> list[Var]:
        return [ctx.op("add", ps[0], one), *body(ps[0], ps[1:])]

    return while_loop(ctx, [ctx.const(0, int32), *inits],
                      lambda ps: ctx.op("lt", ps[0], bound), step)[1:]


def each(ctx: Ctx, shape: tuple[int, ...], fn: Callable[[list[Var]], None]) -> None:
    """Run fn(index) for every index of shape, row-major: one loop per dimension."""
    def nest(prefix: list[Var], dims: tuple[int, ...]) -> list[Var]:
        if not dims:
            fn(prefix)
            return []
        return count_loop(ctx, dims[0], [], lambda i, _: nest([*prefix, i], dims[1:]))
    nest([], shape)


def fold(ctx: Ctx, shape: tuple[int, ...], inits: list[Var],
         fn: Callable[[list[Var], list[Var]], list[Var]]) -> list[Var]:
    """Carry values through every index of shape, row-major: fn(index, carried) -> carried."""
    def nest(prefix: list[Var], dims: tuple[int, ...], carried: list[Var]) -> list[Var]:
        if not dims:
            return fn(prefix, carried)
        return count_loop(ctx, dims[0], carried,
                          lambda i, c: nest([*prefix, i], dims[1:], c))
    return nest([], shape, inits)


def linear(ctx: Ctx, shape: tuple[int, ...], idx: list[Var]) -> Var:
    """The row-major position of idx in shape (int32), as Warp's argmin/argmax report it."""
    out = idx[0]
    for i, d in zip(idx[1:], shape[1:], strict=True):
        out = ctx.op("add", ctx.op("mul", out, ctx.const(d, int32)), i)
    return out


def copy_into(ctx: Ctx, dst: TileVal, src: TileVal) -> None:
    """dst[...] = src[...] element by element (shapes equal; the caller checks); views of one
    buffer that may overlap (`t[1:] = t[:-1]`) copy through a temporary, as numpy does."""
    if dst.base is src.base and dst.offset == src.offset and dst.strides == src.strides \
            and dst.dyn is src.dyn:
        return
    if dst.base is src.base:
        tmp = new_tile(ctx, src.type)
        copy_into(ctx, tmp, src)
        src = tmp
    each(ctx, dst.type.shape, lambda i: write(ctx, dst, i, convert(ctx, get(ctx, src, i),
                                                                     dst.type.dtype)))


def select(ctx: Ctx, cond: Var, a: Any, b: Any) -> Any:
    """a where cond holds, else b: elements of one type (scalars, vectors, matrices, structs)."""
    if isinstance(a, StructVal):
        return StructVal(a.type, tuple(select(ctx, cond, x, y)
                                       for x, y in zip(a.fields, b.fields, strict=True)))
    if isinstance(a, Composite):
        return Composite(a.type, tuple(ctx.op("select", cond, x, y)
                                       for x, y in zip(a.comps, b.comps, strict=True)))
    if isinstance(a, ArrayVal):  # a struct's array field: its descriptor's words
        return ArrayVal.from_words(a.type, [ctx.op("select", cond, x, y) for x, y
                                            in zip(flatten(a), flatten(b), strict=True)])
    return ctx.op("select", cond, a, b)


def convert(ctx: Ctx, v: Any, t: Any) -> Any:
    """v as element type t (scalars cast; a vector/matrix of another type is converted per
    component)."""
    if isinstance(v, StructVal):
        return v
    if isinstance(v, Composite):
        if v.type == t:
            return v
        return Composite(t, tuple(convert(ctx, c, t.dtype) for c in v.comps))
    return v if v.type == t else ctx.op("cast", v, type=t)
