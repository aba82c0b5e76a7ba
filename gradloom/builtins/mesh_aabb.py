"""Box queries against a wp.Mesh in kernels: `mesh_query_aabb`, `mesh_query_aabb_next` and
`for face in query:`.

The query (`wp.MeshQueryAABB`) is a struct of integers: the BVH's node array, the node count,
the next node to visit and the box's bounds held as float32 bits, so autodiff sees integers
only. Each step walks builtins/mesh.py's depth-first node order with skip pointers until a leaf
whose box overlaps the query box: its triangle is the next candidate (candidates are triangles
whose bounding box overlaps, not filtered further).
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
    ("nodes", ptr), ("count", int32), ("index", int32),
    ("lx", uint32), ("ly", uint32), ("lz", uint32), ("ux", uint32), ("uy", uint32),
    ("uz", uint32), ("face", int32))
_NAMES = [n for n, _ in _FIELDS]


class MeshQueryAABB:
    """`wp.MeshQueryAABB`: the state of a box query over a mesh's triangles."""

    __gl_type__: StructType

    @staticmethod
    def gl_iterate(ctx: Ctx, query: Value, index: Var | None) -> tuple[Var, Value, Var]:
        """One step of `for face in query:`: (found, the advanced query, the face)."""
        q = _query_arg(ctx, "mesh_query_aabb_next", query)
        return _next(ctx, q, index if index is not None else ctx.const(0, int32))


AABB_TYPE = StructType("MeshQueryAABB", _FIELDS, MeshQueryAABB)
MeshQueryAABB.__gl_type__ = AABB_TYPE


@builtin("mesh_query_aabb", "a query over the triangles of a Mesh whose bounding boxes overlap "
         "the box [low, high] (advance it with mesh_query_aabb_next or `for face in query:`)",
         differentiable=False, group="Geometry",
         signatures="(id: uint64, low: vec3f, high: vec3f) -> MeshQueryAABB")
def mesh_query_aabb(ctx: Ctx, id: Value, low: Value, high: Value) -> Value:
    desc = _descriptor(ctx, "mesh_query_aabb", id)
    lo, hi = _vec3(ctx, "mesh_query_aabb", "low", low), _vec3(ctx, "mesh_query_aabb", "high", high)
    bits = [ctx.op("bitcast", x, type=uint32) for x in (*lo, *hi)]
    return StructVal(AABB_TYPE, (_field(ctx, desc, MESH_NODES, ptr),
                                 _field(ctx, desc, MESH_NUM_NODES, int32), ctx.const(0, int32),
                                 *bits, ctx.const(-1, int32)))


@builtin("mesh_query_aabb_next", "advance a mesh box query: writes the next candidate face "
         "into index and returns True, or returns False (index unchanged) when none is left",
         differentiable=False, group="Geometry",
         signatures="(query: MeshQueryAABB, index: Int) -> Bool")
def mesh_query_aabb_next(ctx: Ctx, query: Value, index: Value) -> OutArgs:
    q = _query_arg(ctx, "mesh_query_aabb_next", query)
    if not isinstance(index, Var) or not index.type.is_int:
        raise ctx.error("wp.mesh_query_aabb_next(): index must be an integer variable "
                        f"(e.g. index = int(0)), got {describe(index)}")
    found, new_q, new_index = _next(ctx, q, index)
    return OutArgs(found, ((0, new_q), (1, new_index)))


def _query_arg(ctx: Ctx, name: str, query: Value) -> StructVal:
    if not isinstance(query, StructVal) or query.type is not AABB_TYPE:
        raise ctx.error(f"wp.{name}() needs a query from wp.mesh_query_aabb(), got "
                        f"{describe(query)}")
    return query


def _next(ctx: Ctx, query: StructVal, index: Var) -> tuple[Var, StructVal, Var]:
    f: dict[str, Var] = {}
    for n, v in zip(_NAMES, query.fields, strict=True):
        assert isinstance(v, Var)
        f[n] = v
    op = ctx.op
    box = [op("bitcast", f[k], type=float32) for k in ("lx", "ly", "lz", "ux", "uy", "uz")]
    qlo: V3 = (box[0], box[1], box[2])
    qhi: V3 = (box[3], box[4], box[5])
    nodes, count = f["nodes"], f["count"]

    def step(s: list[Var]) -> list[Var]:
        i = s[0]
        lo, hi, skip, prim = node(ctx, nodes, i)
        overlap = ctx.const(True, bool_)
        for k in range(3):
            overlap = op("and", overlap, op("and", op("le", lo[k], qhi[k]),
                                            op("ge", hi[k], qlo[k])))
        hit = op("and", overlap, op("ge", prim, ctx.const(0, int32)))
        nxt = op("select", op("or", op("not", overlap), hit), skip,
                 op("add", i, ctx.const(1, int32)))
        return [nxt, hit, op("select", hit, prim, s[2])]

    def more(s: list[Var]) -> Var:
        return op("and", op("lt", s[0], count), op("not", s[1]))

    i, found, face = while_loop(ctx, [f["index"], ctx.const(False, bool_), f["face"]], more,
                                step)
    out = face if index.type == int32 else op("cast", face, type=index.type)
    fields = tuple(i if n == "index" else face if n == "face" else v
                   for n, v in zip(_NAMES, query.fields, strict=True))
    return found, StructVal(AABB_TYPE, fields), op("select", found, out, index)
