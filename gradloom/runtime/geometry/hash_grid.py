"""`wp.HashGrid`: points bucketed into a periodic grid of cells, built on the host for kernel queries.

A build computes each point's cell (Warp's rule: the cell coordinate is `floor(p * (1 / width))`
in the grid's precision, clamped to int32, wrapped into `[0, dim)` per axis), sorts the point
indices by cell (stably, so points of one cell keep their original order), and records each
cell's `[start, end)` range in that order. Grouped builds sort by (cell, group) keys instead.

Kernels receive `grid.id`: the address of a descriptor (layout in types.py, `GRID_*`) holding
the dims, the inverse cell width and pointers to the arrays. A build rewrites the per-cell
ranges in place (clearing only the cells the last build filled: a 128^3 grid is 16 MB, and
newton rebuilds its particle grid every substep) and allocates fresh point arrays. A Tape's
frozen copy (runtime/handles.py) keeps that build compactly (its points and filled cells'
ranges, O(points)), and `thaw` makes the per-cell arrays while the adjoint runs.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import GradloomError
from ...types import (
    GRID_CELL_ENDS,
    GRID_CELL_STARTS,
    GRID_DESCRIPTOR_SIZE,
    GRID_DIMS,
    GRID_HAS_GROUPS,
    GRID_INV_WIDTH,
    GRID_KEYS,
    GRID_NUM_POINTS,
    GRID_POINT_IDS,
    GRID_READY,
    ScalarType,
    VectorType,
    float16,
    float32,
    float64,
    int32,
    resolve_annotation,
)
from ..array.aligned import aligned_zeros
from ..array.array import NDArray, array
from ..capturing import defer, recording_graph
from ..device import Device, get_device
from ..handles import Handle

_MAX_CELLS = (1 << 31) - 1


class HashGridError(GradloomError, RuntimeError):
    """Bad HashGrid dimensions or build inputs (a RuntimeError, as Warp raises)."""


_INT_MAX, _INT_MIN = (1 << 31) - 1, -(1 << 31)
_NP: dict[str, type[np.floating[Any]]] = {"float16": np.float16, "float32": np.float32,
                                          "float64": np.float64}
_FORMAT = {"float16": "<e", "float32": "<f", "float64": "<d"}


#: clamps of a cell coordinate (as float64, which holds them exactly)
_LO, _HI = np.float64(_INT_MIN), np.float64(_INT_MAX - 1)


def cell_coords(points: NDArray, inv: Any, t: ScalarType) -> NDArray:
    """Cell coordinates of (n, 3) points as whole float64 numbers: floor(p * inv) in
    precision t, clamped to [INT_MIN, INT_MAX - 1]; NaN gives 0. (Plain ufuncs: a build of a
    few hundred points is dominated by numpy's per-call costs, and newton rebuilds its grid at
    every substep.)"""
    dt = _NP[t.name]
    with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN are handled below
        v = (points if points.dtype == dt else points.astype(dt)) * dt(inv)
        c = np.floor(v.astype(np.float32) if t == float16 else v).astype(np.float64)
    c[c != c] = 0.0
    np.maximum(c, _LO, out=c)
    np.minimum(c, _HI, out=c)
    return c


def cell_index(coords: NDArray, dims: tuple[int, int, int]) -> NDArray:
    """The linear cell (int64) of whole-number coordinates, each wrapped into [0, dim)
    (periodic grid). In float64, exactly: for |c| < 2^31 the rounded quotient c / d cannot
    reach the next whole number (that needs c > 2^53), so its floor is the integer one."""
    d = np.array(dims, np.float64)
    w = coords - np.floor(coords / d) * d
    weights = np.array((1.0, dims[0], dims[0] * dims[1]), np.float64)
    return (w @ weights).astype(np.int64)  # whole products and sums below 2^31: exact


class HashGrid:
    """A hash grid of dim_x × dim_y × dim_z cells for neighbour queries (`wp.hash_grid_query`)."""

    def __init__(self, dim_x: int, dim_y: int, dim_z: int, device: Any = None,
                 dtype: Any = None) -> None:
        t = float32 if dtype is None else _grid_dtype(dtype)
        self.dtype = t
        self.device: Device = get_device(device)
        if not self.device.backend.host_memory:  # its descriptor and arrays are host memory
            raise HashGridError(f"wp.HashGrid on {self.device} is not supported yet: build it "
                                "on the CPU (device='cpu'); docs/gpu.md")
        try:
            dims = (operator.index(dim_x), operator.index(dim_y), operator.index(dim_z))
        except TypeError:
            raise TypeError("HashGrid dimensions must be integers") from None
        if min(dims) <= 0:
            raise HashGridError("Hash grid dimensions must be positive")
        cells = dims[0] * dims[1] * dims[2]
        if cells > _MAX_CELLS:
            raise HashGridError(f"Hash grid cell count exceeds supported limit: {dims[0]} * "
                                f"{dims[1]} * {dims[2]} = {cells} > {_MAX_CELLS}")
        self._dims = dims
        self._desc = aligned_zeros((GRID_DESCRIPTOR_SIZE,), np.uint8)
        self._arrays: dict[str, NDArray] = {}
        self._ranges = _Ranges.empty()  # the cells the last build filled, and their ranges
        self._scratch: _Scratch | None = None  # per-cell arrays its frozen copies thaw into
        self.reserved = False
        self.groups: array | None = None
        self._set_arrays(np.zeros(1, np.int32), np.zeros(cells, np.int32),
                         np.zeros(cells, np.int32), None, num_points=0, ready=False)
        self.id = Handle(int(self._desc.ctypes.data), self, self._freeze)

    def __del__(self) -> None:
        """Nothing to free: the grid's memory is numpy's (Warp frees native memory here)."""

    @property
    def dims(self) -> tuple[int, int, int]:
        return self._dims

    def build(self, points: array, radius: float, groups: array | None = None) -> None:
        """Bucket `points` (an array of vec3 in the grid's precision) into cells of width
        `radius`; with `groups` (int32, one per point), queries can be restricted to a group.
        Inside a graph capture the build is recorded: each replay rebuilds from the arrays'
        contents then (a saveable capture, `apic=True`, cannot hold it)."""
        graph = recording_graph()
        if graph is not None:
            if getattr(graph, "apic", False):
                raise NotImplementedError("HashGrid serialization is not yet supported: build "
                                          "the grid outside a saveable (apic=True) capture")
            self._points(points)  # checked now, read when the graph runs
            defer(lambda: self.build(points, radius, groups), "HashGrid.build")
            return
        pts = self._points(points)
        if not float(radius) > 0.0:
            raise ValueError(f"Hash grid cell width must be positive, got {radius}")
        group_ids = None if groups is None else self._groups(groups, len(pts))
        t = self.dtype
        inv = _NP[t.name](1) / _NP[t.name](radius)
        cells = cell_index(cell_coords(pts, inv, t), self._dims)
        n = len(pts)
        if group_ids is None:
            # a stable sort by cell: (cell, index) keys are unique, and sorting plain int64
            # values is several times faster than a stable argsort (cell < 2^31, index < 2^31)
            bits = max(n - 1, 1).bit_length()
            key = cells << bits
            key |= np.arange(n, dtype=np.int64)
            key.sort()
            order = key & ((1 << bits) - 1)
            keys = None
            sorted_cells = key >> bits
        else:
            all_keys = (cells.astype(np.uint64) << np.uint64(32)) | group_ids.astype(
                np.uint32).astype(np.uint64)
            order = np.argsort(all_keys, kind="stable")
            keys = all_keys[order]
            sorted_cells = (keys >> np.uint64(32)).astype(np.int64)
        starts, ends = self._arrays["starts"], self._arrays["ends"]
        self._ranges.clear(starts, ends)
        self._ranges = _Ranges.of(sorted_cells)
        self._ranges.fill(starts, ends)
        self.groups = groups
        # one spare slot: a finished query's last load stays in bounds (builtins/hash_grid.py)
        point_ids = np.zeros(n + 1, np.int32)
        point_ids[:n] = order
        self._set_arrays(point_ids, starts, ends, keys, num_points=n, ready=True)
        self._set_inverse_width(float(radius))
        self.reserved = True

    def reserve(self, num_points: int, with_groups: bool = False) -> None:
        """Make room for `num_points` points (builds allocate as needed anyway)."""
        if recording_graph() is not None:
            raise NotImplementedError("HashGrid.reserve() cannot be captured into a graph: "
                                      "reserve before capture")
        n = operator.index(num_points)
        a = self._arrays
        keys = np.zeros(n, np.uint64) if with_groups else a.get("keys")
        self._set_arrays(np.zeros(n + 1, np.int32), a["starts"], a["ends"], keys,
                         num_points=n, ready=True)
        self.reserved = True

    # -- the descriptor ------------------------------------------------------------------------

    def _set_arrays(self, point_ids: NDArray, starts: NDArray, ends: NDArray,
                    keys: NDArray | None, num_points: int, ready: bool) -> None:
        self._arrays = {"point_ids": point_ids, "starts": starts, "ends": ends}
        if keys is not None:
            self._arrays["keys"] = keys
        d = self._desc  # struct.pack_into: a µs less per word than numpy views
        words = {GRID_POINT_IDS: point_ids, GRID_CELL_STARTS: starts, GRID_CELL_ENDS: ends,
                 GRID_KEYS: keys}
        for off, a in words.items():
            struct.pack_into("<Q", d, off, 0 if a is None else a.ctypes.data)
        struct.pack_into("<3i", d, GRID_DIMS, *self._dims)
        struct.pack_into("<i", d, GRID_NUM_POINTS, num_points)
        struct.pack_into("<i", d, GRID_READY, int(ready))
        struct.pack_into("<i", d, GRID_HAS_GROUPS, int(keys is not None and ready))

    def _set_inverse_width(self, width: float) -> None:
        for name, off in GRID_INV_WIDTH.items():
            t = _NP[name]
            struct.pack_into(_FORMAT[name], self._desc, off, t(1) / t(width))

    def _freeze(self) -> Handle:
        """A handle to a copy of the descriptor: the grid as it is now, kept compactly (its
        per-cell arrays are made by `thaw`, while an adjoint that reads them runs)."""
        if self._scratch is None:
            self._scratch = _Scratch(len(self._arrays["starts"]))
        copy = _FrozenGrid(self._desc, dict(self._arrays), self._ranges, self._scratch)
        return Handle(int(copy.desc.ctypes.data), copy)

    # -- argument checks -----------------------------------------------------------------------

    def _points(self, points: Any) -> NDArray:
        want = VectorType(3, self.dtype)
        if not isinstance(points, array):
            raise TypeError(f"Hash grid points should be a wp.array of {want!r}, got "
                            f"{type(points).__name__}")
        if points.dtype != want:
            raise TypeError(f"Hash grid points should have type {want!r}, got {points.dtype!r}")
        if points.device != self.device:
            raise HashGridError("points must live on the same device as this HashGrid")
        return np.asarray(points.numpy()).reshape(-1, 3)

    def _groups(self, groups: Any, n: int) -> NDArray:
        if not isinstance(groups, array) or groups.dtype != int32:
            raise HashGridError("groups should be an array of type wp.int32")
        if groups.device != self.device:
            raise HashGridError("groups must live on the same device as this HashGrid")
        if groups.size != n:
            raise HashGridError("groups must have the same length as points")
        return np.asarray(groups.numpy()).reshape(-1)

    def __repr__(self) -> str:
        return f"HashGrid(dims={self._dims}, dtype={self.dtype!r})"


def _grid_dtype(dtype: Any) -> ScalarType:
    try:
        t = resolve_annotation(dtype)
    except TypeError:
        t = None
    if t not in (float16, float32, float64):
        raise TypeError(f"Unsupported dtype {dtype!r} for HashGrid. Supported types: float16, "
                        "float32, float64")
    assert isinstance(t, ScalarType)
    return t


class _Ranges:
    """The cells a build filled and their [start, end) ranges in sorted order: O(points)."""

    def __init__(self, cells: NDArray, starts: NDArray, ends: NDArray) -> None:
        self.cells, self.starts, self.ends = cells, starts, ends

    @staticmethod
    def empty() -> _Ranges:
        none = np.zeros(0, np.int32)
        return _Ranges(none.astype(np.int64), none, none)

    @staticmethod
    def of(sorted_cells: NDArray) -> _Ranges:
        n = len(sorted_cells)
        if not n:
            return _Ranges.empty()
        change = sorted_cells[1:] != sorted_cells[:-1]
        starts = np.zeros(int(np.count_nonzero(change)) + 1, np.int32)
        starts[1:] = change.nonzero()[0] + 1
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:]
        ends[-1] = n
        return _Ranges(sorted_cells[starts], starts, ends)

    def fill(self, starts: NDArray, ends: NDArray) -> None:
        starts[self.cells], ends[self.cells] = self.starts, self.ends

    def clear(self, starts: NDArray, ends: NDArray) -> None:
        starts[self.cells], ends[self.cells] = 0, 0


class _Scratch:
    """Per-cell arrays that one frozen copy of a grid at a time fills while it is thawed (a
    Tape's adjoints run one after another), so a backward pass allocates them once."""

    def __init__(self, cells: int) -> None:
        self.starts, self.ends = np.zeros(cells, np.int32), np.zeros(cells, np.int32)
        self.busy = False


class _FrozenGrid:
    """A Tape's copy of a grid's descriptor. Its per-cell arrays exist only while thawed (an
    adjoint runs): a recorded launch per substep keeps O(points), not O(cells), alive."""

    def __init__(self, desc: NDArray, arrays: dict[str, NDArray], ranges: _Ranges,
                 scratch: _Scratch) -> None:
        self.desc = aligned_zeros((GRID_DESCRIPTOR_SIZE,), np.uint8)
        self.desc[:] = desc
        self.arrays = {k: v for k, v in arrays.items() if k not in ("starts", "ends")}
        self.ranges, self.scratch = ranges, scratch
        self._set(0, 0)

    def _set(self, starts: int, ends: int) -> None:
        self.desc[GRID_CELL_STARTS:GRID_CELL_STARTS + 8].view(np.uint64)[0] = starts
        self.desc[GRID_CELL_ENDS:GRID_CELL_ENDS + 8].view(np.uint64)[0] = ends

    def thaw(self) -> Callable[[], None]:
        """Fill per-cell arrays (the grid's scratch, or fresh ones where another copy holds
        it) and point the descriptor at them; returns what lets them go."""
        scratch = self.scratch
        if scratch.busy:
            scratch = _Scratch(len(scratch.starts))
        scratch.busy = True
        self.ranges.fill(scratch.starts, scratch.ends)
        self._set(scratch.starts.ctypes.data, scratch.ends.ctypes.data)

        def release() -> None:
            self._set(0, 0)
            self.ranges.clear(scratch.starts, scratch.ends)
            scratch.busy = False

        return release
