"""The interface every dense-grid isosurface extractor shares (Warp's `IsoSurfaceBase`): grid
dimensions, output arrays, the field checks and the grid's placement in space."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ..types import float32

Bound = Any  # a wp.vec3, a 3-tuple or None


def validate_field(field: Any) -> None:
    """A 3D float32 array with at least two nodes (one cell) on every axis, as Warp requires."""
    if len(field.shape) != 3:
        raise ValueError(f"Expected a 3D array for 'field', but got an array with shape {field.shape}.")
    if any(n < 2 for n in field.shape):
        raise ValueError("Expected 'field' to have at least 2 nodes on each axis, but got an array with "
                         f"shape {field.shape}.")  # fmt: skip
    if field.dtype is not float32:
        raise TypeError(f"Expected a dtype of wp.float32 for 'field', but got {field.dtype}.")


def grid_frame(shape: tuple[int, ...], lower: Bound, upper: Bound) -> tuple[np.ndarray, np.ndarray]:
    """(position of node (0, 0, 0), cell size per axis) in float32: node (n-1, ...) lies at
    ``upper``; by default node (i, j, k) lies at (i, j, k)."""
    cells = np.array(shape[:3], dtype=np.float32) - 1.0
    lo = np.zeros(3, np.float32) if lower is None else np.array(tuple(lower), dtype=np.float32)
    hi = cells.copy() if upper is None else np.array(tuple(upper), dtype=np.float32)
    return lo, (hi - lo) / cells


class IsoSurfaceBase(ABC):
    """An isosurface extractor for dense 3D float32 fields sampled at grid nodes.

    Build one with the grid's node counts, call `surface(field, threshold)` and read `verts`
    (vec3) and `indices` (a flat int32 array, three per triangle); `extract` is the stateless
    form. Faces wind counter-clockwise seen from outside for a field that is negative inside.
    """

    def __init__(self, nx: int, ny: int, nz: int, *, lower: Bound = None, upper: Bound = None) -> None:
        self.nx, self.ny, self.nz = nx, ny, nz
        self.lower = lower
        self.upper = upper
        self.verts: Any = None
        self.indices: Any = None

    def resize(self, nx: int, ny: int, nz: int) -> None:
        """New node counts, used from the next `surface` call."""
        self.nx, self.ny, self.nz = nx, ny, nz

    def _check_field_shape(self, field: Any) -> None:
        if tuple(field.shape) != (self.nx, self.ny, self.nz):
            raise ValueError(f"Field shape {tuple(field.shape)} does not match context grid dimensions "
                             f"{(self.nx, self.ny, self.nz)}.")  # fmt: skip

    @abstractmethod
    def surface(self, field: Any, threshold: float) -> None:
        """Extract the surface where ``field`` equals ``threshold`` into `verts` and `indices`."""

    @classmethod
    @abstractmethod
    def extract(cls, field: Any, threshold: float = 0.0, *, lower: Bound = None,
                upper: Bound = None) -> tuple[Any, Any]:  # fmt: skip
        """(vertices, flat indices) of the surface where ``field`` equals ``threshold``."""
