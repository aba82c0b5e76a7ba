"""Sparse marching cubes from an implicit function (Warp's `sparse_marching_cubes` and
`lipschitz_octree`): an octree over the grid's cells keeps, level by level, the cells whose
centre value is within the Lipschitz bound of the threshold (|f(c) - t| <= L * half diagonal),
so only the leaves near the surface are sampled at their corners and meshed
(sparse_cells.py). The field is a batched callable, points (wp.vec3 array) -> float32 array."""

from __future__ import annotations

from typing import Any

import numpy as np

import gradloom as wp

from .iso_surface import Bound, grid_frame
from .sparse_cells import (
    launch_vertices,
    merge_corners,
    sparse_marching_cubes_from_cells,
    sparse_topology,
)

__all__ = ["lipschitz_octree", "sparse_marching_cubes", "sparse_marching_cubes_from_cells"]

_CHILDREN = np.array([(i, j, k) for i in (0, 1) for j in (0, 1) for k in (0, 1)], dtype=np.int64)


def _check_field(field: Any) -> None:
    if isinstance(field, wp.Function) or not callable(field):
        raise TypeError("field must be a batched callable, evaluate(points: wp.array[wp.vec3]) -> "
                        "wp.array[wp.float32]; wrap a single-point @wp.func in a kernel over the batch.")  # fmt: skip


class _Evaluator:
    """Calls the field on world points and counts the evaluations."""

    def __init__(self, field: Any, device: Any) -> None:
        self.field, self.device, self.count = field, device, 0

    def __call__(self, points: np.ndarray) -> Any:
        self.count += len(points)
        pts = wp.array(points.astype(np.float32), dtype=wp.vec3, device=self.device)
        return self.field(pts)


def _octree(evaluate: _Evaluator, origin: np.ndarray, delta: np.ndarray, depth: int,
            threshold: float, bound: float) -> np.ndarray:  # fmt: skip
    """The leaf cells (subscripts in leaf units) whose subtree may meet the level set."""
    if bound < 0.0:
        raise ValueError(f"lipschitz_bound must be non-negative, got {bound}.")
    cells = np.zeros((1, 3), dtype=np.int64)
    for level in range(depth + 1):
        size = 1 << (depth - level)
        centres = origin + delta * (cells + 0.5 * size)
        values = np.asarray(evaluate(centres).numpy(), dtype=np.float64)
        reach = bound * 0.5 * size * float(np.linalg.norm(delta))
        cells = cells[np.abs(values - threshold) <= reach]
        if level < depth:
            cells = (cells[:, None, :] + (size // 2) * _CHILDREN[None]).reshape(-1, 3)
    return cells


def lipschitz_octree(field: Any, origin: Any, root_width: float, max_depth: int, threshold: float = 0.0,
                     lipschitz_bound: float = 1.0, device: Any = None) -> tuple[Any, float]:  # fmt: skip
    """(the leaf cells of width root_width / 2**max_depth that may meet the level set, as
    wp.vec3i minimum-corner subscripts, the cell width); not differentiated."""
    _check_field(field)
    device = wp.get_device(device)
    width = float(root_width) / (1 << max_depth)
    org = np.asarray(tuple(origin), dtype=np.float64)
    cells = _octree(_Evaluator(field, device), org, np.full(3, width), max_depth, threshold, lipschitz_bound)
    return wp.array(cells.astype(np.int32), dtype=wp.vec3i, device=device), width


def sparse_marching_cubes(field: Any, nx: int, ny: int, nz: int, *, lower: Bound = None, upper: Bound = None,
                          threshold: float = 0.0, lipschitz_bound: float = 1.0, device: Any = None,
                          return_stats: bool = False) -> tuple[Any, ...]:  # fmt: skip
    """The surface IsoSurfaceMarchingCubes.extract would find on the (nx, ny, nz) node grid over
    [lower, upper], sampling ``field`` only in the octree's band around it."""
    _check_field(field)
    if min(nx, ny, nz) < 2:
        raise ValueError(f"Expected at least 2 nodes on each axis, got {(nx, ny, nz)}.")
    device = wp.get_device(device)
    lo, delta = grid_frame((nx, ny, nz), lower, upper)
    ncells = np.array([nx - 1, ny - 1, nz - 1], dtype=np.int64)
    depth = int(np.ceil(np.log2(ncells.max()))) if ncells.max() > 1 else 0
    evaluate = _Evaluator(field, device)
    leaves = _octree(evaluate, lo.astype(np.float64), delta.astype(np.float64), depth, threshold,
                     lipschitz_bound)  # fmt: skip
    inside_grid = (leaves < ncells).all(axis=1)
    culled = int((~inside_grid).sum())
    leaves = leaves[inside_grid]
    corners = merge_corners(leaves)
    stats = {"resolution": 1 << depth, "leaf_cells": len(leaves), "unique_corners": len(corners.first),
             "culled_cells": culled}  # fmt: skip
    if len(leaves):
        values = evaluate(lo + delta * (corners.base + corners.rel))
        inside = np.asarray(values.numpy()) < np.float32(threshold)
    else:
        values, inside = wp.zeros(0, dtype=wp.float32, device=device), np.zeros(0, bool)
    mesh = sparse_topology(corners, inside)
    stats["field_evaluations"] = evaluate.count
    origin = lo.astype(np.float64) + delta.astype(np.float64) * corners.base
    verts = launch_vertices(values, mesh, None, threshold, origin, delta, device)
    result = (verts, wp.array(mesh.tris.ravel(), dtype=wp.int32, device=device))
    return (*result, stats) if return_stats else result
