"""`mesh_get(id)`: a Mesh's arrays (points, indices, velocities) as a struct value in kernels.

The arrays are views of the mesh's own memory (pointers from its descriptor,
types/mesh_layout.py). They carry no gradient arrays: a kernel that differentiates through
values read this way gets autodiff's clear refusal (an array chosen at run time), never a
silent zero; differentiate through the user's own `points` array instead.
"""

from __future__ import annotations

from ..types import ArrayType, StructType, int32, int64, ptr, vec3f
from ..types.mesh_layout import (
    MESH_INDICES,
    MESH_NUM_POINTS,
    MESH_NUM_TRIS,
    MESH_POINTS,
    MESH_VELOCITIES,
)
from .mesh import _descriptor, _field
from .registry import builtin
from .values import ArrayVal, Ctx, StructVal, Value


class MeshArrays:
    """What `wp.mesh_get(id)` gives in a kernel (Warp's `Mesh` struct): points, indices and
    velocities arrays (a type for annotations; values exist only in kernels)."""

    __gl_type__: StructType


MESH_STRUCT = StructType("Mesh", (("points", ArrayType(vec3f, 1)), ("indices", ArrayType(int32, 1)),
                                  ("velocities", ArrayType(vec3f, 1))), MeshArrays)  # fmt: skip
MeshArrays.__gl_type__ = MESH_STRUCT


def _view(ctx: Ctx, t: ArrayType, data: Value, count: Value, stride: int) -> ArrayVal:
    null = ctx.const(0, ptr)
    return ArrayVal(t, data, null, (count,), (ctx.const(stride, int64),))  # type: ignore[arg-type]


@builtin("mesh_get", "the Mesh a mesh id names, as a struct of its points, indices (3 per "
         "triangle) and velocities arrays (empty when the mesh has none)", differentiable=False,
         signatures="(id: uint64) -> Mesh", group="Geometry")
def mesh_get(ctx: Ctx, id: Value) -> Value:
    desc = _descriptor(ctx, "mesh_get", id)
    points, indices = _field(ctx, desc, MESH_POINTS, ptr), _field(ctx, desc, MESH_INDICES, ptr)
    velocities = _field(ctx, desc, MESH_VELOCITIES, ptr)
    n_points = ctx.op("cast", _field(ctx, desc, MESH_NUM_POINTS, int32), type=int64)
    n_index = ctx.op("mul", ctx.op("cast", _field(ctx, desc, MESH_NUM_TRIS, int32), type=int64),
                     ctx.const(3, int64))  # fmt: skip
    has_v = ctx.op("ne", ctx.op("cast", velocities, type=int64), ctx.const(0, int64))
    n_v = ctx.op("select", has_v, n_points, ctx.const(0, int64))
    fields = (_view(ctx, ArrayType(vec3f, 1), points, n_points, 12),
              _view(ctx, ArrayType(int32, 1), indices, n_index, 4),
              _view(ctx, ArrayType(vec3f, 1), velocities, n_v, 12))  # fmt: skip
    return StructVal(MESH_STRUCT, fields)
