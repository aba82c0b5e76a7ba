"""`wp.Volume`: a sparse voxel grid (one NanoVDB grid buffer in host memory) for kernel queries.

Kernels receive `volume.id`, the buffer's address; builtins/volume.py walks the buffer. Volumes
come from `.nvdb` files (`load_from_nvdb`; zip-compressed or not), from dense numpy arrays
(`load_from_numpy`), or are allocated empty over index or world boxes or at tile points
(`allocate`, `allocate_by_tiles`) to be filled with `volume_store`; `save_to_nvdb` writes them
back. A file's grids stay in one buffer (`load_next_grid` gives the next, sharing it), each
checked by runtime/geometry/nanovdb_check.py, which also reads the feature arrays (NanoVDB blind data).
Grids are built by runtime/geometry/nanovdb.py. Host memory only: CUDA volumes are not provided.
"""

from __future__ import annotations

import struct
from collections import namedtuple
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ... import types as T
from ...types import uint8, vec3f
from ...types import volume as L
from ..array.array import array as Array
from ..device import get_device
from . import nanovdb as N
from . import nanovdb_check as C
from . import volume_rebuild as R

GridInfo = namedtuple("GridInfo", "name size_in_bytes grid_index grid_count type_str "
                                  "translation transform_matrix")  # fmt: skip
_DTYPE = {"float": T.float32, "double": T.float64, "int32": T.int32, "int64": T.int64,
          "Vec3f": T.vec3f, "Vec3d": T.vec3d, "uint32": T.uint32, "Vec4f": T.vec4f,
          "Vec4d": T.vec4d}  # fmt: skip
#: a feature array's value type by its NanoVDB name (others: bytes)
_FEATURE_DTYPE = {**_DTYPE, "int16": T.int16, "Half": T.float16, "bool": T.bool_, "uint8": T.uint8,
                  "Vec3u8": T.vec3ub, "Vec3u16": T.vec3us}  # fmt: skip


class FeatureInfo(NamedTuple):
    """A feature array (NanoVDB blind data): its name, address, value size and count, type."""

    name: str
    ptr: int
    value_size: int
    value_count: int
    type_str: str


class Rebuild(NamedTuple):
    """Capacities reserved for rebuilds (gradloom's volumes are not rebuildable: kind None)."""

    kind: str | None
    max_voxel_count: int
    max_leaf_node_count: int
    max_lower_node_count: int
    max_upper_node_count: int


class Stats(NamedTuple):
    """The grid's active voxel count and its leaf, lower and upper node counts."""

    voxel_count: int
    leaf_node_count: int
    lower_node_count: int
    upper_node_count: int


def _check_grid(buf: np.ndarray, aligned: bool) -> tuple[N.GridHeader, L.ValueLayout, list[C.Blind], bool]:
    """The header, layout and blind data of the grid starting buf (checked); breadth-first?"""
    _size, breadth_first = C.check_header(buf[: L.GRID_SIZE + L.TREE_SIZE].tobytes(), len(buf), aligned)
    head = N.header(buf)
    layout = L.structure_layout(head.grid_type)
    assert layout is not None  # check_header refuses other grid types
    return head, layout, C.validate(buf, head, layout), breadth_first


def _unsupported_layout() -> N.VolumeError:
    return N.VolumeError("Unsupported NanoVDB tree layout: gradloom reads breadth-first grids "
                         "(the layout NanoVDB writes)")  # fmt: skip


def _voxel_matrix(voxel_size: Any) -> np.ndarray:
    """diag(voxel size): a number, or three (a TypeError for anything else, as in Warp)."""
    is_number = isinstance(voxel_size, (int, float, np.integer, np.floating)) and \
        not isinstance(voxel_size, bool)
    if not is_number and not isinstance(voxel_size, (list, tuple, np.ndarray)):
        raise TypeError(f"voxel_size: a number or three numbers, got {voxel_size!r}")
    vs = np.asarray(voxel_size, dtype=np.float64).ravel()
    if vs.size == 1:
        vs = np.repeat(vs, 3)
    if vs.size != 3:
        raise ValueError(f"voxel_size: a number or three numbers, got {voxel_size!r}")
    if not np.all(np.isfinite(vs)) or np.any(vs <= 0):
        raise ValueError(f"voxel_size must be positive and finite, got {voxel_size!r}")
    return np.diag(vs)


