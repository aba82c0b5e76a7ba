"""Graph coloring on the host (`wp.utils.graph_coloring_*`): colors for parallel constraint solves.

Solvers that update graph nodes in parallel (newton's VBD, cloth) color the graph so that no two
adjacent nodes share a color, then process one color at a time. Any proper coloring is correct
for them; these follow the algorithms Warp names: `MCS` colors greedily in a maximum-cardinality-
search order (each next node is one with the most already-ordered neighbours), `GREEDY` colors
greedily in order of decreasing degree. Colors are the smallest free ones, so the results are
deterministic. The inputs are CPU int32 arrays, as Warp requires.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from ..runtime.array import array


class GraphColoringAlgorithm(enum.IntEnum):
    """Graph coloring algorithm selection."""

    MCS = 0
    GREEDY = 1


def _int32_host(arr: Any, name: str, ndim: int) -> np.ndarray:
    data = arr.numpy() if hasattr(arr, "numpy") else None
    if data is None or data.dtype != np.int32 or data.ndim != ndim or \
            not getattr(getattr(arr, "device", None), "is_cpu", False):
        raise TypeError(f"{name} must be a {ndim}-D int32 array on the CPU")
    return data


def _adjacency(edges: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, neighbours) of the undirected graph; self-loops dropped."""
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(f"graph coloring: an edge names a node outside [0, {n})")
    e = edges[edges[:, 0] != edges[:, 1]]
    src = np.concatenate([e[:, 0], e[:, 1]])
    dst = np.concatenate([e[:, 1], e[:, 0]])
    order = np.lexsort((dst, src))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return indptr, dst[order]


def _mcs_order(n: int, indptr: np.ndarray, nbrs: np.ndarray) -> list[int]:
    """Maximum cardinality search with weight buckets (linear in nodes plus edges)."""
    weight = [0] * n
    buckets: list[dict[int, None]] = [dict.fromkeys(range(n))]  # ordered sets: deterministic
    done = bytearray(n)
    order: list[int] = []
    top = 0
    for _ in range(n):
        while not buckets[top]:
            top -= 1
        v = next(iter(buckets[top]))
        del buckets[top][v]
        done[v] = 1
        order.append(v)
        for u in nbrs[indptr[v]:indptr[v + 1]].tolist():
            if not done[u]:
                w = weight[u]
                del buckets[w][u]
                weight[u] = w + 1
                if w + 1 == len(buckets):
                    buckets.append({})
                buckets[w + 1][u] = None
                top = max(top, w + 1)
    return order


def _greedy(order: list[int], indptr: np.ndarray, nbrs: np.ndarray, colors: np.ndarray) -> int:
    colors[:] = -1
    count = 0
    for v in order:
        used = {int(c) for c in colors[nbrs[indptr[v]:indptr[v + 1]]] if c >= 0}
        c = 0
        while c in used:
            c += 1
        colors[v] = c
        count = max(count, c + 1)
    return count


def graph_coloring_assign(edges: Any, node_colors: Any,
                          algorithm: GraphColoringAlgorithm = GraphColoringAlgorithm.MCS) -> int:  # fmt: skip
    """Color the nodes so that no edge joins two of one color; returns the number of colors."""
    e = _int32_host(edges, "edges", 2).reshape(-1, 2)
    colors = _int32_host(node_colors, "node_colors", 1)
    n = colors.shape[0]
    indptr, nbrs = _adjacency(e, n)
    if GraphColoringAlgorithm(algorithm) is GraphColoringAlgorithm.MCS:
        order = _mcs_order(n, indptr, nbrs)
    else:
        order = np.argsort(-np.diff(indptr), kind="stable").tolist()
    count = _greedy(order, indptr, nbrs, colors)
    node_colors.assign(colors)
    return count


def _ratio(sizes: np.ndarray) -> float:
    return float(sizes.max() / sizes.min()) if sizes.min() > 0 else float("inf")


def graph_coloring_balance(edges: Any, node_colors: Any, color_count: int,
                           target_max_min_ratio: float, *, max_iterations: int | None = None) -> float:  # fmt: skip
    """Move nodes from the largest color group to smaller ones (keeping the coloring proper)
    until the largest/smallest group ratio reaches the target; returns the ratio reached."""
    e = _int32_host(edges, "edges", 2).reshape(-1, 2)
    colors = _int32_host(node_colors, "node_colors", 1).copy()
    indptr, nbrs = _adjacency(e, colors.shape[0])
    sizes = np.bincount(colors, minlength=color_count).astype(np.int64)
    budget = colors.shape[0] if max_iterations is None else int(max_iterations)
    while budget > 0 and color_count > 1 and _ratio(sizes) > target_max_min_ratio:
        if not _move_one(colors, sizes, indptr, nbrs):
            break
        budget -= 1
    node_colors.assign(colors)
    return _ratio(sizes)


def _move_one(colors: np.ndarray, sizes: np.ndarray, indptr: np.ndarray, nbrs: np.ndarray) -> bool:
    """Recolor one node of the largest group to the smallest color its neighbours leave free."""
    big = int(np.argmax(sizes))
    by_size = np.argsort(sizes, kind="stable")
    for v in np.flatnonzero(colors == big).tolist():
        taken = set(colors[nbrs[indptr[v]:indptr[v + 1]]].tolist())
        for c in by_size.tolist():
            if c != big and c not in taken and sizes[c] + 1 < sizes[big]:
                colors[v] = c
                sizes[big] -= 1
                sizes[c] += 1
                return True
    return False


def graph_coloring_get_groups(node_colors: Any, color_count: int, return_wp_array: bool = True,
                              device: Any = "cpu") -> tuple[Any, ...]:  # fmt: skip
    """The node ids of each color, in increasing order (numpy or gradloom arrays)."""
    colors = _int32_host(node_colors, "node_colors", 1)
    groups = tuple(np.flatnonzero(colors == c).astype(np.int32) for c in range(color_count))
    if not return_wp_array:
        return groups
    return tuple(array(g, dtype=node_colors.dtype, device=device) for g in groups)
