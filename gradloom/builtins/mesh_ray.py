"""Ray casts against a wp.Mesh in kernels: `mesh_query_ray` (the nearest hit along a ray).

`mesh_query_ray` walks nearest box first (builtins/bvh_stack.py: boxes in the order the ray
enters them; a box entered beyond the nearest hit so far is dropped); a leaf's triangle is
intersected with the Möller–Trumbore test, and the hit face's intersection is computed again
from the ray itself, so gradients reach its origin and direction through t, u and v (the
mesh's data is read as constants). The counting and any-hit queries use builtins/mesh.py's
stackless walk.
"""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import StructType, VectorType, bool_, float32, int32, vec3f
from .mesh import V3, _descriptor, _Ops, walk
from .registry import builtin
from .values import Composite, Ctx, OutArgs, StructVal, Value, describe, materialize


class MeshQueryRay:
    """`wp.MeshQueryRay`: the result of a ray cast (result, sign, face, t, u, v, normal)."""

    __gl_type__: StructType


RAY_TYPE = StructType("MeshQueryRay", (("result", bool_), ("sign", float32), ("face", int32),
                                       ("t", float32), ("u", float32), ("v", float32),
                                       ("normal", vec3f)), MeshQueryRay)
MeshQueryRay.__gl_type__ = RAY_TYPE


def _cross(ctx: Ctx, a: V3, b: V3) -> V3:
    op = ctx.op
    return (op("sub", op("mul", a[1], b[2]), op("mul", a[2], b[1])),
            op("sub", op("mul", a[2], b[0]), op("mul", a[0], b[2])),
            op("sub", op("mul", a[0], b[1]), op("mul", a[1], b[0])))


def _vec3(ctx: Ctx, name: str, arg: str, v: Value) -> V3:
    if not (isinstance(v, Composite) and isinstance(v.type, VectorType) and v.type.length == 3
            and v.type.dtype == float32):
        raise ctx.error(f"wp.{name}(): {arg} must be a wp.vec3, got {describe(v)}")
    return v.comps  # type: ignore[return-value]


def _slab_far(ctx: Ctx, o: V3, inv: V3, lo: V3, hi: V3, best: Var) -> Var:
    """The ray misses box [lo, hi] within [0, best] (slab test)."""
    op = ctx.op
    t0, t1 = ctx.const(0.0, float32), best
    for k in range(3):
        a = op("mul", op("sub", lo[k], o[k]), inv[k])
        b = op("mul", op("sub", hi[k], o[k]), inv[k])
        t0 = op("max", t0, op("min", a, b))
        t1 = op("min", t1, op("max", a, b))
    return op("gt", t0, t1)


def _hit(ctx: Ctx, o: V3, d: V3, a: V3, b: V3, c: V3) -> tuple[Var, Var, Var, Var]:
    """Möller–Trumbore: (hit, t, weight of b, weight of c)."""
    m, op = _Ops(ctx), ctx.op
    e1, e2 = m.sub3(b, a), m.sub3(c, a)
    pv = _cross(ctx, d, e2)
    det = m.dot(e1, pv)
    tv = m.sub3(o, a)
    qv = _cross(ctx, tv, e1)
    wb = m.safe_div(m.dot(tv, pv), det)
    wc = m.safe_div(m.dot(d, qv), det)
    t = m.safe_div(m.dot(e2, qv), det)
    z = m.k(0.0)
    ok = op("and", op("ne", det, z), op("and", op("ge", wb, z), op("ge", wc, z)))
    ok = op("and", ok, op("and", op("le", op("add", wb, wc), m.k(1.0)), op("ge", t, z)))
    return ok, t, wb, wc


@builtin("mesh_query_ray", "the nearest intersection of the ray start + t * dir (0 <= t <= "
         "max_t) with a Mesh: a MeshQueryRay with result (hit), t, face, barycentrics u, v "
         "(weights of the face's first two vertices), sign (> 0 when the ray hits the front "
         "of the face) and the face's unit normal", group="Geometry",
         signatures=("(id: uint64, start: vec3f, dir: vec3f, max_t: float32) -> MeshQueryRay",
                     "(id: uint64, start: vec3f, dir: vec3f, max_t: float32, t: float32, "
                     "bary_u: float32, bary_v: float32, sign: float32, normal: vec3f, "
                     "face: int32) -> bool"))