#: typed background values that pick their own grid type in `allocate` / `allocate_by_tiles`
_TYPED_GRID = {np.dtype(np.float64): 2, np.dtype(np.int64): 5, np.dtype(np.uint32): 10}


def _layout_for(bg_value: Any, vector: bool = False, typed: bool = False) -> tuple[L.ValueLayout, np.ndarray]:
    """The value type a background value picks (Warp's rule: an int makes an int32 volume,
    three numbers a vec3f one, four a vec4f one, anything else float32; with `typed`, a
    wp.float64 / int64 / uint32 / vec3d value a grid of its own type)."""
    if typed and isinstance(bg_value, np.generic) and bg_value.dtype in _TYPED_GRID:
        lay = L.LAYOUTS[_TYPED_GRID[bg_value.dtype]]
        return lay, np.array([bg_value], lay.scalar)
    if vector or (np.ndim(bg_value) and np.size(bg_value) == 3):
        grid = 7 if typed and getattr(bg_value, "gl_type", None) == T.vec3d else 6
        return L.LAYOUTS[grid], np.broadcast_to(np.asarray(bg_value, L.LAYOUTS[grid].scalar), (3,)).copy()
    if np.ndim(bg_value) and np.size(bg_value) == 4:
        # a wp.vec4d makes a Vec4d volume; any other four numbers a Vec4f one
        grid = 18 if getattr(bg_value, "gl_type", None) == T.vec4d else 17
        return L.LAYOUTS[grid], np.asarray(bg_value, L.LAYOUTS[grid].scalar).ravel()
    if isinstance(bg_value, (int, np.integer)) and not isinstance(bg_value, bool):
        return L.LAYOUTS[4], np.array([bg_value], np.int32)
    return L.LAYOUTS[1], np.array([bg_value], np.float32)


