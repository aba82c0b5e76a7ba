"""NanoVDB grids as bytes: reading `.nvdb` files (uncompressed or zip) and writing grids from leaves.

gradloom keeps a volume as one NanoVDB grid buffer, the format Warp's volumes use, so the same
bytes are what `Volume.array()` shows, what `save_to_nvdb` writes and what kernels walk
(builtins/volume.py). Offsets and node sizes are in types/volume.py. Blosc-compressed files are
refused with a message (no blosc decoder is bundled).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import numpy as np

from ...errors import GradloomError
from ...types import volume as L

_FILE_HEADER = struct.Struct("<QIHH")
_META_SIZE, _META_NAME_SIZE_AT, _META_CODEC_AT = 176, 136, 168
_CODEC_NONE, _CODEC_ZIP, _CODEC_BLOSC = 0, 1, 2


class VolumeError(GradloomError, RuntimeError):
    """A volume file or buffer gradloom cannot read, or arguments it cannot build a grid from."""


def grids_of(data: bytes) -> list[bytes]:
    """The grid buffers in `.nvdb` file bytes (or in one raw grid buffer)."""
    if len(data) < 16:
        raise VolumeError("not a NanoVDB file: too short")
    magic, _version, count, codec = _FILE_HEADER.unpack_from(data, 0)
    if magic not in (L.MAGIC_GRID, *L.MAGIC_FILE_ALT):
        raise VolumeError("not a NanoVDB file (bad magic number)")
    if len(data) >= L.GRID_SIZE and struct.unpack_from("<Q", data, 32)[0] == len(data):
        return [bytes(data)]  # a raw grid buffer, no file header
    out, pos = [], 16
    metas = []
    for _ in range(count):
        grid_size, file_size = struct.unpack_from("<QQ", data, pos)
        name_size = struct.unpack_from("<I", data, pos + _META_NAME_SIZE_AT)[0]
        grid_codec = struct.unpack_from("<H", data, pos + _META_CODEC_AT)[0]
        metas.append((grid_size, file_size, grid_codec or codec))
        pos += _META_SIZE + name_size
    for grid_size, file_size, grid_codec in metas:
        out.append(_decode(data[pos:pos + file_size], grid_size, grid_codec))
        pos += file_size
    return out


def _decode(chunk: bytes, size: int, codec: int) -> bytes:
    if codec == _CODEC_NONE:
        raw = chunk
    elif codec == _CODEC_ZIP:
        (n,) = struct.unpack_from("<Q", chunk, 0)
        raw = zlib.decompress(chunk[8:8 + n])
    else:
        raise VolumeError("this .nvdb file is blosc-compressed; gradloom reads uncompressed and "
                          "zip-compressed NanoVDB files")  # fmt: skip
    if len(raw) != size:
        raise VolumeError(f"NanoVDB grid of {len(raw)} bytes, its header says {size}")
    return raw


@dataclass
class GridHeader:
    """What a grid buffer's headers say."""

    grid_type: int
    grid_class: int
    name: str
    grid_index: int
    grid_count: int
    size: int
    voxel_size: tuple[float, float, float]
    mat: np.ndarray  # float32 3×3, index -> world
    inv_mat: np.ndarray
    translation: np.ndarray  # float32 3
    leaf_count: int
    leaf_offset: int  # bytes from the buffer start


def header(buf: bytes | np.ndarray) -> GridHeader:
    b = bytes(buf[: L.GRID_SIZE + L.TREE_SIZE])
    g, t = L.GRID_OFF, L.TREE_OFF
    if struct.unpack_from("<Q", b, g["magic"])[0] not in (L.MAGIC_GRID, *L.MAGIC_FILE_ALT):
        raise VolumeError("not a NanoVDB grid buffer (bad magic number)")
    raw_name = b[g["name"]:g["name"] + L.NAME_SIZE]
    m = g["map"]
    mat = np.frombuffer(b, np.float32, 9, m + L.MAP_OFF["matf"]).reshape(3, 3).copy()
    inv = np.frombuffer(b, np.float32, 9, m + L.MAP_OFF["invmatf"]).reshape(3, 3).copy()
    vec = np.frombuffer(b, np.float32, 3, m + L.MAP_OFF["vecf"]).copy()
    tree = L.GRID_SIZE
    return GridHeader(
        grid_type=struct.unpack_from("<I", b, g["grid_type"])[0],
        grid_class=struct.unpack_from("<I", b, g["grid_class"])[0],
        name=raw_name.split(b"\0", 1)[0].decode("utf-8", "replace"),
        grid_index=struct.unpack_from("<I", b, g["grid_index"])[0],
        grid_count=struct.unpack_from("<I", b, g["grid_count"])[0],
        size=struct.unpack_from("<Q", b, g["grid_size"])[0],
        voxel_size=struct.unpack_from("<3d", b, g["voxel_size"]),
        mat=mat, inv_mat=inv, translation=vec,
        leaf_count=struct.unpack_from("<I", b, tree + t["count_leaf"])[0],
        leaf_offset=tree + struct.unpack_from("<Q", b, tree + t["leaf"])[0],
    )  # fmt: skip


