"""Reading a mesh's descriptor and its BVH nodes in kernels: the loads mesh, ray, box and BVH
queries share (layout in types/mesh_layout.py, written by runtime/geometry/mesh.py)."""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import ScalarType, float32, int32, int64, uint32
from ..types.mesh_layout import MESH_NODE_SIZE, NODE_LOWER, NODE_PRIM, NODE_SKIP, NODE_UPPER
from . import memory
from .values import Ctx, Value

V3 = tuple[Var, Var, Var]


def _descriptor(ctx: Ctx, name: str, mesh_id: Value) -> Var:
    return memory.handle_pointer(ctx, name, mesh_id, "a mesh id (a Mesh's .id)")


def _load(ctx: Ctx, base: Var, byte_offset: Var, t: ScalarType) -> Var:
    """A load through a handle; floats are read as bits, so autodiff sees integers only (the
    mesh's data is a constant of the kernel, not a value gradients flow into)."""
    if t == float32:
        return ctx.op("bitcast", ctx.op("load", base, byte_offset, type=uint32), type=float32)
    return ctx.op("load", base, byte_offset, type=t)


def _field(ctx: Ctx, desc: Var, offset: int, t: ScalarType) -> Var:
    return ctx.op("load", desc, ctx.const(0, int64), attr=offset, type=t)


def node(ctx: Ctx, nodes: Var, i: Var) -> tuple[V3, V3, Var, Var]:
    """Node i's (lower, upper, skip, prim)."""
    op = ctx.op
    base = op("mul", op("cast", i, type=int64), ctx.const(MESH_NODE_SIZE, int64))

    def at(off: int, t: ScalarType) -> Var:
        return _load(ctx, nodes, op("add", base, ctx.const(off, int64)), t)

    lo: V3 = (at(NODE_LOWER, float32), at(NODE_LOWER + 4, float32), at(NODE_LOWER + 8, float32))
    hi: V3 = (at(NODE_UPPER, float32), at(NODE_UPPER + 4, float32), at(NODE_UPPER + 8, float32))
    return lo, hi, at(NODE_SKIP, int32), at(NODE_PRIM, int32)