class Volume:
    """A sparse volume in NanoVDB format (`Volume(data)` takes the grid's bytes as a uint8 array)."""

    CLOSEST: ClassVar[int] = 0
    LINEAR: ClassVar[int] = 1
    REBUILD_SUCCESS: ClassVar[int] = R.SUCCESS
    REBUILD_LEAF_CAPACITY_EXCEEDED: ClassVar[int] = R.LEAF_EXCEEDED
    REBUILD_LOWER_CAPACITY_EXCEEDED: ClassVar[int] = R.LOWER_EXCEEDED
    REBUILD_UPPER_CAPACITY_EXCEEDED: ClassVar[int] = R.UPPER_EXCEEDED
    REBUILD_VOXEL_CAPACITY_EXCEEDED: ClassVar[int] = R.VOXEL_EXCEEDED
    REBUILD_INVALID_INPUT: ClassVar[int] = R.INVALID_INPUT

    FeatureArrayInfo: ClassVar[type[FeatureInfo]] = FeatureInfo
    RebuildInfo: ClassVar[type[Rebuild]] = Rebuild
    ActiveStats: ClassVar[type[Stats]] = Stats

    def __init__(self, data: Any, copy: bool = True) -> None:
        if isinstance(data, np.ndarray):
            raw = data
        else:
            raw = data.numpy() if hasattr(data, "numpy") else np.frombuffer(bytes(data), np.uint8)
        self._buffer = np.array(raw, dtype=np.uint8, copy=True) if copy else raw.view(np.uint8)
        self._head, self._layout, self._blind, breadth_first = _check_grid(self._buffer, False)
        if not breadth_first:
            raise _unsupported_layout()
        self.device = get_device("cpu")
        self._aliased = False
        self._reserve: R.Reserve | None = None

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def load_from_nvdb(cls, file_or_buffer: Any, device: Any = None) -> Volume:
        """The first grid of an `.nvdb` file (a path, an open binary file or bytes); the others
        follow with `load_next_grid()`."""
        if isinstance(file_or_buffer, (str, Path)):
            data = Path(file_or_buffer).read_bytes()
        elif hasattr(file_or_buffer, "read"):
            data = file_or_buffer.read()
        else:
            data = bytes(file_or_buffer)
        buffer = np.frombuffer(b"".join(N.grids_of(data)), np.uint8)
        at, unsupported = 0, False
        while at < len(buffer):  # every grid is checked before any is used
            head, _layout, _blind, breadth_first = _check_grid(buffer[at:], True)
            unsupported |= not breadth_first
            at += head.size
        if unsupported:
            raise _unsupported_layout()
        return cls(buffer, copy=True)

    def load_next_grid(self) -> Volume | None:
        """The next grid of the buffer this volume was loaded from (None after the last); it
        shares this volume's memory."""
        size = self._head.size
        if self._head.grid_index + 1 >= self._head.grid_count or len(self._buffer) <= size:
            return None
        nxt = Volume(self._buffer[size:], copy=False)
        nxt._aliased = True
        return nxt

    @classmethod
    def load_from_numpy(cls, ndarray: np.ndarray, min_world: Any = (0.0, 0.0, 0.0),
                        voxel_size: Any = 1.0, bg_value: Any = 0.0, device: Any = None) -> Volume:  # fmt: skip
        """A volume holding a dense array: element (i, j, k) is voxel (i, j, k), whose centre is
        at `min_world + voxel_size * (i, j, k)`; voxels around it hold bg_value."""
        data = np.asarray(ndarray)
        vector = data.ndim == 4 and data.shape[3] == 3
        if data.ndim != (4 if vector else 3):
            raise N.VolumeError(f"load_from_numpy takes a 3-D array (or 4-D with a last axis of 3), "
                                f"got shape {data.shape}")  # fmt: skip
        layout, bg = _layout_for(bg_value, vector)
        dims = np.array(data.shape[:3])
        tiles = np.stack(np.meshgrid(*[np.arange(0, d, 8) for d in dims], indexing="ij"), -1)
        origins = tiles.reshape(-1, 3).astype(np.int32)
        values, _inside = _dense_leaves(data.reshape(*dims, -1), origins, bg, layout)
        active = np.ones(_inside.shape, bool)  # every voxel of the leaves, as in Warp
        spec = N.GridSpec(layout, origins, values, active, bg, _voxel_matrix(voxel_size),
                          np.asarray(min_world, np.float64))  # fmt: skip
        return cls(np.frombuffer(N.build_grid(spec), np.uint8))

    @classmethod
    def allocate(cls, min: Any, max: Any, voxel_size: Any, bg_value: Any = 0.0,
                 translation: Any = (0.0, 0.0, 0.0), points_in_world_space: bool = False,
                 device: Any = None) -> Volume:  # fmt: skip
        """An empty volume (every voxel bg_value) with leaves covering the box [min, max] (index
        coordinates, or world ones with points_in_world_space)."""
        mat = _voxel_matrix(voxel_size)
        lo, hi = np.asarray(min, np.float64), np.asarray(max, np.float64)
        if points_in_world_space:
            inv = np.linalg.inv(mat)
            lo, hi = inv @ (lo - translation), inv @ (hi - translation)
        first = (np.floor(np.minimum(lo, hi)).astype(np.int64) >> 3) << 3
        last = (np.floor(np.maximum(lo, hi)).astype(np.int64) >> 3) << 3
        axes = [np.arange(a, b + 1, 8) for a, b in zip(first, last, strict=True)]
        origins = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3).astype(np.int32)
        return cls._empty(origins, mat, translation, bg_value)

    @classmethod
    def allocate_by_tiles(cls, tile_points: Any, voxel_size: Any = None, bg_value: Any = 0.0,
                          translation: Any = (0.0, 0.0, 0.0), device: Any = None,
                          **options: Any) -> Volume:  # fmt: skip
        """An empty volume with the leaves (8³ tiles) containing the given points: integer
        points are index coordinates, float ones world coordinates. bg_value None makes an
        index volume whose tiles' voxels are all indexed. ``rebuildable=True`` or a ``max_*``
        capacity reserves room for `rebuild` (``status`` receives the REBUILD_* flags)."""
        pts = _unmasked(tile_points, options.pop("point_mask", None))
        mat = _voxel_matrix(1.0 if voxel_size is None else voxel_size)
        tiles = _tile_origins(_index_coords(pts, mat, translation))
        layout, bg = (L.ONINDEX, None) if bg_value is None else _layout_for(bg_value, typed=True)
        status = options.pop("status", None)
        res = R.reserve("tiles", options, len(tiles), layout, bg, mat, translation)
        return cls._reserved(res, tiles, status) if res else cls._tiles(tiles, layout, bg, mat, translation)

    @classmethod
    def allocate_by_voxels(cls, voxel_points: Any, voxel_size: Any = None,
                           translation: Any = (0.0, 0.0, 0.0), device: Any = None,
                           **options: Any) -> Volume:  # fmt: skip
        """An index volume with one active voxel per point (integer points: index coordinates;
        float ones: the world point's nearest voxel), numbered leaf by leaf; rebuildable as
        `allocate_by_tiles` is, with voxel points."""
        pts = _unmasked(voxel_points, options.pop("point_mask", None))
        mat = _voxel_matrix(1.0 if voxel_size is None else voxel_size)
        voxels = _sorted_unique(_index_coords(pts, mat, translation))
        status = options.pop("status", None)
        res = R.reserve("voxels", options, len(voxels), L.ONINDEX, None, mat, translation)
        return cls._reserved(res, voxels, status) if res else cls._voxels(voxels, mat, translation)

    @classmethod
    def _tiles(cls, tiles: np.ndarray, layout: L.ValueLayout, bg: Any, mat: np.ndarray, translation: Any) -> Volume:
        if layout is L.ONINDEX:
            return cls._index(tiles, np.ones((len(tiles), L.LEAF_COUNT), bool), mat, translation)
        return cls._empty(tiles, mat, translation, bg, layout)

    @classmethod
    def _voxels(cls, voxels: np.ndarray, mat: np.ndarray, translation: Any) -> Volume:
        origins, which = np.unique((voxels >> 3) << 3, axis=0, return_inverse=True)
        active = np.zeros((len(origins), L.LEAF_COUNT), bool)
        local_v = voxels - origins[which.ravel()]
        active[which.ravel(), (local_v[:, 0] << 6) | (local_v[:, 1] << 3) | local_v[:, 2]] = True
        return cls._index(origins.astype(np.int32), active, mat, translation)

    @classmethod
    def _reserved(cls, res: R.Reserve, coords: np.ndarray, status: Any) -> Volume:
        """A rebuildable volume: a buffer of the capacities' full size holding the grid of what fits."""
        buf = np.zeros(res.size(), np.uint8)
        flags = _write_grid(buf, res, coords)
        vol = cls(buf, copy=False)
        vol._reserve = res
        R.report(status, flags)
        return vol

    def rebuild(self, points: Any, status: Any = None, point_mask: Any = None) -> Any:
        """Replace the topology with the one ``points`` give (tile points or voxel points, as the
        volume was allocated), in the same buffer (``id`` unchanged, background and transform
        kept); ``status`` receives the REBUILD_* flags. Values of rebuilt tiles are the background."""
        res = self._reserve
        if res is None:
            raise N.VolumeError("rebuild: this volume was not allocated rebuildable (rebuildable=True "
                                "or max_* capacities)")  # fmt: skip
        coords = _index_coords(_unmasked(points, point_mask), res.mat, res.translation)
        coords = _tile_origins(coords) if res.kind == "tiles" else _sorted_unique(coords)
        flags = _write_grid(self._buffer, res, coords)
        self._head, self._layout, self._blind, _ = _check_grid(self._buffer, False)
        return R.report(status, flags)

    @classmethod
    def _index(cls, origins: np.ndarray, active: np.ndarray, mat: np.ndarray, translation: Any) -> Volume:
        """An index volume: leaves at the origins, the active voxels numbered leaf by leaf."""
        spec = N.GridSpec(L.ONINDEX, origins.astype(np.int32), np.zeros((len(origins), 0, 1)),
                          active, np.zeros(1), mat, np.asarray(translation, np.float64),
                          grid_class=L.GRID_CLASS_INDEX)  # fmt: skip
        return cls(np.frombuffer(N.build_grid(spec), np.uint8))

    @classmethod
    def _empty(cls, origins: np.ndarray, mat: np.ndarray, translation: Any, bg_value: Any,
               layout: L.ValueLayout | None = None) -> Volume:  # fmt: skip
        """Leaves at the origins, every voxel the background (given as a value, or with its
        layout as an already converted array)."""
        layout, bg = (layout, bg_value) if layout is not None else _layout_for(bg_value, typed=True)
        n = len(origins)
        values = np.broadcast_to(bg, (n, L.LEAF_COUNT, layout.channels)).astype(layout.scalar)
        active = np.ones((n, L.LEAF_COUNT), bool)
        spec = N.GridSpec(layout, origins, values, active, bg, mat, np.asarray(translation, np.float64))
        return cls(np.frombuffer(N.build_grid(spec), np.uint8))

    # -- Warp's introspection -----------------------------------------------------------------

    @property
    def id(self) -> int:
        return int(self._buffer.ctypes.data)

    @property
    def dtype(self) -> Any:
        """The value type (None for an index volume: its values live in arrays of their own)."""
        return _DTYPE.get(self._layout.name)

    @property
    def is_index(self) -> bool:
        return self._layout is L.ONINDEX

    def array(self) -> Array:
        """The grid buffer as a uint8 array (the volume's own memory, not a copy)."""
        return self._view(Array(ptr=self.id, shape=(self._buffer.size,), dtype=uint8, device="cpu"))

    def get_grid_info(self) -> GridInfo:
        h = self._head
        return GridInfo(h.name, int(h.size), h.grid_index, h.grid_count, self._layout.name,
                        vec3f(*h.translation.tolist()), h.mat.copy())  # fmt: skip

    def get_voxel_size(self) -> tuple[float, float, float]:
        return tuple(float(v) for v in self._head.voxel_size)  # type: ignore[return-value]

    def get_tile_count(self) -> int:
        return self._head.leaf_count

    def get_tiles(self, out: Any = None) -> Array:
        """The origins (index coordinates) of the 8³ leaves, in the grid's order."""
        self._check_fixed_leaves()
        return _filled(out, N.leaf_origins(self._buffer, self._head, self._layout))

    @property
    def is_rebuildable(self) -> bool:
        """Whether `rebuild` can refill this volume (allocated with rebuild capacities)."""
        return self._reserve is not None

    def get_rebuild_info(self) -> Rebuild:
        """The rebuild input kind ("tiles" / "voxels", None if not rebuildable) and capacities."""
        r = self._reserve
        return Rebuild(None, 0, 0, 0, 0) if r is None else Rebuild(r.kind, r.voxels, r.leaves, r.lowers, r.uppers)

    def get_active_stats(self) -> Stats:
        """The tree header's active voxel count and node counts."""
        raw = self._buffer[L.GRID_SIZE:L.GRID_SIZE + L.TREE_SIZE].tobytes()
        leaf, lower, upper = struct.unpack_from("<3I", raw, L.TREE_OFF["count_leaf"])
        return Stats(struct.unpack_from("<Q", raw, L.TREE_OFF["voxel_count"])[0], leaf, lower, upper)

    def get_voxel_count(self) -> int:
        """Voxels of the leaves (an index volume: its indexed voxels; a rebuildable one: its
        reserved voxel capacity)."""
        if self._reserve is not None:
            return self._reserve.voxels
        if self.is_index:
            return int(struct.unpack_from("<Q", self._buffer.tobytes()[:L.GRID_SIZE], L.GRID_OFF["data1"])[0]) - 1
        return self._head.leaf_count * L.LEAF_COUNT

    def get_voxels(self, out: Any = None) -> Array:
        """The index coordinates of every voxel of every leaf (leaf by leaf, z fastest); of an
        index volume, its indexed voxels in index order."""
        self._check_fixed_leaves()
        local = np.stack(np.unravel_index(np.arange(L.LEAF_COUNT), (8, 8, 8)), -1).astype(np.int32)
        tiles = N.leaf_origins(self._buffer, self._head, self._layout)
        voxels = (tiles[:, None, :] + local[None, :, :]).reshape(-1, 3)
        if self.is_index:
            voxels = voxels[N.leaf_active(self._buffer, self._head, self._layout).ravel()]
        return _filled(out, voxels)

    def _check_fixed_leaves(self) -> None:
        if self._layout.leaf_size == 0:
            raise N.VolumeError(f"{self._layout.name} grids (leaves of varying sizes) are kept "
                                "and saved, not listed voxel by voxel, by gradloom")  # fmt: skip

    def save_to_nvdb(self, path: Any, codec: str = "none") -> None:
        """Write the grids of this volume's buffer to an `.nvdb` file (codec "none" or "zip")."""
        if self._aliased:
            raise N.VolumeError("save_to_nvdb: this volume shares the buffer of the one it was "
                                "loaded after (load_next_grid); save that one")  # fmt: skip
        grids, at = [], 0
        while at + L.GRID_SIZE <= len(self._buffer):
            size = N.header(self._buffer[at:]).size
            grids.append(self._buffer[at:at + size].tobytes())
            at += size
        Path(path).write_bytes(N.file_bytes(grids, codec))

    # -- feature arrays (NanoVDB blind data) ----------------------------------------------------

    def get_feature_array_count(self) -> int:
        return len(self._blind)

    def get_feature_array_info(self, feature_index: int) -> FeatureInfo:
        """The feature array's metadata as read (and checked) when the volume was made."""
        if not 0 <= feature_index < len(self._blind):
            raise N.VolumeError(f"Invalid feature array index {feature_index} "
                                f"(the grid has {len(self._blind)})")  # fmt: skip
        b = self._blind[feature_index]
        return FeatureInfo(b.name, self.id + b.offset, b.value_size, b.value_count, b.type_str)

    def feature_array(self, feature_index: int, dtype: Any = None) -> Array:
        """A feature array's values (the volume's memory, not a copy), of its own type or of
        dtype: one-byte types view any array as bytes, and bytes view as any type they divide."""
        info = self.get_feature_array_info(feature_index)
        dtype = dtype if dtype is not None else _FEATURE_DTYPE.get(info.type_str, uint8)
        item = T.type_size_in_bytes(dtype)
        count, size = info.value_count, info.value_size
        if item == 1:
            count, size = count * size, 1
        elif size == 1 and count % item == 0:
            count, size = count // item, item
        if item != size:
            raise N.VolumeError(f"feature array {feature_index} holds {size}-byte values, "
                                f"not {item}-byte {dtype}")  # fmt: skip
        return self._view(Array(ptr=info.ptr, dtype=dtype, shape=(count,), device="cpu"))

    def _view(self, out: Array) -> Array:
        """out, an array over this volume's memory, keeping that memory alive."""
        out._volume_buffer = self._buffer  # type: ignore[attr-defined]
        return out

    def __del__(self) -> None:
        """Nothing to release by hand: the buffer is numpy memory (Warp frees native memory here)."""

    def __repr__(self) -> str:
        return (f"Volume({self._layout.name}, {self._head.leaf_count} leaves, voxel size "
                f"{self.get_voxel_size()})")


