"""Finding a voxel's value in a NanoVDB grid buffer from kernel code (builtins/volume.py's base).

A kernel receives a volume's id: the address of its grid buffer (runtime/geometry/volume.py). The walk
is NanoVDB's own: the root's tile whose key covers the voxel (a search over the root table),
then the upper node's 32³ table, the lower node's 16³ table and the leaf's 8³ values, each step
taken only where the node's child mask says a child exists; elsewhere the value is the tile's,
or the background. Everything here is integer arithmetic and integer loads (offsets in layout
order, types/volume.py), so autodiff sees no float value from memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Var
from ..types import int32, int64
from ..types import volume as L
from .values import Ctx, if_values, while_loop


def i64(ctx: Ctx, v: int | Var) -> Var:
    """An int64 constant (a value already computed passes through)."""
    return v if isinstance(v, Var) else ctx.const(v, int64)


def load_i64(ctx: Ctx, p: Var, offset: Var) -> Var:
    return ctx.op("load", p, offset, type=int64)


def _add(ctx: Ctx, a: Var, b: Var | int) -> Var:
    return ctx.op("add", a, i64(ctx, b) if isinstance(b, int) else b)


def _bits(ctx: Ctx, coord: Var, mask: int, shift: int) -> Var:
    """(coord & mask) >> shift as int64."""
    c = ctx.op("cast", coord, type=int64)
    return ctx.op("shr", ctx.op("and", c, i64(ctx, mask)), i64(ctx, shift))


def table_slot(ctx: Ctx, ijk: list[Var], mask: int, shift: int, bits: int) -> Var:
    """A node table slot: NanoVDB's (x << 2·bits) | (y << bits) | z of the masked coordinates."""
    x, y, z = (_bits(ctx, c, mask, shift) for c in ijk)
    xy = ctx.op("or", ctx.op("shl", x, i64(ctx, 2 * bits)), ctx.op("shl", y, i64(ctx, bits)))
    return ctx.op("or", xy, z)


def _root_key(ctx: Ctx, ijk: list[Var]) -> Var:
    parts = [_bits(ctx, c, 0xFFFFFFFF, 12) for c in ijk]
    shifted = ctx.op("or", ctx.op("shl", parts[0], i64(ctx, 42)), ctx.op("shl", parts[1], i64(ctx, 21)))
    return ctx.op("or", shifted, parts[2])


def _has_child(ctx: Ctx, p: Var, mask_at: Var, slot: Var) -> Var:
    word = ctx.op("shl", ctx.op("shr", slot, i64(ctx, 6)), i64(ctx, 3))
    bits = load_i64(ctx, p, _add(ctx, mask_at, word))
    bit = ctx.op("and", ctx.op("shr", bits, ctx.op("and", slot, i64(ctx, 63))), i64(ctx, 1))
    return ctx.op("ne", bit, i64(ctx, 0))


@dataclass(frozen=True)
class WalkLayout:
    """A layout whose offsets and sizes are values computed in the kernel (picked by the grid's
    type at run time), for walks that must serve several value types with one walk."""

    root_size: Var
    tile_size: Var
    tile_value: Var
    root_background: Var
    upper_table: Var
    lower_table: Var
    table_stride: Var
    leaf_table: Var
    value_bytes: Var


def value_offset(ctx: Ctx, p: Var, lay: L.ValueLayout | WalkLayout, ijk: list[Var]) -> tuple[Var, Var]:
    """(byte offset of voxel ijk's value in the buffer at p, int32 1 if it is a leaf voxel)."""
    root = _add(ctx, load_i64(ctx, p, i64(ctx, L.GRID_SIZE + L.TREE_OFF["root"])), L.GRID_SIZE)
    count = ctx.op("cast", ctx.op("load", p, _add(ctx, root, L.ROOT_OFF_TABLE_SIZE), type=int32),
                   type=int64)  # fmt: skip
    key = _root_key(ctx, ijk)
    tiles = _add(ctx, root, lay.root_size)

    def tile_at(t: Var) -> Var:
        return ctx.op("add", tiles, ctx.op("mul", t, i64(ctx, lay.tile_size)))

    def searching(v: list[Var]) -> Var:
        inside = ctx.op("lt", v[0], count)
        # the key is read inside the table even when the search is over (or the table empty)
        last = ctx.op("max", i64(ctx, 0), ctx.op("sub", count, i64(ctx, 1)))
        t = ctx.op("min", v[0], last)
        at = ctx.op("select", ctx.op("gt", count, i64(ctx, 0)), tile_at(t), root)
        other = ctx.op("ne", load_i64(ctx, p, at), key)
        return ctx.op("and", inside, other)

    (t,) = while_loop(ctx, [i64(ctx, 0)], searching, lambda v: [_add(ctx, v[0], 1)])
    found = ctx.op("lt", t, count)

    def in_tile() -> list[Var]:
        tile = tile_at(t)
        child = load_i64(ctx, p, _add(ctx, tile, L.TILE_OFF_CHILD))
        return if_values(ctx, ctx.op("ne", child, i64(ctx, 0)),
                         lambda: _upper(ctx, p, lay, ctx.op("add", root, child), ijk),
                         lambda: [_add(ctx, tile, lay.tile_value), ctx.const(0, int32)])  # fmt: skip

    out = if_values(ctx, found, in_tile,
                    lambda: [_add(ctx, root, lay.root_background), ctx.const(0, int32)])  # fmt: skip
    return out[0], out[1]


def _upper(ctx: Ctx, p: Var, lay: L.ValueLayout | WalkLayout, node: Var, ijk: list[Var]) -> list[Var]:
    slot = table_slot(ctx, ijk, 4095, 7, 5)
    entry = ctx.op("add", _add(ctx, node, lay.upper_table),
                   ctx.op("mul", slot, i64(ctx, lay.table_stride)))  # fmt: skip
    return if_values(ctx, _has_child(ctx, p, _add(ctx, node, L.UPPER_OFF_CHILD_MASK), slot),
                     lambda: _lower(ctx, p, lay, ctx.op("add", node, load_i64(ctx, p, entry)), ijk),
                     lambda: [entry, ctx.const(0, int32)])  # fmt: skip


def _lower(ctx: Ctx, p: Var, lay: L.ValueLayout | WalkLayout, node: Var, ijk: list[Var]) -> list[Var]:
    slot = table_slot(ctx, ijk, 127, 3, 4)
    entry = ctx.op("add", _add(ctx, node, lay.lower_table),
                   ctx.op("mul", slot, i64(ctx, lay.table_stride)))  # fmt: skip

    def leaf() -> list[Var]:
        base = ctx.op("add", node, load_i64(ctx, p, entry))
        voxel = table_slot(ctx, ijk, 7, 0, 3)
        at = ctx.op("add", _add(ctx, base, lay.leaf_table),
                    ctx.op("mul", voxel, i64(ctx, lay.value_bytes)))  # fmt: skip
        return [at, ctx.const(1, int32)]

    return if_values(ctx, _has_child(ctx, p, _add(ctx, node, L.LOWER_OFF_CHILD_MASK), slot), leaf,
                     lambda: [entry, ctx.const(0, int32)])  # fmt: skip