def leaf_origins(buf: np.ndarray, head: GridHeader, layout: L.ValueLayout) -> np.ndarray:
    """(n, 3) int32 origins of the leaves, in the buffer's order."""
    starts = head.leaf_offset + layout.leaf_size * np.arange(head.leaf_count, dtype=np.int64)
    rows = starts[:, None] + np.arange(12, dtype=np.int64)[None, :]
    return buf[rows].view(np.int32).reshape(-1, 3) & ~np.int32(7)


def leaf_active(buf: np.ndarray, head: GridHeader, layout: L.ValueLayout) -> np.ndarray:
    """(n, 512) bool: each leaf's active voxels (bit n of the mask: offset (x<<6)|(y<<3)|z)."""
    starts = head.leaf_offset + layout.leaf_size * np.arange(head.leaf_count, dtype=np.int64)
    rows = starts[:, None] + L.LEAF_OFF_VALUE_MASK + np.arange(64, dtype=np.int64)[None, :]
    return np.unpackbits(buf[rows], axis=1, bitorder="little").astype(bool)


@dataclass
class GridSpec:
    """What a new grid holds: leaves (origins, values, active voxels) and its metadata."""

    layout: L.ValueLayout
    origins: np.ndarray  # (n, 3) int32, multiples of 8
    values: np.ndarray  # (n, 512, channels) of the layout's scalar type
    active: np.ndarray  # (n, 512) bool
    background: np.ndarray  # (channels,)
    mat: np.ndarray  # 3×3 index -> world (float64)
    translation: np.ndarray  # (3,)
    name: str = ""
    grid_class: int = L.GRID_CLASS_UNKNOWN


def _key(origin: np.ndarray) -> int:
    i, j, k = (int(v) & 0xFFFFFFFF for v in origin)
    return (k >> 12) | ((j >> 12) << 21) | ((i >> 12) << 42)


def _node_index(coords: np.ndarray, extent_bits: int, child_bits: int) -> np.ndarray:
    """Table slot of child origins inside a node: (x, y, z) fields of child_bits bits each."""
    local = (coords & ((1 << extent_bits) - 1)) >> (extent_bits - child_bits)
    return (local[:, 0] << (2 * child_bits)) | (local[:, 1] << child_bits) | local[:, 2]


class _Writer:
    """A grid buffer being filled: struct.pack_into on a bytearray, numpy for bulk arrays."""

    def __init__(self, size: int) -> None:
        self.buf = bytearray(size)

    def put(self, offset: int, fmt: str, *values: object) -> None:
        struct.pack_into("<" + fmt, self.buf, offset, *values)

    def array(self, offset: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).tobytes()
        self.buf[offset:offset + len(raw)] = raw


def build_grid(spec: GridSpec) -> bytes:
    """A NanoVDB grid buffer (breadth-first: root, upper, lower and leaf nodes) holding spec."""
    lay = spec.layout
    order = np.lexsort((spec.origins[:, 2], spec.origins[:, 1], spec.origins[:, 0]))
    origins, values, active = spec.origins[order], spec.values[order], spec.active[order]
    lowers, leaf_lower = np.unique(origins & ~np.int32(127), axis=0, return_inverse=True)
    uppers, lower_upper = np.unique(lowers & ~np.int32(4095), axis=0, return_inverse=True)
    root = L.GRID_SIZE + L.TREE_SIZE
    upper0 = root + lay.root_size + len(uppers) * lay.tile_size
    lower0 = upper0 + len(uppers) * lay.upper_size
    leaf0 = lower0 + len(lowers) * lay.lower_size
    w = _Writer(leaf0 + len(origins) * lay.leaf_size)
    scalar = np.uint64 if lay.scalar == "index" else lay.scalar
    bg = np.asarray(spec.background, dtype=scalar).reshape(lay.channels)
    _grid_header(w, spec, len(w.buf), origins)
    if lay.scalar == "index":  # the value count, the background's index 0 included
        w.put(L.GRID_OFF["data1"], "Q", int(active.sum()) + 1)
    _tree(w, root, upper0, lower0, leaf0, (len(origins), len(lowers), len(uppers)), int(active.sum()))
    _root(w, root, lay, uppers, upper0, bg, origins)
    _internal(w, upper0, lay.upper_size, lay.upper_table, lay, uppers, lowers, lower_upper,
              lower0, lay.lower_size, L.UPPER_OFF_CHILD_MASK, (12, 5), bg)  # fmt: skip
    _internal(w, lower0, lay.lower_size, lay.lower_table, lay, lowers, origins, leaf_lower,
              leaf0, lay.leaf_size, L.LOWER_OFF_CHILD_MASK, (7, 4), bg)  # fmt: skip
    _leaves(w, leaf0, lay, origins, values, active)
    return bytes(w.buf)


