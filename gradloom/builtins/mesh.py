"""Mesh queries in kernels: `mesh_query_point_no_sign` and `mesh_eval_position`.

A kernel receives a `Mesh.id` (uint64): the address of the descriptor runtime/geometry/mesh.py writes
(offsets in types/mesh_layout.py). The BVH's nodes are in depth-first order with skip pointers:
`walk` visits them with integer state only (no stack), for queries that visit every node a test
accepts; the closest-point search walks nearest box first with a stack (builtins/bvh_stack.py)
and then computes the found face's closest point again from the query point. Vertex positions are read with plain loads, so
gradients flow to the query point through the closest-point arithmetic (piecewise smooth), not
to the mesh's points; they reach the points through the user's own reads (e.g. `points[i]`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.nodes import Var
from ..types import (
    StructType,
    VectorType,
    bool_,
    float32,
    int32,
    int64,
    ptr,
    vec3f,
)
from ..types.mesh_layout import (
    MESH_INDICES,
    MESH_NODES,
    MESH_NUM_NODES,
    MESH_POINTS,
)
from .bvh_stack import detach, detach3, found_triangle, nearest_walk
from .mesh_nodes import V3, _descriptor, _field, _load, node
from .query_memo import remembered
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


class MeshQueryPoint:
    """`wp.MeshQueryPoint`: the result of a closest-point query (result, sign, face, u, v)."""

    __gl_type__: StructType


POINT_TYPE = StructType("MeshQueryPoint", (("result", bool_), ("sign", float32),
                                           ("face", int32), ("u", float32), ("v", float32)),
                        MeshQueryPoint)
MeshQueryPoint.__gl_type__ = POINT_TYPE


def _vertex(ctx: Ctx, points: Var, indices: Var, face: Var, corner: int) -> V3:
    """Corner `corner` of triangle `face`: points[indices[3 * face + corner]]."""
    f = ctx.op("cast", face, type=int64)
    slot = ctx.op("add", ctx.op("mul", f, ctx.const(12, int64)), ctx.const(4 * corner, int64))
    vi = ctx.op("cast", _load(ctx, indices, slot, int32), type=int64)
    base = ctx.op("mul", vi, ctx.const(12, int64))
    return tuple(_load(ctx, points, ctx.op("add", base, ctx.const(4 * k, int64)), float32)
                 for k in range(3))  # type: ignore[return-value]


class _Ops:
    """Scalar and vec3 arithmetic on IR values (readable closest-point code)."""

    def __init__(self, ctx: Ctx) -> None:
        self.c = ctx

    def sub3(self, a: V3, b: V3) -> V3:
        return tuple(self.c.op("sub", x, y) for x, y in zip(a, b, strict=True))  # type: ignore

    def dot(self, a: V3, b: V3) -> Var:
        c = self.c
        return c.op("add", c.op("add", c.op("mul", a[0], b[0]), c.op("mul", a[1], b[1])),
                    c.op("mul", a[2], b[2]))

    def k(self, v: float) -> Var:
        return self.c.const(v, float32)

    def safe_div(self, a: Var, b: Var) -> Var:
        """a / b, with 1 for b == 0 (the quotient is then discarded by a select; a finite
        value keeps the unused branch's adjoint finite)."""
        zero = self.c.op("eq", b, self.k(0.0))
        return self.c.op("div", a, self.c.op("select", zero, self.k(1.0), b))


def _and(ctx: Ctx, *conds: Var) -> Var:
    out = conds[0]
    for c in conds[1:]:
        out = ctx.op("and", out, c)
    return out


def closest_bary(ctx: Ctx, p: V3, a: V3, b: V3, c: V3) -> tuple[Var, Var, Var]:
    """Barycentric weights (of a, b, c) of the point of triangle abc closest to p: the Voronoi
    regions of vertices, edges and face in priority order (Ericson, Real-Time Collision
    Detection §5.1.5), every region evaluated and the first that holds selected."""
    o = _Ops(ctx)
    ab, ac, ap, bp, cp = o.sub3(b, a), o.sub3(c, a), o.sub3(p, a), o.sub3(p, b), o.sub3(p, c)
    d1, d2, d3, d4 = o.dot(ab, ap), o.dot(ac, ap), o.dot(ab, bp), o.dot(ac, bp)
    d5, d6 = o.dot(ab, cp), o.dot(ac, cp)
    op = ctx.op
    vc = op("sub", op("mul", d1, d4), op("mul", d3, d2))
    vb = op("sub", op("mul", d5, d2), op("mul", d1, d6))
    va = op("sub", op("mul", d3, d6), op("mul", d5, d4))
    z, one = o.k(0.0), o.k(1.0)
    den = op("add", op("add", va, vb), vc)
    v_in, w_in = o.safe_div(vb, den), o.safe_div(vc, den)
    e43, e56 = op("sub", d4, d3), op("sub", d5, d6)
    w_bc = o.safe_div(e43, op("add", e43, e56))
    w_ac = o.safe_div(d2, op("sub", d2, d6))
    v_ab = o.safe_div(d1, op("sub", d1, d3))
    # (condition, weights), highest priority first; the interior is the fallback
    regions: list[tuple[Var, tuple[Var, Var, Var]]] = [
        (_and(ctx, op("le", d1, z), op("le", d2, z)), (one, z, z)),
        (_and(ctx, op("ge", d3, z), op("le", d4, d3)), (z, one, z)),
        (_and(ctx, op("le", vc, z), op("ge", d1, z), op("le", d3, z)),
         (op("sub", one, v_ab), v_ab, z)),
        (_and(ctx, op("ge", d6, z), op("le", d5, d6)), (z, z, one)),
        (_and(ctx, op("le", vb, z), op("ge", d2, z), op("le", d6, z)),
         (op("sub", one, w_ac), z, w_ac)),
        (_and(ctx, op("le", va, z), op("ge", e43, z), op("ge", e56, z)),
         (z, op("sub", one, w_bc), w_bc)),
    ]
    w = (op("sub", op("sub", one, v_in), w_in), v_in, w_in)
    for cond, ws in reversed(regions):
        w = tuple(op("select", cond, x, y) for x, y in zip(ws, w, strict=True))  # type: ignore
    return w


def closest_dist2(ctx: Ctx, p: V3, a: V3, b: V3, c: V3) -> Var:
    """The squared distance from p to triangle abc, for the walk's comparisons: closest_bary's
    regions in the same priority, but each region picks its weights' numerators and common
    denominator and one division follows (closest_bary divides five times, every region's
    weights evaluated); the same point up to rounding."""
    o, op = _Ops(ctx), ctx.op
    ab, ac, ap, bp, cp = o.sub3(b, a), o.sub3(c, a), o.sub3(p, a), o.sub3(p, b), o.sub3(p, c)
    d1, d2, d3, d4 = o.dot(ab, ap), o.dot(ac, ap), o.dot(ab, bp), o.dot(ac, bp)
    d5, d6 = o.dot(ab, cp), o.dot(ac, cp)
    vc = op("sub", op("mul", d1, d4), op("mul", d3, d2))
    vb = op("sub", op("mul", d5, d2), op("mul", d1, d6))
    va = op("sub", op("mul", d3, d6), op("mul", d5, d4))
    z, one = o.k(0.0), o.k(1.0)
    e43, e56 = op("sub", d4, d3), op("sub", d5, d6)
    # (condition, (numerator of b's weight, of c's weight, denominator)), priority order
    regions: list[tuple[Var, tuple[Var, Var, Var]]] = [
        (_and(ctx, op("le", d1, z), op("le", d2, z)), (z, z, one)),
        (_and(ctx, op("ge", d3, z), op("le", d4, d3)), (one, z, one)),
        (_and(ctx, op("le", vc, z), op("ge", d1, z), op("le", d3, z)),
         (d1, z, op("sub", d1, d3))),
        (_and(ctx, op("ge", d6, z), op("le", d5, d6)), (z, one, one)),
        (_and(ctx, op("le", vb, z), op("ge", d2, z), op("le", d6, z)),
         (z, d2, op("sub", d2, d6))),
        (_and(ctx, op("le", va, z), op("ge", e43, z), op("ge", e56, z)),
         (e56, e43, op("add", e43, e56))),
    ]
    w = (vb, vc, op("add", op("add", va, vb), vc))
    for cond, ws in reversed(regions):
        w = tuple(op("select", cond, x, y) for x, y in zip(ws, w, strict=True))  # type: ignore
    inv = o.safe_div(one, w[2])
    v, t = op("mul", w[0], inv), op("mul", w[1], inv)
    d = tuple(op("sub", ap[k], op("add", op("mul", v, ab[k]), op("mul", t, ac[k])))
              for k in range(3))
    return o.dot(d, d)  # type: ignore[arg-type]


def _box_dist2(ctx: Ctx, p: V3, lo: V3, hi: V3) -> Var:
    """Squared distance from p to the box [lo, hi] (0 inside)."""
    total = ctx.const(0.0, float32)
    for k in range(3):
        d = ctx.op("max", ctx.op("max", ctx.op("sub", lo[k], p[k]), ctx.op("sub", p[k], hi[k])),
                   ctx.const(0.0, float32))
        total = ctx.op("add", total, ctx.op("mul", d, d))
    return total


def _point_arg(ctx: Ctx, name: str, point: Value) -> V3:
    if not (isinstance(point, Composite) and isinstance(point.type, VectorType)
            and point.type.length == 3 and point.type.dtype == float32):
        raise ctx.error(f"wp.{name}() needs a wp.vec3 point, got {describe(point)}")
    return point.comps  # type: ignore[return-value]


FarFn = Callable[[V3, V3, list[Var]], Var]
LeafFn = Callable[[Var, V3, V3, V3, list[Var]], list[Var]]


def walk(ctx: Ctx, desc: Var, state: list[Var], far: FarFn, leaf: LeafFn) -> list[Var]:
    """Visit the BVH depth first with skip pointers: a node whose box `far(lower, upper,
    state)` rejects is skipped with its subtree; at a leaf, `leaf(face, a, b, c, state)`
    gives the new state. Returns the final state."""
    nodes = _field(ctx, desc, MESH_NODES, ptr)
    points, indices = _field(ctx, desc, MESH_POINTS, ptr), _field(ctx, desc, MESH_INDICES, ptr)
    n = _field(ctx, desc, MESH_NUM_NODES, int32)
    op = ctx.op

    def body(s: list[Var]) -> list[Var]:
        i, rest = s[0], s[1:]
        lo, hi, skip, prim = node(ctx, nodes, i)
        rejected = far(lo, hi, rest)
        is_leaf = op("and", op("not", rejected), op("ge", prim, ctx.const(0, int32)))

        def visit() -> list[Var]:
            a, b, c = (_vertex(ctx, points, indices, prim, k) for k in range(3))
            return leaf(prim, a, b, c, rest)

        kept = list(rest)
        new = if_values(ctx, is_leaf, visit, lambda: kept)
        nxt = op("select", op("or", rejected, is_leaf), skip, op("add", i, ctx.const(1, int32)))
        return [nxt, *new]

    return while_loop(ctx, [ctx.const(0, int32), *state], lambda s: op("lt", s[0], n), body)[1:]


def _memo_key(ctx: Ctx, desc: Var, floats: list[Var]) -> list[Var]:
    """A query's inputs as int32 words: the floats' bits and the descriptor's address."""
    op = ctx.op
    addr = op("cast", desc, type=int64)
    return [*(op("bitcast", x, type=int32) for x in floats), op("cast", addr, type=int32),
            op("cast", op("shr", addr, ctx.const(32, int64)), type=int32)]


def _beyond_plane(ctx: Ctx, p: V3, a: V3, b: V3, c: V3, best2: Var) -> Var:
    """The squared distance from p to the plane of triangle abc exceeds best2 (a degenerate
    triangle's 0 > 0 never does)."""
    o, op = _Ops(ctx), ctx.op
    e, f = o.sub3(b, a), o.sub3(c, a)
    n: V3 = tuple(op("sub", op("mul", e[(k + 1) % 3], f[(k + 2) % 3]),  # type: ignore
                     op("mul", e[(k + 2) % 3], f[(k + 1) % 3])) for k in range(3))
    h = o.dot(o.sub3(p, a), n)
    return op("gt", op("mul", h, h), op("mul", best2, o.dot(n, n)))


def _closest(ctx: Ctx, desc: Var, p: V3, max_dist: Var, memo: bool = False) -> list[Var]:
    """The closest point within max_dist: [squared distance, face (-1 if none), u, v]. The
    walk (builtins/bvh_stack.py) finds the face on detached values; its closest point is then
    computed again from p itself, so gradients reach p through that face's closest point.
    `memo`: the walk's answer is remembered per thread (builtins/query_memo.py)."""
    op = ctx.op
    pd = detach3(ctx, p)

    def nearest(q: V3, a: V3, b: V3, c: V3) -> tuple[Var, Var, Var, Var]:
        wa, wb, wc = closest_bary(ctx, q, a, b, c)
        at: V3 = tuple(op("add", op("add", op("mul", wa, a[k]), op("mul", wb, b[k])),  # type: ignore
                          op("mul", wc, c[k])) for k in range(3))
        d = _Ops(ctx).sub3(q, at)
        return _Ops(ctx).dot(d, d), wa, wb, wc

    def leaf(tri: Var, a: V3, b: V3, c: V3, s: list[Var]) -> list[Var]:
        def test() -> list[Var]:
            d2 = closest_dist2(ctx, pd, a, b, c)
            better = op("lt", d2, s[0])
            return [op("select", better, d2, s[0]), op("select", better, tri, s[1])]

        # a triangle whose plane is further than the best so far is further itself: from
        # inside a closed surface most are, and this costs a cross and two dots, not the regions
        return if_values(ctx, _beyond_plane(ctx, pd, a, b, c, s[0]), lambda: list(s), test)

    md = detach(ctx, max_dist)

    def search() -> Var:
        return nearest_walk(ctx, desc, [op("mul", md, md), ctx.const(-1, int32)],
                            lambda lo, hi: _box_dist2(ctx, pd, lo, hi), leaf)[1]

    rec = remembered(ctx, _memo_key(ctx, desc, [*pd, md]), search) if memo else search()
    face, a, b, c = found_triangle(ctx, desc, rec)
    d2, wa, wb, _ = nearest(p, a, b, c)
    return [d2, face, wa, wb]


@builtin("mesh_query_point_no_sign", "the point of a Mesh closest to point within max_dist: "
         "a MeshQueryPoint with result (found), face and barycentrics u, v (the closest point is "
         "u * p0 + v * p1 + (1 - u - v) * p2 of the face's vertices); sign is not computed",
         group=_GROUP, signatures=("(id: uint64, point: vec3f, max_dist: float32) -> "
                                   "MeshQueryPoint",
                                   "(id: uint64, point: vec3f, max_dist: float32, face: int32, "
                                   "bary_u: float32, bary_v: float32) -> bool"))
def mesh_query_point_no_sign(ctx: Ctx, id: Value, point: Value, max_dist: Value,
                             *outs: Value) -> Value | OutArgs:
    desc = _descriptor(ctx, "mesh_query_point_no_sign", id)
    p = _point_arg(ctx, "mesh_query_point_no_sign", point)
    md = materialize(ctx, max_dist, float32)
    if not isinstance(md, Var) or md.type != float32:
        raise ctx.error("wp.mesh_query_point_no_sign(): max_dist must be a float32, got "
                        f"{describe(max_dist)}")
    _, face, u, v = _closest(ctx, desc, p, md)
    found = ctx.op("ge", face, ctx.const(0, int32))
    zero = ctx.const(0.0, float32)
    # Warp leaves face, u and v at 0 when nothing is within max_dist
    if outs:
        return out_form(ctx, "mesh_query_point_no_sign", found, (face, u, v), outs)
    face = ctx.op("select", found, face, ctx.const(0, int32))
    return StructVal(POINT_TYPE, (found, ctx.const(0.0, float32), face,
                                  ctx.op("select", found, u, zero),
                                  ctx.op("select", found, v, zero)))


def out_form(ctx: Ctx, name: str, found: Var, new: tuple[Var, ...],
             outs: tuple[Value, ...]) -> OutArgs:
    """Warp's older call form: the outputs (the arguments after the query's three) written
    where found, left as they were otherwise; the result is found."""
    if len(outs) != len(new):
        raise ctx.error(f"wp.{name}(): the {len(new)} outputs (face, bary_u, bary_v) must be "
                        "variables")
    written = []
    for k, (old, val) in enumerate(zip(outs, new, strict=True)):
        if not isinstance(old, Var) or old.type.is_float != val.type.is_float:
            raise ctx.error(f"wp.{name}(): output {k + 4} must be a "
                            f"{'float' if val.type.is_float else 'int'} variable, got "
                            f"{describe(old)}")
        val = val if val.type == old.type else ctx.op("cast", val, type=old.type)
        written.append((k + 3, ctx.op("select", found, val, old)))
    return OutArgs(found, tuple(written))


@builtin("mesh_eval_position", "the position u * p0 + v * p1 + (1 - u - v) * p2 on face of a "
         "Mesh (gradients flow to u and v, not to the mesh's points)", group=_GROUP,
         signatures="(id: uint64, face: int32, bary_u: float32, bary_v: float32) -> vec3f")
def mesh_eval_position(ctx: Ctx, id: Value, face: Value, bary_u: Value, bary_v: Value) -> Value:
    desc = _descriptor(ctx, "mesh_eval_position", id)
    f = scalar(ctx, face, int32)
    if not f.type.is_int:
        raise ctx.error(f"wp.mesh_eval_position(): face must be an integer, got {f.type}")
    u, v = (materialize(ctx, x, float32) for x in (bary_u, bary_v))
    if not (isinstance(u, Var) and isinstance(v, Var) and u.type == v.type == float32):
        raise ctx.error("wp.mesh_eval_position(): bary_u and bary_v must be float32")
    points, indices = _field(ctx, desc, MESH_POINTS, ptr), _field(ctx, desc, MESH_INDICES, ptr)
    a, b, c = (_vertex(ctx, points, indices, f, k) for k in range(3))
    w = ctx.op("sub", ctx.op("sub", ctx.const(1.0, float32), u), v)
    comps = tuple(ctx.op("add", ctx.op("add", ctx.op("mul", u, a[k]), ctx.op("mul", v, b[k])),
                         ctx.op("mul", w, c[k])) for k in range(3))
    return Composite(vec3f, comps)




@builtin("mesh_query_furthest_point_no_sign", "the point of a Mesh furthest from point, if "
         "further than min_dist: a MeshQueryPoint with result (found), face and barycentrics "
         "u, v (a triangle's furthest point is one of its vertices, so u and v do not vary "
         "with point); sign is not computed", differentiable=False, group=_GROUP,
         signatures=("(id: uint64, point: vec3f, min_dist: float32) -> MeshQueryPoint",
                     "(id: uint64, point: vec3f, min_dist: float32, face: int32, "
                     "bary_u: float32, bary_v: float32) -> bool"))
def mesh_query_furthest_point_no_sign(ctx: Ctx, id: Value, point: Value,
                                      min_dist: Value, *outs: Value) -> Value | OutArgs:
    name = "mesh_query_furthest_point_no_sign"
    desc = _descriptor(ctx, name, id)
    p = _point_arg(ctx, name, point)
    md = materialize(ctx, min_dist, float32)
    if not isinstance(md, Var) or md.type != float32:
        raise ctx.error(f"wp.{name}(): min_dist must be a float32, got {describe(min_dist)}")
    op, o = ctx.op, _Ops(ctx)
    z, one = o.k(0.0), o.k(1.0)

    def far(lo: V3, hi: V3, s: list[Var]) -> Var:
        # the box's furthest corner is no further than the best so far
        total = z
        for k in range(3):
            a, b = op("sub", p[k], lo[k]), op("sub", p[k], hi[k])
            total = op("add", total, op("max", op("mul", a, a), op("mul", b, b)))
        return op("le", total, s[0])

    def leaf(tri: Var, a: V3, b: V3, c: V3, s: list[Var]) -> list[Var]:
        best, face, u, v = s
        for corner, (wu, wv) in ((a, (one, z)), (b, (z, one)), (c, (z, z))):
            d = o.sub3(p, corner)
            d2 = o.dot(d, d)
            better = op("gt", d2, best)
            best, face = op("select", better, d2, best), op("select", better, tri, face)
            u, v = op("select", better, wu, u), op("select", better, wv, v)
        return [best, face, u, v]

    _, face, u, v = walk(ctx, desc, [op("mul", md, md), ctx.const(-1, int32), z, z], far, leaf)
    found = op("ge", face, ctx.const(0, int32))
    if outs:
        return out_form(ctx, name, found, (face, u, v), outs)
    return StructVal(POINT_TYPE, (found, z, op("select", found, face, ctx.const(0, int32)),
                                  op("select", found, u, z), op("select", found, v, z)))
