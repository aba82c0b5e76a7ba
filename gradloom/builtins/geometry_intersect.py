"""Closest points and intersections of simple primitives: `closest_point_edge_edge` and
`intersect_tri_tri`.

`closest_point_edge_edge` is the clamped segment-segment solve (Ericson, Real-Time Collision
Detection §5.1.9) with every case evaluated and the one that holds selected; its determinant and
numerator are formed in float64, so nearly parallel edges keep an accurate forward value. Its
gradient is the composition's, except where the edges are so nearly parallel (a * e - b² <=
1e-6 * a * e, sin θ below about 1e-3) that the unclamped parameter's derivative would only
amplify rounding: there the parameter on the first edge is held as a constant (the distance's
gradient then comes from the second edge's projection), as Warp's adjoint does.

`intersect_tri_tri` is a separating-axis test over the two normals, the nine edge-edge cross
products and the six in-plane edge normals (which settle coplanar triangles): 1 when no axis
separates the triangles (touching counts as intersecting), else 0.
"""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import VectorType, float32, float64, int32, uint32, uint64, vec3f
from .registry import builtin
from .values import Composite, Ctx, Value, describe, materialize

V3 = tuple[Var, Var, Var]


def _vec3(ctx: Ctx, name: str, v: Value, dtypes: tuple[object, ...] = (float32,)) -> V3:
    if not (isinstance(v, Composite) and isinstance(v.type, VectorType) and v.type.length == 3
            and v.type.dtype in dtypes):
        raise ctx.error(f"wp.{name}() needs wp.vec3 arguments, got {describe(v)}")
    return v.comps  # type: ignore[return-value]


class _Math:
    """Scalar and vec3 arithmetic on IR values of one float type."""

    def __init__(self, ctx: Ctx, t: object = float32) -> None:
        self.c, self.t = ctx, t

    def k(self, v: float) -> Var:
        return self.c.const(v, self.t)  # type: ignore[arg-type]

    def sub3(self, a: V3, b: V3) -> V3:
        return tuple(self.c.op("sub", x, y) for x, y in zip(a, b, strict=True))  # type: ignore

    def dot(self, a: V3, b: V3) -> Var:
        op = self.c.op
        return op("add", op("add", op("mul", a[0], b[0]), op("mul", a[1], b[1])),
                  op("mul", a[2], b[2]))

    def cross(self, a: V3, b: V3) -> V3:
        op = self.c.op
        return (op("sub", op("mul", a[1], b[2]), op("mul", a[2], b[1])),
                op("sub", op("mul", a[2], b[0]), op("mul", a[0], b[2])),
                op("sub", op("mul", a[0], b[1]), op("mul", a[1], b[0])))

    def clamp01(self, x: Var) -> Var:
        return self.c.op("min", self.c.op("max", x, self.k(0.0)), self.k(1.0))

    def div_if(self, ok: Var, a: Var, b: Var) -> Var:
        """a / b where ok, else a (b replaced by 1, so the unused quotient stays finite and
        its adjoint zero)."""
        return self.c.op("div", a, self.c.op("select", ok, b, self.k(1.0)))


def _constant(ctx: Ctx, x: Var) -> Var:
    """x through its bits: the same value, no gradient."""
    bits = uint32 if x.type == float32 else uint64
    return ctx.op("bitcast", ctx.op("bitcast", x, type=bits), type=x.type)


def _s_general(ctx: Ctx, m: _Math, a: Var, e: Var, b: Var, c: Var, f: Var) -> Var:
    """The first edge's parameter of the general case, before the second edge's clamp."""
    op = ctx.op
    wide = [op("cast", x, type=float64) for x in (a, e, b, c, f)]
    a6, e6, b6, c6, f6 = wide
    denom = op("cast", op("sub", op("mul", a6, e6), op("mul", b6, b6)), type=float32)
    num = op("cast", op("sub", op("mul", b6, f6), op("mul", c6, e6)), type=float32)
    well = op("gt", denom, op("mul", m.k(1e-6), op("mul", a, e)))
    positive = op("gt", denom, m.k(0.0))
    s_well = m.clamp01(m.div_if(well, num, denom))
    s_band = op("select", positive, m.clamp01(m.div_if(positive, num, denom)), m.k(0.0))
    return op("select", well, s_well, _constant(ctx, s_band))


@builtin("closest_point_edge_edge", "the closest points of the segments [p1, q1] and [p2, q2]: "
         "vec3(s, t, d) with the points p1 + s * (q1 - p1) and p2 + t * (q2 - p2) and d their "
         "distance; a segment whose squared length is <= epsilon counts as a point (its weight "
         "0)", group="Geometry",
         signatures="(p1: vec3f, q1: vec3f, p2: vec3f, q2: vec3f, epsilon: float32) -> vec3f")
