"""Marching cubes over an explicit set of cells (Warp's `sparse_marching_cubes_from_cells`):
corners shared by cells are merged by their subscripts, so neighbouring cells share vertices and
the mesh is watertight; topology on the host with numpy, vertex positions by a recorded kernel
reading the caller's corner values (gradients reach the first entry naming each corner)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import gradloom as wp

from . import mc_tables
from .marching_cubes import _EDGE_AXIS, _RANGE, _TRI_EDGES

_OFFSETS = np.array(mc_tables.CUBE_CORNER_OFFSETS, dtype=np.int64)
_EDGE_LO = np.array([a for a, _ in mc_tables.EDGE_TO_CORNERS], dtype=np.int64)
_EDGE_HI = np.array([b for _, b in mc_tables.EDGE_TO_CORNERS], dtype=np.int64)


@dataclass
class Corners:
    """The distinct corners of a cell set: ``first`` (the flat cell*8 + corner entry that first
    names each), ``of_entry`` (each entry's corner), ``rel`` (subscripts relative to ``base``)."""

    base: np.ndarray
    rel: np.ndarray
    first: np.ndarray
    of_entry: np.ndarray


def merge_corners(cells: np.ndarray) -> Corners:
    """The distinct corners of ``cells`` ((N, 3) int64 minimum-corner subscripts), in C order."""
    base = cells.min(axis=0) if len(cells) else np.zeros(3, np.int64)
    rel = (cells - base)[:, None, :] + _OFFSETS[None]  # (N, 8, 3)
    span = rel.reshape(-1, 3).max(axis=0) + 1 if len(cells) else np.ones(3, np.int64)
    if float(span[0]) * float(span[1]) * float(span[2]) >= 2.0**63:
        raise ValueError("The cells' subscript range is too large to pack into 64-bit corner codes.")
    code = (rel[..., 0] * span[1] + rel[..., 1]) * span[2] + rel[..., 2]
    _, first, inverse = np.unique(code.ravel(), return_index=True, return_inverse=True)
    return Corners(base, rel.reshape(-1, 3)[first], first, inverse.ravel())


@dataclass
class SparseMesh:
    """Topology of a sparse extraction: per vertex, its edge's two corners and lower subscript."""

    ends: np.ndarray  # (V, 2) distinct-corner ids of each vertex's edge, lower first
    lowers: np.ndarray  # (V, 3) int32 subscript (relative) of the lower corner
    axes: np.ndarray  # (V,) int32
    tris: np.ndarray  # (T, 3) int32


def sparse_topology(corners: Corners, inside: np.ndarray) -> SparseMesh:
    """The mesh of the cells whose distinct corners ``inside`` (bool per corner) says are in."""
    n = len(corners.of_entry) // 8
    corner_of = corners.of_entry.reshape(n, 8)
    code = (inside[corner_of].astype(np.int64) << np.arange(8)).sum(axis=1)
    counts = _RANGE[code + 1] - _RANGE[code]
    cells = np.nonzero(counts)[0]
    per = counts[cells]
    first = np.repeat(np.cumsum(per) - per, per)
    tri = np.repeat(_RANGE[code[cells]], per) + np.arange(int(per.sum())) - first
    local = _TRI_EDGES[tri]  # (T, 3)
    cell = np.repeat(cells, per)[:, None]
    lo = corner_of[cell, _EDGE_LO[local]]
    key = lo * 3 + _EDGE_AXIS[local]
    uniq, ref, vertex_of = np.unique(key.ravel(), return_index=True, return_inverse=True)
    hi = corner_of[cell, _EDGE_HI[local]].ravel()[ref]
    ends = np.stack([uniq // 3, hi], axis=1)
    return SparseMesh(ends, corners.rel[uniq // 3].astype(np.int32), (uniq % 3).astype(np.int32),
                      vertex_of.reshape(-1, 3).astype(np.int32))  # fmt: skip


def _as_cells(cells: Any) -> np.ndarray:
    arr = np.asarray(cells.numpy() if hasattr(cells, "numpy") else cells).astype(np.int64)
    if arr.ndim != 2 or arr.shape[1] != 3:
        arr = arr.reshape(-1, 3)
    return arr


def _as_values(corner_values: Any, n: int, device: Any) -> tuple[Any, np.ndarray]:
    """(the values as a gradloom array, their host copy as (N, 8))."""
    arr = corner_values if isinstance(corner_values, wp.array) else \
        wp.array(np.asarray(corner_values, dtype=np.float32), dtype=wp.float32, device=device)
    host = np.asarray(arr.numpy(), dtype=np.float32)
    if host.size != 8 * n or host.ndim not in (1, 2) or (host.ndim == 2 and host.shape[1] != 8):
        raise ValueError(f"Expected corner_values of shape ({n}, 8) or ({8 * n},), got {host.shape}.")
    return arr, host.reshape(n, 8)


def launch_vertices(values: Any, mesh: SparseMesh, entry: np.ndarray | None, threshold: float,
                    origin: np.ndarray, delta: np.ndarray, device: Any) -> Any:  # fmt: skip
    """The vertex array: one recorded launch reading ``values`` (per distinct corner, or per
    cell entry through ``entry``: the flat entry of each distinct corner)."""
    from . import _kernels

    nv = len(mesh.axes)
    verts = wp.zeros(nv, dtype=wp.vec3, device=device, requires_grad=bool(getattr(values, "requires_grad", False)))
    if nv == 0:
        return verts
    ends = mesh.ends if entry is None else entry[mesh.ends]
    common = [wp.array(mesh.lowers, dtype=wp.vec3i, device=device),
              wp.array(mesh.axes, dtype=wp.int32, device=device), float(threshold),
              wp.vec3(*[float(x) for x in origin]), wp.vec3(*[float(x) for x in delta])]  # fmt: skip
    if values.ndim == 2:
        pairs = np.stack([ends[:, 0] // 8, ends[:, 0] % 8, ends[:, 1] // 8, ends[:, 1] % 8], 1)
        wp.launch(_kernels.sparse_vertices_2d, dim=nv, device=device, inputs=[
            values, wp.array(pairs.astype(np.int32), dtype=wp.int32, device=device), *common], outputs=[verts])
    else:
        wp.launch(_kernels.sparse_vertices, dim=nv, device=device, inputs=[
            values, wp.array(ends.astype(np.int32), dtype=wp.int32, device=device), *common], outputs=[verts])
    return verts


def sparse_marching_cubes_from_cells(cells: Any, corner_values: Any, origin: Any = (0.0, 0.0, 0.0),
                                     cell_width: float = 1.0, threshold: float = 0.0,
                                     device: Any = None) -> tuple[Any, Any]:  # fmt: skip
    """Marching cubes on the given cells ((N, 3) minimum-corner subscripts) from their corner
    values ((N, 8) in `CUBE_CORNER_OFFSETS` order, or flat); (vertices, flat int32 indices)."""
    if not cell_width > 0.0:
        raise ValueError(f"cell_width must be positive, got {cell_width}.")
    if device is None and isinstance(corner_values, wp.array):
        device = corner_values.device
    device = wp.get_device(device)
    arr = _as_cells(cells)
    values, host = _as_values(corner_values, len(arr), device)
    corners = merge_corners(arr)
    mesh = sparse_topology(corners, host.ravel()[corners.first] < np.float32(threshold))
    origin64 = np.asarray(tuple(origin), dtype=np.float64) + cell_width * corners.base
    verts = launch_vertices(values, mesh, corners.first, threshold, origin64, np.full(3, cell_width), device)
    return verts, wp.array(mesh.tris.ravel(), dtype=wp.int32, device=device)
