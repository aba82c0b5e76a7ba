"""Spatial-vector builtins (Warp's "Spatial Math"): twists and wrenches as 6-vectors
(angular part first, then linear), their products, and their change of frame.
"""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Var
from ..types import MatrixType, ScalarType, VectorType
from .quat import Emit, as_vec, composite_from_parts, rotate, same_dtype, vec3_type
from .registry import builtin
from .transform import as_transform
from .values import Composite, Ctx, Value, describe

GROUP = "Spatial Math"
Parts = tuple[tuple[Var, ...], tuple[Var, ...]]


def spatial_type(dt: ScalarType) -> VectorType:
    return VectorType(6, dt, "spatial")


def as_spatial(ctx: Ctx, name: str, v: Value) -> Composite:
    """A spatial vector argument (a plain float vec6 is accepted too, as in Warp)."""
    if isinstance(v, Composite) and isinstance(v.type, VectorType) and v.type.length == 6 \
            and v.type.kind in ("spatial", "vec") and v.type.dtype.is_float:
        return v
    raise ctx.error(f"wp.{name}() needs a spatial vector, got {describe(v)}")


def _two(ctx: Ctx, name: str, a: Value, b: Value) -> tuple[Emit, Parts, Parts, VectorType]:
    """Both spatial arguments split into (top, bottom), and the result type (a's type)."""
    sa, sb = as_spatial(ctx, name, a), as_spatial(ctx, name, b)
    e = Emit(ctx, same_dtype(ctx, name, sa, sb))
    assert isinstance(sa.type, VectorType)
    return e, (sa.comps[:3], sa.comps[3:]), (sb.comps[:3], sb.comps[3:]), sa.type


@builtin("spatial_vector", "a spatial vector from two 3-vectors (w, v), from six scalars, or "
         "zeros; dtype= sets the scalar type",
         signatures=("(dtype: Float = float32) -> SpatialVector",
                     "(w: Vector3, v: Vector3, dtype: Float = None) -> SpatialVector",
                     "(wx: Float, wy: Float, wz: Float, vx: Float, vy: Float, vz: Float, "
                     "dtype: Float = None) -> SpatialVector"), group=GROUP)
def spatial_vector(ctx: Ctx, *args: Value, dtype: Any = None) -> Value:
    if len(args) == 2:
        for a in args:
            as_vec(ctx, "spatial_vector", a)
    return composite_from_parts(ctx, "spatial_vector", spatial_type, args, dtype, (6,))


@builtin("spatial_top", "the angular part (components 0-2) of a spatial vector",
         signatures="(svec: SpatialVector) -> Vector3", group=GROUP)
def spatial_top(ctx: Ctx, svec: Value) -> Value:
    s = as_spatial(ctx, "spatial_top", svec)
    return Composite(vec3_type(s.type.dtype), s.comps[:3])


@builtin("spatial_bottom", "the linear part (components 3-5) of a spatial vector",
         signatures="(svec: SpatialVector) -> Vector3", group=GROUP)
def spatial_bottom(ctx: Ctx, svec: Value) -> Value:
    s = as_spatial(ctx, "spatial_bottom", svec)
    return Composite(vec3_type(s.type.dtype), s.comps[3:])


@builtin("spatial_dot", "the dot product of two spatial vectors (wrench · twist is power)",
         signatures="(a: SpatialVector, b: SpatialVector) -> Float", group=GROUP)
def spatial_dot(ctx: Ctx, a: Value, b: Value) -> Value:
    e, (wa, va), (wb, vb), _ = _two(ctx, "spatial_dot", a, b)
    return e.dot(wa + va, wb + vb)


@builtin("spatial_cross", "the motion cross product of twists a = (w_a, v_a), b = (w_b, v_b): "
         "(w_a × w_b, v_a × w_b + w_a × v_b)",
         signatures="(a: SpatialVector, b: SpatialVector) -> SpatialVector", group=GROUP)
def spatial_cross(ctx: Ctx, a: Value, b: Value) -> Value:
    e, (wa, va), (wb, vb), t = _two(ctx, "spatial_cross", a, b)
    top = e.cross(wa, wb)
    bottom = e.vadd(e.cross(va, wb), e.cross(wa, vb))
    return Composite(t, top + bottom)


