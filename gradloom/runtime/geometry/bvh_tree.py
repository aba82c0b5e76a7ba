"""The shape of the linear BVH that `wp.Mesh` and `wp.Bvh` share, and its box refit.

Leaves are the primitives sorted by the Morton code of their centres (by group first, for a
grouped tree); adjacent nodes are paired bottom-up level by level (numpy, vectorised per level),
one primitive per leaf. In a grouped tree the pairing stays inside each group until every group
has one root; then the group roots are paired the same way, so each group is one subtree.
Nodes are stored in depth-first order (`pos`), where a subtree is the contiguous range
`[pos, pos + size)`: a kernel walks it with skip pointers and no stack, and a query restricted
to a subtree starts at its position and stops at its end.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ...hooks import Hook

NDArray = npt.NDArray[Any]
#: the compiled refit: (nodes, node count, lowers, uppers, points, indices, edge sum)
#: addresses, with points 0 for box leaves (codegen/native_bvh.py)
RefitFn = Callable[[int, int, int | None, int | None, int | None, int | None, int | None], None]
#: the compiled refit, which gradloom/native_geometry.py compiles (or loads from the disk cache)
REFIT: Hook[Callable[[], RefitFn]] = Hook("the compiled BVH refit", "gradloom.native_geometry")


def refit_function(address: int) -> RefitFn:
    """The refit at this address as a ctypes callable (it releases the GIL while it runs)."""
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    return proto(address)  # type: ignore[no-any-return]


def refit_boxes(nodes: NDArray, lowers: NDArray, uppers: NDArray) -> None:
    """Every node's box in `nodes` (depth-first order) from box leaves: float32 (n, 3) arrays."""
    lo, hi = np.ascontiguousarray(lowers, np.float32), np.ascontiguousarray(uppers, np.float32)
    REFIT.get()()(nodes.ctypes.data, len(nodes), lo.ctypes.data, hi.ctypes.data, None, None,
                  None)


def refit_triangles(nodes: NDArray, points: NDArray, indices: NDArray) -> float:
    """Every node's box in `nodes` from triangle leaves (points: float32 (n, 3); indices: int32,
    three per triangle), each leaf box one float32 step wider than its triangle; returns the
    mean edge length (three edges per triangle, float32 lengths summed in float64)."""
    p, i = np.ascontiguousarray(points, np.float32), np.ascontiguousarray(indices, np.int32)
    edge_sum = np.zeros(1, np.float64)
    REFIT.get()()(nodes.ctypes.data, len(nodes), None, None, p.ctypes.data, i.ctypes.data,
                  edge_sum.ctypes.data)
    return float(edge_sum[0]) / max(len(i), 1)


def _spread(v: NDArray) -> NDArray:
    """The 10 low bits of v spread to every third bit (uint32 arithmetic wraps)."""
    v = (v * np.uint32(0x00010001)) & np.uint32(0xFF0000FF)
    v = (v * np.uint32(0x00000101)) & np.uint32(0x0F00F00F)
    v = (v * np.uint32(0x00000011)) & np.uint32(0xC30C30C3)
    return (v * np.uint32(0x00000005)) & np.uint32(0x49249249)


def morton(c: NDArray) -> NDArray:
    """30-bit Morton codes of (n, 3) points normalised to [0, 1] (x in the highest bit of
    each triple)."""
    q = np.clip(c * 1023.0, 0, 1023).astype(np.uint32)
    return (_spread(q[:, 0]) << np.uint32(2)) | (_spread(q[:, 1]) << np.uint32(1)) \
        | _spread(q[:, 2])


class Tree:
    """Node ids (leaves first, primitives in sorted order), children, the pairing levels, the
    depth-first positions, and for a grouped tree each group's subtree root."""

    def __init__(self, centroids: NDArray, groups: NDArray | None = None) -> None:
        n = len(centroids)
        lo, hi = centroids.min(0), centroids.max(0)
        codes = morton((centroids - lo) / np.maximum(hi - lo, 1e-30))
        if groups is None:
            order = np.argsort(codes, kind="stable")
            seg = np.zeros(n, np.int64)
        else:
            order = np.lexsort((codes, groups))
            seg = groups[order].astype(np.int64)
        self.n_leaves = n
        self.prim = np.concatenate([order, np.full(max(n - 1, 0), -1)]).astype(np.int32)
        self.left = np.full(2 * n - 1, -1, np.int64)
        self.right = np.full(2 * n - 1, -1, np.int64)
        self.levels: list[tuple[NDArray, NDArray, NDArray]] = []
        ids, seg, next_id = self._pair(np.arange(n), seg, n)
        group_nodes = ids
        ids, _, _ = self._pair(ids, np.zeros(len(ids), np.int64), next_id)
        self.root = int(ids[0])
        self.order = self._preorder()
        # each group's key and its subtree root's depth-first position (sorted by key)
        self.group_keys = seg.astype(np.int32) if groups is not None else np.zeros(1, np.int32)
        self.group_roots = self.pos[group_nodes].astype(np.int32) if groups is not None \
            else np.zeros(1, np.int32)

    def _pair(self, ids: NDArray, seg: NDArray, next_id: int) -> tuple[NDArray, NDArray, int]:
        """Pair neighbours inside each run of equal `seg` until every run is one node."""
        while True:
            starts = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
            if len(starts) == len(ids):
                return ids, seg, next_id
            lens = np.diff(np.r_[starts, len(ids)])
            run = np.repeat(np.arange(len(starts)), lens)
            rank = np.arange(len(ids)) - starts[run]
            li = np.flatnonzero((rank % 2 == 0) & (rank + 1 < lens[run]))
            new = np.arange(next_id, next_id + len(li))
            self.left[new], self.right[new] = ids[li], ids[li + 1]
            self.levels.append((new, ids[li], ids[li + 1]))
            next_id += len(li)
            ids = ids.copy()
            ids[li] = new
            keep = rank % 2 == 0  # a run's odd one out moves up unchanged
            ids, seg = ids[keep], seg[keep]

    def _preorder(self) -> NDArray:
        """Node ids in depth-first order (left subtree first); sets `size` and `pos`."""
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

    def skip_and_prim(self) -> tuple[NDArray, NDArray]:
        """Per node in depth-first order: the position after its subtree, and its primitive
        (-1 for an inner node)."""
        return ((self.pos[self.order] + self.size[self.order]).astype(np.int32),
                self.prim[self.order])
