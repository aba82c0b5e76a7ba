"""Structure checks of a NanoVDB grid buffer, and its blind data (feature arrays), before any walk.

Every offset a kernel's walk follows (builtins/volume_walk.py) must land on a node of the right
level inside the grid, node levels and the blind-metadata table must not overlap, names must be
NUL-terminated and each feature array must lie inside its grid, so a damaged or hostile grid is
refused on load instead of sending kernels or `feature_array` to read outside it. Quantized float
grids (Fp4/Fp8/Fp16/FpN) are checked too: their leaves' sizes follow each leaf's bit width.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass

import numpy as np

from ...types import volume as L
from .nanovdb import GridHeader, VolumeError

_FLAG_BREADTH_FIRST = 1 << 5
_BLIND_SIZE, _BLIND_NAME_AT = 288, 32
_ALIGNMENT = 32


def _invalid(why: str) -> VolumeError:
    return VolumeError(f"Invalid NanoVDB grid structure: {why}")


@dataclass(frozen=True)
class Blind:
    """One blind-data entry (Warp's feature array): where its values start in the grid."""

    name: str
    offset: int  # bytes from the grid's start
    value_size: int
    value_count: int
    type_str: str


def check_header(raw: bytes, available: int, aligned: bool) -> tuple[int, bool]:
    """(grid size, breadth-first?) of the grid at raw[0:], raising on a size it cannot have, an
    unterminated name or an unknown grid type; `aligned` also asks a multiple of 32 bytes."""
    if available < L.GRID_SIZE + L.TREE_SIZE:
        raise _invalid("the buffer ends inside the grid header")
    g = L.GRID_OFF
    size = struct.unpack_from("<Q", raw, g["grid_size"])[0]
    if size < L.GRID_SIZE + L.TREE_SIZE or size > available:
        raise _invalid(f"grid size {size} for a buffer of {available} bytes")
    if aligned and size % _ALIGNMENT:
        raise _invalid(f"grid size {size} is not a multiple of {_ALIGNMENT} bytes")
    if b"\0" not in raw[g["name"]:g["name"] + L.NAME_SIZE]:
        raise _invalid("the grid name is not NUL-terminated")
    grid_type = struct.unpack_from("<I", raw, g["grid_type"])[0]
    if L.structure_layout(grid_type) is None:
        raise _invalid(f"grid type {grid_type} is not one gradloom reads (float, double, int32, "
                       "int64, uint32, Vec3f, Vec3d, Vec4f, Vec4d, Fp4/8/16/N, OnIndex)")  # fmt: skip
    flags = struct.unpack_from("<I", raw, g["flags"])[0]
    return size, bool(flags & _FLAG_BREADTH_FIRST)


def validate(buf: np.ndarray, head: GridHeader, layout: L.ValueLayout) -> list[Blind]:
    """Check the grid at buf[0:head.size]; its blind-data entries."""
    size = head.size
    raw = buf[:size].tobytes()
    tree = L.GRID_SIZE
    offs = struct.unpack_from("<4Q", raw, tree)
    counts = struct.unpack_from("<3I", raw, tree + L.TREE_OFF["count_leaf"])
    root = tree + offs[3]
    if root < tree + L.TREE_SIZE or root + layout.root_size > size:
        raise _invalid("the root node lies outside the grid")
    tiles = struct.unpack_from("<I", raw, root + L.ROOT_OFF_TABLE_SIZE)[0]
    regions = [(root, root + layout.root_size + tiles * layout.tile_size)]
    if regions[0][1] > size:
        raise _invalid("the root table lies outside the grid")
    starts: list[int] = []
    for level, node_size in enumerate((layout.upper_size, layout.lower_size)):
        level = 2 - level
        start = tree + offs[level]
        end = start + counts[level] * node_size
        if counts[level] and (start < tree + L.TREE_SIZE or end > size):
            raise _invalid(f"the {('leaf', 'lower', 'upper')[level]} nodes lie outside the grid")
        starts.append(start)
        regions.append((start, end))
    leaves = _leaf_starts(raw, tree + offs[0], counts[0], layout, size)
    regions.append((tree + offs[0], int(leaves[-1]) if counts[0] else tree + offs[0]))
    spans = sorted(r for r in regions if r[1] > r[0])
    if any(a[1] > b[0] for a, b in itertools.pairwise(spans)):
        raise _invalid("node regions overlap")
    _check_root(raw, root, tiles, layout, starts[0], counts[2])
    _check_children(buf, starts[0], counts[2], layout.upper_size, L.UPPER_OFF_CHILD_MASK,
                    layout.upper_table, L.UPPER_COUNT, layout.table_stride,
                    starts[1] + layout.lower_size * np.arange(counts[1], dtype=np.int64), "upper")
    _check_children(buf, starts[1], counts[1], layout.lower_size, L.LOWER_OFF_CHILD_MASK,
                    layout.lower_table, L.LOWER_COUNT, layout.table_stride, leaves[:-1], "lower")
    return _blind(raw, size, max((r[1] for r in spans), default=0))


def _leaf_starts(raw: bytes, leaf0: int, count: int, layout: L.ValueLayout, size: int) -> np.ndarray:
    """Offsets of the leaves and, last, of their end (a quantized leaf's size from its flags)."""
    if count and leaf0 < L.GRID_SIZE + L.TREE_SIZE:
        raise _invalid("the leaf nodes lie outside the grid")
    if layout.leaf_size:
        if count and leaf0 + count * layout.leaf_size > size:
            raise _invalid("the leaf nodes lie outside the grid")
        return leaf0 + layout.leaf_size * np.arange(count + 1, dtype=np.int64)
    starts, at = [leaf0], leaf0
    for _ in range(count):
        if at + L.QUANTIZED_LEAF_HEADER > size:
            raise _invalid("the leaf nodes lie outside the grid")
        bits = 1 << (raw[at + 15] >> 5)
        at += L.QUANTIZED_LEAF_HEADER + bits * L.LEAF_COUNT // 8
        if at > size:
            raise _invalid("a quantized leaf's values lie outside the grid")
        starts.append(at)
    return np.asarray(starts, np.int64)


def _check_root(raw: bytes, root: int, tiles: int, layout: L.ValueLayout, upper0: int,
                uppers: int) -> None:  # fmt: skip
    for t in range(tiles):
        child = struct.unpack_from("<q", raw, root + layout.root_size + t * layout.tile_size + 8)[0]
        if child == 0:
            continue
        k, rem = divmod(root + child - upper0, layout.upper_size)
        if rem or not 0 <= k < uppers:
            raise _invalid(f"root tile {t} points at no upper node")


def _check_children(buf: np.ndarray, node0: int, nodes: int, node_size: int, mask_at: int,
                    table: int, slots: int, stride: int, children: np.ndarray,
                    level: str) -> None:  # fmt: skip
    """Every child-mask bit of every node names the offset of a node of the next level."""
    if nodes == 0:
        return
    bases = node0 + node_size * np.arange(nodes, dtype=np.int64)
    masks = buf[(bases + mask_at)[:, None] + np.arange(slots // 8, dtype=np.int64)[None, :]]
    bits = np.unpackbits(masks, axis=1, bitorder="little").astype(bool)
    node_idx, slot_idx = np.nonzero(bits)
    if node_idx.size == 0:
        return
    at = bases[node_idx] + table + slot_idx.astype(np.int64) * stride
    entries = buf[at[:, None] + np.arange(8, dtype=np.int64)[None, :]].copy().view(np.int64).ravel()
    targets = bases[node_idx] + entries
    k = np.searchsorted(children, targets)
    found = k < len(children)
    if not np.all(found) or np.any(children[np.minimum(k, len(children) - 1)] != targets):
        raise _invalid(f"an {level} node's child offset points at no node of the next level")


def _blind(raw: bytes, size: int, tree_end: int) -> list[Blind]:
    """The blind-metadata table's entries, each checked to lie inside the grid."""
    offset, count = struct.unpack_from("<qI", raw, L.GRID_OFF["blind_offset"])
    if offset == 0 and count == 0:
        return []  # no table (older writers leave the offset zero)
    if offset < tree_end or offset + count * _BLIND_SIZE > size:
        raise _invalid("the blind-metadata table lies outside the grid or inside its tree")
    out = []
    for n in range(count):
        at = offset + n * _BLIND_SIZE
        data, values, value_size, _sem, _cls, data_type = struct.unpack_from("<qQIIII", raw, at)
        name = raw[at + _BLIND_NAME_AT:at + _BLIND_NAME_AT + L.NAME_SIZE]
        if b"\0" not in name:
            raise _invalid(f"the name of blind data {n} is not NUL-terminated")
        start = at + data
        if start < 0 or start + values * value_size > size:
            raise _invalid(f"blind data {n} lies outside its grid")
        out.append(Blind(name.split(b"\0", 1)[0].decode("utf-8", "replace"), start, value_size,
                         values, L.TYPE_NAMES.get(data_type, "?")))  # fmt: skip
    return out
