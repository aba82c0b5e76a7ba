"""Tile operations that take a value from every thread of a CPU block (`config.enable_cpu_blocks`).

In Warp a block's threads share its tiles. gradloom gives every thread of a CPU block its own copy
of each tile and has every thread run every tile operation on its copy, so the copies stay equal
as long as each operation sees the same inputs. An operation fed by each thread's own value
(`wp.tile(x)`, `t[i] = v`, stack pushes and pops, scatters, `tile_from_thread`) therefore first
exchanges those values (the `bxchg` primitive: each thread waits for the block's others) and then
applies every thread's in lane order, identically in every copy (`each_lane`). Outside CPU blocks
(block_dim 1) `each_lane` applies this thread's values only, as before.

A record in the exchange is an int32 flag (the lane took part: lanes of a partial block or past
their `return` do not) and the values' scalars, each at its own aligned offset.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..ir.builder import BLOCK_DIM
from ..ir.nodes import Var
from ..types import bool_, int32, int64
from .tile_loops import count_loop
from .values import Ctx, TileVal, Value, flatten, if_values, rebuild

#: bytes before a record's values (its flag, padded to the widest scalar)
_HEAD = 8


def cooperative() -> bool:
    """Whether the kernel being lowered runs with more than one thread per CPU block."""
    return BLOCK_DIM.get() > 1


def lane(ctx: Ctx) -> Var:
    """This thread's index in its block (int32): 0 outside CPU blocks."""
    n = BLOCK_DIM.get()
    if n == 1:
        return ctx.const(0, int32)
    return ctx.op("mod", ctx.op("tid", attr=(0, 1)), ctx.const(n, int32))


def _layout(leaves: Sequence[Var]) -> tuple[list[int], int]:
    """Byte offsets of the leaves in a record, and the record's size (a multiple of 8)."""
    offsets, at = [], _HEAD
    for v in leaves:
        size = max(v.type.size, 1)
        at = (at + size - 1) // size * size
        offsets.append(at)
        at += size
    return offsets, (at + 7) // 8 * 8


def each_lane(ctx: Ctx, values: list[Value],
              fn: Callable[[Var, list[Value]], list[Var]], keep: Sequence[Var] = ()) -> list[Var]:
    """fn(lane, that lane's values) for every thread of the block, in lane order, in every thread
    alike; returns what fn returned for this thread's own lane (`keep`: the types and the values
    where this lane took no part). Outside CPU blocks: fn(0, values)."""
    if not cooperative():
        return fn(ctx.const(0, int32), values)
    n = BLOCK_DIM.get()
    leaves = [x for v in values for x in flatten(v)]
    offsets, size = _layout(leaves)
    floats = tuple((off, v.type) for off, v in zip(offsets, leaves, strict=True)
                   if v.type.is_float)
    send = ctx.b.hoist("local", ctx.loc, attr=size)
    recv = ctx.b.hoist("local", ctx.loc, attr=n * size)

    def put(buf: Var, at: Var | int, value: Var, span: int) -> None:
        where = at if isinstance(at, Var) else ctx.const(at, int64)
        ctx.b.effect("lstore", (buf, where, value), ctx.loc, attr=span)

    put(send, 0, ctx.const(1, int32), size)
    for off, v in zip(offsets, leaves, strict=True):
        put(send, off, v, size)
    me = lane(ctx)
    zero = ctx.const(0, int64)
    ctx.b.effect("bxchg", (send, zero, recv, zero, me), ctx.loc,
                 attr=(size, n, -1, floats, size, n * size))
    span = n * size

    def one(i: Var, carried: list[Var]) -> list[Var]:
        base = ctx.op("mul", ctx.op("cast", i, type=int64), ctx.const(size, int64))

        def at(off: int) -> Var:
            return ctx.op("add", base, ctx.const(off, int64))

        flag = ctx.op("lload", recv, base, attr=span, type=int32)

        def run() -> list[Var]:
            got = iter([ctx.op("lload", recv, at(off), attr=span, type=v.type)
                        for off, v in zip(offsets, leaves, strict=True)])
            out = fn(i, [rebuild(v, got) for v in values])
            mine = ctx.op("eq", i, me)
            return [ctx.op("select", mine, o, c) for o, c in zip(out, carried, strict=True)]

        return if_values(ctx, ctx.op("ne", flag, ctx.const(0, int32)), run, lambda: carried)

    return count_loop(ctx, n, list(keep), one)


def first_lane(ctx: Ctx, cond: Var) -> Var:
    """cond, and in a CPU block only in lane 0: a tile operation's effect on arrays happens once
    per block, not once per thread's copy of the tile."""
    if not cooperative():
        return cond
    return ctx.op("and", cond, ctx.op("eq", lane(ctx), ctx.const(0, int32)))


def from_first_lane(ctx: Ctx, tile: TileVal) -> None:
    """In a CPU block, every thread's copy of a packed tile becomes lane 0's (what only lane 0
    computed: `first_lane`)."""
    if not cooperative():
        return
    size = tile.type.count * tile.type.dtype.size
    at = ctx.const(tile.offset * tile.type.dtype.size, int64)
    ctx.b.effect("bxchg", (tile.base, at, tile.base, at, lane(ctx)), ctx.loc,
                 attr=(size, BLOCK_DIM.get(), 0, (), tile.span, tile.span))


def once_per_block(ctx: Ctx, fn: Callable[[], None]) -> None:
    """fn() (a tile operation's writes to arrays), in a CPU block by lane 0 only: every thread's
    copy of the tile is the same, and a gradient read back from the array (the adjoint of a
    store) must enter the block once."""
    if not cooperative():
        fn()
        return

    def run() -> list[Var]:
        fn()
        return []

    if_values(ctx, first_lane(ctx, ctx.const(True, bool_)), run, lambda: [])
