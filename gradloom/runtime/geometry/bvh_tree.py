"""The shape of the BVH that `wp.Mesh` and `wp.Bvh` share: its build and its box refit.

The tree is a binary radix tree over the primitives sorted by the Morton code of their centres
(by group first, for a grouped tree: each group is one subtree): a node splits its range where
the highest differing bit of the codes flips, so every node is a cell of the Morton grid. The
keys, the tree and the boxes are compiled loops (codegen/native_bvh_build.py and
native_bvh.py, through the hooks below); the keys are sorted by numpy. One primitive per leaf.
Nodes are stored in depth-first order, where a subtree is the contiguous range [position,
skip): a kernel walks it with skip pointers and no stack, and a query restricted to a subtree
starts at its position and stops at its end.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...hooks import Hook
from ...types.mesh_layout import (
    LEAF_TRI_SIZE,
    MESH_NODE_SIZE,
    NODE_LOWER,
    NODE_PRIM,
    NODE_SKIP,
    NODE_UPPER,
    PAIR_SIZE,
    WALK_COUNT_BITS,
)
from .bvh_memory import arena

NDArray = npt.NDArray[Any]
#: the compiled refit: (nodes, node count, lowers, uppers, points, indices, edge sum, pairs,
#: walk references, walk triangles, vertex indices in key order) addresses, with points 0 for box leaves
#: (codegen/native_bvh.py)
RefitFn = Callable[[int, int, int | None, int | None, int | None, int | None, int | None,
                    int | None, int | None, int | None, int | None], None]
#: the compiled refit, which gradloom/native_geometry.py compiles (or loads from the disk cache)
REFIT: Hook[Callable[[], RefitFn]] = Hook("the compiled BVH refit", "gradloom.native_geometry")

#: one node (types/mesh_layout.py)
NODE = np.dtype({"names": ["lower", "upper", "skip", "prim"],
                 "formats": [(np.float32, 3), (np.float32, 3), np.int32, np.int32],
                 "offsets": [NODE_LOWER, NODE_UPPER, NODE_SKIP, NODE_PRIM],
                 "itemsize": MESH_NODE_SIZE})


@dataclass(frozen=True)
class BuildFns:
    """The compiled build loops (codegen/native_bvh_build.py), called with addresses."""

    bounds: Callable[[int, int, int], None]  # (centroids, n, out)
    tri_bounds: Callable[[int, int, int, int], None]  # (points, indices, n, out)
    keys: Callable[[int, int, int, int, int, int | None, int], None]
    tri_keys: Callable[[int, int, int, int, int, int, int | None, int], None]
    build: Callable[[int, int, int, int, int | None, int], None]  # (keys, order, n, nodes,
    #                                                                  walk refs, walk leaf)


#: the compiled build, which gradloom/native_geometry.py compiles (or loads from the disk cache)
BUILD: Hook[Callable[[], BuildFns]] = Hook("the compiled BVH build", "gradloom.native_geometry")


def refit_function(address: int) -> RefitFn:
    """The refit at this address as a ctypes callable (it releases the GIL while it runs)."""
    p = ctypes.c_void_p
    proto = ctypes.CFUNCTYPE(None, p, ctypes.c_int64, p, p, p, p, p, p, p, p, p)
    return proto(address)  # type: ignore[no-any-return]


def build_functions(bounds: int, tri_bounds: int, keys: int, tri_keys: int,
                    build: int) -> BuildFns:
    """The build loops at these addresses as ctypes callables."""
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    return BuildFns(ctypes.CFUNCTYPE(None, p, i64, p)(bounds),
                    ctypes.CFUNCTYPE(None, p, p, i64, p)(tri_bounds),
                    ctypes.CFUNCTYPE(None, p, i64, p, p, i64, p, p)(keys),
                    ctypes.CFUNCTYPE(None, p, p, i64, p, p, i64, p, p)(tri_keys),
                    ctypes.CFUNCTYPE(None, p, p, i64, p, p, i64)(build))


def refit_boxes(nodes: NDArray, lowers: NDArray, uppers: NDArray) -> None:
    """Every node's box in `nodes` (depth-first order) from box leaves: float32 (n, 3) arrays."""
    lo, hi = np.ascontiguousarray(lowers, np.float32), np.ascontiguousarray(uppers, np.float32)
    REFIT.get()()(nodes.ctypes.data, len(nodes), lo.ctypes.data, hi.ctypes.data, None, None,
                  None, None, None, None, None)


