"""`wp.Volume`: a sparse voxel grid (one NanoVDB grid buffer in host memory) for kernel queries.

Kernels receive `volume.id`, the buffer's address; builtins/volume.py walks the buffer. Volumes
come from `.nvdb` files (`load_from_nvdb`; zip-compressed or not), from dense numpy arrays
(`load_from_numpy`), or are allocated empty over index or world boxes or at tile points
(`allocate`, `allocate_by_tiles`) to be filled with `volume_store`; `save_to_nvdb` writes one
back. Grids are built by runtime/nanovdb.py. Host memory only: CUDA volumes are not provided.
"""

from __future__ import annotations

import struct
from collections import namedtuple
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .. import types as T
from ..types import uint8, vec3f
from ..types import volume as L
from . import nanovdb as N
from .array import array as Array
from .device import get_device

GridInfo = namedtuple("GridInfo", "name size_in_bytes grid_index grid_count type_str "
                                  "translation transform_matrix")  # fmt: skip
_DTYPE = {"float": T.float32, "double": T.float64, "int32": T.int32, "int64": T.int64,
          "Vec3f": T.vec3f, "Vec3d": T.vec3d, "uint32": T.uint32, "Vec4f": T.vec4f,
          "Vec4d": T.vec4d}  # fmt: skip


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


