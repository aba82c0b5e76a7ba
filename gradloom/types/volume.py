"""The NanoVDB grid layout volumes use (runtime/geometry/nanovdb.py writes and reads it, builtins/volume.py
walks it in kernels): byte offsets of the grid and tree headers and, per value type, of the root,
internal and leaf nodes (the facts of NanoVDB's published format, version 32)."""

from __future__ import annotations

from dataclasses import dataclass

MAGIC_GRID = 0x304244566F6E614E  # "NanoVDB0", little-endian
MAGIC_FILE_ALT = (0x314244566F6E614E, 0x324244566F6E614E)  # "NanoVDB1", "NanoVDB2"
VERSION = (32 << 21) | (3 << 10) | 3

GRID_SIZE = 672
GRID_OFF = {"magic": 0, "checksum": 8, "version": 16, "flags": 20, "grid_index": 24,
            "grid_count": 28, "grid_size": 32, "name": 40, "map": 296, "world_bbox": 560,
            "voxel_size": 608, "grid_class": 632, "grid_type": 636,
            "blind_offset": 640, "blind_count": 648, "data1": 656}  # fmt: skip
NAME_SIZE = 256
#: the map: float 3×3 matrix, its inverse, the translation (then the same in double)
MAP_OFF = {"matf": 0, "invmatf": 36, "vecf": 72, "taperf": 84, "matd": 88, "invmatd": 160,
           "vecd": 232, "taperd": 256}  # fmt: skip
TREE_SIZE = 64
TREE_OFF = {"leaf": 0, "lower": 8, "upper": 16, "root": 24, "count_leaf": 32, "count_lower": 36,
            "count_upper": 40, "tiles_lower": 44, "tiles_upper": 48, "tiles_root": 52,
            "voxel_count": 56}  # fmt: skip
ROOT_OFF_TABLE_SIZE = 24
TILE_OFF_KEY, TILE_OFF_CHILD, TILE_OFF_STATE = 0, 8, 16
NODE_OFF_VALUE_MASK = 32  # upper and lower nodes (after the bbox and flags)
UPPER_OFF_CHILD_MASK, LOWER_OFF_CHILD_MASK = 4128, 544
LEAF_OFF_VALUE_MASK = 16
#: entries per node table: 32³ (upper), 16³ (lower), 8³ (leaf); voxel extents 4096, 128, 8
UPPER_COUNT, LOWER_COUNT, LEAF_COUNT = 32768, 4096, 512
GRID_CLASS_LEVEL_SET, GRID_CLASS_FOG, GRID_CLASS_UNKNOWN, GRID_CLASS_INDEX = 1, 2, 0, 8
#: an index grid's leaf: the first voxel's index (uint64), then seven 9-bit running counts of
#: the active voxels in the mask's 64-bit words before each word
ONINDEX_OFF_PREFIX = 8


@dataclass(frozen=True)
class ValueLayout:
    """Where one value type's fields sit (NanoVDB's per-type constants)."""

    grid_type: int
    name: str  # NanoVDB's type string (Warp's `GridInfo.type_str`)
    scalar: str  # numpy scalar of one component
    channels: int
    root_background: int
    root_size: int
    tile_value: int
    tile_size: int
    upper_table: int
    upper_size: int
    lower_table: int
    lower_size: int
    leaf_table: int
    leaf_size: int
    table_stride: int

    @property
    def value_bytes(self) -> int:
        """Bytes of one leaf value (0 for an index grid: its leaves hold offsets, not values)."""
        if self.scalar == "index":
            return 0
        return self.channels * (8 if self.scalar in ("f8", "i8") else 4)


def _layout(t: int, name: str, scalar: str, ch: int, root: tuple[int, int], tile: tuple[int, int],
            upper: tuple[int, int], lower: tuple[int, int], leaf: tuple[int, int],
            stride: int) -> ValueLayout:  # fmt: skip
    return ValueLayout(t, name, scalar, ch, *root, *tile, *upper, *lower, *leaf, stride)