def refit_triangles(tree: Tree, points: NDArray, indices: NDArray,
                    walk: WalkData | None = None) -> float:
    """Every node's box in the tree from triangle leaves (points: float32 (n, 3); indices:
    int32, three per triangle), each leaf box one float32 step wider than its triangle, and
    the walk's records (walk_data()) if given; returns the mean edge length (three edges per
    triangle, float32 lengths summed in float64)."""
    p, i = np.ascontiguousarray(points, np.float32), np.ascontiguousarray(indices, np.int32)
    edge_sum = np.zeros(1, np.float64)
    nodes = tree.nodes
    REFIT.get()()(nodes.ctypes.data, len(nodes), None, None, p.ctypes.data, i.ctypes.data,
                  edge_sum.ctypes.data, None if walk is None else walk.pairs.ctypes.data,
                  None if walk is None else tree.refs.ctypes.data,
                  None if walk is None else walk.leaf_tris.ctypes.data,
                  None if tree.leaf_verts is None else tree.leaf_verts.ctypes.data)
    return float(edge_sum[0]) / max(len(i), 1)


@dataclass(frozen=True)
class WalkData:
    """The nearest-first walk's records (types/mesh_layout.py), filled by refit_triangles: pair
    records (PAIR_SIZE bytes each, 64-byte aligned; room for at least one) and the triangles in
    key order (LEAF_TRI_SIZE bytes each)."""

    pairs: NDArray
    leaf_tris: NDArray


def walk_data(tree: Tree) -> WalkData:
    """The tree's walk records (room made by a Tree built with walk_leaf)."""
    assert tree.walk is not None, "a tree built without walk_leaf"
    return tree.walk


@dataclass(frozen=True)
class Triangles:
    """Primitives given as triangles: float32 (m, 3) points and int32 indices, three per
    triangle (their centres are computed where they are needed, never stored)."""

    points: NDArray
    indices: NDArray

    def __len__(self) -> int:
        return len(self.indices) // 3


