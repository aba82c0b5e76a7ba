"""BVH queries in kernels: `bvh_query_aabb`, `bvh_query_ray`, `bvh_query_next` and
`for index in query:` over a `wp.Bvh` (runtime/bvh.py).

The query (`wp.BvhQuery`) is a struct of integers: the node array, the node count, the next
node, the kind (box or ray) and six float32 values held as bits (the box's bounds, or the
ray's origin and 1 / direction). Each step walks the depth-first node order with skip pointers
to the next leaf whose box the query box overlaps or the ray hits (t >= 0); that leaf's box
index is the candidate.
"""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import StructType, bool_, float32, int32, ptr, uint32
from ..types.mesh_layout import MESH_NODES, MESH_NUM_NODES
from .mesh import V3, _descriptor, _field, node
from .mesh_ray import _vec3
from .registry import builtin
from .values import Ctx, OutArgs, StructVal, Value, describe, while_loop

_FIELDS: tuple[tuple[str, object], ...] = (
    ("nodes", ptr), ("count", int32), ("index", int32), ("is_ray", bool_),
    ("a0", uint32), ("a1", uint32), ("a2", uint32), ("b0", uint32), ("b1", uint32),
    ("b2", uint32), ("bounds_nr", int32))
_NAMES = [n for n, _ in _FIELDS]


class BvhQuery:
    """`wp.BvhQuery`: the state of a BVH box or ray query."""

    __gl_type__: StructType

    @staticmethod
    def gl_iterate(ctx: Ctx, query: Value, index: Var | None) -> tuple[Var, Value, Var]:
        """One step of `for index in query:`: (found, the advanced query, the index)."""
        q = _query_arg(ctx, "bvh_query_next", query)
        return _next(ctx, q, index if index is not None else ctx.const(0, int32))


QUERY_TYPE = StructType("BvhQuery", _FIELDS, BvhQuery)
BvhQuery.__gl_type__ = QUERY_TYPE


def _start(ctx: Ctx, name: str, id: Value, is_ray: bool, a: V3, b: V3) -> StructVal:
    desc = _descriptor(ctx, name, id)
    bits = [ctx.op("bitcast", x, type=uint32) for x in (*a, *b)]
    return StructVal(QUERY_TYPE, (_field(ctx, desc, MESH_NODES, ptr),
                                  _field(ctx, desc, MESH_NUM_NODES, int32), ctx.const(0, int32),
                                  ctx.const(is_ray, bool_), *bits, ctx.const(-1, int32)))


@builtin("bvh_query_aabb", "a query over the boxes of a Bvh that overlap the box [low, high] "
         "(advance it with bvh_query_next or `for index in query:`)", differentiable=False,
         group="Geometry", signatures="(id: uint64, low: vec3f, high: vec3f) -> BvhQuery")
def bvh_query_aabb(ctx: Ctx, id: Value, low: Value, high: Value) -> Value:
    return _start(ctx, "bvh_query_aabb", id, False, _vec3(ctx, "bvh_query_aabb", "low", low),
                  _vec3(ctx, "bvh_query_aabb", "high", high))


@builtin("bvh_query_ray", "a query over the boxes of a Bvh that the ray start + t * dir "
         "(t >= 0) hits (advance it with bvh_query_next or `for index in query:`)",
         differentiable=False, group="Geometry",
         signatures="(id: uint64, start: vec3f, dir: vec3f) -> BvhQuery")
def bvh_query_ray(ctx: Ctx, id: Value, start: Value, dir: Value) -> Value:
    o = _vec3(ctx, "bvh_query_ray", "start", start)
    d = _vec3(ctx, "bvh_query_ray", "dir", dir)
    zero, big = ctx.const(0.0, float32), ctx.const(1e30, float32)
    inv: V3 = (*(ctx.op("select", ctx.op("eq", x, zero), big,
                        ctx.op("div", ctx.const(1.0, float32), x)) for x in d),)  # type: ignore
    return _start(ctx, "bvh_query_ray", id, True, o, inv)


@builtin("bvh_query_next", "advance a BVH query: writes the next candidate box's index into "
         "index and returns True, or returns False (index unchanged) when none is left",
         differentiable=False, group="Geometry",
         signatures="(query: BvhQuery, index: Int) -> Bool")
def bvh_query_next(ctx: Ctx, query: Value, index: Value) -> OutArgs:
    q = _query_arg(ctx, "bvh_query_next", query)
    if not isinstance(index, Var) or not index.type.is_int:
        raise ctx.error("wp.bvh_query_next(): index must be an integer variable (e.g. index = "
                        f"int(0)), got {describe(index)}")
    found, new_q, new_index = _next(ctx, q, index)
    return OutArgs(found, ((0, new_q), (1, new_index)))


def _query_arg(ctx: Ctx, name: str, query: Value) -> StructVal:
    if not isinstance(query, StructVal) or query.type is not QUERY_TYPE:
        raise ctx.error(f"wp.{name}() needs a query from wp.bvh_query_aabb() or "
                        f"wp.bvh_query_ray(), got {describe(query)}")
    return query


def _touches(ctx: Ctx, is_ray: Var, a: V3, b: V3, lo: V3, hi: V3) -> Var:
    """The node box [lo, hi] overlaps the query box [a, b], or the ray (origin a, 1/dir b)
    enters it at some t >= 0."""
    op = ctx.op
    overlap = ctx.const(True, bool_)
    t0, t1 = ctx.const(0.0, float32), ctx.const(3.0e38, float32)
    for k in range(3):
        overlap = op("and", overlap, op("and", op("le", lo[k], b[k]), op("ge", hi[k], a[k])))
        s = op("mul", op("sub", lo[k], a[k]), b[k])
        e = op("mul", op("sub", hi[k], a[k]), b[k])
        t0, t1 = op("max", t0, op("min", s, e)), op("min", t1, op("max", s, e))
    return op("select", is_ray, op("le", t0, t1), overlap)


def _next(ctx: Ctx, query: StructVal, index: Var) -> tuple[Var, StructVal, Var]:
    f: dict[str, Var] = {}
    for n, v in zip(_NAMES, query.fields, strict=True):
        assert isinstance(v, Var)
        f[n] = v
    op = ctx.op
    vals = [op("bitcast", f[k], type=float32) for k in ("a0", "a1", "a2", "b0", "b1", "b2")]
    a: V3 = (vals[0], vals[1], vals[2])
    b: V3 = (vals[3], vals[4], vals[5])

    def step(s: list[Var]) -> list[Var]:
        lo, hi, skip, prim = node(ctx, f["nodes"], s[0])
        touch = _touches(ctx, f["is_ray"], a, b, lo, hi)
        hit = op("and", touch, op("ge", prim, ctx.const(0, int32)))
        nxt = op("select", op("or", op("not", touch), hit), skip,
                 op("add", s[0], ctx.const(1, int32)))
        return [nxt, hit, op("select", hit, prim, s[2])]

    def more(s: list[Var]) -> Var:
        return op("and", op("lt", s[0], f["count"]), op("not", s[1]))

    i, found, box = while_loop(ctx, [f["index"], ctx.const(False, bool_), f["bounds_nr"]], more,
                               step)
    out = box if index.type == int32 else op("cast", box, type=index.type)
    fields = tuple(i if n == "index" else box if n == "bounds_nr" else v
                   for n, v in zip(_NAMES, query.fields, strict=True))
    return found, StructVal(QUERY_TYPE, fields), op("select", found, out, index)
