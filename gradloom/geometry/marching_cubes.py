"""Marching cubes over a dense grid (Warp's `wp.geometry.IsoSurfaceMarchingCubes`, formerly
`wp.MarchingCubes`): the mesh's topology is found on the host with numpy, the vertex positions
by a kernel that interpolates the field along the crossed edges, so a Tape carries gradients
from the vertices back to the field (the triangles are discrete and carry none).

Vertices are numbered by the crossed edge they lie on, in the order of the edge's lower node
(C order over the field) and then its axis (x, y, z); triangles by cell, in C order, each cell's
in table order (mc_tables.py)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import gradloom as wp

from . import mc_tables
from .iso_surface import Bound, IsoSurfaceBase, grid_frame, validate_field

_UNSET: Any = object()
_TRI_EDGES = np.array(mc_tables.TRI_LOCAL_INDICES, dtype=np.int64).reshape(-1, 3)
_RANGE = np.array(mc_tables.CASE_TO_TRI_RANGE, dtype=np.int64)
_CORNERS = np.array(mc_tables.CUBE_CORNER_OFFSETS, dtype=np.int64)
# each local edge: its lower corner's offset and its axis
_EDGE_BASE = np.array([_CORNERS[a] for a, _ in mc_tables.EDGE_TO_CORNERS], dtype=np.int64)
_EDGE_AXIS = np.array([int(np.argmax(_CORNERS[b] - _CORNERS[a])) for a, b in mc_tables.EDGE_TO_CORNERS])


def crossed_edges(inside: np.ndarray) -> np.ndarray:
    """(nx, ny, nz, 3) bool: whether the edge from each node along each axis changes side."""
    cross = np.zeros((*inside.shape, 3), dtype=bool)
    cross[:-1, :, :, 0] = inside[:-1] != inside[1:]
    cross[:, :-1, :, 1] = inside[:, :-1] != inside[:, 1:]
    cross[:, :, :-1, 2] = inside[:, :, :-1] != inside[:, :, 1:]
    return cross


def cell_cases(inside: np.ndarray) -> np.ndarray:
    """(nx-1, ny-1, nz-1) case codes: bit c set where corner c is inside."""
    nx, ny, nz = inside.shape
    code = np.zeros((nx - 1, ny - 1, nz - 1), dtype=np.int64)
    for c, (ox, oy, oz) in enumerate(mc_tables.CUBE_CORNER_OFFSETS):
        code |= inside[ox:nx - 1 + ox, oy:ny - 1 + oy, oz:nz - 1 + oz].astype(np.int64) << c
    return code


def triangles(inside: np.ndarray, vertex_of: np.ndarray) -> np.ndarray:
    """(T, 3) vertex indices of every cell's triangles; ``vertex_of`` numbers the crossed edges."""
    code = cell_cases(inside).ravel()
    counts = _RANGE[code + 1] - _RANGE[code]
    cells = np.nonzero(counts)[0]
    per = counts[cells]
    first = np.repeat(np.cumsum(per) - per, per)
    tri = np.repeat(_RANGE[code[cells]], per) + np.arange(int(per.sum())) - first
    local = _TRI_EDGES[tri]  # (T, 3) local edges
    ijk = np.stack(np.unravel_index(np.repeat(cells, per), tuple(n - 1 for n in inside.shape)), -1)
    node = ijk[:, None, :] + _EDGE_BASE[local]  # (T, 3, 3)
    return vertex_of[node[..., 0], node[..., 1], node[..., 2], _EDGE_AXIS[local]]