def _keys(prims: NDArray | Triangles,
          groups: NDArray | None) -> tuple[NDArray, NDArray, NDArray]:
    """(order, sorted keys, group ranks in that order) of (n, 3) centroids or triangles: keys
    are the group's rank in the high bits over the Morton code of the centre (as many bits per
    axis as fit in 63)."""
    n = len(prims)
    if groups is None:
        rank, rank_bits = None, 0
    else:
        _, rank = np.unique(groups, return_inverse=True)
        rank = np.ascontiguousarray(rank, np.int64)
        rank_bits = int(rank.max()).bit_length()
    bits = min(21, (63 - rank_bits) // 3)
    if bits < 1:
        raise ValueError("too many BVH groups")
    fns = BUILD.get()()
    box = np.empty(6, np.float64)
    key = np.empty(n, np.uint64)
    ranks = None if rank is None else rank.ctypes.data
    if isinstance(prims, Triangles):
        p = np.ascontiguousarray(prims.points, np.float32)
        i = np.ascontiguousarray(prims.indices, np.int32)
        fns.tri_bounds(p.ctypes.data, i.ctypes.data, n, box.ctypes.data)
        lo, ext = box[:3], np.maximum(box[3:] - box[:3], 1e-30)
        fns.tri_keys(p.ctypes.data, i.ctypes.data, n, lo.ctypes.data, ext.ctypes.data, bits,
                     ranks, key.ctypes.data)
    else:
        c = np.ascontiguousarray(prims, np.float64)
        fns.bounds(c.ctypes.data, n, box.ctypes.data)
        lo, ext = box[:3], np.maximum(box[3:] - box[:3], 1e-30)
        fns.keys(c.ctypes.data, n, lo.ctypes.data, ext.ctypes.data, bits, ranks,
                 key.ctypes.data)
    order = np.argsort(key)  # equal keys in any order: the tree then splits them by position
    ranks_sorted = np.zeros(n, np.int64) if rank is None else rank[order]
    return order, key[order], ranks_sorted


class Tree:
    """A binary radix tree over the primitives in key order (Karras 2012), stored depth first.

    A node over the sorted leaves [a, b) splits at the highest bit in which keys a and b - 1
    differ (equal keys: at the highest bit of the positions a ^ (b - 1), below every key bit).
    Group ranks sit above the Morton bits, so each group is one subtree.

    `nodes`: the node array (types/mesh_layout.py; boxes left for a refit); per depth-first
    position `skip` (the position after the subtree) and `prim` (the leaf's primitive; ~k for
    the k-th inner node) are views of it; `group_keys` (sorted) and `group_roots` (positions).
    With `walk_leaf` (1 to 2**WALK_COUNT_BITS), also the nearest-first walk's coarser tree
    (types/mesh_layout.py `PAIR_*`): `refs`, each node's walk reference, and `n_records`, how
    many pair records the refit writes, and `walk`, room for them (WalkData). Its arrays live
    in memory from runtime/geometry/bvh_memory.py, which the tree hands back when it dies.
    """

    def __init__(self, prims: NDArray | Triangles, groups: NDArray | None = None,
                 walk_leaf: int = 0) -> None:
        n = len(prims)
        order, key, rank = _keys(prims, groups)
        self.n_leaves = n
        if walk_leaf and n >> (31 - WALK_COUNT_BITS):
            raise ValueError(f"a mesh of 2**{31 - WALK_COUNT_BITS} or more triangles (the "
                             "walk's leaf references hold their first triangle's position)")
        self._allocate(prims, walk_leaf)
        if self.leaf_verts is not None:
            assert isinstance(prims, Triangles)
            np.take(np.ascontiguousarray(prims.indices, np.int32).reshape(-1, 3), order, axis=0,
                    out=self.leaf_verts)
        refs = self.refs.ctypes.data if walk_leaf else None
        BUILD.get()().build(key.ctypes.data, np.ascontiguousarray(order, np.int64).ctypes.data,
                            n, self.nodes.ctypes.data, refs, walk_leaf)
        self.n_records = int(np.count_nonzero(self.refs >= 0)) if walk_leaf else 0
        self.skip, self.prim = self.nodes["skip"], self.nodes["prim"]
        if groups is not None:
            self.group_keys = np.unique(groups).astype(np.int32)
            self.group_roots = self._group_roots(rank)
        else:
            self.group_keys = np.zeros(1, np.int32)
            self.group_roots = np.zeros(1, np.int32)

    def _allocate(self, prims: NDArray | Triangles, walk_leaf: int) -> None:
        """The tree's arrays, views of one arena (runtime/geometry/bvh_memory.py): `nodes`;
        for triangles `leaf_verts`, their vertex indices in key order (n x 3 int32, so the
        refit reads them in order; None for boxes); with walk_leaf `refs` and `walk`."""
        n = len(prims)
        m = max(2 * n - 1, 0)
        # nodes over more than walk_leaf leaves, at most 2n / (walk_leaf + 1): the smallest of
        # them hold disjoint leaf sets, and a binary tree over k of them has 2k - 1 nodes
        records = 2 * n // (walk_leaf + 1) + 1 if walk_leaf else 0
        tris = isinstance(prims, Triangles)
        sizes = [m * MESH_NODE_SIZE, 12 * n if tris else 0]
        if walk_leaf:
            sizes += [m * 4, records * PAIR_SIZE, n * LEAF_TRI_SIZE]
        parts = arena(self, sizes)
        self.nodes = parts[0].view(NODE)
        self.leaf_verts: NDArray | None = parts[1].view(np.int32).reshape(n, 3) if tris else None
        self.walk: WalkData | None = None
        if walk_leaf:
            self.refs = parts[2].view(np.int32)
            self.walk = WalkData(parts[3].reshape(records, PAIR_SIZE),
                                 parts[4].reshape(n, LEAF_TRI_SIZE))

    def _group_roots(self, rank: NDArray) -> NDArray:
        """Each group's subtree root: the node whose leaves are exactly the group's."""
        n = self.n_leaves
        starts = np.flatnonzero(np.r_[True, rank[1:] != rank[:-1]])
        sizes = np.diff(np.r_[starts, n])
        is_leaf = (self.prim >= 0).astype(np.int64)
        first = np.cumsum(is_leaf) - is_leaf  # leaves before each node: its first leaf
        count = (self.skip.astype(np.int64) - np.arange(len(self.skip)) + 1) // 2
        code = first * (n + 1) + count
        by_code = np.argsort(code)
        found = by_code[np.searchsorted(code[by_code], starts * (n + 1) + sizes)]
        return found.astype(np.int32)

    @functools.cached_property
    def levels(self) -> list[tuple[NDArray, NDArray, NDArray]]:
        """(parent, left, right) positions of the inner nodes, deepest first, so children's
        lists come before their parents' (made on first use: only the winding-number data
        needs them). A node's depth counts the inner nodes whose subtree [p + 1, skip) holds
        it."""
        m = len(self.prim)
        inner = np.flatnonzero(self.prim < 0)
        if len(inner) == 0:
            return []
        left = inner + 1
        enter = np.bincount(left, minlength=m + 1)
        leave = np.bincount(self.skip[inner], minlength=m + 1)
        depth = np.cumsum(enter - leave)[:m][inner]
        by_depth = inner[np.argsort(-depth, kind="stable")]
        cuts = np.flatnonzero(np.diff(np.sort(-depth, kind="stable"))) + 1
        out = []
        for parents in np.split(by_depth, cuts):
            lft = parents + 1
            out.append((parents, lft, self.skip[lft].astype(np.int64)))
        return out

    def skip_and_prim(self) -> tuple[NDArray, NDArray]:
        """Per node in depth-first order: the position after its subtree, and its primitive
        (negative for an inner node)."""
        return self.skip, self.prim
