"""BVH queries in kernels: `bvh_query_aabb`, `bvh_query_ray`, `bvh_query_capsule`,
`bvh_query_sphere`, `bvh_query_next`, `for index in query:` and `bvh_get_group_root` over a
`wp.Bvh` (runtime/geometry/bvh.py).

The query (`wp.BvhQuery`) is a struct of integers: the node array, the end of the walked
range, the next node, the kind (box, ray, capsule, sphere) and seven float32 values held as
bits (the box's bounds; the ray's origin and 1 / direction; the capsule's start, 1 / direction
and radius; the sphere's centre and radius). Every kind is one struct type, so a query chosen
at run time (a branch merging two kinds, a `wp.BvhQuery` parameter) iterates by its stored
kind. Each step walks the depth-first node order with skip pointers to the next leaf the query
touches; that leaf's box index is the candidate. A query from a subtree root (`root >= 0`, e.g.
a group's root) walks that subtree's range only.
"""

from __future__ import annotations

import math

from ..ir.nodes import Var
from ..types import StructType, bool_, float32, int32, int64, ptr, uint32
from ..types.bvh_layout import BVH_GROUP_KEYS, BVH_GROUP_ROOTS, BVH_NUM_GROUPS
from ..types.mesh_layout import MESH_NODES, MESH_NUM_NODES
from .mesh import V3, _descriptor, _field, _load, node
from .mesh_ray import _vec3
from .registry import builtin
from .values import Ctx, OutArgs, StructVal, Value, describe, materialize, while_loop

AABB, RAY, CAPSULE, SPHERE = 0, 1, 2, 3
_FIELDS: tuple[tuple[str, object], ...] = (
    ("nodes", ptr), ("count", int32), ("index", int32), ("kind", int32),
    ("a0", uint32), ("a1", uint32), ("a2", uint32), ("b0", uint32), ("b1", uint32),
    ("b2", uint32), ("radius", uint32), ("bounds_nr", int32))
_NAMES = [n for n, _ in _FIELDS]
_GROUP = "Geometry"


class BvhQuery:
    """`wp.BvhQuery`: the state of a BVH box, ray, capsule or sphere query."""

    __gl_type__: StructType

    @staticmethod
    def gl_iterate(ctx: Ctx, query: Value, index: Var | None) -> tuple[Var, Value, Var]:
        """One step of `for index in query:`: (found, the advanced query, the index)."""
        q = _query_arg(ctx, "bvh_query_next", query)
        return _next(ctx, q, index if index is not None else ctx.const(0, int32),
                     ctx.const(math.inf, float32))


QUERY_TYPE = StructType("BvhQuery", _FIELDS, BvhQuery)
BvhQuery.__gl_type__ = QUERY_TYPE


def _int(ctx: Ctx, name: str, arg: str, v: Value) -> Var:
    x = materialize(ctx, v, int32)
    if not isinstance(x, Var) or not x.type.is_int:
        raise ctx.error(f"wp.{name}(): {arg} must be an integer, got {describe(v)}")
    return x if x.type == int32 else ctx.op("cast", x, type=int32)


def _float(ctx: Ctx, name: str, arg: str, v: Value) -> Var:
    x = materialize(ctx, v, float32)
    if not isinstance(x, Var) or x.type != float32:
        raise ctx.error(f"wp.{name}(): {arg} must be a float32, got {describe(v)}")
    return x


def _start(ctx: Ctx, name: str, id: Value, kind: int, a: V3, b: V3, radius: Var,
           root: Value | None) -> StructVal:
    """The query state: the walk over [0, node count), or over root's subtree."""
    op = ctx.op
    desc = _descriptor(ctx, name, id)
    nodes = _field(ctx, desc, MESH_NODES, ptr)
    count = _field(ctx, desc, MESH_NUM_NODES, int32)
    r = ctx.const(-1, int32) if root is None else _int(ctx, name, "root", root)
    sub = op("ge", r, ctx.const(0, int32))
    first = op("select", sub, r, ctx.const(0, int32))
    end = op("select", sub, node(ctx, nodes, first)[2], count)
    bits = [op("bitcast", x, type=uint32) for x in (*a, *b, radius)]
    return StructVal(QUERY_TYPE, (nodes, end, first, ctx.const(kind, int32), *bits,
                                  ctx.const(-1, int32)))


def _inverse(ctx: Ctx, d: V3) -> V3:
    zero, big = ctx.const(0.0, float32), ctx.const(1e30, float32)
    return tuple(ctx.op("select", ctx.op("eq", x, zero), big,  # type: ignore[return-value]
                        ctx.op("div", ctx.const(1.0, float32), x)) for x in d)


