"""Block-cooperative BVH queries: `tile_bvh_query_aabb`, `tile_bvh_query_ray`,
`tile_bvh_query_next`, `tile_query_valid` and Warp's deprecated `bvh_query_*_tiled` names.

Tiles run in one thread with block_dim 1 on the CPU (docs/design.md §3b), so a block's query is
this thread's query: each `tile_bvh_query_next` hands the thread the next candidate as a tile of
shape (1,), or -1 when none is left, and `tile_query_valid` is False once a step found none.
The query (`wp.BvhQueryTiled`) is builtins/bvh.py's query state plus that `valid` flag.
"""

from __future__ import annotations

import math

from ..ir.builder import BLOCK_DIM
from ..ir.nodes import Var
from ..types import StructType, bool_, float32, int32
from .bvh import _FIELDS, AABB, QUERY_TYPE, RAY, _inverse, _next, _start
from .mesh_ray import _vec3
from .registry import builtin
from .tile_block import cooperative, lane
from .tiles import tile
from .values import Ctx, OutArgs, StructVal, TileVal, Value, describe

_GROUP = "Tile Primitives"


class BvhQueryTiled:
    """`wp.BvhQueryTiled`: the state of a block-cooperative BVH query."""

    __gl_type__: StructType


TILED_TYPE = StructType("BvhQueryTiled", (*_FIELDS, ("valid", bool_)), BvhQueryTiled)
BvhQueryTiled.__gl_type__ = TILED_TYPE


def _tiled(ctx: Ctx, q: StructVal) -> StructVal:
    return StructVal(TILED_TYPE, (*q.fields, ctx.const(True, bool_)))


def _aabb(ctx: Ctx, name: str, id: Value, low: Value, high: Value) -> StructVal:
    return _tiled(ctx, _start(ctx, name, id, AABB, _vec3(ctx, name, "low", low),
                              _vec3(ctx, name, "high", high), ctx.const(0.0, float32), None))


def _ray(ctx: Ctx, name: str, id: Value, start: Value, dir: Value) -> StructVal:
    o, d = _vec3(ctx, name, "start", start), _vec3(ctx, name, "dir", dir)
    return _tiled(ctx, _start(ctx, name, id, RAY, o, _inverse(ctx, d), ctx.const(0.0, float32),
                              None))


def _query(ctx: Ctx, name: str, query: Value) -> StructVal:
    if not isinstance(query, StructVal) or query.type is not TILED_TYPE:
        raise ctx.error(f"wp.{name}() needs a query from wp.tile_bvh_query_aabb() or "
                        f"wp.tile_bvh_query_ray(), got {describe(query)}")
    return query


def _step(ctx: Ctx, name: str, query: Value) -> OutArgs:
    """One step: this thread's candidate as a tile. In a CPU block whose threads run together
    (builtins/tile_block.py) every thread holds the same query, so each advances it once per
    lane and keeps its own lane's candidate: the block's threads get the step's next block_dim
    candidates, one each, as in Warp (-1 past the last)."""
    q = _query(ctx, name, query)
    advanced = StructVal(QUERY_TYPE, q.fields[:-1])
    none, far = ctx.const(-1, int32), ctx.const(math.inf, float32)
    found, advanced, index = _next(ctx, advanced, none, far)
    mine = ctx.op("select", found, index, none)
    me = lane(ctx)
    for k in range(1, BLOCK_DIM.get() if cooperative() else 1):
        more, advanced, index = _next(ctx, advanced, none, far)
        theirs = ctx.op("select", more, index, none)
        mine = ctx.op("select", ctx.op("eq", me, ctx.const(k, int32)), theirs, mine)
    result: TileVal = tile(ctx, mine if cooperative() else index)
    return OutArgs(result, ((0, StructVal(TILED_TYPE, (*advanced.fields, found))),))


@builtin("tile_bvh_query_aabb", "a block-cooperative query over the boxes of a Bvh that overlap "
         "[low, high] (advance it with tile_bvh_query_next while tile_query_valid)",
         differentiable=False, group=_GROUP,
         signatures="(id: uint64, low: vec3f, high: vec3f) -> BvhQueryTiled")
def tile_bvh_query_aabb(ctx: Ctx, id: Value, low: Value, high: Value) -> Value:
    return _aabb(ctx, "tile_bvh_query_aabb", id, low, high)


@builtin("tile_bvh_query_ray", "a block-cooperative query over the boxes of a Bvh that the "
         "ray start + t * dir (t >= 0) hits", differentiable=False, group=_GROUP,
         signatures="(id: uint64, start: vec3f, dir: vec3f) -> BvhQueryTiled")
def tile_bvh_query_ray(ctx: Ctx, id: Value, start: Value, dir: Value) -> Value:
    return _ray(ctx, "tile_bvh_query_ray", id, start, dir)


@builtin("tile_bvh_query_next", "advance a block-cooperative BVH query: a tile of shape "
         "(block_dim,) with one candidate box index per thread, negative where a thread has "
         "none (on the CPU, block_dim 1: the next candidate, or -1 when none is left)",
         differentiable=False, group=_GROUP, signatures="(query: BvhQueryTiled) -> Tile")
def tile_bvh_query_next(ctx: Ctx, query: Value) -> OutArgs:
    return _step(ctx, "tile_bvh_query_next", query)


@builtin("tile_query_valid", "whether a block-cooperative query should go on: True at first "
         "and after a step that found a candidate, False after a step that found none",
         differentiable=False, group=_GROUP, signatures="(query: BvhQueryTiled) -> Bool")
def tile_query_valid(ctx: Ctx, query: Value) -> Var:
    if not isinstance(query, StructVal) or not query.type.fields \
            or query.type.fields[-1][0] != "valid":
        raise ctx.error("wp.tile_query_valid() needs a query from a tile_*_query_* builtin, got "
                        f"{describe(query)}")
    v = query.fields[-1]
    assert isinstance(v, Var)
    return v


@builtin("bvh_query_aabb_tiled", "deprecated name of tile_bvh_query_aabb (as in Warp 1.18+)",
         differentiable=False, group=_GROUP,
         signatures="(id: uint64, low: vec3f, high: vec3f) -> BvhQueryTiled")
def bvh_query_aabb_tiled(ctx: Ctx, id: Value, low: Value, high: Value) -> Value:
    return _aabb(ctx, "bvh_query_aabb_tiled", id, low, high)


@builtin("bvh_query_ray_tiled", "deprecated name of tile_bvh_query_ray (as in Warp 1.18+)",
         differentiable=False, group=_GROUP,
         signatures="(id: uint64, start: vec3f, dir: vec3f) -> BvhQueryTiled")
def bvh_query_ray_tiled(ctx: Ctx, id: Value, start: Value, dir: Value) -> Value:
    return _ray(ctx, "bvh_query_ray_tiled", id, start, dir)


@builtin("bvh_query_next_tiled", "deprecated name of tile_bvh_query_next (as in Warp 1.18+)",
         differentiable=False, group=_GROUP, signatures="(query: BvhQueryTiled) -> Tile")
def bvh_query_next_tiled(ctx: Ctx, query: Value) -> OutArgs:
    return _step(ctx, "bvh_query_next_tiled", query)
