"""Random tiles (`wp.tile_randi`, `wp.tile_randf`): each element one draw of builtins/random.py's
generator, as Warp's CPU does with one thread per block.

Warp seeds the block's thread `k` with `pcg(k + rng)` (on the CPU `k` is 0) and draws the
thread's elements in row-major order; the caller's `rng` is left unchanged, so two calls with the
same `rng` give the same tile.
"""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Var
from ..types import TileType, float32, int32
from .random import _modulo_range, as_u32, pcg_hash, unit_float
from .registry import builtin
from .tile_loops import fold, new_tile, write
from .tiles import _T, const_ints
from .values import Ctx, Literal, TileVal, Value


def _constant(ctx: Ctx, v: Value, name: str, what: str) -> Any:
    x = v.value if isinstance(v, Literal) else ctx.b.constant_value(v) if isinstance(v, Var) \
        else v
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        raise ctx.error(f"{name}(): min and max must be compile-time {what} constants")
    return x


def _fill(ctx: Ctx, name: str, shape: Any, rng: Value | None, dtype: Any, draw: Any) -> TileVal:
    if rng is None:
        raise ctx.error(f"{name}() missing required keyword argument 'rng'")
    out = new_tile(ctx, TileType(dtype, const_ints(ctx, shape, "shape")))
    state = pcg_hash(ctx, as_u32(ctx, name, rng))  # thread 0 of the block: pcg(0 + rng)

    def step(i: list[Var], carried: list[Var]) -> list[Var]:
        s = pcg_hash(ctx, carried[0])
        write(ctx, out, i, draw(s))
        return [s]
    fold(ctx, out.type.shape, [state], step)
    return out


@builtin("tile_randi", "a tile of random int32 values (each a wp.randi draw; in [min, max) "
         "when both are given); rng is left unchanged", group=_T, differentiable=False,
         signatures=("(shape: Tuple, rng: uint32) -> Tile",
                     "(shape: Tuple, rng: uint32, min: int, max: int) -> Tile"))
def tile_randi(ctx: Ctx, shape: Any = None, rng: Value | None = None, min: Value | None = None,
               max: Value | None = None, storage: str = "register") -> TileVal:
    if (min is None) != (max is None):
        raise ctx.error("tile_randi(): both 'min' and 'max' must be given together")
    if min is None or max is None:
        return _fill(ctx, "tile_randi", shape, rng, int32,
                     lambda s: ctx.op("cast", s, type=int32))
    lo, hi = (_constant(ctx, v, "tile_randi", "integer") for v in (min, max))
    if not isinstance(lo, int) or not isinstance(hi, int):
        raise ctx.error("tile_randi(): 'min' and 'max' must both be integers")
    if not (-(1 << 31) <= lo < 1 << 31 and -(1 << 31) <= hi < 1 << 31):
        raise ctx.error("tile_randi(): min and max must be representable as int32")
    if hi <= lo:
        raise ctx.error("tile_randi(): max must be greater than min")
    low, high = ctx.const(lo, int32), ctx.const(hi, int32)
    return _fill(ctx, "tile_randi", shape, rng, int32,
                 lambda s: _modulo_range(ctx, s, low, high))


@builtin("tile_randf", "a tile of random float32 values in [0, 1) (each a wp.randf draw; in "
         "[min, max) when both are given); rng is left unchanged", group=_T,
         differentiable=False,
         signatures=("(shape: Tuple, rng: uint32) -> Tile",
                     "(shape: Tuple, rng: uint32, min: float, max: float) -> Tile"))
def tile_randf(ctx: Ctx, shape: Any = None, rng: Value | None = None, min: Value | None = None,
               max: Value | None = None, storage: str = "register") -> TileVal:
    if (min is None) != (max is None):
        raise ctx.error("tile_randf(): both 'min' and 'max' must be given together")
    if min is None or max is None:
        return _fill(ctx, "tile_randf", shape, rng, float32, lambda s: unit_float(ctx, s))
    lo, hi = (_constant(ctx, v, "tile_randf", "float") for v in (min, max))
    if not isinstance(lo, float) or not isinstance(hi, float):
        raise ctx.error("tile_randf(): 'min' and 'max' must both be floats")
    low, high = ctx.const(lo, float32), ctx.const(hi, float32)
    if not float(hi) > float(lo):
        raise ctx.error("tile_randf(): max must be greater than min")
    span = ctx.op("sub", high, low)
    return _fill(ctx, "tile_randf", shape, rng, float32,
                 lambda s: ctx.op("add", low, ctx.op("mul", span, unit_float(ctx, s))))

