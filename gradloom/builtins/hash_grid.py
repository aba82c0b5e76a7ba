"""Hash grid queries in kernels: `hash_grid_query`, `hash_grid_query_next`, `hash_grid_point_id`.

A kernel receives a `HashGrid.id` (uint64): the address of the descriptor that
runtime/geometry/hash_grid.py writes (field offsets `GRID_*` in types.py). The builtins read it with
integer loads and walk the grid with integer loop state, so no new primitive is involved and
autodiff sees only integer values here: gradients flow through what the user's loop reads
(`x[index]`), as in any loop.

Semantics follow Warp 1.19: a query visits every point in the cells the box
`[point - max_dist, point + max_dist]` overlaps (candidates, not filtered by distance), cells in
x-fastest order and, within a cell, points in the order the build sorted them. Cell coordinates
are `floor(p * (1 / width))` in the query's precision, clamped to int32 and wrapped per axis (the
grid is periodic); a query spanning more cells than the grid has along an axis visits each
once. The query is a struct of integers (`wp.HashGridQuery`), advanced in place by
`hash_grid_query_next(query, index)` or iterated with `for index in query:`.
"""

from __future__ import annotations

from .. import config
from ..ir.nodes import Var
from ..types import (
    GRID_CELL_ENDS,
    GRID_CELL_STARTS,
    GRID_DIMS,
    GRID_HAS_GROUPS,
    GRID_INV_WIDTH,
    GRID_KEYS,
    GRID_NUM_POINTS,
    GRID_POINT_IDS,
    GRID_READY,
    ScalarType,
    StructType,
    VectorType,
    bool_,
    float16,
    float32,
    float64,
    int32,
    int64,
    ptr,
    uint16,
    uint32,
    uint64,
)
from . import memory
from .registry import builtin
from .values import (
    Composite,
    Ctx,
    OutArgs,
    StructVal,
    Value,
    describe,
    if_values,
    materialize,
    scalar,
    while_loop,
)

_GROUP = "Geometry"
_INT_MAX, _INT_MIN = (1 << 31) - 1, -(1 << 31)

_FIELDS: tuple[tuple[str, ScalarType], ...] = (
    ("point_ids", ptr), ("cell_starts", ptr), ("cell_ends", ptr), ("keys", ptr),
    ("dim_x", int32), ("dim_y", int32), ("dim_z", int32),
    ("cell_index", int32), ("cell_end", int32), ("group", int32), ("use_groups", bool_),
    # the cell coordinates wrapped into [0, dim): the first and last of the query's span
    # along each axis (at most dim cells, so the last is reached exactly once per row) and the
    # current cell's, so moving to the next cell needs no division and a query carries few
    # values through its loop (SIMD lanes keep each one in a vector register)
    ("wx_start", int32), ("wy_start", int32), ("wx_end", int32), ("wy_end", int32),
    ("wz_end", int32), ("wx", int32), ("wy", int32), ("wz", int32),
)
_NAMES = [n for n, _ in _FIELDS]


class HashGridQuery:
    """`wp.HashGridQuery`: the state of a hash grid query in a kernel (annotations only).

    One type serves every coordinate precision (the state is integers), so
    `wp.HashGridQuery[wp.float64]` is the same type."""

    __gl_type__: StructType

    def __class_getitem__(cls, dtype: object) -> type[HashGridQuery]:
        return cls

    @staticmethod
    def gl_iterate(ctx: Ctx, query: Value, index: Var | None) -> tuple[Var, Value, Var]:
        """One step of `for index in query:`: (found, the advanced query, the index)."""
        q = _query_arg(ctx, "hash_grid_query_next", query)
        return _next(ctx, q, index if index is not None else ctx.const(0, int32))


QUERY_TYPE = StructType("HashGridQuery", _FIELDS, HashGridQuery)
HashGridQuery.__gl_type__ = QUERY_TYPE


class _Query:
    """A query value's fields by name (read) and a rebuilt value with some replaced."""

    def __init__(self, value: StructVal) -> None:
        self.value = value

    def __getitem__(self, name: str) -> Var:
        v = self.value.fields[_NAMES.index(name)]
        assert isinstance(v, Var)
        return v

    def with_(self, **changes: Var) -> StructVal:
        fields = [changes.get(n, f) for n, f in zip(_NAMES, self.value.fields, strict=True)]
        return StructVal(QUERY_TYPE, tuple(fields))


# -- reading the descriptor ---------------------------------------------------------------------


