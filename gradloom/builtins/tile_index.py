"""Tile subscripts: `t[i, j]` (an element), `t[i]` / `t[i, :]` / `t[::2]` (views, constant or
run-time indices, negative ones counting from the end), `t[idx]` with an integer tile (a
gathered copy), and assignments through them (`t[0] = row`), as Warp 1.19 reads them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..ir.nodes import Var
from ..types import MatrixType, TileType, VectorType, int32, vector
from . import ops
from .registry import builtin
from .tile_block import cooperative, each_lane
from .tile_loops import convert, copy_into, each, get, new_tile, read, write, write_part
from .tile_math import element_op
from .tiles import _T, shifted, tile_arg, tile_view
from .values import (
    Composite,
    Ctx,
    Literal,
    StructVal,
    TileVal,
    TupleVal,
    Value,
    describe,
    scalar,
)


def _index(ctx: Ctx, k: Any, n: int) -> int | Var:
    """A constant or run-time index into a dimension of extent n; negative counts from the end."""
    k = k.value if isinstance(k, Literal) else k
    if isinstance(k, float) or (isinstance(k, Var) and not k.type.is_int):
        raise ctx.error(f"tile indices must be integers or slices, got {describe(k)}")
    if isinstance(k, int) and not isinstance(k, bool):
        i = k + n if k < 0 else k
        if not 0 <= i < n:
            raise ctx.error(f"tile index {k} is out of bounds for a dimension of extent {n}")
        return i
    v = scalar(ctx, k)
    if not v.type.is_int:
        raise ctx.error(f"tile indices must be integers, got {describe(k)}")
    v = v if v.type == int32 else ctx.op("cast", v, type=int32)
    neg = ctx.op("lt", v, ctx.const(0, int32))
    return ctx.op("select", neg, ctx.op("add", v, ctx.const(n, int32)), v)


def _bound(ctx: Ctx, v: Any) -> int | None:
    v = v.value if isinstance(v, Literal) else v
    if v is None or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    raise ctx.error(f"tile slice bounds must be compile-time constants, got {describe(v)}")


def place(ctx: Ctx, t: TileVal, keys: list[Any]) -> tuple[TileVal, bool]:
    """t[keys] without tile keys as a view, and whether every dimension got an index (then the
    view is the element, shape (1,))."""
    if len(keys) > t.type.ndim:
        raise ctx.error(f"{t.type!r} takes at most {t.type.ndim} indices, got {len(keys)}")
    keys = keys + [slice(None)] * (t.type.ndim - len(keys))
    off: list[int | Var] = []
    dims: list[int] = []
    strides: list[int] = []
    for k, n, s in zip(keys, t.type.shape, t.strides, strict=True):
        if isinstance(k, slice):
            start, stop, step = (_bound(ctx, x) for x in (k.start, k.stop, k.step))
            r = range(n)[slice(start, stop, step)]
            if not len(r):
                raise ctx.error(f"the slice {k} of a dimension of extent {n} makes an empty tile "
                                "(zero-length)")
            off.append(r.start)
            dims.append(len(r))
            strides.append(s * r.step)
        else:
            off.append(_index(ctx, k, n))
    moved = shifted(ctx, t, off, t.strides)
    if not dims:
        return replace(moved, type=TileType(t.type.dtype, (1,)), strides=(0,)), True
    return replace(moved, type=TileType(t.type.dtype, tuple(dims)), strides=tuple(strides)), False


def view(ctx: Ctx, t: TileVal, keys: list[Any]) -> TileVal | Var | Composite:
    """t[keys] without tile keys: an element when every dimension gets an index, else a view."""
    at, element = place(ctx, t, keys)
    return get(ctx, at, [0]) if element else at


def gather(ctx: Ctx, t: TileVal, keys: list[Any]) -> TileVal:
    """t[idx, :, ...] with a 1-D integer tile idx on one axis, ':' on the others: a new tile."""
    axes = [a for a, k in enumerate(keys) if isinstance(k, TileVal)]
    idx = keys[axes[0]]
    if len(axes) != 1 or idx.type.ndim != 1:
        raise ctx.error("a tile index must be one 1-D integer tile")
    if not idx.type.dtype.is_int:
        raise ctx.error(f"a tile used as an index must be an integer index tile, got {idx.type!r}")
    keys = keys + [slice(None)] * (t.type.ndim - len(keys))
    if any(not (isinstance(k, slice) and k == slice(None)) for a, k in enumerate(keys)
           if a != axes[0]):
        raise ctx.error("indexing a tile with an integer index tile requires ':' on all other "
                        "axes")
    ax = axes[0]
    shape = t.type.shape[:ax] + idx.type.shape + t.type.shape[ax + 1:]
    out = new_tile(ctx, TileType(t.type.dtype, shape))
    n = t.type.shape[ax]

    def one(i: list[Var]) -> None:
        src: list[Var | int] = list(i)
        src[ax] = _index(ctx, read(ctx, idx, [i[ax]]), n)
        write(ctx, out, i, get(ctx, t, src))
    each(ctx, shape, one)
    return out


def _components(ctx: Ctx, t: TileVal, keys: list[Any]) -> tuple[list[Any], list[int]]:
    """Split keys into the element's indices and constant component indices past them
    (`t[i][1]`, `t[i, r, c]` on tiles of vectors and matrices)."""
    nd = t.type.ndim
    if len(keys) <= nd:
        return keys, []
    dt = t.type.dtype
    extra = [k.value if isinstance(k, Literal) else k for k in keys[nd:]]
    dims = (dt.length,) if isinstance(dt, VectorType) else (
        (dt.rows, dt.cols) if isinstance(dt, MatrixType) else ())
    if len(extra) > len(dims) or not all(isinstance(k, int) for k in extra) or any(
            isinstance(k, slice) for k in keys[:nd]):
        raise ctx.error(f"{t.type!r} takes at most {nd} indices (and constant component "
                        f"indices of its {dt!r} elements), got {len(keys)}")
    comps = [int(k) + d if k < 0 else int(k) for k, d in zip(extra, dims, strict=False)]
    if any(not 0 <= k < d for k, d in zip(comps, dims, strict=False)):
        raise ctx.error(f"component index {extra} is out of range for {dt!r}")
    return keys[:nd], comps


def _component_slots(t: TileVal, comps: list[int]) -> list[int]:
    """The row-major component positions comps select (a matrix row: its columns)."""
    dt = t.type.dtype
    if isinstance(dt, MatrixType):
        return [comps[0] * dt.cols + c for c in
                ([comps[1]] if len(comps) == 2 else range(dt.cols))]
    return [comps[0]]


def subscript(ctx: Ctx, t: TileVal, keys: list[Any]) -> Value:
    if any(isinstance(k, TileVal) for k in keys):
        return gather(ctx, t, keys)
    keys, comps = _components(ctx, t, keys)
    if not comps:
        return view(ctx, t, keys)
    element = get(ctx, place(ctx, t, keys)[0], [0])
    assert isinstance(element, Composite)
    slots = _component_slots(t, comps)
    if len(slots) == 1:
        return element.comps[slots[0]]
    return Composite(vector(len(slots), element.type.dtype), tuple(element.comps[k] for k in slots))


def assign(ctx: Ctx, t: TileVal, keys: list[Any], value: Value, aug: str | None) -> None:
    """t[keys] = value: an element, or every element of a view (from a tile of its shape). In
    a CPU block every thread's element write, in lane order (builtins/tile_block.py)."""
    if not cooperative() or isinstance(value, TileVal):
        _assign(ctx, t, keys, value, aug)
        return
    sent = isinstance(value, (Var, Composite, StructVal))
    dynamic = [k for k in keys if isinstance(k, Var)]

    def one(_: Var, got: list[Any]) -> list[Var]:
        it = iter(got)
        mine = [next(it) if isinstance(k, Var) else k for k in keys]
        _assign(ctx, t, mine, next(it) if sent else value, aug)
        return []

    each_lane(ctx, [*dynamic, *([value] if sent else [])], one)


