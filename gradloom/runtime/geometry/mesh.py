"""`wp.Mesh`: a triangle mesh with a BVH over its triangles, built on the host for kernel queries.

The BVH is runtime/geometry/bvh_tree.py's radix tree over the triangles' centroids in Morton
order, one triangle per leaf. Its nodes are
stored in depth-first order with skip pointers (the node after a node's subtree), so a kernel
traverses it with integer state only and no stack (builtins/mesh.py). `refit()` recomputes the
boxes over the same tree from the current points.

Kernels receive `mesh.id`: the address of a descriptor (layout in types/mesh_layout.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import GradloomError
from ...types import int32, vec3f
from ...types.mesh_layout import (
    MESH_AVG_EDGE,
    MESH_DESCRIPTOR_SIZE,
    MESH_INDICES,
    MESH_LEAF_TRIS,
    MESH_NODES,
    MESH_NUM_NODES,
    MESH_NUM_POINTS,
    MESH_NUM_TRIS,
    MESH_PAIRS,
    MESH_POINTS,
    MESH_ROOT,
    MESH_SOLID_TOL,
    MESH_VELOCITIES,
    MESH_WINDING,
    WALK_LEAF,
)
from ..array.aligned import aligned_zeros
from ..array.array import NDArray, array
from ..handles import Handle
from .bvh_tree import Tree as _Tree
from .bvh_tree import Triangles, refit_triangles, walk_data
from .mesh_solid import solid_tolerance

_WIND = np.dtype([("center", np.float32, 3), ("normal", np.float32, 3), ("radius2", np.float32),
                  ("pad", np.float32)])


class MeshError(GradloomError, ValueError):
    """Bad wp.Mesh inputs."""


def _winding(tree: _Tree, p: NDArray) -> NDArray:
    """Per node (depth-first order): area-weighted centre, summed area vector, and a squared
    radius around the centre holding the subtree's vertices (a child's radius plus its
    centre's offset: an upper bound, which only makes the winding-number walk descend more)."""
    n_nodes = len(tree.prim)
    area_vec = 0.5 * np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    area = np.linalg.norm(area_vec, axis=1)
    w = np.zeros(n_nodes)
    wc, normal = np.zeros((n_nodes, 3)), np.zeros((n_nodes, 3))
    radius = np.zeros(n_nodes)
    leaf = np.flatnonzero(tree.prim >= 0)
    prim = tree.prim[leaf]
    w[leaf], normal[leaf] = area[prim], area_vec[prim]
    wc[leaf] = area[prim, None] * p[prim].mean(1)
    center = np.empty((n_nodes, 3))
    center[leaf] = np.where(w[leaf, None] > 0, wc[leaf] / np.maximum(w[leaf, None], 1e-300),
                            p[prim].mean(1))
    radius[leaf] = np.sqrt(((p[prim] - center[leaf, None]) ** 2).sum(2).max(1))
    for new, lft, rgt in tree.levels:
        w[new], wc[new] = w[lft] + w[rgt], wc[lft] + wc[rgt]
        normal[new] = normal[lft] + normal[rgt]
        mean = 0.5 * (center[lft] + center[rgt])
        center[new] = np.where(w[new, None] > 0, wc[new] / np.maximum(w[new, None], 1e-300), mean)
        reach = [np.linalg.norm(center[c] - center[new], axis=1) + radius[c] for c in (lft, rgt)]
        radius[new] = np.maximum(*reach)
    out = np.zeros(n_nodes, _WIND)
    out["center"], out["normal"] = center, normal
    out["radius2"] = (radius * (1.0 + 1e-6)) ** 2
    return out