def _descriptor(ctx: Ctx, name: str, grid_id: Value) -> Var:
    """The descriptor pointer a grid id (uint64) names."""
    return memory.handle_pointer(ctx, name, grid_id, "a grid id (a HashGrid's .id)",
                                 private=True)


def _field(ctx: Ctx, desc: Var, offset: int, t: ScalarType) -> Var:
    return ctx.op("load", desc, ctx.const(0, int64), attr=offset, type=t)


def _element(ctx: Ctx, base: Var, index: Var, t: ScalarType) -> Var:
    """base[index] for an int32 (or int64) index into an array of t."""
    i = index if index.type == int64 else ctx.op("cast", index, type=int64)
    return ctx.op("load", base, ctx.op("mul", i, ctx.const(t.size, int64)), type=t)


def _i32(ctx: Ctx, v: int) -> Var:
    return ctx.const(v, int32)


# -- cell arithmetic ----------------------------------------------------------------------------


def _cell_coord(ctx: Ctx, v: Var) -> Var:
    """floor(v) as int32, clamped to [INT_MIN, INT_MAX - 1]; NaN gives 0 (Warp's rule)."""
    if v.type == float16:
        v = ctx.op("cast", v, type=float32)
    c = ctx.op("floor", v)
    top = ctx.const(2147483646.0 if v.type == float64 else 2147483648.0, v.type)
    bottom = ctx.const(-2147483648.0, v.type)
    above, below = ctx.op("ge", c, top), ctx.op("lt", c, bottom)
    inside = ctx.op("and", ctx.op("ge", c, bottom), ctx.op("lt", c, top))
    as_int = ctx.op("cast", ctx.op("select", inside, c, ctx.const(0.0, v.type)), type=int32)
    outside = ctx.op("select", above, _i32(ctx, _INT_MAX - 1),
                     ctx.op("select", below, _i32(ctx, _INT_MIN), _i32(ctx, 0)))
    return ctx.op("select", inside, as_int, outside)


def _span_end(ctx: Ctx, start: Var, end: Var, dim: Var) -> Var:
    """The last cell to visit along an axis: at most dim cells from start."""
    wide = ctx.op("sub", ctx.op("cast", end, type=int64), ctx.op("cast", start, type=int64))
    too_many = ctx.op("ge", wide, ctx.op("cast", dim, type=int64))
    return ctx.op("select", too_many, ctx.op("add", start, ctx.op("sub", dim, _i32(ctx, 1))),
                  end)


def _wrap(ctx: Ctx, x: Var, dim: Var) -> Var:
    r = ctx.op("mod", x, dim)
    return ctx.op("select", ctx.op("lt", r, _i32(ctx, 0)), ctx.op("add", r, dim), r)


def _wrap_next(ctx: Ctx, w: Var, dim: Var) -> Var:
    """The wrapped coordinate after w (in [0, dim)): w + 1, or 0 past the grid's end."""
    w1 = ctx.op("add", w, _i32(ctx, 1))
    return ctx.op("select", ctx.op("ge", w1, dim), _i32(ctx, 0), w1)


def _set_cell(ctx: Ctx, q: _Query, x: Var, y: Var, z: Var) -> tuple[Var, Var]:
    """The [start, end) range of sorted positions of cell (x, y, z) (coordinates wrapped into
    the grid), narrowed to the query's group when it has one and the grid has groups."""
    dx, dy = q["dim_x"], q["dim_y"]
    cell = ctx.op("add", ctx.op("mul", z, ctx.op("mul", dx, dy)),
                  ctx.op("add", ctx.op("mul", y, dx), x))
    start = _element(ctx, q["cell_starts"], cell, int32)
    end = _element(ctx, q["cell_ends"], cell, int32)

    def narrowed() -> list[Var]:
        key = ctx.op("or", ctx.op("shl", ctx.op("cast", cell, type=uint64),
                                  ctx.const(32, uint64)),
                     ctx.op("cast", ctx.op("cast", q["group"], type=uint32), type=uint64))
        lo = _lower_bound(ctx, q["keys"], start, end, key)
        return [lo, _lower_bound(ctx, q["keys"], lo, end,
                                 ctx.op("add", key, ctx.const(1, uint64)))]

    lo, hi = if_values(ctx, q["use_groups"], narrowed, lambda: [start, end])
    return lo, hi