#: NanoVDB grid type -> layout, for the value types volumes hold
LAYOUTS: dict[int, ValueLayout] = {v.grid_type: v for v in (
    _layout(1, "float", "f4", 1, (28, 64), (20, 32), (8256, 270400), (1088, 33856), (96, 2144), 8),
    _layout(2, "double", "f8", 1, (32, 96), (24, 32), (8256, 270400), (1088, 33856), (128, 4224), 8),
    _layout(4, "int32", "i4", 1, (28, 64), (20, 32), (8256, 270400), (1088, 33856), (96, 2144), 8),
    _layout(5, "int64", "i8", 1, (32, 96), (24, 32), (8256, 270400), (1088, 33856), (128, 4224), 8),
    _layout(6, "Vec3f", "f4", 3, (28, 96), (20, 32), (8256, 532544), (1088, 66624), (128, 6272), 16),
    _layout(7, "Vec3d", "f8", 3, (32, 128), (24, 64), (8288, 794720), (1120, 99424), (160, 12448), 24),
    _layout(10, "uint32", "u4", 1, (28, 64), (20, 32), (8256, 270400), (1088, 33856), (96, 2144), 8),
    _layout(17, "Vec4f", "f4", 4, (28, 96), (20, 64), (8288, 532576), (1120, 66656), (128, 8320), 16),
    _layout(18, "Vec4d", "f8", 4, (32, 160), (24, 64), (8320, 1056896), (1152, 132224), (160, 16544), 32),
)}  # fmt: skip

#: NanoVDB's OnIndex grid (type 20): active voxels numbered from 1 (0 is the background), the
#: values kept in arrays outside the grid (`volume_sample_index`)
ONINDEX = _layout(20, "OnIndex", "index", 1, (32, 96), (24, 32), (8256, 270400), (1088, 33856),
                  (80, 96), 8)
#: every grid type gradloom reads
ALL_LAYOUTS: dict[int, ValueLayout] = {**LAYOUTS, ONINDEX.grid_type: ONINDEX}

#: NanoVDB's type names by grid type (a grid's `type_str`, a blind-data entry's value type)
TYPE_NAMES: dict[int, str] = dict(enumerate((
    "?", "float", "double", "int16", "int32", "int64", "Vec3f", "Vec3d", "Mask", "Half", "uint32",
    "bool", "RGBA8", "Float4", "Float8", "Float16", "FloatN", "Vec4f", "Vec4d", "Index", "OnIndex",
    "IndexMask", "OnIndexMask", "PointIndex", "Vec3u8", "Vec3u16", "uint8")))  # fmt: skip
#: a quantized float leaf (Fp4/Fp8/Fp16/FpN): bytes before its packed values
QUANTIZED_LEAF_HEADER = 96


def _quantized(grid_type: int, bits: int) -> ValueLayout:
    """Fp4/Fp8/Fp16 (bits fixed) and FpN (bits per leaf: leaf_size 0): float-grid nodes above
    leaves of packed values; gradloom checks and keeps them, kernels do not sample them."""
    leaf = QUANTIZED_LEAF_HEADER + bits * LEAF_COUNT // 8 if bits else 0
    return _layout(grid_type, TYPE_NAMES[grid_type], "f4", 1, (28, 64), (20, 32), (8256, 270400),
                   (1088, 33856), (QUANTIZED_LEAF_HEADER, leaf), 8)  # fmt: skip


QUANTIZED: dict[int, ValueLayout] = {t: _quantized(t, b) for t, b in ((13, 4), (14, 8), (15, 16), (16, 0))}


def structure_layout(grid_type: int) -> ValueLayout | None:
    """The node layout of a grid type gradloom reads (None for the others)."""
    return ALL_LAYOUTS.get(grid_type) or QUANTIZED.get(grid_type)