def _assign(ctx: Ctx, t: TileVal, keys: list[Any], value: Value, aug: str | None) -> None:
    keys, comps = _components(ctx, t, keys)
    if comps:
        at = place(ctx, t, keys)[0]
        slots = _component_slots(t, comps)
        part = t.type.dtype.dtype
        old = get(ctx, at, [0])
        assert isinstance(old, Composite)
        cur: Value = old.comps[slots[0]] if len(slots) == 1 else Composite(
            vector(len(slots), part), tuple(old.comps[k] for k in slots))
        new = value if aug is None else ops.binary(ctx, aug, cur, value)
        parts = new.comps if isinstance(new, Composite) else (scalar(ctx, new, part),)
        for k, c in zip(slots, parts, strict=True):
            write_part(ctx, at, [0], k, convert(ctx, c, part))
        return
    target, element = place(ctx, t, keys)
    if element:
        if aug is not None and isinstance(value, StructVal):
            if aug not in ("add", "sub"):
                raise ctx.error(f"'{aug}' (bitwise inplace or other) is not defined for an "
                                f"element of a tile of the Warp struct type {value.type!r}")
            value = element_op(ctx, aug, get(ctx, target, [0]), value)
        elif aug is not None:
            value = ops.binary(ctx, aug, get(ctx, target, [0]), value)
        v = value if isinstance(value, (Composite, StructVal)) else \
            scalar(ctx, value, t.type.dtype)
        write(ctx, target, [0], convert(ctx, v, t.type.dtype))
        return
    if aug is not None:
        raise ctx.error("Compound assignment to a tile view is not supported; assign a tile "
                        "(wp.tile_assign) instead")
    if not isinstance(value, TileVal) or value.type.shape != target.type.shape:
        what = "shape mismatch" if isinstance(value, TileVal) else "requires a tile of matching shape"
        raise ctx.error(f"assigning {describe(value)} to a view of shape {target.type.shape}: "
                        f"{what}")
    copy_into(ctx, target, value)


@builtin("slice", "a slice in a kernel (`wp.tile_view(t, offset=(slice(0, 4, 1),))`); bounds are "
         "compile-time constants", differentiable=False, signatures="(start: Int, stop: Int, step: Int) -> Any")
def slice_(ctx: Ctx, *args: Any) -> slice:
    for a in args:
        _bound(ctx, a)
    return slice(*args)


@builtin("tile_view", "a view of tile t at an offset (constant or run-time integers, or slices), "
         "of the given shape (default: the rest of t's dimensions)", group=_T,
         signatures="(t: Tile, offset: Tuple, shape: Tuple) -> Tile")
def tile_view_(ctx: Ctx, t: Any, offset: Any, shape: Any = None) -> TileVal:
    src = tile_arg(ctx, t, "t")
    items = list(offset.items) if isinstance(offset, TupleVal) else (
        list(offset) if isinstance(offset, tuple) else [offset])
    if not any(isinstance(i, slice) for i in items):
        return tile_view(ctx, src, offset, shape)
    if shape is not None:
        raise ctx.error("wp.tile_view() cannot take 'shape' together with a slice offset")
    at, element = place(ctx, src, items)
    if element:
        raise ctx.error("wp.tile_view() with an index for every dimension is an element")
    return at