def _unmasked(points: Any, mask: Any) -> np.ndarray:
    """The points (an (n, 3) array) whose mask entry is nonzero (all of them without a mask)."""
    pts = points.numpy() if hasattr(points, "numpy") else np.asarray(points)
    if mask is None:
        return pts
    keep = (mask.numpy() if hasattr(mask, "numpy") else np.asarray(mask)).ravel() != 0
    if keep.size != len(pts):
        raise N.VolumeError(f"point_mask: one entry per point ({len(pts)}), got {keep.size}")
    return pts[keep]


def _filled(out: Any, values: np.ndarray) -> Array:
    """(n, 3) int32 coordinates, as a 2-D array (Warp's shape), or written into the first rows
    of `out` (a rebuildable volume's may be longer than its current topology)."""
    if out is None:
        return Array(values.astype(np.int32), dtype=T.int32, device="cpu")
    flat = out.numpy().reshape(-1, 3).copy()
    if len(values) > len(flat):
        raise N.VolumeError(f"out holds {len(flat)} coordinates, {len(values)} needed")
    flat[:len(values)] = values
    out.assign(flat.reshape(out.numpy().shape))
    return out


def _index_coords(pts: np.ndarray, mat: np.ndarray, translation: Any) -> np.ndarray:
    """Index coordinates of points: integer points as they are, float (world) points the nearest
    voxel centre."""
    if np.issubdtype(pts.dtype, np.integer):
        return pts.reshape(-1, 3).astype(np.int64)
    local = (pts.reshape(-1, 3) - np.asarray(translation)) @ np.linalg.inv(mat).T
    return np.floor(local + 0.5).astype(np.int64)