def _layout_for(bg_value: Any, vector: bool = False) -> tuple[L.ValueLayout, np.ndarray]:
    """The value type a background value picks (Warp's rule: an int makes an int32 volume,
    three numbers a vec3f one, four a vec4f one, anything else float32)."""
    if vector or (np.ndim(bg_value) and np.size(bg_value) == 3):
        return L.LAYOUTS[6], np.broadcast_to(np.asarray(bg_value, np.float32), (3,)).copy()
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

    def __init__(self, data: Any, copy: bool = True) -> None:
        raw = data.numpy() if hasattr(data, "numpy") else np.frombuffer(bytes(data), np.uint8)
        self._buffer = np.array(raw, dtype=np.uint8, copy=True) if copy else raw.view(np.uint8)
        self._head = N.header(self._buffer)
        layout = L.ALL_LAYOUTS.get(self._head.grid_type)
        if layout is None:
            raise N.VolumeError(f"NanoVDB grid type {self._head.grid_type} is not supported "
                                "(gradloom reads float, double, int32, int64, uint32, Vec3f, "
                                "Vec3d, Vec4f, Vec4d and OnIndex grids)")  # fmt: skip
        self._layout = layout
        N.validate(self._buffer, self._head, layout)
        self.device = get_device("cpu")
        self._next: list[bytes] = []

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
        grids = N.grids_of(data)
        volume = cls(np.frombuffer(grids[0], np.uint8), copy=True)
        volume._next = grids[1:]
        return volume

    def load_next_grid(self) -> Volume | None:
        """The next grid of the file this volume was loaded from (None after the last)."""
        if not self._next:
            return None
        nxt = Volume(np.frombuffer(self._next[0], np.uint8))
        nxt._next = self._next[1:]
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
        values, active = _dense_leaves(data.reshape(*dims, -1), origins, bg, layout)
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
        points are index coordinates, float ones world coordinates."""
        pts = tile_points.numpy() if hasattr(tile_points, "numpy") else np.asarray(tile_points)
        mat = _voxel_matrix(1.0 if voxel_size is None else voxel_size)
        if np.issubdtype(pts.dtype, np.integer):
            index = pts.reshape(-1, 3).astype(np.int64)
        else:
            local = (pts.reshape(-1, 3) - np.asarray(translation)) @ np.linalg.inv(mat).T
            index = np.floor(local + 0.5).astype(np.int64)  # the nearest voxel centre
        origins = np.unique((index >> 3) << 3, axis=0).astype(np.int32)
        return cls._empty(origins, mat, translation, bg_value)

    @classmethod
    def allocate_by_voxels(cls, voxel_points: Any, voxel_size: Any = None,
                           translation: Any = (0.0, 0.0, 0.0), device: Any = None,
                           **options: Any) -> Volume:  # fmt: skip
        """An index volume with one active voxel per point (integer points: index coordinates;
        float ones: the world point's nearest voxel), numbered leaf by leaf."""
        pts = voxel_points.numpy() if hasattr(voxel_points, "numpy") else np.asarray(voxel_points)
        mat = _voxel_matrix(1.0 if voxel_size is None else voxel_size)
        if np.issubdtype(pts.dtype, np.integer):
            voxels = pts.reshape(-1, 3).astype(np.int64)
        else:
            local = (pts.reshape(-1, 3) - np.asarray(translation)) @ np.linalg.inv(mat).T
            voxels = np.floor(local + 0.5).astype(np.int64)
        voxels = np.unique(voxels, axis=0)
        origins, which = np.unique((voxels >> 3) << 3, axis=0, return_inverse=True)
        active = np.zeros((len(origins), L.LEAF_COUNT), bool)
        local_v = voxels - origins[which]
        active[which.ravel(), (local_v[:, 0] << 6) | (local_v[:, 1] << 3) | local_v[:, 2]] = True
        spec = N.GridSpec(L.ONINDEX, origins.astype(np.int32), np.zeros((len(origins), 0, 1)),
                          active, np.zeros(1), mat, np.asarray(translation, np.float64),
                          grid_class=L.GRID_CLASS_INDEX)  # fmt: skip
        return cls(np.frombuffer(N.build_grid(spec), np.uint8))

    @classmethod
    def _empty(cls, origins: np.ndarray, mat: np.ndarray, translation: Any, bg_value: Any) -> Volume:
        layout, bg = _layout_for(bg_value)
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
        return Array(ptr=self.id, shape=(self._buffer.size,), dtype=uint8, device="cpu")

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
        return _filled(out, N.leaf_origins(self._buffer, self._head, self._layout))

    def get_voxel_count(self) -> int:
        """Voxels of the leaves (an index volume: its indexed voxels)."""
        if self.is_index:
            return int(struct.unpack_from("<Q", self._buffer.tobytes()[:L.GRID_SIZE], L.GRID_OFF["data1"])[0]) - 1
        return self._head.leaf_count * L.LEAF_COUNT

    def get_voxels(self, out: Any = None) -> Array:
        """The index coordinates of every voxel of every leaf (leaf by leaf, z fastest); of an
        index volume, its indexed voxels in index order."""
        local = np.stack(np.unravel_index(np.arange(L.LEAF_COUNT), (8, 8, 8)), -1).astype(np.int32)
        tiles = N.leaf_origins(self._buffer, self._head, self._layout)
        voxels = (tiles[:, None, :] + local[None, :, :]).reshape(-1, 3)
        if self.is_index:
            voxels = voxels[N.leaf_active(self._buffer, self._head, self._layout).ravel()]
        return _filled(out, voxels)

    def save_to_nvdb(self, path: Any, codec: str = "none") -> None:
        """Write the grid to an `.nvdb` file (codec "none" or "zip")."""
        Path(path).write_bytes(N.file_bytes(bytes(self._buffer), self._head, self._layout, codec))

    def __del__(self) -> None:
        """Nothing to release by hand: the buffer is numpy memory (Warp frees native memory here)."""

    def __repr__(self) -> str:
        return (f"Volume({self._layout.name}, {self._head.leaf_count} leaves, voxel size "
                f"{self.get_voxel_size()})")


def _filled(out: Any, values: np.ndarray) -> Array:
    """(n, 3) int32 coordinates, as a 2-D array (Warp's shape), or written into `out`."""
    if out is None:
        return Array(values.astype(np.int32), dtype=T.int32, device="cpu")
    out.assign(values.astype(np.int32))
    return out


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