def closest_point_edge_edge(ctx: Ctx, p1: Value, q1: Value, p2: Value, q2: Value,
                            epsilon: Value) -> Value:
    name = "closest_point_edge_edge"
    P1, Q1, P2, Q2 = (_vec3(ctx, name, v) for v in (p1, q1, p2, q2))
    eps = materialize(ctx, epsilon, float32)
    if not isinstance(eps, Var) or eps.type != float32:
        raise ctx.error(f"wp.{name}(): epsilon must be a float32, got {describe(epsilon)}")
    op, m = ctx.op, _Math(ctx)
    d1, d2, r = m.sub3(Q1, P1), m.sub3(Q2, P2), m.sub3(P1, P2)
    a, e, f = m.dot(d1, d1), m.dot(d2, d2), m.dot(d2, r)
    c, b = m.dot(d1, r), m.dot(d1, d2)
    degen1, degen2 = op("le", a, eps), op("le", e, eps)
    ok1, ok2 = op("not", degen1), op("not", degen2)
    zero, one = m.k(0.0), m.k(1.0)
    # the general case, then the second edge's clamp
    s_init = _s_general(ctx, m, a, e, b, c, f)
    t_init = m.div_if(ok2, op("add", op("mul", b, s_init), f), e)
    below, above = op("lt", t_init, zero), op("gt", t_init, one)
    s_gen = op("select", below, m.clamp01(op("neg", m.div_if(ok1, c, a))),
               op("select", above, m.clamp01(m.div_if(ok1, op("sub", b, c), a)), s_init))
    t_gen = op("select", below, zero, op("select", above, one, t_init))
    # a point against a segment, or two points
    t_pt = m.clamp01(m.div_if(ok2, f, e))
    s_pt = m.clamp01(op("neg", m.div_if(ok1, c, a)))
    s = op("select", degen1, zero, op("select", degen2, s_pt, s_gen))
    t = op("select", degen1, op("select", degen2, zero, t_pt), op("select", degen2, zero, t_gen))
    c1 = tuple(op("add", P1[k], op("mul", s, d1[k])) for k in range(3))
    c2 = tuple(op("add", P2[k], op("mul", t, d2[k])) for k in range(3))
    gap = m.sub3(c2, c1)  # type: ignore[arg-type]
    return Composite(vec3f, (s, t, op("sqrt", m.dot(gap, gap))))


def _separated(ctx: Ctx, m: _Math, axis: V3, u: list[V3], v: list[V3]) -> Var:
    """Whether the projections of triangles u and v onto axis are disjoint."""
    op = ctx.op
    pu = [m.dot(axis, x) for x in u]
    pv = [m.dot(axis, x) for x in v]
    lo_u, hi_u = op("min", op("min", pu[0], pu[1]), pu[2]), op("max", op("max", pu[0], pu[1]), pu[2])
    lo_v, hi_v = op("min", op("min", pv[0], pv[1]), pv[2]), op("max", op("max", pv[0], pv[1]), pv[2])
    return op("or", op("lt", hi_u, lo_v), op("lt", hi_v, lo_u))


@builtin("intersect_tri_tri", "1 if the triangles (v0, v1, v2) and (u0, u1, u2) intersect "
         "(touching included), else 0", differentiable=False, group="Geometry",
         signatures="(v0: Vector3, v1: Vector3, v2: Vector3, u0: Vector3, u1: Vector3, "
         "u2: Vector3) -> int32")
def intersect_tri_tri(ctx: Ctx, v0: Value, v1: Value, v2: Value, u0: Value, u1: Value,
                      u2: Value) -> Value:
    name = "intersect_tri_tri"
    pts = [_vec3(ctx, name, x, (float32, float64)) for x in (v0, v1, v2, u0, u1, u2)]
    t = pts[0][0].type
    if any(p[0].type != t for p in pts):
        raise ctx.error(f"wp.{name}(): the six points must have one dtype")
    m = _Math(ctx, t)
    tv, tu = pts[:3], pts[3:]
    ev = [m.sub3(tv[(k + 1) % 3], tv[k]) for k in range(3)]
    eu = [m.sub3(tu[(k + 1) % 3], tu[k]) for k in range(3)]
    nv, nu = m.cross(ev[0], ev[1]), m.cross(eu[0], eu[1])
    axes = [nv, nu, *(m.cross(x, y) for x in ev for y in eu),
            *(m.cross(nv, x) for x in ev), *(m.cross(nu, y) for y in eu)]
    apart = _separated(ctx, m, axes[0], tv, tu)
    for axis in axes[1:]:
        apart = ctx.op("or", apart, _separated(ctx, m, axis, tv, tu))
    return ctx.op("select", apart, ctx.const(0, int32), ctx.const(1, int32))