def _lower_bound(ctx: Ctx, keys: Var, lo: Var, hi: Var, key: Var) -> Var:
    """The first position in [lo, hi) whose key is >= key (binary search)."""
    def body(ps: list[Var]) -> list[Var]:
        a, b = ps
        mid = ctx.op("add", a, ctx.op("div", ctx.op("sub", b, a), _i32(ctx, 2)))
        less = ctx.op("lt", _element(ctx, keys, mid, uint64), key)
        return [ctx.op("select", less, ctx.op("add", mid, _i32(ctx, 1)), a),
                ctx.op("select", less, b, mid)]

    return while_loop(ctx, [lo, hi], lambda ps: ctx.op("lt", ps[0], ps[1]), body)[0]


# -- the builtins -------------------------------------------------------------------------------


@builtin("hash_grid_query", "a query over the candidate neighbours of point in a HashGrid: every "
         "point in the cells within max_dist along each axis (not filtered by distance); with "
         "group, only that group's points", differentiable=False, group=_GROUP,
         signatures=("(id: Int, point: Vector3, max_dist: Float) -> HashGridQuery",
                     "(id: Int, point: Vector3, max_dist: Float, group: Int) -> HashGridQuery"))
def hash_grid_query(ctx: Ctx, id: Value, point: Value, max_dist: Value,
                    group: Value | None = None) -> Value:
    desc = _descriptor(ctx, "hash_grid_query", id)
    if not (isinstance(point, Composite) and isinstance(point.type, VectorType)
            and point.type.length == 3 and point.type.dtype.is_float):
        raise ctx.error(f"wp.hash_grid_query() needs a vec3 point (vec3h, vec3f or vec3d), got "
                        f"{describe(point)}")
    t = point.type.dtype
    radius = materialize(ctx, max_dist, t)
    if not isinstance(radius, Var) or radius.type != t:
        raise ctx.error(f"wp.hash_grid_query(): max_dist must be {t} like the point, got "
                        f"{describe(max_dist)}")
    dims = [_field(ctx, desc, GRID_DIMS + 4 * k, int32) for k in range(3)]
    # read as bits: a constant of the grid, not a value gradients flow into
    bits = _field(ctx, desc, GRID_INV_WIDTH[t.name], {16: uint16, 32: uint32, 64: uint64}[t.bits])
    inv = ctx.op("bitcast", bits, type=t)
    starts, ends = [], []
    for k in range(3):
        p = point.comps[k]
        starts.append(_cell_coord(ctx, ctx.op("mul", ctx.op("sub", p, radius), inv)))
        end = _cell_coord(ctx, ctx.op("mul", ctx.op("add", p, radius), inv))
        ends.append(_span_end(ctx, starts[k], end, dims[k]))
    use_groups, group_id = _group(ctx, desc, group)
    fields: dict[str, Var] = {
        "point_ids": _field(ctx, desc, GRID_POINT_IDS, ptr),
        "cell_starts": _field(ctx, desc, GRID_CELL_STARTS, ptr),
        "cell_ends": _field(ctx, desc, GRID_CELL_ENDS, ptr),
        "keys": _field(ctx, desc, GRID_KEYS, ptr),
        "dim_x": dims[0], "dim_y": dims[1], "dim_z": dims[2],
        "group": group_id, "use_groups": use_groups,
    }
    wrapped = [_wrap(ctx, starts[k], dims[k]) for k in range(3)]
    last = [_wrap(ctx, ends[k], dims[k]) for k in range(3)]
    fields.update(wx_start=wrapped[0], wy_start=wrapped[1], wx=wrapped[0], wy=wrapped[1],
                  wz=wrapped[2], wx_end=last[0], wy_end=last[1], wz_end=last[2])
    zero = _i32(ctx, 0)
    q = _Query(StructVal(QUERY_TYPE, tuple(fields.get(n, zero) for n in _NAMES)))
    ci, ce = _set_cell(ctx, q, *wrapped)
    return q.with_(cell_index=ci, cell_end=ce)


def _group(ctx: Ctx, desc: Var, group: Value | None) -> tuple[Var, Var]:
    """(filter by group?, the group id): only when a group is given and the grid has groups."""
    if group is None:
        return ctx.const(False, bool_), _i32(ctx, 0)
    g = scalar(ctx, group, int32)
    if not g.type.is_int:
        raise ctx.error(f"wp.hash_grid_query(): group must be an integer, got {g.type}")
    if g.type != int32:
        g = ctx.op("cast", g, type=int32)
    has = ctx.op("ne", _field(ctx, desc, GRID_HAS_GROUPS, int32), _i32(ctx, 0))
    return has, g


@builtin("hash_grid_query_next", "advance a hash grid query: writes the next candidate's point "
         "index into index and returns True, or returns False (index unchanged) when none is "
         "left", differentiable=False, group=_GROUP,
         signatures="(query: HashGridQuery, index: Int) -> Bool")
