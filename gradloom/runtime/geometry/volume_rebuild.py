"""Rebuildable volumes (Warp's `rebuildable=True`, `max_*` capacities, `Volume.rebuild`): the
capacities a volume reserves, the topology that fits in them (and the `REBUILD_*` flags saying
what did not), and the byte size of a grid at full capacity, so a rebuild rewrites the grid in
the same buffer and `volume.id` stays valid."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...types import volume as L

SUCCESS, LEAF_EXCEEDED, LOWER_EXCEEDED, UPPER_EXCEEDED, VOXEL_EXCEEDED, INVALID_INPUT = 0, 1, 2, 4, 8, 16

_TILE_OPTIONS = ("max_tiles", "max_lower_nodes", "max_upper_nodes")
_VOXEL_OPTIONS = ("max_active_voxels", "max_leaf_nodes", "max_lower_nodes", "max_upper_nodes")


@dataclass
class Reserve:
    """What a rebuildable volume keeps: its input kind, capacities, and what every rebuild reuses
    (value layout, background as first given, transform)."""

    kind: str  # "tiles" or "voxels"
    voxels: int
    leaves: int
    lowers: int
    uppers: int
    layout: Any
    background: Any
    mat: np.ndarray
    translation: np.ndarray

    def size(self) -> int:
        """Bytes of a grid with every node the capacities allow (build_grid's layout)."""
        lay = self.layout
        return (L.GRID_SIZE + L.TREE_SIZE + lay.root_size + self.uppers * (lay.tile_size + lay.upper_size)
                + self.lowers * lay.lower_size + self.leaves * lay.leaf_size)  # fmt: skip


def _capacity(name: str, value: Any, default: int) -> int:
    if value is None:
        return max(int(default), 1)
    n = int(value)
    if n <= 0 or n >= 2**32:
        raise ValueError(f"{name} must be positive and fit in uint32, got {value}.")
    return n


def reserve(kind: str, options: dict[str, Any], count: int, layout: Any, background: Any, mat: np.ndarray,
            translation: Any) -> Reserve | None:  # fmt: skip
    """The capacities the allocation options ask for (popped from options), or None when the
    volume is not rebuildable. Unspecified capacities default to the initial topology's size."""
    names = _TILE_OPTIONS if kind == "tiles" else _VOXEL_OPTIONS
    given = {n: options.pop(n, None) for n in names}
    if not options.pop("rebuildable", False) and all(v is None for v in given.values()):
        return None
    first = _capacity(names[0], given[names[0]], count)
    if kind == "tiles":
        leaves, voxels = first, first * L.LEAF_COUNT
    else:
        voxels, leaves = first, _capacity("max_leaf_nodes", given["max_leaf_nodes"], first)
    lowers = _capacity("max_lower_nodes", given["max_lower_nodes"], leaves)
    uppers = _capacity("max_upper_nodes", given["max_upper_nodes"], lowers)
    return Reserve(kind, voxels, leaves, lowers, uppers, layout, copy.deepcopy(background),
                   np.array(mat, np.float64), np.array(translation, np.float64))  # fmt: skip


def _counts(coords: np.ndarray, kind: str) -> tuple[int, int, int, int]:
    """(voxels, leaves, lowers, uppers) of a sorted set of tile origins or voxels."""
    leaves = np.unique(coords >> 3, axis=0) if len(coords) else coords
    lowers = np.unique(coords >> 7, axis=0) if len(coords) else coords
    uppers = np.unique(coords >> 12, axis=0) if len(coords) else coords
    voxels = len(coords) * (L.LEAF_COUNT if kind == "tiles" else 1)
    return voxels, len(leaves), len(lowers), len(uppers)


def fit(coords: np.ndarray, res: Reserve) -> tuple[np.ndarray, int]:
    """(the longest prefix of the sorted distinct coords that fits the capacities, the flags of
    what the whole set exceeds)."""
    caps = (res.voxels, res.leaves, res.lowers, res.uppers)
    flags = (VOXEL_EXCEEDED, LEAF_EXCEEDED, LOWER_EXCEEDED, UPPER_EXCEEDED)
    status = 0
    for n, cap, flag in zip(_counts(coords, res.kind), caps, flags, strict=True):
        if n > cap:
            status |= flag
    if status == 0:
        return coords, SUCCESS
    lo, hi = 0, len(coords)  # counts grow with the prefix: the longest prefix that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if all(n <= c for n, c in zip(_counts(coords[:mid], res.kind), caps, strict=True)):
            lo = mid
        else:
            hi = mid - 1
    return coords[:lo], status


def report(status: Any, flags: int) -> Any:
    """Write the flags into a one-element uint32 status array (when given); return it."""
    if status is not None:
        status.assign(np.array([flags], dtype=np.uint32))
    return status
