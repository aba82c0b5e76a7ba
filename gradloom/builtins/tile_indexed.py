"""Indexed tile writes (`wp.tile_store_indexed`, `wp.tile_atomic_add_indexed`): along `axis`, tile
element c goes to array position `offset + indices[c]`, along the other dimensions to
`offset + c` (the scatter twins of tile_more.tile_load_indexed). Positions outside the array (a
-1 sentinel too) are skipped. Gradients: a store takes the array's gradient at the places it
wrote, an atomic addition reads it there (array memory rules, autodiff/reverse.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir.nodes import Var
from ..types import ScalarType, int32
from . import memory
from .registry import builtin
from .tile_block import first_lane, from_first_lane
from .tile_loops import each, get, new_tile, read, write
from .tile_more import _no_gradient
from .tiles import _T, _array_arg, _in_bounds, _offsets, tile_arg
from .values import (
    ArrayVal,
    Composite,
    Ctx,
    Literal,
    TileVal,
    flatten,
    if_values,
    rebuild,
    zeros_of,
)

_SIG = "(a: Array, indices: Tile, t: Tile, offset: Tuple, axis: Int) -> "


def _scatter(ctx: Ctx, name: str, a: Any, indices: Any, t: Any, offset: Any, axis: Any,
             put: Callable[[ArrayVal, list[Var], list[Var], Var | Composite], None]) -> None:
    """Check the arguments and call put(array, position, tile index, element) per element."""
    arr, src = _array_arg(ctx, a), tile_arg(ctx, t, "t")
    dims = src.type.shape
    if len(dims) != arr.type.ndim or src.type.dtype != arr.type.dtype:
        raise ctx.error(f"wp.{name}(): a {src.type!r} into an array of {arr.type.dtype!r} with "
                        f"{arr.type.ndim} dimension(s)")
    ax = axis.value if isinstance(axis, Literal) else axis
    if not isinstance(ax, int) or not 0 <= ax < len(dims):
        raise ctx.error(f"wp.{name}(): axis is a constant in [0, {len(dims)}), got {ax!r}")
    idx = tile_arg(ctx, indices, "indices")
    if idx.type.ndim != 1 or idx.type.shape[0] != dims[ax] or \
            not (isinstance(idx.type.dtype, ScalarType) and idx.type.dtype.is_int):
        raise ctx.error(f"wp.{name}(): indices is a 1-D integer tile of {dims[ax]} elements "
                        f"(the tile's shape[axis]), got {idx.type!r}")
    base = _offsets(ctx, offset, len(dims))

    def one(i: list[Var]) -> None:
        g = read(ctx, idx, [i[ax]])
        g = g if g.type == int32 else ctx.op("cast", g, type=int32)
        at = [ctx.op("add", o, g if k == ax else c)
              for k, (o, c) in enumerate(zip(base, i, strict=True))]
        put(arr, at, i, get(ctx, src, i))
    each(ctx, dims, one)


@builtin("tile_store_indexed", "scatter tile t into array a: along `axis` element c goes to "
         "a[offset + indices[c]], along the other dimensions to a[offset + c]; positions "
         "outside the array are skipped", group=_T, signatures=_SIG + "None")
def tile_store_indexed(ctx: Ctx, a: Any, indices: Any, t: Any, offset: Any = None,
                       axis: Any = 0) -> None:
    def put(arr: ArrayVal, at: list[Var], _i: list[Var], v: Var | Composite) -> None:
        def inside() -> list[Var]:
            place = memory.index_array(ctx, arr, list(at))
            assert isinstance(place, memory.Place)
            memory.store(ctx, place, v)
            return []
        if_values(ctx, first_lane(ctx, _in_bounds(ctx, arr, at)), inside, lambda: [])
    _scatter(ctx, "tile_store_indexed", a, indices, t, offset, axis, put)  # lane 0's, in a block


@builtin("tile_atomic_add_indexed", "atomically add tile t into array a at the places "
         "tile_store_indexed would write; a tile of the values there before", group=_T,
         signatures=_SIG + "Tile")
def tile_atomic_add_indexed(ctx: Ctx, a: Any, indices: Any, t: Any, offset: Any = None,
                            axis: Any = 0) -> TileVal:
    src = tile_arg(ctx, t, "t")
    out = new_tile(ctx, src.type)

    def put(arr: ArrayVal, at: list[Var], i: list[Var], v: Var | Composite) -> None:
        def inside() -> list[Var]:
            place = memory.index_array(ctx, arr, list(at))
            assert isinstance(place, memory.Place)
            olds = flatten(memory.atomic(ctx, "atomic_add", place, v))
            return [_no_gradient(ctx, o) for o in olds]
        zero = zeros_of(ctx, arr.type.dtype)
        olds = if_values(ctx, first_lane(ctx, _in_bounds(ctx, arr, at)), inside,
                         lambda: flatten(zero))
        write(ctx, out, i, rebuild(zero, iter(olds)))  # type: ignore[arg-type]
    _scatter(ctx, "tile_atomic_add_indexed", a, indices, t, offset, axis, put)
    from_first_lane(ctx, out)  # once per CPU block (builtins/tile_block.py)
    return out