class Mesh:
    """A triangle mesh for `wp.mesh_query_point*` and `wp.mesh_eval_*` (CPU)."""

    def __init__(self, points: array, indices: array, velocities: array | None = None,
                 support_winding_number: bool = False, bvh_constructor: str | None = None,
                 bvh_leaf_size: int = 1) -> None:
        if not isinstance(points, array) or points.dtype != vec3f:
            raise MeshError("wp.Mesh(points=...) must be a wp.array of wp.vec3 (float32)")
        if not isinstance(indices, array) or indices.dtype != int32 or indices.ndim != 1:
            raise MeshError("wp.Mesh(indices=...) must be a 1-D wp.array of wp.int32")
        if indices.shape[0] % 3 != 0:
            raise MeshError("wp.Mesh(indices=...) must hold 3 vertex indices per triangle")
        if velocities is not None and (not isinstance(velocities, array)
                                       or velocities.dtype != vec3f):
            raise MeshError("wp.Mesh(velocities=...) must be a wp.array of wp.vec3 or None")
        if not points.device.backend.host_memory:
            raise MeshError("wp.Mesh on a CUDA device is not supported yet: build it on the CPU")
        self.points, self.indices, self.velocities = points, indices, velocities
        self.device = points.device
        self.support_winding_number = support_winding_number
        tris = indices.numpy().reshape(-1, 3)
        if len(tris) == 0:
            raise MeshError("wp.Mesh needs at least one triangle")
        if tris.min() < 0 or tris.max() >= points.shape[0]:
            raise MeshError("wp.Mesh(indices=...) has a vertex index outside the points array")
        self._tris = tris.copy()
        self._set_tree()
        self._wind: NDArray | None = None
        self._desc = aligned_zeros((MESH_DESCRIPTOR_SIZE,), np.uint8)
        self._solid_pending = True
        self.refit()
        self._id: Handle | None = None  # set only by the setter below

    @property
    def id(self) -> Handle:
        """The descriptor's address, for kernels. The first read also checks whether the mesh
        bounds a solid (runtime/geometry/mesh_solid.py, O(n) numpy: paid by meshes that kernels
        use, not by every build); a refit after that check turns it off for good (a deforming
        mesh would need it again at every step). A new Handle each read: the mesh holding its
        own handle (which holds the mesh) would be a cycle, and a dropped mesh would keep its
        tree's memory until Python's cycle collector ran, instead of handing it to the next
        build (runtime/geometry/bvh_memory.py)."""
        if self._solid_pending:
            self._solid_pending = False
            self._write_solid(solid_tolerance(self.points.numpy(), self._tris))
        if self._id is not None:
            return self._id
        return Handle(int(self._desc.ctypes.data), self)

    @id.setter
    def id(self, value: Handle) -> None:  # Warp's tests overwrite it to fake a native failure
        self._id = value

    def _write_solid(self, tol: float) -> None:
        self._desc[MESH_SOLID_TOL:MESH_SOLID_TOL + 4] = np.frombuffer(
            np.float32(tol).tobytes(), np.uint8)

    def __del__(self) -> None:
        """Nothing to free: the mesh's memory is numpy's (Warp frees native memory here)."""

    def rebuild(self, constructor: Any = None) -> None:
        """Build a new tree from the points' current values (refit keeps the old tree)."""
        self._set_tree()
        self.refit()

    def _set_tree(self) -> None:
        self._tree = _Tree(self._triangles(), walk_leaf=WALK_LEAF)
        self._nodes = self._tree.nodes
        self._walk = walk_data(self._tree)

    def _triangles(self) -> Triangles:
        return Triangles(self.points.numpy(), self.indices.numpy())

    def refit(self) -> None:
        """Recompute the BVH's boxes from the points' current values (same tree)."""
        self._mean_edge = refit_triangles(self._tree, self.points.numpy(), self.indices.numpy(),
                                          self._walk)
        self._write_descriptor()
        self._write_sign_data()
        self._write_solid(0.0)  # the points may have moved: the rays decide from now on

    def _write_sign_data(self) -> None:
        """The mean edge length and, with support_winding_number, the nodes' winding data."""
        self._desc[MESH_AVG_EDGE:MESH_AVG_EDGE + 4] = np.frombuffer(
            np.float32(self._mean_edge).tobytes(), np.uint8)  # summed by the compiled refit
        wind = 0
        if self.support_winding_number:
            p = self.points.numpy().astype(np.float64)[self._tris]
            self._wind = _winding(self._tree, p)
            wind = int(self._wind.ctypes.data)
        self._desc[MESH_WINDING:MESH_WINDING + 8] = np.frombuffer(np.uint64(wind).tobytes(),
                                                                  np.uint8)

    def _write_descriptor(self) -> None:
        d = self._desc
        vel = 0 if self.velocities is None else int(self.velocities.ptr or 0)
        for off, v in ((MESH_POINTS, int(self.points.ptr or 0)), (MESH_INDICES, int(self.indices.ptr or 0)),
                       (MESH_VELOCITIES, vel), (MESH_NODES, int(self._nodes.ctypes.data)),
                       (MESH_PAIRS, int(self._walk.pairs.ctypes.data)),
                       (MESH_LEAF_TRIS, int(self._walk.leaf_tris.ctypes.data))):
            d[off:off + 8] = np.frombuffer(np.uint64(v).tobytes(), np.uint8)
        for off, v in ((MESH_NUM_NODES, len(self._nodes)), (MESH_NUM_TRIS, len(self._tris)),
                       (MESH_NUM_POINTS, self.points.shape[0]),
                       (MESH_ROOT, int(self._tree.refs[0]))):
            d[off:off + 4] = np.frombuffer(np.int32(v).tobytes(), np.uint8)

    def __repr__(self) -> str:
        return f"Mesh({self.points.shape[0]} points, {len(self._tris)} triangles)"


