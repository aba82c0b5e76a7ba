"""A Mesh's per-face and per-vertex data in kernels: `mesh_eval_velocity`, `mesh_eval_face_normal`,
`mesh_get_point`, `mesh_get_velocity`, `mesh_get_index`.

The mesh's arrays are read through its descriptor (types/mesh_layout.py) as constants of the
kernel, as builtins/mesh.py's queries do: gradients flow to the barycentric weights, never into
the mesh's points or velocities (Warp's adjoints do the same).
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.nodes import Var
from ..types import float32, int32, int64, ptr, vec3f
from ..types.mesh_layout import MESH_INDICES, MESH_POINTS, MESH_VELOCITIES
from .mesh import V3, _descriptor, _field, _load, _Ops, _vertex
from .registry import builtin
from .values import Composite, Ctx, Value, describe, if_values, materialize, scalar

_GROUP = "Geometry"


def _int_arg(ctx: Ctx, name: str, arg: str, v: Value) -> Var:
    x = scalar(ctx, v, int32)
    if not x.type.is_int:
        raise ctx.error(f"wp.{name}(): {arg} must be an integer, got {describe(v)}")
    return x


def _bary(ctx: Ctx, name: str, u: Value, v: Value) -> tuple[Var, Var]:
    uu, vv = materialize(ctx, u, float32), materialize(ctx, v, float32)
    if not (isinstance(uu, Var) and isinstance(vv, Var) and uu.type == vv.type == float32):
        raise ctx.error(f"wp.{name}(): bary_u and bary_v must be float32, got {describe(u)}, "
                        f"{describe(v)}")
    return uu, vv


def _nonnull(ctx: Ctx, p: Var) -> Var:
    return ctx.op("ne", ctx.op("cast", p, type=int64), ctx.const(0, int64))


def _guarded_vec3(ctx: Ctx, data: Var, read: Callable[[], V3]) -> Composite:
    """read() when the array pointer is set, else the zero vector (Warp's answer)."""
    z = ctx.const(0.0, float32)
    comps = if_values(ctx, _nonnull(ctx, data), lambda: list(read()), lambda: [z, z, z])
    return Composite(vec3f, tuple(comps))


@builtin("mesh_eval_velocity", "the velocity u * v0 + v * v1 + (1 - u - v) * v2 on face of a "
         "Mesh from its per-vertex velocities (zero when the mesh has none; gradients flow to u "
         "and v)", group=_GROUP,
         signatures="(id: uint64, face: int32, bary_u: float32, bary_v: float32) -> vec3f")
def mesh_eval_velocity(ctx: Ctx, id: Value, face: Value, bary_u: Value, bary_v: Value) -> Value:
    name = "mesh_eval_velocity"
    desc = _descriptor(ctx, name, id)
    f = _int_arg(ctx, name, "face", face)
    u, v = _bary(ctx, name, bary_u, bary_v)
    vel, indices = _field(ctx, desc, MESH_VELOCITIES, ptr), _field(ctx, desc, MESH_INDICES, ptr)
    op = ctx.op

    def read() -> V3:
        a, b, c = (_vertex(ctx, vel, indices, f, k) for k in range(3))
        w = op("sub", op("sub", ctx.const(1.0, float32), u), v)
        return tuple(op("add", op("add", op("mul", u, a[k]), op("mul", v, b[k])),  # type: ignore
                        op("mul", w, c[k])) for k in range(3))

    return _guarded_vec3(ctx, vel, read)


@builtin("mesh_eval_face_normal", "the unit normal normalize(cross(p1 - p0, p2 - p0)) of face of "
         "a Mesh", differentiable=False, group=_GROUP,
         signatures="(id: uint64, face: int32) -> vec3f")
def mesh_eval_face_normal(ctx: Ctx, id: Value, face: Value) -> Value:
    name = "mesh_eval_face_normal"
    desc = _descriptor(ctx, name, id)
    f = _int_arg(ctx, name, "face", face)
    points, indices = _field(ctx, desc, MESH_POINTS, ptr), _field(ctx, desc, MESH_INDICES, ptr)
    o, op = _Ops(ctx), ctx.op

    def read() -> V3:
        a, b, c = (_vertex(ctx, points, indices, f, k) for k in range(3))
        n = cross(ctx, o.sub3(b, a), o.sub3(c, a))
        length = op("sqrt", o.dot(n, n))
        return tuple(o.safe_div(x, length) for x in n)  # type: ignore[return-value]

    return _guarded_vec3(ctx, points, read)


def cross(ctx: Ctx, a: V3, b: V3) -> V3:
    """a × b."""
    op = ctx.op
    return (op("sub", op("mul", a[1], b[2]), op("mul", a[2], b[1])),
            op("sub", op("mul", a[2], b[0]), op("mul", a[0], b[2])),
            op("sub", op("mul", a[0], b[1]), op("mul", a[1], b[0])))


def _corner_vertex(ctx: Ctx, data: Var, indices: Var, index: Var) -> V3:
    """data[indices[index]] (index counts face corners: 3 * face + corner)."""
    op = ctx.op
    slot = op("mul", op("cast", index, type=int64), ctx.const(4, int64))
    vi = op("cast", _load(ctx, indices, slot, int32), type=int64)
    base = op("mul", vi, ctx.const(12, int64))
    return tuple(_load(ctx, data, op("add", base, ctx.const(4 * k, int64)), float32)
                 for k in range(3))  # type: ignore[return-value]


def _get(ctx: Ctx, name: str, id: Value, index: Value, offset: int) -> Value:
    desc = _descriptor(ctx, name, id)
    i = _int_arg(ctx, name, "index", index)
    data, indices = _field(ctx, desc, offset, ptr), _field(ctx, desc, MESH_INDICES, ptr)
    return _guarded_vec3(ctx, data, lambda: _corner_vertex(ctx, data, indices, i))


@builtin("mesh_get_point", "the position of the vertex at corner index of a Mesh's index array "
         "(points[indices[index]])", differentiable=False, group=_GROUP,
         signatures="(id: uint64, index: int32) -> vec3f")
def mesh_get_point(ctx: Ctx, id: Value, index: Value) -> Value:
    return _get(ctx, "mesh_get_point", id, index, MESH_POINTS)


@builtin("mesh_get_velocity", "the velocity of the vertex at corner index of a Mesh's index "
         "array (zero when the mesh has no velocities)", differentiable=False, group=_GROUP,
         signatures="(id: uint64, index: int32) -> vec3f")
def mesh_get_velocity(ctx: Ctx, id: Value, index: Value) -> Value:
    return _get(ctx, "mesh_get_velocity", id, index, MESH_VELOCITIES)


@builtin("mesh_get_index", "entry face_vertex_index of a Mesh's index array (3 per triangle)",
         differentiable=False, group=_GROUP,
         signatures="(id: uint64, face_vertex_index: int32) -> int32")
def mesh_get_index(ctx: Ctx, id: Value, face_vertex_index: Value) -> Value:
    name = "mesh_get_index"
    desc = _descriptor(ctx, name, id)
    i = _int_arg(ctx, name, "face_vertex_index", face_vertex_index)
    indices = _field(ctx, desc, MESH_INDICES, ptr)
    slot = ctx.op("mul", ctx.op("cast", i, type=int64), ctx.const(4, int64))
    return _load(ctx, indices, slot, int32)