def hash_grid_query_next(ctx: Ctx, query: Value, index: Value) -> OutArgs:
    q = _query_arg(ctx, "hash_grid_query_next", query)
    if not isinstance(index, Var) or not index.type.is_int:
        raise ctx.error("wp.hash_grid_query_next(): index must be an integer variable "
                        f"(e.g. index = int(0)), got {describe(index)}")
    found, new_q, new_index = _next(ctx, q, index)
    return OutArgs(found, ((0, new_q), (1, new_index)))


def _query_arg(ctx: Ctx, name: str, query: Value) -> StructVal:
    if not isinstance(query, StructVal) or query.type is not QUERY_TYPE:
        raise ctx.error(f"wp.{name}() needs a query from wp.hash_grid_query(), got "
                        f"{describe(query)}")
    return query


def _next(ctx: Ctx, query: StructVal, index: Var) -> tuple[Var, StructVal, Var]:
    """Move to the next candidate: (found, the advanced query, the index or index unchanged)."""
    q = _Query(query)

    def step(ps: list[Var]) -> list[Var]:
        ci, ce, _, wx, wy, wz = ps
        op = ctx.op
        # the last cell of a row, of a column, of the span: reached once each (see _FIELDS)
        wrap_x = op("eq", wx, q["wx_end"])
        wx2 = op("select", wrap_x, q["wx_start"], _wrap_next(ctx, wx, q["dim_x"]))
        wrap_y = op("and", wrap_x, op("eq", wy, q["wy_end"]))
        wy2 = op("select", wrap_y, q["wy_start"],
                 op("select", wrap_x, _wrap_next(ctx, wy, q["dim_y"]), wy))
        done = op("and", wrap_y, op("eq", wz, q["wz_end"]))
        wz1 = op("select", wrap_y, _wrap_next(ctx, wz, q["dim_z"]), wz)
        start, end = _set_cell(ctx, q, wx2, wy2, wz1)  # a valid cell even when done
        return [op("select", done, ci, start), op("select", done, ce, end), done, wx2, wy2, wz1]

    def more(ps: list[Var]) -> Var:
        return ctx.op("and", ctx.op("ge", ps[0], ps[1]), ctx.op("not", ps[2]))

    ci, ce, _, wx, wy, wz = while_loop(
        ctx, [q["cell_index"], q["cell_end"], ctx.const(False, bool_), q["wx"], q["wy"], q["wz"]],
        more, step)
    found = ctx.op("lt", ci, ce)
    # point_ids has a spare slot at the end, so this load is in bounds even when nothing is found
    point = _element(ctx, q["point_ids"], ci, int32)
    if index.type != int32:
        point = ctx.op("cast", point, type=index.type)
    new_index = ctx.op("select", found, point, index)
    ci = ctx.op("add", ci, ctx.op("select", found, _i32(ctx, 1), _i32(ctx, 0)))
    return found, q.with_(cell_index=ci, cell_end=ce, wx=wx, wy=wy, wz=wz), new_index


@builtin("hash_grid_point_id", "the original index of the point at position index of the "
         "HashGrid's cell-sorted order (-1 when the grid was never built)",
         differentiable=False, group=_GROUP, signatures="(id: Int, index: Int) -> Int")
def hash_grid_point_id(ctx: Ctx, id: Value, index: Value) -> Value:
    desc = _descriptor(ctx, "hash_grid_point_id", id)
    i = scalar(ctx, index, int32)
    if not i.type.is_int:
        raise ctx.error(f"wp.hash_grid_point_id(): index must be an integer, got {i.type}")
    i64 = ctx.op("cast", i, type=int64) if i.type != int64 else i
    if config.mode == "debug":
        ready = ctx.op("ne", _field(ctx, desc, GRID_READY, int32), _i32(ctx, 0))
        n = ctx.op("cast", _field(ctx, desc, GRID_NUM_POINTS, int32), type=int64)
        at = ctx.op("select", ready, i64, ctx.const(0, int64))
        limit = ctx.op("select", ready, n, ctx.const(1, int64))
        ctx.b.effect("check_bounds", (at, limit), ctx.loc, attr=ctx.b.loc_index(ctx.loc))
    # one primitive, not loads: the sorted ids are a permutation of the points, a fact the
    # thread plan needs (threads storing at their point's index share a launch)
    return ctx.op("permute", desc, i64, attr=(GRID_POINT_IDS, GRID_NUM_POINTS, GRID_READY),
                  type=int32)
