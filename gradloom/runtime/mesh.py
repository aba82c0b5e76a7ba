"""`wp.Mesh`: a triangle mesh with a BVH over its triangles, built on the host for kernel queries.

The BVH is a linear BVH: triangles sorted by the Morton code of their centroids, then paired
bottom-up level by level (numpy, vectorised per level), one triangle per leaf. Its nodes are
stored in depth-first order with skip pointers (the node after a node's subtree), so a kernel
traverses it with integer state only and no stack (builtins/mesh.py). `refit()` recomputes the
boxes over the same tree from the current points.

Kernels receive `mesh.id`: the address of a descriptor (layout in types/mesh_layout.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import GradloomError
from ..types import int32, vec3f
from ..types.mesh_layout import (
    MESH_DESCRIPTOR_SIZE,
    MESH_INDICES,
    MESH_NODES,
    MESH_NUM_NODES,
    MESH_NUM_POINTS,
    MESH_NUM_TRIS,
    MESH_POINTS,
    MESH_VELOCITIES,
)
from .array import NDArray, array
from .array_protocols import aligned_zeros
from .handles import Handle

_NODE = np.dtype([("lower", np.float32, 3), ("upper", np.float32, 3), ("skip", np.int32),
                  ("prim", np.int32)])


class MeshError(GradloomError, ValueError):
    """Bad wp.Mesh inputs."""


def _morton(c: NDArray) -> NDArray:
    """30-bit Morton codes of (n, 3) points normalised to [0, 1]."""
    q = np.clip((c * 1023.0).astype(np.int64), 0, 1023)
    code = np.zeros(len(c), np.int64)
    for bit in range(10):
        for axis in range(3):
            code |= ((q[:, axis] >> bit) & 1) << (3 * bit + (2 - axis))
    return code


class _Tree:
    """The tree shape: node ids (leaves first, triangles in Morton order), children, levels."""

    def __init__(self, centroids: NDArray) -> None:
        n = len(centroids)
        lo, hi = centroids.min(0), centroids.max(0)
        order = np.argsort(_morton((centroids - lo) / np.maximum(hi - lo, 1e-30)), kind="stable")
        self.n_leaves = n
        self.prim = np.concatenate([order, np.full(max(n - 1, 0), -1)]).astype(np.int32)
        self.left = np.full(2 * n - 1, -1, np.int64)
        self.right = np.full(2 * n - 1, -1, np.int64)
        self.levels: list[tuple[NDArray, NDArray, NDArray]] = []
        ids, next_id = np.arange(n), n
        while len(ids) > 1:
            m = len(ids) // 2
            new = np.arange(next_id, next_id + m)
            self.left[new], self.right[new] = ids[0:2 * m:2], ids[1:2 * m:2]
            self.levels.append((new, ids[0:2 * m:2], ids[1:2 * m:2]))
            next_id += m
            ids = np.concatenate([new, ids[2 * m:]])  # an odd one out moves up unchanged
        self.root = int(ids[0])
        self.order = self._preorder()

    def _preorder(self) -> NDArray:
        """Node ids in depth-first order (left subtree first)."""
        size = np.ones(len(self.left), np.int64)
        for new, lft, rgt in self.levels:
            size[new] = 1 + size[lft] + size[rgt]
        pos = np.zeros(len(self.left), np.int64)
        frontier = np.array([self.root])
        while len(frontier):
            inner = frontier[self.left[frontier] >= 0]
            lft, rgt = self.left[inner], self.right[inner]
            pos[lft] = pos[inner] + 1
            pos[rgt] = pos[inner] + 1 + size[lft]
            frontier = np.concatenate([lft, rgt])
        self.size = size
        self.pos = pos
        out = np.empty(len(pos), np.int64)
        out[pos] = np.arange(len(pos))
        return out

    def boxes(self, tri_lo: NDArray, tri_hi: NDArray) -> tuple[NDArray, NDArray]:
        """Every node's box (by node id) from the triangles' boxes."""
        lo = np.empty((len(self.left), 3), np.float64)
        hi = np.empty((len(self.left), 3), np.float64)
        lo[:self.n_leaves], hi[:self.n_leaves] = tri_lo[self.prim[:self.n_leaves]], \
            tri_hi[self.prim[:self.n_leaves]]
        for new, lft, rgt in self.levels:
            lo[new] = np.minimum(lo[lft], lo[rgt])
            hi[new] = np.maximum(hi[lft], hi[rgt])
        return lo, hi


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
        if points.device.is_cuda:
            raise MeshError("wp.Mesh on a CUDA device is not supported yet: build it on the CPU")
        self.points, self.indices, self.velocities = points, indices, velocities
        self.device = points.device
        self.support_winding_number = support_winding_number
        tris = indices.numpy().reshape(-1, 3)
        if len(tris) == 0:
            raise MeshError("wp.Mesh needs at least one triangle")
        if tris.min() < 0 or tris.max() >= points.shape[0]:
            raise MeshError("wp.Mesh(indices=...) has a vertex index outside the points array")
        self._tris = tris.astype(np.int64)
        self._tree = _Tree(self._tri_boxes()[2])
        self._nodes = np.zeros(len(self._tree.order), _NODE)
        self._desc = aligned_zeros((MESH_DESCRIPTOR_SIZE,), np.uint8)
        self.refit()
        self.id = Handle(int(self._desc.ctypes.data), self)

    def __del__(self) -> None:
        """Nothing to free: the mesh's memory is numpy's (Warp frees native memory here)."""

    def rebuild(self, constructor: Any = None) -> None:
        """Build a new tree from the points' current values (refit keeps the old tree)."""
        self._tree = _Tree(self._tri_boxes()[2])
        self._nodes = np.zeros(len(self._tree.order), _NODE)
        self.refit()

    def _tri_boxes(self) -> tuple[NDArray, NDArray, NDArray]:
        p = self.points.numpy().astype(np.float64)[self._tris]  # (n, 3 corners, 3)
        return p.min(1), p.max(1), p.mean(1)

    def refit(self) -> None:
        """Recompute the BVH's boxes from the points' current values (same tree)."""
        t = self._tree
        lo, hi, _ = self._tri_boxes()
        lo, hi = t.boxes(lo, hi)
        order = t.order
        nodes = self._nodes
        # float32 boxes rounded outward so they still contain the float32 triangles
        nodes["lower"] = np.nextafter(lo[order].astype(np.float32), np.float32(-np.inf))
        nodes["upper"] = np.nextafter(hi[order].astype(np.float32), np.float32(np.inf))
        nodes["skip"] = (t.pos[order] + t.size[order]).astype(np.int32)
        nodes["prim"] = t.prim[order]
        self._write_descriptor()

    def _write_descriptor(self) -> None:
        d = self._desc
        vel = 0 if self.velocities is None else int(self.velocities.ptr or 0)
        for off, v in ((MESH_POINTS, int(self.points.ptr or 0)), (MESH_INDICES, int(self.indices.ptr or 0)),
                       (MESH_VELOCITIES, vel), (MESH_NODES, int(self._nodes.ctypes.data))):
            d[off:off + 8] = np.frombuffer(np.uint64(v).tobytes(), np.uint8)
        for off, v in ((MESH_NUM_NODES, len(self._nodes)), (MESH_NUM_TRIS, len(self._tris)),
                       (MESH_NUM_POINTS, self.points.shape[0])):
            d[off:off + 4] = np.frombuffer(np.int32(v).tobytes(), np.uint8)

    def __repr__(self) -> str:
        return f"Mesh({self.points.shape[0]} points, {len(self._tris)} triangles)"