def _sorted_unique(coords: np.ndarray) -> np.ndarray:
    return np.unique(coords.reshape(-1, 3), axis=0) if len(coords) else coords.reshape(0, 3)


def _tile_origins(index: np.ndarray) -> np.ndarray:
    return _sorted_unique((index >> 3) << 3).astype(np.int32)


def _write_grid(buf: np.ndarray, res: R.Reserve, coords: np.ndarray) -> int:
    """Build the grid of what of coords fits res into buf (zeroing the rest); its flags."""
    kept, flags = R.fit(np.asarray(coords, np.int64), res)
    if res.kind == "tiles":
        vol = Volume._tiles(kept.astype(np.int32), res.layout, res.background, res.mat, res.translation)
    else:
        vol = Volume._voxels(kept, res.mat, res.translation)
    grid = vol._buffer
    buf[:] = 0
    buf[:len(grid)] = grid
    return flags


def _dense_leaves(data: np.ndarray, origins: np.ndarray, bg: np.ndarray,
                  layout: L.ValueLayout) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The 8³ blocks of a dense (X, Y, Z, channels) array at the origins, padded with bg."""
    dims = np.array(data.shape[:3]) + 8
    padded = np.empty((*dims, layout.channels), layout.scalar)
    padded[...] = bg
    padded[: data.shape[0], : data.shape[1], : data.shape[2]] = data
    inside = np.zeros(dims, bool)
    inside[: data.shape[0], : data.shape[1], : data.shape[2]] = True
    values = np.empty((len(origins), L.LEAF_COUNT, layout.channels), layout.scalar)
    active = np.empty((len(origins), L.LEAF_COUNT), bool)
    for n, (x, y, z) in enumerate(origins.tolist()):
        values[n] = padded[x:x + 8, y:y + 8, z:z + 8].reshape(L.LEAF_COUNT, -1)
        active[n] = inside[x:x + 8, y:y + 8, z:z + 8].ravel()
    return values, active

