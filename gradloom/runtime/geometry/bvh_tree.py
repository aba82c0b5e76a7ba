"""The shape of the BVH that `wp.Mesh` and `wp.Bvh` share, and its box refit.

The tree is a binary radix tree over the primitives sorted by the Morton code of their centres
(by group first, for a grouped tree: each group is one subtree): a node splits its range where
the highest differing bit of the codes flips, so every node is a cell of the Morton grid, built
with numpy, one vectorised step per bit height. One primitive per leaf. Nodes are stored in
depth-first order, where a subtree is the contiguous range [position, skip): a kernel walks it
with skip pointers and no stack, and a query restricted to a subtree starts at its position and
stops at its end.
"""

from __future__ import annotations

import ctypes
import functools
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
    """The 21 low bits of v (uint64) spread to every third bit."""
    v = v & np.uint64(0x1FFFFF)
    for shift, mask in ((32, 0x1F00000000FFFF), (16, 0x1F0000FF0000FF),
                        (8, 0x100F00F00F00F00F), (4, 0x10C30C30C30C30C3),
                        (2, 0x1249249249249249)):
        v = (v | (v << np.uint64(shift))) & np.uint64(mask)
    return v


def morton(c: NDArray, bits: int = 21) -> NDArray:
    """Morton codes (uint64, `bits` per axis, x in the highest bit of each triple) of (n, 3)
    points normalised to [0, 1]."""
    top = float((1 << bits) - 1)
    q = np.clip(c * top, 0, top).astype(np.uint64)
    return (_spread(q[:, 0]) << np.uint64(2)) | (_spread(q[:, 1]) << np.uint64(1)) \
        | _spread(q[:, 2])


def high_bit(x: NDArray) -> NDArray:
    """The index of the highest set bit of each x > 0 (uint64), as int64."""
    b = np.floor(np.log2(x.astype(np.float64))).astype(np.int64)
    return b - ((x >> b.astype(np.uint64)) == 0)  # float64 may round x up to 2 ** (b + 1)


