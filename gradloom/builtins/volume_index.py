"""Index volumes in kernels: `volume_voxel_count`, `volume_lookup_index` and sampling values kept
in an array of their own by voxel index (`volume_sample_index`, `volume_sample_grad_index`).

An index grid (NanoVDB OnIndex) numbers its active voxels from 1 leaf by leaf; a leaf stores its
first index and running counts of active voxels per 64-bit word of its mask, so a voxel's index
is the first index plus the active voxels before it (NanoVDB's rule). Kernels see it zero-based,
-1 where no voxel is indexed, as in Warp. Samples read `voxel_data[index]` (or `background`), so
they are differentiable in `uvw`, the data and the background.
"""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Var
from ..types import MatrixType, VectorType, int32, int64
from ..types import volume as L
from . import memory
from .registry import builtin
from .values import ArrayVal, Composite, Ctx, OutArgs, Value, describe, if_values, materialize
from .volume import index_coords, int_arg, sampling_mode, volume_pointer
from .volume_walk import WalkLayout, i64, load_i64, table_slot, value_offset

_GROUP = "Geometry"


def _is_index(ctx: Ctx, p: Var) -> Var:
    grid_type = ctx.op("load", p, i64(ctx, L.GRID_OFF["grid_type"]), type=int32)
    return ctx.op("eq", grid_type, ctx.const(L.ONINDEX.grid_type, int32))


def _leaf_index(ctx: Ctx, leaf: Var, ijk: list[Var]) -> Var:
    """NanoVDB's index of a leaf voxel (0 where the voxel is inactive)."""
    n = table_slot(ctx, ijk, 7, 0, 3)
    word = ctx.op("shr", n, i64(ctx, 6))
    bit = ctx.op("and", n, i64(ctx, 63))
    mask = load_i64(ctx, leaf, ctx.op("add", i64(ctx, L.LEAF_OFF_VALUE_MASK), ctx.op("shl", word, i64(ctx, 3))))
    one = ctx.op("shl", i64(ctx, 1), bit)
    before = ctx.op("popcount", ctx.op("and", mask, ctx.op("sub", one, i64(ctx, 1))))
    prefix = load_i64(ctx, leaf, i64(ctx, L.ONINDEX.leaf_table + L.ONINDEX_OFF_PREFIX))
    shift = ctx.op("mul", ctx.op("max", ctx.op("sub", word, i64(ctx, 1)), i64(ctx, 0)), i64(ctx, 9))
    earlier = ctx.op("and", ctx.op("shr", prefix, shift), i64(ctx, 511))
    earlier = ctx.op("select", ctx.op("gt", word, i64(ctx, 0)), earlier, i64(ctx, 0))
    first = load_i64(ctx, leaf, i64(ctx, L.ONINDEX.leaf_table))
    index = ctx.op("add", first, ctx.op("add", before, earlier))
    active = ctx.op("ne", ctx.op("and", mask, one), i64(ctx, 0))
    return ctx.op("select", active, index, i64(ctx, 0))


def voxel_index(ctx: Ctx, p: Var, ijk: list[Var]) -> Var:
    """The zero-based int32 index of voxel ijk: of an index grid, its NanoVDB index less one; of
    a value grid, its place among the leaves' values (leaf number · 512 + offset in the leaf,
    the order of `Volume.get_voxels`); -1 where none."""
    def walk() -> list[Var]:
        offset, is_leaf = value_offset(ctx, p, L.ONINDEX, ijk)
        leaf = ctx.op("ptr_add", p, ctx.op("sub", offset, i64(ctx, L.ONINDEX.leaf_table)))
        return if_values(ctx, ctx.op("ne", is_leaf, ctx.const(0, int32)),
                         lambda: [_leaf_index(ctx, leaf, ijk)],
                         lambda: [load_i64(ctx, p, offset)])  # fmt: skip

    (nano,) = if_values(ctx, _is_index(ctx, p), walk,
                        lambda: [_add1(ctx, _value_grid_index(ctx, p, ijk, list(L.LAYOUTS.values())))])
    return ctx.op("cast", ctx.op("sub", nano, i64(ctx, 1)), type=int32)


def _add1(ctx: Ctx, v: Var) -> Var:
    return ctx.op("add", v, i64(ctx, 1))