@builtin("bvh_query_aabb", "a query over the boxes of a Bvh that overlap the box [low, high], "
         "from the global root or (root >= 0) the subtree at root, e.g. a group's root from "
         "bvh_get_group_root (advance it with bvh_query_next or `for index in query:`)",
         differentiable=False, group=_GROUP,
         signatures="(id: uint64, low: vec3f, high: vec3f, root: int32 = -1) -> BvhQuery")
def bvh_query_aabb(ctx: Ctx, id: Value, low: Value, high: Value, root: Value | None = None) -> Value:
    n = "bvh_query_aabb"
    return _start(ctx, n, id, AABB, _vec3(ctx, n, "low", low), _vec3(ctx, n, "high", high),
                  ctx.const(0.0, float32), root)


@builtin("bvh_query_ray", "a query over the boxes of a Bvh that the ray start + t * dir "
         "(t >= 0, and t <= max_dist of bvh_query_next) hits, from the global root or the "
         "subtree at root", differentiable=False, group=_GROUP,
         signatures="(id: uint64, start: vec3f, dir: vec3f, root: int32 = -1) -> BvhQuery")
def bvh_query_ray(ctx: Ctx, id: Value, start: Value, dir: Value, root: Value | None = None) -> Value:
    n = "bvh_query_ray"
    o, d = _vec3(ctx, n, "start", start), _vec3(ctx, n, "dir", dir)
    return _start(ctx, n, id, RAY, o, _inverse(ctx, d), ctx.const(0.0, float32), root)


@builtin("bvh_query_capsule", "a conservative query over the boxes of a Bvh that the capsule "
         "swept along start + t * dir (t in [0, max_dist] of bvh_query_next: pass dir = p1 - p0 "
         "and max_dist = 1.0 for the segment p0..p1) with this radius may touch: each box grown "
         "by radius on every side, then the ray's slab test (a negative radius counts as 0)",
         differentiable=False, group=_GROUP,
         signatures="(id: uint64, start: vec3f, dir: vec3f, radius: float32, root: int32 = -1)"
                    " -> BvhQuery")
def bvh_query_capsule(ctx: Ctx, id: Value, start: Value, dir: Value, radius: Value,
                      root: Value | None = None) -> Value:
    n = "bvh_query_capsule"
    o, d = _vec3(ctx, n, "start", start), _vec3(ctx, n, "dir", dir)
    r = ctx.op("max", _float(ctx, n, "radius", radius), ctx.const(0.0, float32))
    return _start(ctx, n, id, CAPSULE, o, _inverse(ctx, d), r, root)


@builtin("bvh_query_sphere", "a query over the boxes of a Bvh within radius of center (the "
         "squared distance from center to the box at most radius squared; a negative radius "
         "counts as 0), from the global root or the subtree at root", differentiable=False,
         group=_GROUP,
         signatures="(id: uint64, center: vec3f, radius: float32, root: int32 = -1) -> BvhQuery")
def bvh_query_sphere(ctx: Ctx, id: Value, center: Value, radius: Value,
                     root: Value | None = None) -> Value:
    n = "bvh_query_sphere"
    c = _vec3(ctx, n, "center", center)
    r = ctx.op("max", _float(ctx, n, "radius", radius), ctx.const(0.0, float32))
    return _start(ctx, n, id, SPHERE, c, c, r, root)


@builtin("bvh_query_next", "advance a BVH query: writes the next candidate box's index into "
         "index and returns True, or returns False (index unchanged) when none is left; "
         "max_dist bounds ray and capsule queries along dir (in multiples of its length)",
         differentiable=False, group=_GROUP,
         signatures="(query: BvhQuery, index: Int, max_dist: float32 = inf) -> Bool")
def bvh_query_next(ctx: Ctx, query: Value, index: Value, max_dist: Value | None = None) -> OutArgs:
    q = _query_arg(ctx, "bvh_query_next", query)
    if not isinstance(index, Var) or not index.type.is_int:
        raise ctx.error("wp.bvh_query_next(): index must be an integer variable (e.g. index = "
                        f"int(0)), got {describe(index)}")
    md = ctx.const(math.inf, float32) if max_dist is None else \
        _float(ctx, "bvh_query_next", "max_dist", max_dist)
    found, new_q, new_index = _next(ctx, q, index, md)
    return OutArgs(found, ((0, new_q), (1, new_index)))


@builtin("bvh_get_group_root", "the root node of a group's subtree in a grouped Bvh, to pass as "
         "root to the bvh_query_* builtins; -1 (the global root) for a group that does not "
         "exist (an ungrouped Bvh is group 0)", differentiable=False, group=_GROUP,
         signatures="(id: uint64, group: int32) -> int32")