def mesh_query_ray(ctx: Ctx, id: Value, start: Value, dir: Value, max_t: Value,
                   *outs: Value) -> Value | OutArgs:
    result = _ray(ctx, id, start, dir, max_t)
    if not outs:
        return result
    if len(outs) != 6 or not all(isinstance(x, Var | Composite) for x in outs):
        raise ctx.error("wp.mesh_query_ray(id, start, dir, max_t, t, bary_u, bary_v, sign, "
                        "normal, face): the six outputs must be variables")
    # the older form: outputs written in place (kept as they were when nothing is hit)
    found, sign, face, t, u, v, normal = result.fields
    assert isinstance(found, Var)
    new = (t, u, v, sign, normal, face)
    written = []
    for k, (old, val) in enumerate(zip(outs, new, strict=True)):
        if isinstance(val, Composite) and isinstance(old, Composite):
            val = Composite(val.type, tuple(ctx.op("select", found, a, b)  # type: ignore
                                            for a, b in zip(val.comps, old.comps, strict=True)))
        elif isinstance(val, Var) and isinstance(old, Var) and old.type == val.type:
            val = ctx.op("select", found, val, old)
        else:
            raise ctx.error(f"wp.mesh_query_ray(): output {k + 5} must be a "
                            f"{'vec3' if k == 4 else 'scalar'} variable of the output's type, "
                            f"got {describe(old)}")
        written.append((k + 4, val))
    return OutArgs(found, tuple(written))


def _ray(ctx: Ctx, id: Value, start: Value, dir: Value, max_t: Value) -> StructVal:
    name = "mesh_query_ray"
    desc = _descriptor(ctx, name, id)
    o, d = _vec3(ctx, name, "start", start), _vec3(ctx, name, "dir", dir)
    mt = materialize(ctx, max_t, float32)
    if not isinstance(mt, Var) or mt.type != float32:
        raise ctx.error(f"wp.mesh_query_ray(): max_t must be a float32, got {describe(max_t)}")
    op, m = ctx.op, _Ops(ctx)
    big = m.k(1e30)
    # 1 / dir with a huge finite value for a zero component (no 0 * inf in the slab test)
    inv: V3 = tuple(op("select", op("eq", x, m.k(0.0)), big, op("div", m.k(1.0), x))  # type: ignore
                    for x in d)

    t, face, wb, wc, n = _nearest_hit(ctx, desc, o, d, inv, mt)
    z = m.k(0.0)
    found = op("ge", face, ctx.const(0, int32))
    length = op("sqrt", m.dot(n, n))  # type: ignore[arg-type]
    unit = tuple(m.safe_div(x, length) for x in n)
    sign = op("select", op("lt", m.dot(d, unit), z), m.k(1.0), m.k(-1.0))  # type: ignore
    u = op("sub", op("sub", m.k(1.0), wb), wc)

    def keep(x: Var, default: Var) -> Var:
        return op("select", found, x, default)

    return StructVal(RAY_TYPE, (found, keep(sign, z), keep(face, ctx.const(0, int32)),
                                keep(t, z), keep(u, z), keep(wb, z),
                                Composite(vec3f, tuple(keep(x, z) for x in unit))))