@builtin("spatial_cross_dual", "the force cross product of twist a = (w, v) and wrench "
         "b = (n, f): (w × n + v × f, w × f)",
         signatures="(a: SpatialVector, b: SpatialVector) -> SpatialVector", group=GROUP)
def spatial_cross_dual(ctx: Ctx, a: Value, b: Value) -> Value:
    e, (w, v), (n, f), t = _two(ctx, "spatial_cross_dual", a, b)
    top = e.vadd(e.cross(w, n), e.cross(v, f))
    return Composite(t, top + e.cross(w, f))


@builtin("spatial_adjoint", "the 6x6 spatial matrix [[r, 0], [s, r]] from two 3x3 blocks",
         signatures="(r: Matrix33, s: Matrix33) -> SpatialMatrix", group=GROUP)
def spatial_adjoint(ctx: Ctx, r: Value, s: Value) -> Value:
    blocks = []
    for m in (r, s):
        if not (isinstance(m, Composite) and isinstance(m.type, MatrixType)
                and m.type.shape == (3, 3) and m.type.dtype.is_float):
            raise ctx.error(f"wp.spatial_adjoint() needs two float mat33, got {describe(m)}")
        blocks.append(m)
    e = Emit(ctx, same_dtype(ctx, "spatial_adjoint", *blocks))
    zero = e.c(0.0)
    rr, ss = blocks[0].comps, blocks[1].comps
    rows = [(*rr[3 * i:3 * i + 3], zero, zero, zero) for i in range(3)]
    rows += [(*ss[3 * i:3 * i + 3], *rr[3 * i:3 * i + 3]) for i in range(3)]
    return Composite(MatrixType(6, 6, e.dt, "spatial"), tuple(c for row in rows for c in row))


@builtin("velocity_at_point", "the linear velocity v + w × r of the point at offset r on a body "
         "moving with twist qd = (w, v)",
         signatures="(qd: SpatialVector, r: Vector3) -> Vector3", group=GROUP)
def velocity_at_point(ctx: Ctx, qd: Value, r: Value) -> Value:
    s, off = as_spatial(ctx, "velocity_at_point", qd), as_vec(ctx, "velocity_at_point", r)
    e = Emit(ctx, same_dtype(ctx, "velocity_at_point", s, off))
    return Composite(off.type, e.vadd(s.comps[3:], e.cross(s.comps[:3], off.comps)))


def _change_frame(ctx: Ctx, name: str, t: Value, x: Value, wrench: bool) -> Value:
    tf, sv = as_transform(ctx, name, t), as_spatial(ctx, name, x)
    e = Emit(ctx, same_dtype(ctx, name, tf, sv))
    p, q = tf.comps[:3], tf.comps[3:]
    top, bottom = rotate(e, q, sv.comps[:3]), rotate(e, q, sv.comps[3:])
    if wrench:  # τ' = R τ + p × f', f' = R f
        top = e.vadd(top, e.cross(p, bottom))
    else:  # w' = R w, v' = R v + p × w'
        bottom = e.vadd(bottom, e.cross(p, top))
    assert isinstance(sv.type, VectorType)
    return Composite(sv.type, top + bottom)


@builtin("transform_twist", "a twist (w, v) expressed in the frame a transform (R, p) maps to: "
         "(R w, R v + p × R w)",
         signatures="(t: Transform, x: SpatialVector) -> SpatialVector", group=GROUP)
def transform_twist(ctx: Ctx, t: Value, x: Value) -> Value:
    return _change_frame(ctx, "transform_twist", t, x, wrench=False)


@builtin("transform_wrench", "a wrench (τ, f) expressed in the frame a transform (R, p) maps "
         "to: (R τ + p × R f, R f)",
         signatures="(t: Transform, x: SpatialVector) -> SpatialVector", group=GROUP)
def transform_wrench(ctx: Ctx, t: Value, x: Value) -> Value:
    return _change_frame(ctx, "transform_wrench", t, x, wrench=True)