def _grid_header(w: _Writer, spec: GridSpec, size: int, origins: np.ndarray) -> None:
    g, m = L.GRID_OFF, L.GRID_OFF["map"]
    mat = np.asarray(spec.mat, np.float64)
    inv = np.linalg.inv(mat)
    vec = np.asarray(spec.translation, np.float64)
    w.put(g["magic"], "Q", L.MAGIC_GRID)
    w.put(g["checksum"], "Q", 0xFFFFFFFFFFFFFFFF)  # "no checksum"
    w.put(g["version"], "I", L.VERSION)
    w.put(g["flags"], "I", (1 << 1) | (1 << 5))  # has a bbox, breadth-first
    w.put(g["grid_index"], "II", 0, 1)
    w.put(g["grid_size"], "Q", size)
    w.array(g["name"], np.frombuffer(spec.name.encode()[: L.NAME_SIZE - 1], np.uint8))
    w.array(m + L.MAP_OFF["matf"], mat.astype(np.float32))
    w.array(m + L.MAP_OFF["invmatf"], inv.astype(np.float32))
    w.array(m + L.MAP_OFF["vecf"], vec.astype(np.float32))
    w.put(m + L.MAP_OFF["taperf"], "f", 1.0)
    w.array(m + L.MAP_OFF["matd"], mat)
    w.array(m + L.MAP_OFF["invmatd"], inv)
    w.array(m + L.MAP_OFF["vecd"], vec)
    w.put(m + L.MAP_OFF["taperd"], "d", 1.0)
    lo = origins.min(axis=0) if len(origins) else np.zeros(3)
    hi = origins.max(axis=0) + 8 if len(origins) else np.zeros(3)
    corners = [mat @ np.array(c, np.float64) + vec for c in (lo, hi)]
    w.array(g["world_bbox"], np.concatenate([np.minimum(*corners), np.maximum(*corners)]))
    w.array(g["voxel_size"], np.sqrt((mat**2).sum(axis=0)))
    w.put(g["grid_class"], "II", spec.grid_class, spec.layout.grid_type)
    w.put(g["blind_offset"], "QI", 0, 0)


def _tree(w: _Writer, root: int, upper0: int, lower0: int, leaf0: int, counts: tuple[int, int, int],
          voxels: int) -> None:  # fmt: skip
    t, tree = L.TREE_OFF, L.GRID_SIZE
    w.put(tree + t["leaf"], "QQQQ", leaf0 - tree, lower0 - tree, upper0 - tree, root - tree)
    w.put(tree + t["count_leaf"], "III", *counts)
    w.put(tree + t["voxel_count"], "Q", voxels)


def _root(w: _Writer, root: int, lay: L.ValueLayout, uppers: np.ndarray, upper0: int, bg: np.ndarray,
          origins: np.ndarray) -> None:  # fmt: skip
    if len(origins):
        w.array(root, np.concatenate([origins.min(axis=0), origins.max(axis=0) + 7]).astype(np.int32))
    w.put(root + L.ROOT_OFF_TABLE_SIZE, "I", len(uppers))
    w.array(root + lay.root_background, bg)
    for n, origin in enumerate(uppers):
        tile = root + lay.root_size + n * lay.tile_size
        w.put(tile + L.TILE_OFF_KEY, "Qq", _key(origin), upper0 + n * lay.upper_size - root)
        w.array(tile + lay.tile_value, bg)