def _nearest_hit(ctx: Ctx, desc: Var, o: V3, d: V3, inv: V3,
                 max_t: Var) -> tuple[Var, Var, Var, Var, V3]:
    """The nearest hit: (t, face (-1 if none), weight of b, weight of c, unnormalised
    normal). The walk (builtins/bvh_stack.py) enters boxes in the order the ray does, on
    detached values; the hit of the face it finds is computed again from o and d, so
    gradients reach them through that face's intersection."""
    from .bvh_stack import detach, detach3, found_triangle, nearest_walk

    op, m = ctx.op, _Ops(ctx)
    od, dd, invd = detach3(ctx, o), detach3(ctx, d), detach3(ctx, inv)
    miss = m.k(3.0e38)

    def key(lo: V3, hi: V3) -> Var:
        """The ray's entry t into the box, or 3e38 when it misses it at t >= 0."""
        t0, t1 = m.k(0.0), miss
        for k in range(3):
            a = op("mul", op("sub", lo[k], od[k]), invd[k])
            b = op("mul", op("sub", hi[k], od[k]), invd[k])
            t0 = op("max", t0, op("min", a, b))
            t1 = op("min", t1, op("max", a, b))
        return op("select", op("le", t0, t1), t0, miss)

    def leaf(tri: Var, a: V3, b: V3, c: V3, s: list[Var]) -> list[Var]:
        ok, t, _, _ = _hit(ctx, od, dd, a, b, c)
        better = op("and", ok, op("le", t, s[0]))
        return [op("select", better, t, s[0]), op("select", better, tri, s[1])]

    _, rec = nearest_walk(ctx, desc, [detach(ctx, max_t), ctx.const(-1, int32)], key, leaf)
    face, a, b, c = found_triangle(ctx, desc, rec)
    _, t, wb, wc = _hit(ctx, o, d, a, b, c)
    return t, face, wb, wc, _cross(ctx, m.sub3(b, a), m.sub3(c, a))


@builtin("mesh_query_ray_count_intersections", "the number of the Mesh's triangles that the ray "
         "start + t * dir (t >= 0) intersects", differentiable=False, group="Geometry",
         signatures="(id: uint64, start: vec3f, dir: vec3f) -> int32")
def mesh_query_ray_count_intersections(ctx: Ctx, id: Value, start: Value, dir: Value) -> Value:
    name = "mesh_query_ray_count_intersections"
    desc = _descriptor(ctx, name, id)
    o, d = _vec3(ctx, name, "start", start), _vec3(ctx, name, "dir", dir)
    op, m = ctx.op, _Ops(ctx)
    inv: V3 = tuple(op("select", op("eq", x, m.k(0.0)), m.k(1e30),  # type: ignore
                       op("div", m.k(1.0), x)) for x in d)
    unbounded = m.k(3.0e38)

    def far(lo: V3, hi: V3, s: list[Var]) -> Var:
        return _slab_far(ctx, o, inv, lo, hi, unbounded)

    def leaf(tri: Var, a: V3, b: V3, c: V3, s: list[Var]) -> list[Var]:
        ok = _hit(ctx, o, d, a, b, c)[0]
        return [op("add", s[0], op("select", ok, ctx.const(1, int32), ctx.const(0, int32)))]

    return walk(ctx, desc, [ctx.const(0, int32)], far, leaf)[0]


@builtin("mesh_query_ray_anyhit", "whether the ray start + t * dir (0 <= t <= max_t) intersects "
         "any triangle of the Mesh", differentiable=False, group="Geometry",
         signatures="(id: uint64, start: vec3f, dir: vec3f, max_t: float32) -> bool")
def mesh_query_ray_anyhit(ctx: Ctx, id: Value, start: Value, dir: Value, max_t: Value) -> Value:
    name = "mesh_query_ray_anyhit"
    desc = _descriptor(ctx, name, id)
    o, d = _vec3(ctx, name, "start", start), _vec3(ctx, name, "dir", dir)
    mt = materialize(ctx, max_t, float32)
    if not isinstance(mt, Var) or mt.type != float32:
        raise ctx.error(f"wp.{name}(): max_t must be a float32, got {describe(max_t)}")
    op, m = ctx.op, _Ops(ctx)
    inv: V3 = tuple(op("select", op("eq", x, m.k(0.0)), m.k(1e30),  # type: ignore
                       op("div", m.k(1.0), x)) for x in d)

    def far(lo: V3, hi: V3, s: list[Var]) -> Var:
        return _slab_far(ctx, o, inv, lo, hi, s[0])  # rejects every box once s[0] < 0

    def leaf(tri: Var, a: V3, b: V3, c: V3, s: list[Var]) -> list[Var]:
        ok, t, _, _ = _hit(ctx, o, d, a, b, c)
        return [op("select", op("and", ok, op("le", t, s[0])), m.k(-1.0), s[0])]

    return op("lt", walk(ctx, desc, [mt], far, leaf)[0], m.k(0.0))
