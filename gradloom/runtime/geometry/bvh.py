"""`wp.Bvh`: a bounding volume hierarchy over user boxes (lowers, uppers), built on the host.

The tree is runtime/geometry/bvh_tree.py's radix tree (Morton order of the box centres, one box
per leaf, depth-first nodes with skip pointers), grouped when `groups=` is given: each group's
boxes form one subtree, whose root `wp.bvh_get_group_root` finds (builtins/bvh.py) by a binary
search over the descriptor's sorted group keys (layout in types/bvh_layout.py).
"""

from __future__ import annotations

import enum
import warnings
from typing import Any

import numpy as np

from ...types import int32, vec3f
from ...types.bvh_layout import (
    BVH_DESCRIPTOR_SIZE,
    BVH_GROUP_KEYS,
    BVH_GROUP_ROOTS,
    BVH_NODES,
    BVH_NUM_GROUPS,
    BVH_NUM_NODES,
)
from ..array.aligned import aligned_zeros
from ..array.array import NDArray, array
from ..handles import Handle
from .bvh_tree import Tree, refit_boxes
from .mesh import MeshError


class BvhConstructor(enum.IntEnum):
    """Warp's BVH construction algorithm names (gradloom builds one kind of tree for all)."""

    SAH = 0
    MEDIAN = 1
    LBVH = 2
    CUBQL = -1


def is_cubql_available() -> bool:
    """Whether the cuBQL BVH builder is available: never in gradloom."""
    return False


def _constructor(constructor: Any, grouped: bool) -> BvhConstructor:
    if constructor is None:
        return BvhConstructor.SAH
    if not isinstance(constructor, BvhConstructor):
        try:
            constructor = BvhConstructor[str(constructor).upper()]
        except KeyError:
            names = ", ".join(m.name.lower() for m in BvhConstructor)
            raise ValueError(f"Unknown BVH constructor '{constructor}', expected one of: "
                             f"{names}") from None
    if constructor == BvhConstructor.CUBQL and grouped:
        raise RuntimeError("Grouped BVHs are not supported with constructor='cubql'")
    if constructor == BvhConstructor.LBVH:
        warnings.warn("LBVH constructor is not available for a CPU tree. Falling back to SAH "
                      "constructor.", stacklevel=3)
        constructor = BvhConstructor.SAH
    return constructor


def _check(lowers: Any, uppers: Any, groups: Any, leaf_size: int) -> None:
    for name, a in (("lowers", lowers), ("uppers", uppers)):
        if not isinstance(a, array) or a.dtype != vec3f or a.ndim != 1 or not a.is_contiguous:
            raise RuntimeError(f"{name} should be a contiguous array of type wp.vec3")
        if not a.device.backend.host_memory:
            raise MeshError("wp.Bvh on a CUDA device is not supported yet: build it on the CPU")
    if lowers.shape != uppers.shape:
        raise RuntimeError("The same number of lower and upper bounds must be provided")
    if lowers.shape[0] == 0:
        raise MeshError("wp.Bvh needs at least one box")
    if groups is not None:
        if not isinstance(groups, array) or groups.dtype != int32 or not groups.is_contiguous:
            raise RuntimeError("groups should be a contiguous array of type wp.int32")
        if groups.device != lowers.device:
            raise RuntimeError("groups must live on the same device as lowers/uppers")
        if groups.shape[0] != lowers.shape[0]:
            raise RuntimeError("groups must have the same length as lowers/uppers")
    if leaf_size < 1:
        raise ValueError(f"leaf_size must be greater than or equal to 1, current value: "
                         f"{leaf_size}")


class Bvh:
    """A BVH over boxes [lowers[i], uppers[i]] for `wp.bvh_query_*` (CPU)."""

    id: Any = None

    def __init__(self, lowers: array, uppers: array, constructor: Any = None,
                 groups: array | None = None, leaf_size: int = 1) -> None:
        _check(lowers, uppers, groups, leaf_size)
        self._constructor = _constructor(constructor, groups is not None)
        self.lowers, self.uppers, self.groups = lowers, uppers, groups
        self.device = lowers.device
        self._desc = aligned_zeros((BVH_DESCRIPTOR_SIZE,), np.uint8)
        self._build()
        self.id = Handle(int(self._desc.ctypes.data), self)

    def __del__(self) -> None:
        """Nothing to free: the BVH's memory is numpy's (Warp frees native memory here)."""

    def rebuild(self, constructor: Any = None) -> None:
        """Build a new tree from the current lowers and uppers (refit keeps the old tree)."""
        if constructor is not None:
            self._constructor = _constructor(constructor, self.groups is not None)
        self._build()

    def _build(self) -> None:
        lo, hi = self._boxes()
        groups = None if self.groups is None else self.groups.numpy()
        self._tree = Tree((lo.astype(np.float64) + hi) * 0.5, groups)
        self._nodes = self._tree.nodes
        self._keys = np.ascontiguousarray(self._tree.group_keys)
        self._roots = np.ascontiguousarray(self._tree.group_roots)
        self.refit()
        self._write_descriptor()

    def _boxes(self) -> tuple[NDArray, NDArray]:
        return self.lowers.numpy(), self.uppers.numpy()

    def refit(self) -> None:
        """Recompute the node boxes from the current lowers and uppers (same tree)."""
        refit_boxes(self._nodes, *self._boxes())

    def _write_descriptor(self) -> None:
        d = self._desc
        for off, v in ((BVH_NODES, self._nodes.ctypes.data), (BVH_GROUP_KEYS, self._keys.ctypes.data),
                       (BVH_GROUP_ROOTS, self._roots.ctypes.data)):
            d[off:off + 8] = np.frombuffer(np.uint64(v).tobytes(), np.uint8)
        for off, n in ((BVH_NUM_NODES, len(self._nodes)), (BVH_NUM_GROUPS, len(self._keys))):
            d[off:off + 4] = np.frombuffer(np.int32(n).tobytes(), np.uint8)

    def __repr__(self) -> str:
        return f"Bvh({self.lowers.shape[0]} boxes)"