def _internal(w: _Writer, base0: int, size: int, table: int, lay: L.ValueLayout, nodes: np.ndarray,
              children: np.ndarray, parent_of: np.ndarray, child0: int, child_size: int,
              mask_at: int, bits: tuple[int, int], bg: np.ndarray) -> None:  # fmt: skip
    """Upper (bits (12, 5)) or lower (bits (7, 4)) nodes: bbox, child masks, child offsets,
    background in every other slot."""
    count = 1 << (3 * bits[1])
    fill = np.zeros((count, lay.table_stride), np.uint8)
    tile_value = np.frombuffer(bg.tobytes(), np.uint8)  # an index grid's tiles: index 0
    fill[:, : tile_value.size] = tile_value
    for n, origin in enumerate(nodes):
        base = base0 + n * size
        w.array(base, np.concatenate([origin, origin + (1 << bits[0]) - 1]).astype(np.int32))
        mine = np.flatnonzero(parent_of == n)
        slots = _node_index(children[mine].astype(np.int64), *bits)
        entries = fill.copy()
        offsets = child0 + mine.astype(np.int64) * child_size - base
        entries[slots, :8] = offsets.view(np.uint8).reshape(-1, 8)
        w.array(base + table, entries)
        mask = np.zeros(count, bool)
        mask[slots] = True
        w.array(base + mask_at, np.packbits(mask, bitorder="little"))


def _leaves(w: _Writer, leaf0: int, lay: L.ValueLayout, origins: np.ndarray, values: np.ndarray,
            active: np.ndarray) -> None:  # fmt: skip
    for n in range(len(origins)):
        base = leaf0 + n * lay.leaf_size
        w.array(base, origins[n].astype(np.int32))
        w.array(base + 12, np.array([7, 7, 7, 0], np.uint8))  # bbox extent, flags
        w.array(base + L.LEAF_OFF_VALUE_MASK, np.packbits(active[n], bitorder="little"))
        if lay.scalar != "index":
            w.array(base + lay.leaf_table, values[n].astype(lay.scalar))
    if lay.scalar == "index":
        _index_leaves(w, leaf0, lay, active)


def _index_leaves(w: _Writer, leaf0: int, lay: L.ValueLayout, active: np.ndarray) -> None:
    """An index grid's leaves: the first active voxel's index (counting from 1 over the leaves
    in order) and the running counts of active voxels per 64-bit mask word."""
    counts = active.sum(axis=1)
    firsts = 1 + np.concatenate([[0], np.cumsum(counts)[:-1]])
    per_word = active.reshape(len(active), 8, 64).sum(axis=2)
    running = np.cumsum(per_word, axis=1)[:, :7]  # actives in words 0..w, w < 7
    for n in range(len(active)):
        prefix = 0
        for word in range(7):
            prefix |= int(running[n, word]) << (9 * word)
        w.put(leaf0 + n * lay.leaf_size + lay.leaf_table, "QQ", int(firsts[n]), prefix)


def file_bytes(grids: list[bytes], codec: str = "none") -> bytes:
    """An `.nvdb` file holding the grids: file header, each grid's metadata and name, then the
    (zipped) grids."""
    codes = {"none": _CODEC_NONE, "zip": _CODEC_ZIP}
    if codec not in codes:
        raise VolumeError(f"codec: 'none' or 'zip' (blosc is not bundled), got {codec!r}")
    head_out, bodies = b"", b""
    for grid in grids:
        body = grid if codec == "none" else (lambda z: struct.pack("<Q", len(z)) + z)(zlib.compress(grid))
        head_out += _file_meta(grid, len(body), codes[codec])
        bodies += body
    return struct.pack("<QIHH", L.MAGIC_GRID, L.VERSION, len(grids), codes[codec]) + head_out + bodies


def _file_meta(grid: bytes, body_size: int, code: int) -> bytes:
    """One grid's file metadata and name."""
    head = header(grid)
    name = head.name.encode() + b"\0"
    b = bytes(grid[: L.GRID_SIZE + L.TREE_SIZE])
    t = L.GRID_SIZE
    counts = struct.unpack_from("<III", b, t + L.TREE_OFF["count_leaf"])
    voxels = struct.unpack_from("<Q", b, t + L.TREE_OFF["voxel_count"])[0]
    world = struct.unpack_from("<6d", b, L.GRID_OFF["world_bbox"])
    meta = struct.pack("<4Q2I6d6i3dI4I3I2HI", len(grid), body_size, 0, voxels, head.grid_type,
                       head.grid_class, *world, *([0] * 6), *head.voxel_size, len(name),
                       *counts, 1, 0, 0, 0, code, 0, L.VERSION)  # fmt: skip
    return meta + name
