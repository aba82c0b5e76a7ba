"""Box and sphere queries against a wp.Mesh in kernels: `mesh_query_aabb`, `mesh_query_sphere`,
`mesh_query_aabb_next` / `mesh_query_next` and `for face in query:`.

The query (`wp.MeshQueryAABB`, also `wp.MeshQuery`) is a struct of integers: the BVH's node
array, the node count, the next node to visit, the box's bounds (a sphere's centre twice) and a
sphere's squared radius held as float32 bits, so autodiff sees integers only, and its kind (box
or sphere: one struct type, so a query chosen by a run-time branch is one value). Each step walks
builtins/mesh.py's depth-first node order with skip pointers until a leaf whose box overlaps the
query: a box query's candidates are the triangles whose bounding box overlaps the box; a sphere
query's are the triangles whose closest point to the centre is within the radius.
"""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import StructType, bool_, float32, int32, ptr, uint32
from ..types.mesh_layout import MESH_INDICES, MESH_NODES, MESH_NUM_NODES, MESH_POINTS
from .mesh import V3, _descriptor, _field, _Ops, _vertex, closest_bary, node
from .mesh_ray import _vec3
from .registry import builtin
from .values import Ctx, OutArgs, StructVal, Value, describe, if_values, materialize, while_loop

_FIELDS: tuple[tuple[str, object], ...] = (
    ("nodes", ptr), ("count", int32), ("index", int32),
    ("lx", uint32), ("ly", uint32), ("lz", uint32), ("ux", uint32), ("uy", uint32),
    ("uz", uint32), ("face", int32), ("kind", int32), ("radius_sq", uint32),
    ("points", ptr), ("indices", ptr))
_BOX, _SPHERE = 0, 1
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
    return _start(ctx, desc, (*lo, *hi), _BOX, ctx.const(0.0, float32))


def _start(ctx: Ctx, desc: Var, box: tuple[Var, ...], kind: int, radius_sq: Var) -> StructVal:
    bits = [ctx.op("bitcast", x, type=uint32) for x in (*box, radius_sq)]
    return StructVal(AABB_TYPE, (_field(ctx, desc, MESH_NODES, ptr),
                                 _field(ctx, desc, MESH_NUM_NODES, int32), ctx.const(0, int32),
                                 *bits[:6], ctx.const(-1, int32), ctx.const(kind, int32),
                                 bits[6], _field(ctx, desc, MESH_POINTS, ptr),
                                 _field(ctx, desc, MESH_INDICES, ptr)))


@builtin("mesh_query_sphere", "a query over the triangles of a Mesh within radius of center "
         "(their closest point to center at most radius away; advance it with mesh_query_next "
         "or `for face in query:`)", differentiable=False, group="Geometry",
         signatures="(id: uint64, center: vec3f, radius: float32) -> MeshQueryAABB")
def mesh_query_sphere(ctx: Ctx, id: Value, center: Value, radius: Value) -> Value:
    desc = _descriptor(ctx, "mesh_query_sphere", id)
    c = _vec3(ctx, "mesh_query_sphere", "center", center)
    r = materialize(ctx, radius, float32)
    if not isinstance(r, Var) or r.type != float32:
        raise ctx.error(f"wp.mesh_query_sphere(): radius must be a float32, got "
                        f"{describe(radius)}")
    r = ctx.op("max", r, ctx.const(0.0, float32))
    return _start(ctx, desc, (*c, *c), _SPHERE, ctx.op("mul", r, r))


@builtin("mesh_query_next", "advance a mesh box or sphere query: writes the next candidate face "
         "into index and returns True, or returns False (index unchanged) when none is left",
         differentiable=False, group="Geometry",
         signatures="(query: MeshQueryAABB, index: Int) -> Bool")