def _value_grid_index(ctx: Ctx, p: Var, ijk: list[Var], layouts: list[L.ValueLayout]) -> Var:
    """A value grid's leaf-value index of voxel ijk (-1 outside the leaves, or for grid types not
    in `layouts`): one walk, its offsets and sizes picked by the grid type at run time."""
    grid_type = ctx.op("load", p, i64(ctx, L.GRID_OFF["grid_type"]), type=int32)
    matches = [ctx.op("eq", grid_type, ctx.const(lay.grid_type, int32)) for lay in layouts]

    def pick(field: str) -> Var:
        out = i64(ctx, getattr(layouts[0], field))
        for lay, match in zip(layouts[1:], matches[1:], strict=True):
            out = ctx.op("select", match, i64(ctx, getattr(lay, field)), out)
        return out

    walk = WalkLayout(*(pick(f) for f in ("root_size", "tile_size", "tile_value", "root_background",
                                          "upper_table", "lower_table", "table_stride", "leaf_table",
                                          "value_bytes")))  # fmt: skip
    offset, is_leaf = value_offset(ctx, p, walk, ijk)
    n = table_slot(ctx, ijk, 7, 0, 3)
    base = ctx.op("sub", offset, ctx.op("add", walk.leaf_table, ctx.op("mul", n, walk.value_bytes)))
    leaf0 = ctx.op("add", load_i64(ctx, p, i64(ctx, L.GRID_SIZE + L.TREE_OFF["leaf"])),
                   i64(ctx, L.GRID_SIZE))
    number = ctx.op("div", ctx.op("sub", base, leaf0), pick("leaf_size"))
    index = ctx.op("add", ctx.op("mul", number, i64(ctx, L.LEAF_COUNT)), n)
    known = matches[0]
    for match in matches[1:]:
        known = ctx.op("or", known, match)
    found = ctx.op("and", known, ctx.op("ne", is_leaf, ctx.const(0, int32)))
    return ctx.op("select", found, index, i64(ctx, -1))


@builtin("volume_voxel_count", "the number of indexed voxels of an index volume (the size a "
         "voxel_data array needs)", differentiable=False, signatures="(id: uint64) -> int32",
         group=_GROUP)
def volume_voxel_count(ctx: Ctx, vid: Value) -> Value:
    p = volume_pointer(ctx, "volume_voxel_count", vid)
    values = load_i64(ctx, p, i64(ctx, L.GRID_OFF["data1"]))
    count = ctx.op("select", _is_index(ctx, p), ctx.op("sub", values, i64(ctx, 1)), i64(ctx, 0))
    return ctx.op("cast", count, type=int32)


@builtin("volume_lookup_index", "the zero-based index of voxel (i, j, k) of an index volume (of a "
         "value volume: its place among the leaves' values), -1 where no voxel is indexed",
         differentiable=False,
         signatures="(id: uint64, i: Int, j: Int, k: Int) -> int32", group=_GROUP)
def volume_lookup_index(ctx: Ctx, vid: Value, i: Value, j: Value, k: Value) -> Value:
    p = volume_pointer(ctx, "volume_lookup_index", vid)
    return voxel_index(ctx, p, [int_arg(ctx, c) for c in (i, j, k)])


def _components(v: Value) -> list[Var]:
    return list(v.comps) if isinstance(v, Composite) else [v]  # type: ignore[list-item]


def _data_value(ctx: Ctx, data: ArrayVal, index: Var, background: Value) -> list[Var]:
    """voxel_data[index], or the background where index is -1."""
    def read() -> list[Var]:
        place = memory.index_array(ctx, data, [ctx.op("cast", index, type=int64)])
        assert isinstance(place, memory.Place)
        return _components(memory.load(ctx, place))

    has = ctx.op("ge", index, ctx.const(0, int32))
    return if_values(ctx, has, read, lambda: _components(background))


def _sample_index(ctx: Ctx, name: str, vid: Value, uvw: Value, mode: Value, data: Value,
                  background: Value, want_grad: bool) -> tuple[Any, list[Var], list[list[Var]]]:  # fmt: skip
    if not isinstance(data, ArrayVal) or data.type.ndim != 1:
        raise ctx.error(f"wp.{name}(): voxel_data is a 1-D array, got {describe(data)}")
    t = data.type.dtype
    bg = materialize(ctx, background, t if not isinstance(t, (VectorType, MatrixType)) else None)
    if getattr(bg, "type", None) != t:
        raise ctx.error(f"wp.{name}(): background must have voxel_data's type {t!r}, got "
                        f"{describe(background)}")  # fmt: skip
    p = volume_pointer(ctx, name, vid)
    coords = index_coords(ctx, name, uvw)
    zero = ctx.const(0, t.dtype if isinstance(t, VectorType) else t)
    if sampling_mode(ctx, name, mode) == 0:
        ijk = [ctx.op("cast", ctx.op("floor", ctx.op("add", c, ctx.const(0.5, c.type))), type=int32)
               for c in coords]  # fmt: skip
        values = _data_value(ctx, data, voxel_index(ctx, p, ijk), bg)
        return t, values, [[zero] * len(values) for _ in range(3)]
    return (t, *_trilinear(ctx, p, coords, data, bg, zero, want_grad))


