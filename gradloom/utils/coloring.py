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

from ..errors import warn_caller
from ..runtime.array.array import array


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


def _adjacency(edges: np.ndarray, n: int, failure: str) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, neighbours) of the undirected graph; self-loops dropped."""
    bad = np.flatnonzero(np.any((edges < 0) | (edges >= n), axis=1))
    if bad.size:
        k = int(bad[0])
        raise RuntimeError(f"{failure}: Graph edge {k} has endpoints {tuple(edges[k].tolist())}, "
                           f"but valid node indices are in the range [0, {n}).")  # fmt: skip
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
    indptr, nbrs = _adjacency(e, n, "Graph coloring failed")
    if GraphColoringAlgorithm(algorithm) is GraphColoringAlgorithm.MCS:
        order = _mcs_order(n, indptr, nbrs)
    else:
        order = np.argsort(-np.diff(indptr), kind="stable").tolist()
    count = _greedy(order, indptr, nbrs, colors)
    node_colors.assign(colors)
    return count


def _ratio(sizes: np.ndarray) -> float:
    """Largest over smallest group size, in float32 as Warp reports it (inf with an empty one)."""
    low = sizes.min()
    return float(np.float32(sizes.max()) / np.float32(low)) if low > 0 else float("inf")


def _iterations(max_iterations: Any, n: int) -> int:
    if max_iterations is None:
        return n
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, (int, np.integer)):
        raise TypeError(f"max_iterations must be an int or None, got {max_iterations!r}")
    if not 0 <= max_iterations < 2**31:
        raise ValueError(f"max_iterations must be in [0, 2**31), got {max_iterations}")
    return int(max_iterations)


class _Groups:
    """Each color's nodes as a list: a moved node is swap-removed from its list and appended to
    the new one, so the scan order after moves is deterministic (it matches warp-lang's)."""

    def __init__(self, colors: np.ndarray, count: int) -> None:
        self.members: list[list[int]] = [[] for _ in range(count)]
        for v, c in enumerate(colors.tolist()):
            self.members[c].append(v)

    def move(self, v: int, src: int, dst: int) -> None:
        group = self.members[src]
        k = group.index(v)
        group[k] = group[-1]
        group.pop()
        self.members[dst].append(v)


def _find_move(colors: np.ndarray, sizes: np.ndarray, groups: _Groups, indptr: np.ndarray,
               nbrs: np.ndarray) -> tuple[int, int, int] | None:  # fmt: skip
    """(node, from, to): a node of a larger color that may join the smallest one; None when the
    largest color cannot shrink by one without becoming no larger than the smallest."""
    small = int(np.argmin(sizes))
    if sizes.max() - sizes[small] <= 2:
        return None
    for src in np.argsort(-sizes, kind="stable").tolist():
        if src == small or sizes[src] <= sizes[small]:
            continue
        for v in groups.members[src]:
            if not np.any(colors[nbrs[indptr[v]:indptr[v + 1]]] == small):
                return v, src, small
    return None


def _check_colors(colors: np.ndarray, count: int) -> None:
    bad = np.flatnonzero((colors < 0) | (colors >= count))
    if bad.size:
        v = int(bad[0])
        raise RuntimeError(f"Graph coloring balance failed: Node {v} has color {int(colors[v])}, "
                           f"but valid colors are in the range [0, {count}).")  # fmt: skip


def graph_coloring_balance(edges: Any, node_colors: Any, color_count: int,
                           target_max_min_ratio: float, *, max_iterations: int | None = None) -> float:  # fmt: skip
    """Recolor nodes one at a time into the smallest color group (taking them from the largest
    groups that can give one) until the largest/smallest ratio reaches the target, no move
    helps, or `max_iterations` recolorings were made (a warning then); the best coloring seen
    is written back and its ratio returned."""
    e = _int32_host(edges, "edges", 2).reshape(-1, 2)
    colors = _int32_host(node_colors, "node_colors", 1).copy()
    limit = _iterations(max_iterations, colors.shape[0])
    indptr, nbrs = _adjacency(e, colors.shape[0], "Graph coloring balance failed")
    _check_colors(colors, color_count)
    sizes = np.bincount(colors, minlength=color_count).astype(np.int64)
    groups = _Groups(colors, color_count)
    best, best_ratio = colors.copy(), _ratio(sizes)
    for step in range(limit + 1):
        if _ratio(sizes) <= target_max_min_ratio:
            break
        move = _find_move(colors, sizes, groups, indptr, nbrs)
        if move is None:
            break
        if step == limit:
            warn_caller(f"Graph coloring stopped because it reached the {limit}-iteration limit "
                        f"(achieved ratio {best_ratio:g}, target {target_max_min_ratio:g}).")  # fmt: skip
            break
        v, src, dst = move
        colors[v] = dst
        sizes[src] -= 1
        sizes[dst] += 1
        groups.move(v, src, dst)
        if _ratio(sizes) <= best_ratio:
            best, best_ratio = colors.copy(), _ratio(sizes)
    node_colors.assign(best)
    return best_ratio


def graph_coloring_get_groups(node_colors: Any, color_count: int, return_wp_array: bool = True,
                              device: Any = "cpu") -> tuple[Any, ...]:  # fmt: skip
    """The node ids of each color, in increasing order (numpy or gradloom arrays)."""
    colors = _int32_host(node_colors, "node_colors", 1)
    groups = tuple(np.flatnonzero(colors == c).astype(np.int32) for c in range(color_count))
    if not return_wp_array:
        return groups
    return tuple(array(g, dtype=node_colors.dtype, device=device) for g in groups)
