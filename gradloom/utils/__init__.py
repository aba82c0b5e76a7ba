"""`gradloom.utils` (Warp's `warp.utils`): array reductions, scans, sorts, casts and `map`."""

from __future__ import annotations

from .cast import array_cast
from .coloring import (
    GraphColoringAlgorithm,
    graph_coloring_assign,
    graph_coloring_balance,
    graph_coloring_get_groups,
)
from .mapping import broadcast_shapes, create_warp_function, map
from .reduce import array_inner, array_sum
from .sorting import array_scan, radix_sort_pairs, runlength_encode, segmented_sort_pairs
from .transforms import quat_between_vectors, transform_expand

__all__ = [
    "GraphColoringAlgorithm",
    "array_cast",
    "array_inner",
    "array_scan",
    "array_sum",
    "broadcast_shapes",
    "create_warp_function",
    "graph_coloring_assign",
    "graph_coloring_balance",
    "graph_coloring_get_groups",
    "map",
    "quat_between_vectors",
    "radix_sort_pairs",
    "runlength_encode",
    "segmented_sort_pairs",
    "transform_expand",
]