def bvh_get_group_root(ctx: Ctx, id: Value, group: Value) -> Var:
    op, name = ctx.op, "bvh_get_group_root"
    desc = _descriptor(ctx, name, id)
    g = _int(ctx, name, "group", group)
    keys, roots = _field(ctx, desc, BVH_GROUP_KEYS, ptr), _field(ctx, desc, BVH_GROUP_ROOTS, ptr)
    n = _field(ctx, desc, BVH_NUM_GROUPS, int32)
    one = ctx.const(1, int32)

    def key(i: Var) -> Var:
        return _load(ctx, keys, op("mul", op("cast", i, type=int64), ctx.const(4, int64)), int32)

    def step(s: list[Var]) -> list[Var]:  # the first key >= g in [lo, hi)
        mid = op("shr", op("add", s[0], s[1]), one)
        below = op("lt", key(mid), g)
        return [op("select", below, op("add", mid, one), s[0]), op("select", below, s[1], mid)]

    lo, _ = while_loop(ctx, [ctx.const(0, int32), n], lambda s: op("lt", s[0], s[1]), step)
    at = op("min", lo, op("max", op("sub", n, one), ctx.const(0, int32)))
    hit = op("and", op("lt", lo, n), op("eq", key(at), g))
    root = _load(ctx, roots, op("mul", op("cast", at, type=int64), ctx.const(4, int64)), int32)
    return op("select", hit, root, ctx.const(-1, int32))


def _query_arg(ctx: Ctx, name: str, query: Value) -> StructVal:
    if not isinstance(query, StructVal) or query.type is not QUERY_TYPE:
        raise ctx.error(f"wp.{name}() needs a query from wp.bvh_query_aabb(), "
                        f"wp.bvh_query_ray(), wp.bvh_query_capsule() or wp.bvh_query_sphere(), "
                        f"got {describe(query)}")
    return query


def _touches(ctx: Ctx, kind: Var, a: V3, b: V3, r: Var, md: Var, lo: V3, hi: V3) -> Var:
    """Whether the node box [lo, hi] is touched by the query of this kind: it overlaps the box
    [a, b]; the ray (origin a, 1/dir b) meets it at some t in [0, md] (the box grown by r for a
    capsule, r = 0 for a ray); its squared distance to the centre a is at most r * r."""
    op = ctx.op
    zero = ctx.const(0.0, float32)
    overlap = ctx.const(True, bool_)
    t0, t1 = zero, op("min", md, ctx.const(3.0e38, float32))
    d2 = zero
    for k in range(3):
        ok = op("and", op("le", lo[k], b[k]), op("ge", hi[k], a[k]))
        overlap = op("and", overlap, ok)
        s = op("mul", op("sub", op("sub", lo[k], r), a[k]), b[k])
        e = op("mul", op("sub", op("add", hi[k], r), a[k]), b[k])
        t0, t1 = op("max", t0, op("min", s, e)), op("min", t1, op("max", s, e))
        gap = op("max", op("max", op("sub", lo[k], a[k]), op("sub", a[k], hi[k])), zero)
        d2 = op("add", d2, op("mul", gap, gap))
    swept = op("le", t0, t1)
    near = op("le", d2, op("mul", r, r))
    return op("select", op("eq", kind, ctx.const(AABB, int32)), overlap,
              op("select", op("eq", kind, ctx.const(SPHERE, int32)), near, swept))


def _next(ctx: Ctx, query: StructVal, index: Var, md: Var) -> tuple[Var, StructVal, Var]:
    f: dict[str, Var] = {}
    for n, v in zip(_NAMES, query.fields, strict=True):
        assert isinstance(v, Var)
        f[n] = v
    op = ctx.op
    vals = [op("bitcast", f[k], type=float32)
            for k in ("a0", "a1", "a2", "b0", "b1", "b2", "radius")]
    a: V3 = (vals[0], vals[1], vals[2])
    b: V3 = (vals[3], vals[4], vals[5])

    def step(s: list[Var]) -> list[Var]:
        lo, hi, skip, prim = node(ctx, f["nodes"], s[0])
        touch = _touches(ctx, f["kind"], a, b, vals[6], md, lo, hi)
        hit = op("and", touch, op("ge", prim, ctx.const(0, int32)))
        nxt = op("select", op("or", op("not", touch), hit), skip,
                 op("add", s[0], ctx.const(1, int32)))
        return [nxt, hit, op("select", hit, prim, s[2])]

    def more(s: list[Var]) -> Var:
        return op("and", op("lt", s[0], f["count"]), op("not", s[1]))

    i, found, box = while_loop(ctx, [f["index"], ctx.const(False, bool_), f["bounds_nr"]],
                               more, step)
    out = box if index.type == int32 else op("cast", box, type=index.type)
    fields = tuple(i if n == "index" else box if n == "bounds_nr" else v
                   for n, v in zip(_NAMES, query.fields, strict=True))
    return found, StructVal(QUERY_TYPE, fields), op("select", found, out, index)

