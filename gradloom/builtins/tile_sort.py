"""`wp.tile_sort(keys, values)`: sort a tile pair in place in ascending key order (a tile of more
than one dimension as its row-major sequence), as Warp's tile_sort.

A bottom-up merge sort over thread-local scratch rows (builtins/tile_loops.py): the pair is
copied into packed rows, merged in passes of doubling run width (a branch-free two-pointer merge:
the taken side is a select), and copied back. It is stable, which Warp's unstable sort permits;
O(n log n) compares, no recursion, no stack.
"""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import ScalarType, TileType, float32, int32, int64, uint32, uint64
from .registry import builtin
from .tile_loops import Index, count_loop, get, new_tile, select, write
from .tiles import _T, tile_arg
from .values import Ctx, TileVal

_KEYS = (float32, int32, uint32, int64, uint64)


def _unravel(ctx: Ctx, shape: tuple[int, ...], p: Var) -> Index:
    """The index of row-major position p in shape."""
    if len(shape) == 1:
        return [p]
    out: list[Var | int] = []
    rest = p
    for k in range(len(shape) - 1, 0, -1):
        d = ctx.const(shape[k], int32)
        out.append(ctx.op("mod", rest, d))
        rest = ctx.op("div", rest, d)
    return [rest, *reversed(out)]


def _copy(ctx: Ctx, pairs: list[tuple[TileVal, TileVal]], n: int, src_shape: tuple[int, ...],
          into_rows: bool) -> None:
    """Copy each (tile, row) pair: tile -> packed row (into_rows) or back."""
    def body(p: Var, _: list[Var]) -> list[Var]:
        idx = _unravel(ctx, src_shape, p)
        for tile, row in pairs:
            if into_rows:
                write(ctx, row, [p], get(ctx, tile, idx))
            else:
                write(ctx, tile, idx, get(ctx, row, [p]))
        return []
    count_loop(ctx, n, [], body)


def _merge_pass(ctx: Ctx, src: list[TileVal], dst: list[TileVal], n: int, width: int) -> None:
    """Merge the sorted runs of `width` of src (keys first) into runs of 2 * width in dst."""
    last = ctx.const(n - 1, int32)

    def block(b: Var, _: list[Var]) -> list[Var]:
        lo = ctx.op("mul", b, ctx.const(2 * width, int32))
        mid = ctx.op("min", ctx.op("add", lo, ctx.const(width, int32)), ctx.const(n, int32))
        hi = ctx.op("min", ctx.op("add", lo, ctx.const(2 * width, int32)), ctx.const(n, int32))

        def step(k: Var, ij: list[Var]) -> list[Var]:
            i, j = ij
            ia, ja = ctx.op("min", i, last), ctx.op("min", j, last)
            ki, kj = get(ctx, src[0], [ia]), get(ctx, src[0], [ja])
            assert isinstance(ki, Var) and isinstance(kj, Var)
            right_ok = ctx.op("and", ctx.op("lt", j, hi), ctx.op("lt", kj, ki))
            left = ctx.op("and", ctx.op("lt", i, mid), ctx.op("not", right_ok))
            at = ctx.op("add", lo, k)
            for s, d in zip(src, dst, strict=True):
                write(ctx, d, [at], select(ctx, left, get(ctx, s, [ia]), get(ctx, s, [ja])))
            one = ctx.op("cast", left, type=int32)
            return [ctx.op("add", i, one), ctx.op("add", j, ctx.op("sub", ctx.const(1, int32),
                                                                     one))]
        count_loop(ctx, ctx.op("sub", hi, lo), [lo, mid], step)
        return []
    count_loop(ctx, (n + 2 * width - 1) // (2 * width), [], block)


@builtin("tile_sort", "sort keys (float32, int32, uint32, int64 or uint64) in place in "
         "ascending order, permuting values with them (tiles of one shape, sorted as their "
         "row-major sequence; equal keys keep their order)", group=_T, differentiable=False,
         signatures="(keys: Tile, values: Tile) -> None")
def tile_sort(ctx: Ctx, keys: object, values: object) -> None:
    k, v = tile_arg(ctx, keys, "keys"), tile_arg(ctx, values, "values")
    if not isinstance(k.type.dtype, ScalarType) or k.type.dtype not in _KEYS:
        raise ctx.error("First tile_sort() argument must be a tile of type float32, int32, "
                        f"uint32, int64, or uint64, got {k.type.dtype!r}")
    if k.type.shape != v.type.shape:
        raise ctx.error(f"tile_sort() shapes do not match: {k.type.shape} and {v.type.shape}")
    same = k.base is v.base and k.offset == v.offset and k.strides == v.strides \
        and k.dyn is v.dyn
    tiles = [k] if same else [k, v]
    n = k.type.count
    if n < 2:
        return
    rows = [[new_tile(ctx, TileType(t.type.dtype, (n,))) for t in tiles] for _ in range(2)]
    _copy(ctx, list(zip(tiles, rows[0], strict=True)), n, k.type.shape, into_rows=True)
    width, cur = 1, 0
    while width < n:
        _merge_pass(ctx, rows[cur], rows[1 - cur], n, width)
        width, cur = 2 * width, 1 - cur
    _copy(ctx, list(zip(tiles, rows[cur], strict=True)), n, k.type.shape, into_rows=False)