def mesh_query_next(ctx: Ctx, query: Value, index: Value) -> OutArgs:
    q = _query_arg(ctx, "mesh_query_next", query)
    if not isinstance(index, Var) or not index.type.is_int:
        raise ctx.error("wp.mesh_query_next(): index must be an integer variable "
                        f"(e.g. index = int(0)), got {describe(index)}")
    found, new_q, new_index = _next(ctx, q, index)
    return OutArgs(found, ((0, new_q), (1, new_index)))


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
        raise ctx.error(f"wp.{name}() needs a query from wp.mesh_query_aabb() or "
                        f"wp.mesh_query_sphere(), got "
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
    sphere = op("eq", f["kind"], ctx.const(_SPHERE, int32))
    r2 = op("bitcast", f["radius_sq"], type=float32)

    def step(s: list[Var]) -> list[Var]:
        i = s[0]
        lo, hi, skip, prim = node(ctx, nodes, i)
        overlap = ctx.const(True, bool_)
        for k in range(3):
            overlap = op("and", overlap, op("and", op("le", lo[k], qhi[k]),
                                            op("ge", hi[k], qlo[k])))
        overlap = op("select", sphere, op("le", _box_gap2(ctx, qlo, lo, hi), r2), overlap)
        hit = op("and", overlap, op("ge", prim, ctx.const(0, int32)))
        narrow = op("and", hit, sphere)
        hit = if_values(ctx, narrow, lambda: [_touches(ctx, f, prim, qlo, r2)], lambda: [hit])[0]
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


def _box_gap2(ctx: Ctx, p: V3, lo: V3, hi: V3) -> Var:
    """Squared distance from p to the box [lo, hi] (0 inside)."""
    op, total = ctx.op, ctx.const(0.0, float32)
    for k in range(3):
        d = op("max", op("max", op("sub", lo[k], p[k]), op("sub", p[k], hi[k])),
               ctx.const(0.0, float32))
        total = op("add", total, op("mul", d, d))
    return total


def _touches(ctx: Ctx, f: dict[str, Var], prim: Var, center: V3, r2: Var) -> Var:
    """Whether triangle prim's closest point to center is within the squared radius r2 (a
    zero-area triangle: its longest edge's closest point)."""
    op, o = ctx.op, _Ops(ctx)
    a, b, c = (_vertex(ctx, f["points"], f["indices"], prim, k) for k in range(3))
    ab, ac, bc = o.sub3(b, a), o.sub3(c, a), o.sub3(c, b)
    n = (op("sub", op("mul", ab[1], ac[2]), op("mul", ab[2], ac[1])),
         op("sub", op("mul", ab[2], ac[0]), op("mul", ab[0], ac[2])),
         op("sub", op("mul", ab[0], ac[1]), op("mul", ab[1], ac[0])))
    flat = op("eq", o.dot(n, n), o.k(0.0))
    wa, wb, wc = closest_bary(ctx, center, a, b, c)
    q = [op("add", op("add", op("mul", wa, a[k]), op("mul", wb, b[k])), op("mul", wc, c[k]))
         for k in range(3)]
    lab, lac, lbc = o.dot(ab, ab), o.dot(ac, ac), o.dot(bc, bc)
    use_ab = op("and", op("ge", lab, lac), op("ge", lab, lbc))
    use_ac = op("and", op("not", use_ab), op("ge", lac, lbc))
    start = [op("select", use_ab, a[k], op("select", use_ac, a[k], b[k])) for k in range(3)]
    end = [op("select", use_ab, b[k], op("select", use_ac, c[k], c[k])) for k in range(3)]
    seg = o.sub3(tuple(end), tuple(start))  # type: ignore[arg-type]
    len2 = o.dot(seg, seg)
    t = o.safe_div(o.dot(o.sub3(center, tuple(start)), seg), len2)  # type: ignore[arg-type]
    t = op("select", op("gt", len2, o.k(0.0)),
           op("min", op("max", t, o.k(0.0)), o.k(1.0)), o.k(0.0))
    on_seg = [op("add", start[k], op("mul", t, seg[k])) for k in range(3)]
    cp = [op("select", flat, on_seg[k], q[k]) for k in range(3)]
    d = o.sub3(tuple(cp), center)  # type: ignore[arg-type]
    return op("le", o.dot(d, d), r2)
