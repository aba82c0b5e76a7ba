"""Signed closest-point queries on a wp.Mesh: `mesh_query_point` and its `_sign_normal`,
`_sign_winding_number` and `_sign_parity` variants.

Each finds the closest point with builtins/mesh.py's walk (so face, u and v, and their gradients
with respect to the query point, are those of `mesh_query_point_no_sign`), then decides inside
(sign -1) or outside (+1) its own way, as Warp documents:

- `mesh_query_point`: three rays along +x, +y, +z; a ray whose nearest hit is the back of a face
  votes inside; two votes make the point inside. On a mesh that bounds a solid
  (runtime/geometry/mesh_solid.py) every ray from a point off the surface votes the same way, and
  a point whose closest point lies inside a (non-sliver) face, further than the mesh's tolerance
  from it, is inside exactly when it is behind that face: such points take the face's answer
  and skip the rays.
- `_sign_normal`: the angle-weighted pseudo-normal of the faces whose distance is within
  epsilon * (mean edge length) of the closest (a second walk), against point - closest point.
- `_sign_winding_number`: the generalised winding number, > threshold is inside. A walk over the
  nodes' winding data (runtime/geometry/mesh.py): a node further than accuracy times its radius counts as
  a dipole, a leaf's triangle by its exact solid angle. Without that data (a mesh built without
  support_winding_number), the three rays decide, as in Warp.
- `_sign_parity`: n_sample rays along (1, 1, 1) perturbed by draws from rand_init(42); an odd
  number of crossings votes inside; at least half the votes make the point inside.

The sign is piecewise constant: it carries no gradient.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..ir.nodes import Var
from ..types import float32, int32, int64, ptr, uint32, vec3f
from ..types.mesh_layout import (
    MESH_AVG_EDGE,
    MESH_INDICES,
    MESH_NODES,
    MESH_NUM_NODES,
    MESH_POINTS,
    MESH_SOLID_TOL,
    MESH_WINDING,
    SOLID_SLIVER,
    WIND_CENTER,
    WIND_NODE_SIZE,
    WIND_NORMAL,
    WIND_RADIUS2,
)
from . import random as rnd
from .mesh import (
    POINT_TYPE,
    V3,
    _box_dist2,
    _closest,
    _descriptor,
    _field,
    _load,
    _Ops,
    _point_arg,
    _vertex,
    closest_bary,
    node,
    walk,
)
from .mesh_eval import cross
from .mesh_ray import _hit, _slab_far, mesh_query_ray_count_intersections
from .registry import builtin
from .values import (
    Composite,
    Ctx,
    Literal,
    OutArgs,
    StructVal,
    Value,
    describe,
    if_values,
    materialize,
    while_loop,
)

_GROUP = "Geometry"
SignFn = Callable[[Ctx, Var, V3, list[Var]], Var]


def _float(ctx: Ctx, name: str, arg: str, v: Value) -> Var:
    x = materialize(ctx, v, float32)
    if not isinstance(x, Var) or x.type != float32:
        raise ctx.error(f"wp.{name}(): {arg} must be a float32, got {describe(v)}")
    return x


def _query(ctx: Ctx, name: str, id: Value, point: Value, max_dist: Value, sign: SignFn,
           extra: list[Var], outs: tuple[Value, ...]) -> Value | OutArgs:
    """The closest point, the sign where one is found, and the result in Warp's two forms: a
    MeshQueryPoint, or (outputs inside, face, bary_u, bary_v given) a bool with the outputs
    written when found and left as they were otherwise."""
    desc = _descriptor(ctx, name, id)
    p = _point_arg(ctx, name, point)
    md = _float(ctx, name, "max_dist", max_dist)
    _, face, u, v = _closest(ctx, desc, p, md, memo=True)
    op, z = ctx.op, ctx.const(0.0, float32)
    found = op("ge", face, ctx.const(0, int32))
    closest = (found, face, u, v)
    s = if_values(ctx, found, lambda: [sign(ctx, desc, p, [*extra, *closest[1:]])], lambda: [z])[0]
    if not outs:
        return StructVal(POINT_TYPE, (found, s, op("select", found, face, ctx.const(0, int32)),
                                      op("select", found, u, z), op("select", found, v, z)))
    if len(outs) != 4:
        raise ctx.error(f"wp.{name}(id, point, max_dist, inside, face, bary_u, bary_v, ...): "
                        "the four outputs must be variables")
    written = []
    for k, (old, new) in enumerate(zip(outs, (s, face, u, v), strict=True)):
        if not isinstance(old, Var) or old.type.is_float != new.type.is_float:
            raise ctx.error(f"wp.{name}(): output {k + 4} must be a "
                            f"{'float' if new.type.is_float else 'int'} variable, got "
                            f"{describe(old)}")
        val = new if new.type == old.type else op("cast", new, type=old.type)
        written.append((k + 3, op("select", found, val, old)))
    return OutArgs(found, tuple(written))


def _split(ctx: Ctx, name: str, rest: tuple[Value, ...], n_extra: int,
           kwargs: dict[str, Value | None]) -> tuple[tuple[Value, ...], list[Value | None]]:
    """(the output arguments, the optional trailing parameters) of a call's remaining
    positional arguments."""
    outs: tuple[Value, ...] = ()
    if len(rest) >= 4:
        outs, rest = rest[:4], rest[4:]
    if len(rest) > n_extra:
        raise ctx.error(f"wp.{name}(): too many arguments")
    extra: list[Value | None] = list(rest) + [None] * (n_extra - len(rest))
    for k, key in enumerate(kwargs):
        if kwargs[key] is not None:
            if extra[k] is not None:
                raise ctx.error(f"wp.{name}(): {key} given twice")
            extra[k] = kwargs[key]
    return outs, extra


# -- three axis rays (mesh_query_point) --------------------------------------------------------


def _back_hit(ctx: Ctx, desc: Var, o: V3, axis: int) -> Var:
    """Whether the nearest hit of the ray from o along +axis is the back of a face."""
    op, m = ctx.op, _Ops(ctx)
    d: V3 = tuple(m.k(1.0 if k == axis else 0.0) for k in range(3))  # type: ignore[assignment]
    inv: V3 = tuple(m.k(1.0 if k == axis else 1e30) for k in range(3))  # type: ignore[assignment]

    def far(lo: V3, hi: V3, s: list[Var]) -> Var:
        return _slab_far(ctx, o, inv, lo, hi, s[0])

    def leaf(tri: Var, a: V3, b: V3, c: V3, s: list[Var]) -> list[Var]:
        ok, t, _, _ = _hit(ctx, o, d, a, b, c)
        better = op("and", ok, op("lt", t, s[0]))
        facing = cross(ctx, m.sub3(b, a), m.sub3(c, a))[axis]
        return [op("select", better, t, s[0]), op("select", better, facing, s[1])]

    _, facing = walk(ctx, desc, [m.k(3.0e38), m.k(0.0)], far, leaf)
    return op("gt", facing, m.k(0.0))


def _ray_sign(ctx: Ctx, desc: Var, p: V3, _: list[Var]) -> Var:
    votes = ctx.const(0, int32)
    for axis in range(3):
        inside = _back_hit(ctx, desc, p, axis)
        votes = ctx.op("add", votes, ctx.op("select", inside, ctx.const(1, int32),
                                           ctx.const(0, int32)))
    return ctx.op("select", ctx.op("ge", votes, ctx.const(2, int32)), ctx.const(-1.0, float32),
                  ctx.const(1.0, float32))


#: barycentric weights of the closest point below this leave the point to the rays (near an edge,
#: which face is closest is the float arithmetic's guess)
_INTERIOR = 1e-3


def _solid_sign(ctx: Ctx, desc: Var, p: V3, s: list[Var]) -> Var:
    """The closest face's side on a solid mesh (module docstring), else the rays' vote."""
    face, u, v = s[-3:]
    o, op = _Ops(ctx), ctx.op
    tol = op("bitcast", _field(ctx, desc, MESH_SOLID_TOL, uint32), type=float32)
    points, indices = _field(ctx, desc, MESH_POINTS, ptr), _field(ctx, desc, MESH_INDICES, ptr)
    a, b, c = (_vertex(ctx, points, indices, face, k) for k in range(3))
    e0, e1, e2 = o.sub3(b, a), o.sub3(c, a), o.sub3(c, b)
    n = cross(ctx, e0, e1)
    length = op("sqrt", o.dot(n, n))
    edges = op("add", op("add", o.dot(e0, e0), o.dot(e1, e1)), o.dot(e2, e2))
    # the signed distance to the face's plane (NaN for a degenerate face: every test fails)
    h = op("div", o.dot(o.sub3(p, a), n), length)
    w = op("sub", op("sub", o.k(1.0), u), v)
    inner = op("ge", op("min", op("min", u, v), w), o.k(_INTERIOR))
    ok = op("and", op("gt", tol, o.k(0.0)), inner)
    ok = op("and", ok, op("ge", length, op("mul", o.k(SOLID_SLIVER), edges)))
    ok = op("and", ok, op("ge", op("abs", h), tol))
    return if_values(ctx, ok, lambda: [op("select", op("gt", h, o.k(0.0)), o.k(1.0), o.k(-1.0))],
                     lambda: [_ray_sign(ctx, desc, p, [])])[0]


@builtin("mesh_query_point", "the point of a Mesh closest to point within max_dist, with the "
         "sign of the distance (-1 inside, +1 outside) from three axis-aligned rays (the nearest "
         "hit's facing, majority vote): a MeshQueryPoint, or with outputs inside, face, bary_u, "
         "bary_v a bool (outputs untouched when nothing is found)", group=_GROUP,
         signatures=("(id: uint64, point: vec3f, max_dist: float32) -> MeshQueryPoint",
                     "(id: uint64, point: vec3f, max_dist: float32, inside: float32, "
                     "face: int32, bary_u: float32, bary_v: float32) -> bool"))
def mesh_query_point(ctx: Ctx, id: Value, point: Value, max_dist: Value,
                     *outs: Value) -> Value | OutArgs:
    if outs and len(outs) != 4:
        raise ctx.error("wp.mesh_query_point(id, point, max_dist, inside, face, bary_u, bary_v): "
                        "the four outputs must be variables")
    return _query(ctx, "mesh_query_point", id, point, max_dist, _solid_sign, [], outs)


# -- pseudo-normal (mesh_query_point_sign_normal) ----------------------------------------------


def _angle(ctx: Ctx, x: V3, y: V3) -> Var:
    """The angle between x and y."""
    o, op = _Ops(ctx), ctx.op
    nx, ny = op("sqrt", o.dot(x, x)), op("sqrt", o.dot(y, y))
    c = o.safe_div(o.dot(x, y), op("mul", nx, ny))
    return op("acos", op("min", op("max", c, o.k(-1.0)), o.k(1.0)))


def _feature_weight(ctx: Ctx, q: V3, a: V3, b: V3, c: V3, eps2: Var) -> Var:
    """The pseudo-normal weight of a face whose closest point is q: its angle at a vertex q
    is within eps of, pi on an edge, 2 pi inside."""
    o, op = _Ops(ctx), ctx.op

    def neg(v: V3) -> V3:
        return tuple(op("neg", x) for x in v)  # type: ignore[return-value]

    e0, e1, e2 = o.sub3(b, a), o.sub3(c, a), o.sub3(c, b)
    qa, qb, qc = o.sub3(q, a), o.sub3(q, b), o.sub3(q, c)
    la, lb, lc = o.dot(qa, qa), o.dot(qb, qb), o.dot(qc, qc)

    def off_line(len_sq: Var, rel: V3, e: V3) -> Var:  # squared distance to the edge's line < eps²
        ee, de = o.dot(e, e), o.dot(e, rel)
        return op("lt", op("sub", op("mul", len_sq, ee), op("mul", de, de)), op("mul", eps2, ee))

    on_edge = op("or", op("or", off_line(la, qa, e0), off_line(lb, qb, e2)), off_line(la, qa, e1))
    w = op("select", on_edge, o.k(math.pi), o.k(2.0 * math.pi))
    w = op("select", op("lt", lc, eps2), _angle(ctx, neg(e1), neg(e2)), w)
    w = op("select", op("lt", lb, eps2), _angle(ctx, e2, neg(e0)), w)
    return op("select", op("lt", la, eps2), _angle(ctx, e0, e1), w)


def _normal_sign(ctx: Ctx, desc: Var, p: V3, s: list[Var]) -> Var:
    eps_scale, face, u, v = s
    o, op = _Ops(ctx), ctx.op
    points, indices = _field(ctx, desc, MESH_POINTS, ptr), _field(ctx, desc, MESH_INDICES, ptr)
    a, b, c = (_vertex(ctx, points, indices, face, k) for k in range(3))
    w = op("sub", op("sub", o.k(1.0), u), v)
    q: V3 = tuple(op("add", op("add", op("mul", u, a[k]), op("mul", v, b[k])),  # type: ignore
                     op("mul", w, c[k])) for k in range(3))
    d = o.sub3(p, q)
    best = op("sqrt", o.dot(d, d))
    avg_edge = op("bitcast", _field(ctx, desc, MESH_AVG_EDGE, uint32), type=float32)
    eps = op("mul", avg_edge, eps_scale)
    reach = op("add", best, eps)
    reach2, eps2 = op("mul", reach, reach), op("mul", eps, eps)

    def far(lo: V3, hi: V3, st: list[Var]) -> Var:
        return op("gt", _box_dist2(ctx, p, lo, hi), reach2)

    def leaf(tri: Var, ta: V3, tb: V3, tc: V3, st: list[Var]) -> list[Var]:
        e0, e1, e2 = o.sub3(tb, ta), o.sub3(tc, ta), o.sub3(tc, tb)
        n = cross(ctx, e0, e1)
        ln = op("sqrt", o.dot(n, n))
        sliver = op("lt", o.safe_div(ln, op("add", op("add", o.dot(e0, e0), o.dot(e1, e1)),
                                             o.dot(e2, e2))), o.k(1e-6))
        wa, wb, wc = closest_bary(ctx, p, ta, tb, tc)
        tq: V3 = tuple(op("add", op("add", op("mul", wa, ta[k]), op("mul", wb, tb[k])),  # type: ignore
                          op("mul", wc, tc[k])) for k in range(3))
        dd = o.sub3(p, tq)
        near = op("and", op("not", sliver), op("lt", op("sqrt", o.dot(dd, dd)), reach))
        weight = op("select", near, _feature_weight(ctx, tq, ta, tb, tc, eps2), o.k(0.0))
        return [op("add", st[k], op("mul", weight, o.safe_div(n[k], ln))) for k in range(3)]

    acc = walk(ctx, desc, [o.k(0.0)] * 3, far, leaf)
    inside = op("le", o.dot(acc, d), o.k(0.0))  # type: ignore[arg-type]
    return op("select", inside, o.k(-1.0), o.k(1.0))


@builtin("mesh_query_point_sign_normal", "the point of a Mesh closest to point within "
         "max_dist, with the sign of the distance (-1 inside, +1 outside) from the angle-weighted "
         "pseudo-normal of the faces within epsilon * (mean edge length) of the closest distance: "
         "a MeshQueryPoint, or with outputs inside, face, bary_u, bary_v a bool", group=_GROUP,
         signatures=("(id: uint64, point: vec3f, max_dist: float32, epsilon: float32) -> "
                     "MeshQueryPoint",
                     "(id: uint64, point: vec3f, max_dist: float32, inside: float32, "
                     "face: int32, bary_u: float32, bary_v: float32, epsilon: float32) -> bool"))
def mesh_query_point_sign_normal(ctx: Ctx, id: Value, point: Value, max_dist: Value,
                                 *rest: Value, epsilon: Value | None = None) -> Value | OutArgs:
    name = "mesh_query_point_sign_normal"
    outs, (eps,) = _split(ctx, name, rest, 1, {"epsilon": epsilon})
    e = _float(ctx, name, "epsilon", eps if eps is not None else Literal(1.0e-3))
    return _query(ctx, name, id, point, max_dist, _normal_sign, [e], outs)


# -- winding number (mesh_query_point_sign_winding_number) --------------------------------------


def _solid_angle(ctx: Ctx, p: V3, a: V3, b: V3, c: V3) -> Var:
    """The signed solid angle triangle abc subtends at p (Van Oosterom and Strackee)."""
    o, op = _Ops(ctx), ctx.op
    x, y, z = o.sub3(a, p), o.sub3(b, p), o.sub3(c, p)
    lx, ly, lz = (op("sqrt", o.dot(t, t)) for t in (x, y, z))
    num = o.dot(x, cross(ctx, y, z))
    den = op("add", op("add", op("mul", op("mul", lx, ly), lz), op("mul", o.dot(x, y), lz)),
             op("add", op("mul", o.dot(x, z), ly), op("mul", o.dot(y, z), lx)))
    return op("mul", o.k(2.0), op("atan2", num, den))


def winding_number(ctx: Ctx, desc: Var, p: V3, accuracy: Var) -> Var:
    """The generalised winding number of the mesh at p (needs the winding data)."""
    o, op = _Ops(ctx), ctx.op
    nodes, wind = _field(ctx, desc, MESH_NODES, ptr), _field(ctx, desc, MESH_WINDING, ptr)
    points, indices = _field(ctx, desc, MESH_POINTS, ptr), _field(ctx, desc, MESH_INDICES, ptr)
    n = _field(ctx, desc, MESH_NUM_NODES, int32)
    acc2 = op("mul", accuracy, accuracy)

    def body(s: list[Var]) -> list[Var]:
        i, total = s
        _, _, skip, prim = node(ctx, nodes, i)
        base = op("mul", op("cast", i, type=int64), ctx.const(WIND_NODE_SIZE, int64))

        def at(off: int) -> Var:
            return _load(ctx, wind, op("add", base, ctx.const(off, int64)), float32)

        q: V3 = tuple(op("sub", p[k], at(WIND_CENTER + 4 * k)) for k in range(3))  # type: ignore
        q2 = o.dot(q, q)
        is_leaf = op("ge", prim, ctx.const(0, int32))
        distant = op("and", op("not", is_leaf), op("gt", q2, op("mul", at(WIND_RADIUS2), acc2)))

        def leaf() -> list[Var]:
            a, b, c = (_vertex(ctx, points, indices, prim, k) for k in range(3))
            return [_solid_angle(ctx, p, a, b, c)]

        def dipole() -> list[Var]:
            nrm: V3 = tuple(at(WIND_NORMAL + 4 * k) for k in range(3))  # type: ignore
            r3 = op("mul", q2, op("sqrt", q2))
            return [op("neg", o.safe_div(o.dot(q, nrm), r3))]

        part = if_values(ctx, is_leaf, leaf,
                         lambda: if_values(ctx, distant, dipole, lambda: [o.k(0.0)]))[0]
        nxt = op("select", op("or", is_leaf, distant), skip, op("add", i, ctx.const(1, int32)))
        return [nxt, op("add", total, part)]

    end = while_loop(ctx, [ctx.const(0, int32), o.k(0.0)], lambda s: op("lt", s[0], n), body)
    return op("mul", end[1], o.k(1.0 / (4.0 * math.pi)))


def _winding_sign(ctx: Ctx, desc: Var, p: V3, s: list[Var]) -> Var:
    accuracy, threshold = s[0], s[1]
    has = ctx.op("ne", ctx.op("cast", _field(ctx, desc, MESH_WINDING, ptr), type=int64),
                 ctx.const(0, int64))

    def by_winding() -> list[Var]:
        wn = winding_number(ctx, desc, p, accuracy)
        return [ctx.op("select", ctx.op("gt", wn, threshold), ctx.const(-1.0, float32),
                       ctx.const(1.0, float32))]

    return if_values(ctx, has, by_winding, lambda: [_ray_sign(ctx, desc, p, [])])[0]


@builtin("mesh_query_point_sign_winding_number", "the point of a Mesh closest to point within "
         "max_dist, with the sign of the distance from the generalised winding number (inside, "
         "-1, above threshold; nodes further than accuracy times their radius approximated; a "
         "mesh built without support_winding_number uses mesh_query_point's rays): a "
         "MeshQueryPoint, or with outputs inside, face, bary_u, bary_v a bool", group=_GROUP,
         signatures=("(id: uint64, point: vec3f, max_dist: float32, accuracy: float32, "
                     "threshold: float32) -> MeshQueryPoint",
                     "(id: uint64, point: vec3f, max_dist: float32, inside: float32, "
                     "face: int32, bary_u: float32, bary_v: float32, accuracy: float32, "
                     "threshold: float32) -> bool"))
def mesh_query_point_sign_winding_number(ctx: Ctx, id: Value, point: Value, max_dist: Value,
                                         *rest: Value, accuracy: Value | None = None,
                                         threshold: Value | None = None) -> Value | OutArgs:
    name = "mesh_query_point_sign_winding_number"
    outs, (acc, thr) = _split(ctx, name, rest, 2, {"accuracy": accuracy, "threshold": threshold})
    a = _float(ctx, name, "accuracy", acc if acc is not None else Literal(2.0))
    t = _float(ctx, name, "threshold", thr if thr is not None else Literal(0.5))
    return _query(ctx, name, id, point, max_dist, _winding_sign, [a, t], outs)


# -- ray parity (mesh_query_point_sign_parity) -------------------------------------------------


def _parity_sign(ctx: Ctx, desc: Var, p: V3, s: list[Var]) -> Var:
    mesh_id, n_sample, scale = s[0], s[1], s[2]
    op, o = ctx.op, _Ops(ctx)
    lo, hi = op("neg", scale), scale

    def draw(state: Var) -> tuple[Var, Var]:
        out = rnd.randf(ctx, state, lo, hi)
        assert isinstance(out, OutArgs)
        return out.result, out.writes[0][1]

    def direction(state: Var) -> list[Var]:
        comps = []
        for _ in range(3):
            x, state = draw(state)
            comps.append(op("add", o.k(1.0), x))
        return [state, *comps]

    def sample(st: list[Var]) -> list[Var]:
        k, state, votes = st
        first = direction(state)
        # redraw while the direction is (nearly) zero
        got = while_loop(ctx, first, lambda d: op("lt", o.dot(d[1:], d[1:]), o.k(1e-8)),  # type: ignore
                         lambda d: direction(d[0]))
        count = mesh_query_ray_count_intersections(ctx, mesh_id, Composite(vec3f, tuple(p)),
                                                   Composite(vec3f, tuple(got[1:])))
        assert isinstance(count, Var)
        odd = op("ne", op("and", count, ctx.const(1, int32)), ctx.const(0, int32))
        return [op("add", k, ctx.const(1, int32)), got[0],
                op("add", votes, op("select", odd, ctx.const(1, int32), ctx.const(0, int32)))]

    seed = rnd.rand_init(ctx, ctx.const(42, int32))
    assert isinstance(seed, Var)
    end = while_loop(ctx, [ctx.const(0, int32), seed, ctx.const(0, int32)],
                     lambda st: op("lt", st[0], n_sample), sample)
    inside = op("ge", op("mul", end[2], ctx.const(2, int32)), n_sample)
    return op("select", inside, o.k(-1.0), o.k(1.0))


@builtin("mesh_query_point_sign_parity", "the point of a Mesh closest to point within "
         "max_dist, with the sign of the distance from the parity of ray crossings (n_sample "
         "rays along (1, 1, 1) perturbed by up to perturbation_scale; inside, -1, when at least "
         "half are odd): a MeshQueryPoint, or with outputs inside, face, bary_u, bary_v a bool",
         group=_GROUP,
         signatures=("(id: uint64, point: vec3f, max_dist: float32, n_sample: int32, "
                     "perturbation_scale: float32) -> MeshQueryPoint",
                     "(id: uint64, point: vec3f, max_dist: float32, inside: float32, "
                     "face: int32, bary_u: float32, bary_v: float32, n_sample: int32, "
                     "perturbation_scale: float32) -> bool"))
def mesh_query_point_sign_parity(ctx: Ctx, id: Value, point: Value, max_dist: Value,
                                 *rest: Value, n_sample: Value | None = None,
                                 perturbation_scale: Value | None = None) -> Value | OutArgs:
    name = "mesh_query_point_sign_parity"
    outs, (ns, ps) = _split(ctx, name, rest, 2, {"n_sample": n_sample,
                                                 "perturbation_scale": perturbation_scale})
    n = materialize(ctx, ns if ns is not None else Literal(1), int32)
    if not isinstance(n, Var) or not n.type.is_int:
        raise ctx.error(f"wp.{name}(): n_sample must be an integer, got {describe(ns)}")
    n = n if n.type == int32 else ctx.op("cast", n, type=int32)
    scale = _float(ctx, name, "perturbation_scale", ps if ps is not None else Literal(0.1))
    mesh_id = materialize(ctx, id)
    assert isinstance(mesh_id, Var)
    return _query(ctx, name, id, point, max_dist, _parity_sign, [mesh_id, n, scale], outs)