def _keys(centroids: NDArray, groups: NDArray | None) -> tuple[NDArray, NDArray, NDArray, int]:
    """(order, sorted keys, group ranks in that order, Morton bits per axis): keys are the
    group's rank in the high bits over the Morton code of the centroid (as many bits per axis
    as fit in 63)."""
    n = len(centroids)
    if groups is None:
        rank, rank_bits = np.zeros(n, np.int64), 0
    else:
        _, rank = np.unique(groups, return_inverse=True)
        rank_bits = int(rank.max()).bit_length()
    bits = min(21, (63 - rank_bits) // 3)
    if bits < 1:
        raise ValueError("too many BVH groups")
    lo, hi = centroids.min(0), centroids.max(0)
    code = morton((centroids - lo) / np.maximum(hi - lo, 1e-30), bits)
    key = (rank.astype(np.uint64) << np.uint64(3 * bits)) | code
    order = np.argsort(key)  # equal keys in any order: the tree then splits them by position
    return order, key[order], rank[order], bits


class Tree:
    """A binary radix tree over the primitives in key order (Karras 2012), stored depth first.

    Gap g (between sorted leaves g and g + 1) is split at the height of the highest bit in
    which their keys differ (equal keys: by their indices' bits, below every key bit). Merging
    the clusters on both sides of every gap, lowest gaps first, builds the tree bottom-up with
    one vectorised step per height: inside any cluster exactly one gap has the highest height,
    so gaps of one height never touch the same cluster. Group ranks sit above the Morton bits,
    so a group is merged whole before it meets another: each group is one subtree.

    Per depth-first position: `skip` (the position after the subtree), `prim` (the leaf's
    primitive, -1 for an inner node); `levels`: (parent, left, right) positions, children's
    lists before their parents'; `group_keys` (sorted) and `group_roots` (positions).
    """

    def __init__(self, centroids: NDArray, groups: NDArray | None = None) -> None:
        n = len(centroids)
        order, key, rank, bits = _keys(centroids, groups)
        self.n_leaves = n
        idx = np.arange(max(n - 1, 0))
        x = key[:-1] ^ key[1:]
        height = np.where(x > 0, 64 + high_bit(np.maximum(x, np.uint64(1))),
                          high_bit((idx ^ (idx + 1)).astype(np.uint64))).astype(np.uint8)
        by_height = np.argsort(height, kind="stable")  # a radix sort for 8-bit values
        cuts = np.flatnonzero(np.diff(height[by_height])) + 1
        # node ids: leaves 0..n-1 (sorted order), gap g's node n + g
        left, right = np.empty(max(n - 1, 0), np.int64), np.empty(max(n - 1, 0), np.int64)
        span = np.empty(max(n - 1, 0), np.int64)  # gap g's (first leaf, its node's leaves)
        first_leaf = np.empty(max(n - 1, 0), np.int64)
        first, last = np.arange(n), np.arange(n)  # a cluster's other end, at each end
        at_first, at_last = np.arange(n), np.arange(n)  # the cluster's node, at each end
        merges = np.split(by_height, cuts) if n > 1 else []
        group_top = 64 + 3 * bits  # a gap between groups is at least this high
        group_roots: NDArray | None = None
        for g in merges:
            if groups is not None and group_roots is None and height[g[0]] >= group_top:
                group_roots = self._group_nodes(rank, at_first)
            s, e = first[g], last[g + 1]
            left[g], right[g] = at_last[g], at_first[g + 1]
            first_leaf[g], span[g] = s, e - s + 1
            last[s], first[e] = e, s
            at_first[s] = at_last[e] = n + g
        if groups is not None and group_roots is None:
            group_roots = self._group_nodes(rank, at_first)
        self._layout(n, (left, right, first_leaf, span), merges, order, group_roots)
        if groups is not None:
            self.group_keys = np.unique(groups).astype(np.int32)
        else:
            self.group_keys = np.zeros(1, np.int32)
            self.group_roots = np.zeros(1, np.int32)

    @staticmethod
    def _group_nodes(rank: NDArray, at_first: NDArray) -> NDArray:
        starts = np.flatnonzero(np.r_[True, rank[1:] != rank[:-1]])
        return at_first[starts].copy()

    def _layout(self, n: int, gaps: tuple[NDArray, NDArray, NDArray, NDArray],
                merges: list[NDArray], order: NDArray, group_nodes: NDArray | None) -> None:
        """Depth-first positions, top-down one height at a time; skip and prim."""
        left, right, first_leaf, span = gaps
        pos = np.zeros(2 * n - 1, np.int64)
        for g in reversed(merges):
            at = pos[n + g]
            pos[left[g]] = at + 1
            pos[right[g]] = at + 2 * (g - first_leaf[g] + 1)  # after the left subtree
        leaves = np.ones(2 * n - 1, np.int64)
        leaves[n:] = span
        self.skip = np.empty(2 * n - 1, np.int32)
        self.skip[pos] = pos + 2 * leaves - 1
        self.prim = np.full(2 * n - 1, -1, np.int32)
        self.prim[pos[:n]] = order
        self._merges = (pos, n, left, right, merges)
        if group_nodes is not None:
            self.group_roots = pos[group_nodes].astype(np.int32)

    @functools.cached_property
    def levels(self) -> list[tuple[NDArray, NDArray, NDArray]]:
        """(parent, left, right) positions, children's lists before their parents' (made on
        first use: only the winding-number data needs them)."""
        pos, n, left, right, merges = self._merges
        return [(pos[n + g], pos[left[g]], pos[right[g]]) for g in merges]

    def skip_and_prim(self) -> tuple[NDArray, NDArray]:
        """Per node in depth-first order: the position after its subtree, and its primitive
        (-1 for an inner node)."""
        return self.skip, self.prim

