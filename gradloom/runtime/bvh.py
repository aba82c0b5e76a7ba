"""`wp.Bvh`: a bounding volume hierarchy over user boxes (lowers, uppers), built on the host.

The tree is runtime/mesh.py's linear BVH (Morton order of the box centres, one box per leaf,
depth-first nodes with skip pointers); its descriptor uses the mesh layout's node fields
(`MESH_NODES`, `MESH_NUM_NODES`), so builtins/bvh.py walks it like a mesh's tree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..types import vec3f
from ..types.mesh_layout import MESH_DESCRIPTOR_SIZE, MESH_NODES, MESH_NUM_NODES
from .array import array
from .array_protocols import aligned_zeros
from .handles import Handle
from .mesh import _NODE, MeshError, _Tree


class Bvh:
    """A BVH over boxes [lowers[i], uppers[i]] for `wp.bvh_query_aabb` / `bvh_query_ray` (CPU)."""

    def __init__(self, lowers: array, uppers: array, constructor: Any = None,
                 groups: array | None = None, leaf_size: int = 1) -> None:
        for name, a in (("lowers", lowers), ("uppers", uppers)):
            if not isinstance(a, array) or a.dtype != vec3f or a.ndim != 1:
                raise MeshError(f"wp.Bvh({name}=...) must be a 1-D wp.array of wp.vec3")
            if a.device.is_cuda:
                raise MeshError("wp.Bvh on a CUDA device is not supported yet: build it on the "
                                "CPU")
        if lowers.shape != uppers.shape or lowers.shape[0] == 0:
            raise MeshError("wp.Bvh needs lowers and uppers of the same, nonzero length")
        if groups is not None:
            raise NotImplementedError("wp.Bvh(groups=...) is not supported yet")
        self.lowers, self.uppers, self.device = lowers, uppers, lowers.device
        lo, hi = self._boxes()
        self._tree = _Tree((lo + hi) * 0.5)
        self._nodes = np.zeros(len(self._tree.order), _NODE)
        self._desc = aligned_zeros((MESH_DESCRIPTOR_SIZE,), np.uint8)
        self.refit()
        self.id = Handle(int(self._desc.ctypes.data), self)

    def __del__(self) -> None:
        """Nothing to free: the BVH's memory is numpy's (Warp frees native memory here)."""

    def rebuild(self, constructor: Any = None) -> None:
        """Build a new tree from the current lowers and uppers (refit keeps the old tree)."""
        lo, hi = self._boxes()
        self._tree = _Tree((lo + hi) * 0.5)
        self._nodes = np.zeros(len(self._tree.order), _NODE)
        self.refit()

    def _boxes(self) -> tuple[np.ndarray, np.ndarray]:
        return self.lowers.numpy().astype(np.float64), self.uppers.numpy().astype(np.float64)

    def refit(self) -> None:
        """Recompute the node boxes from the current lowers and uppers (same tree)."""
        t = self._tree
        lo, hi = t.boxes(*self._boxes())
        order, nodes = t.order, self._nodes
        nodes["lower"] = np.nextafter(lo[order].astype(np.float32), np.float32(-np.inf))
        nodes["upper"] = np.nextafter(hi[order].astype(np.float32), np.float32(np.inf))
        nodes["skip"] = (t.pos[order] + t.size[order]).astype(np.int32)
        nodes["prim"] = t.prim[order]
        d = self._desc
        d[MESH_NODES:MESH_NODES + 8] = np.frombuffer(
            np.uint64(self._nodes.ctypes.data).tobytes(), np.uint8)
        d[MESH_NUM_NODES:MESH_NUM_NODES + 4] = np.frombuffer(np.int32(len(nodes)).tobytes(),
                                                             np.uint8)

    def __repr__(self) -> str:
        return f"Bvh({self.lowers.shape[0]} boxes)"