def _trilinear(ctx: Ctx, p: Var, coords: list[Var], data: ArrayVal, bg: Value, zero: Var,
               want_grad: bool) -> tuple[list[Var], list[list[Var]]]:  # fmt: skip
    base = [ctx.op("floor", c) for c in coords]
    frac = [ctx.op("cast", ctx.op("sub", c, b), type=zero.type) for c, b in zip(coords, base, strict=True)]
    i0 = [ctx.op("cast", b, type=int32) for b in base]
    one = ctx.const(1, zero.type)
    weights = [(ctx.op("sub", one, f), f) for f in frac]
    total: list[Var] | None = None
    grads: list[list[Var]] = [[], [], []]
    for corner in range(8):
        bits = [(corner >> (2 - a)) & 1 for a in range(3)]
        ijk = [ctx.op("add", i0[a], ctx.const(bits[a], int32)) for a in range(3)]
        vals = _data_value(ctx, data, voxel_index(ctx, p, ijk), bg)
        w = ctx.op("mul", ctx.op("mul", weights[0][bits[0]], weights[1][bits[1]]), weights[2][bits[2]])
        terms = [ctx.op("mul", w, v) for v in vals]
        total = terms if total is None else [ctx.op("add", a, b) for a, b in zip(total, terms, strict=True)]
        if want_grad:
            for a in range(3):
                others = [weights[b][bits[b]] for b in range(3) if b != a]
                dw = ctx.op("mul", others[0], others[1])
                dw = dw if bits[a] else ctx.op("neg", dw)
                add = [ctx.op("mul", dw, v) for v in vals]
                grads[a] = add if not grads[a] else [ctx.op("add", g, d) for g, d in zip(grads[a], add, strict=True)]
    assert total is not None
    return total, grads


def _value(t: Any, comps: list[Var]) -> Value:
    return Composite(t, tuple(comps)) if isinstance(t, (VectorType, MatrixType)) else comps[0]


@builtin("volume_sample_index", "an index volume sampled at index-space uvw (CLOSEST or LINEAR), "
         "reading voxel values from voxel_data (background where no voxel is indexed); "
         "differentiable in uvw, voxel_data and background",
         signatures="(id: uint64, uvw: vec3f, sampling_mode: Int, voxel_data: Array, "
                    "background: Any) -> Any", group=_GROUP)  # fmt: skip
def volume_sample_index(ctx: Ctx, vid: Value, uvw: Value, sampling_mode: Value, voxel_data: Value,
                        background: Value) -> Value:  # fmt: skip
    t, values, _ = _sample_index(ctx, "volume_sample_index", vid, uvw, sampling_mode, voxel_data,
                                 background, False)  # fmt: skip
    return _value(t, values)


@builtin("volume_sample_grad_index", "volume_sample_index and the sample's gradient with respect "
         "to uvw, written to grad (a vector, or one row per value component)",
         signatures="(id: uint64, uvw: vec3f, sampling_mode: Int, voxel_data: Array, "
                    "background: Any, grad: Any) -> Any", group=_GROUP)  # fmt: skip
def volume_sample_grad_index(ctx: Ctx, vid: Value, uvw: Value, sampling_mode: Value,
                             voxel_data: Value, background: Value, grad: Value) -> OutArgs:  # fmt: skip
    t, values, grads = _sample_index(ctx, "volume_sample_grad_index", vid, uvw, sampling_mode,
                                     voxel_data, background, True)  # fmt: skip
    scalar_t = t.dtype if isinstance(t, VectorType) else t
    if len(values) == 1:
        gt: Any = VectorType(3, scalar_t)
        comps = [g[0] for g in grads]
    else:
        gt = MatrixType(len(values), 3, scalar_t)
        comps = [grads[a][c] for c in range(len(values)) for a in range(3)]
    if getattr(grad, "type", None) != gt:
        raise ctx.error(f"Incompatible gradient type, expected {gt!r}, got "
                        f"{getattr(grad, 'type', describe(grad))!r}")  # fmt: skip
    return OutArgs(_value(t, values), ((5, Composite(gt, tuple(comps))),))