def topology(values: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """(edges: (V, 4) int32 node i, j, k and axis of each vertex, (T, 3) int32 triangles)."""
    inside = values < np.float32(threshold)
    cross = crossed_edges(inside)
    vertex_of = np.cumsum(cross.ravel(), dtype=np.int64).reshape(cross.shape) - 1
    edges = np.argwhere(cross).astype(np.int32)
    return edges, triangles(inside, vertex_of).astype(np.int32)


def extract_mesh(field: Any, threshold: float, lower: Bound, upper: Bound) -> tuple[Any, Any]:
    """The mesh of one field: vertices from a recorded launch, indices from the host."""
    from . import _kernels

    validate_field(field)
    lo, delta = grid_frame(tuple(field.shape), lower, upper)
    edges, tris = topology(field.numpy(), threshold)
    device = field.device
    grad = bool(getattr(field, "requires_grad", False))
    verts = wp.zeros(len(edges), dtype=wp.vec3, device=device, requires_grad=grad)
    if len(edges):
        wp.launch(_kernels.edge_vertices, dim=len(edges), device=device,
                  inputs=[field, wp.array(edges, dtype=wp.int32, device=device), float(threshold),
                          wp.vec3(*lo), wp.vec3(*delta)], outputs=[verts])  # fmt: skip
    return verts, wp.array(tris.ravel(), dtype=wp.int32, device=device)


def _forward_bound(name: str, value: Any, legacy: str, legacy_value: Any) -> Any:
    """The bound from ``name`` or its deprecated spelling ``legacy`` (warning), never both."""
    if legacy_value is _UNSET:
        return value
    if value is not None and legacy_value is not None:
        raise TypeError(f"Cannot specify both `{name}` and `{legacy}`.")
    warnings.warn(f"IsoSurfaceMarchingCubes() argument `{legacy}` is deprecated and will be removed in a "
                  f"future version of Warp. Use `{name}` instead.", DeprecationWarning, stacklevel=3)  # fmt: skip
    return value if legacy_value is None else legacy_value


def _warn_attribute(attribute: str, name: str) -> None:
    warnings.warn(f"IsoSurfaceMarchingCubes.{attribute} is deprecated and will be removed in a future "
                  f"version of Warp. Use `{name}` instead.", DeprecationWarning, stacklevel=3)  # fmt: skip


class IsoSurfaceMarchingCubes(IsoSurfaceBase):
    """Marching cubes: triangles through the crossed edges of each cell, a vertex per crossed
    edge placed by linear interpolation (`wp.lerp`) of the two node values; differentiable
    from the field to `verts` under a Tape."""

    CUBE_CORNER_OFFSETS = mc_tables.CUBE_CORNER_OFFSETS
    EDGE_TO_CORNERS = mc_tables.EDGE_TO_CORNERS
    CASE_TO_TRI_RANGE = mc_tables.CASE_TO_TRI_RANGE
    TRI_LOCAL_INDICES = mc_tables.TRI_LOCAL_INDICES

    def __init__(self, nx: int, ny: int, nz: int, lower: Bound = None, upper: Bound = None, *,
                 domain_bounds_lower_corner: Bound = _UNSET,
                 domain_bounds_upper_corner: Bound = _UNSET) -> None:  # fmt: skip
        lower = _forward_bound("lower", lower, "domain_bounds_lower_corner", domain_bounds_lower_corner)
        upper = _forward_bound("upper", upper, "domain_bounds_upper_corner", domain_bounds_upper_corner)
        super().__init__(nx, ny, nz, lower=lower, upper=upper)

    @property
    def domain_bounds_lower_corner(self) -> Bound:
        """Deprecated name of `lower`."""
        _warn_attribute("domain_bounds_lower_corner", "lower")
        return self.lower

    @domain_bounds_lower_corner.setter
    def domain_bounds_lower_corner(self, value: Bound) -> None:
        _warn_attribute("domain_bounds_lower_corner", "lower")
        self.lower = value

    @property
    def domain_bounds_upper_corner(self) -> Bound:
        """Deprecated name of `upper`."""
        _warn_attribute("domain_bounds_upper_corner", "upper")
        return self.upper

    @domain_bounds_upper_corner.setter
    def domain_bounds_upper_corner(self, value: Bound) -> None:
        _warn_attribute("domain_bounds_upper_corner", "upper")
        self.upper = value

    def surface(self, field: Any, threshold: float) -> None:
        """Extract the surface of a field of the configured shape into `verts` and `indices`."""
        self._check_field_shape(field)
        self.verts, self.indices = extract_mesh(field, threshold, self.lower, self.upper)

    @classmethod
    def extract(cls, field: Any, threshold: float = 0.0, *, lower: Bound = None,
                upper: Bound = None) -> tuple[Any, Any]:  # fmt: skip
        """(vertices, flat int32 indices) of the surface where ``field`` equals ``threshold``;
        node (0, 0, 0) at ``lower``, the last node at ``upper`` (default: node (i, j, k) at
        (i, j, k))."""
        return extract_mesh(field, threshold, lower, upper)

    @staticmethod
    def extract_surface_marching_cubes(field: Any, threshold: float = 0.0, domain_bounds_lower_corner: Bound = None,
                                       domain_bounds_upper_corner: Bound = None) -> tuple[Any, Any]:  # fmt: skip
        """Deprecated name of `extract`."""
        warnings.warn("MarchingCubes.extract_surface_marching_cubes() is deprecated and will be removed in a "
                      "future version of Warp. Use IsoSurfaceMarchingCubes.extract() instead.",
                      DeprecationWarning, stacklevel=2)  # fmt: skip
        return extract_mesh(field, threshold, domain_bounds_lower_corner, domain_bounds_upper_corner)
