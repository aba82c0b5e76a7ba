"""Triangle adjacency and Delaunay edge flips of 2D triangle meshes (Warp's `tri_tri_adjacency`,
`delaunay_edge_flip`): computed on the host with numpy. Each flip pass finds every interior edge
whose opposite vertex lies inside the other triangle's circumcircle and whose quad is convex,
takes a set of them no two of which share a triangle (largest violation first), and flips them;
passes repeat until none is left or ``max_passes`` is reached (Lawson's flips converge)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import gradloom as wp

from ..runtime.capturing import defer


def _tris(indices: Any) -> np.ndarray:
    if len(indices.shape) != 2 or indices.shape[1] != 3:
        raise ValueError(f"Expected indices of shape (num_tris, 3), got {tuple(indices.shape)}.")
    return np.asarray(indices.numpy(), dtype=np.int64)


def adjacency(tris: np.ndarray, vertex_count: int) -> tuple[np.ndarray, np.ndarray]:
    """(neighbour across the edge opposite each local vertex or -1, its local edge there)."""
    n = len(tris)
    a = tris[:, [1, 2, 0]].ravel()
    b = tris[:, [2, 0, 1]].ravel()
    key = np.minimum(a, b) * max(vertex_count, 1) + np.maximum(a, b)
    order = np.argsort(key, kind="stable")
    k = key[order]
    nbr = np.full(3 * n, -1, dtype=np.int64)
    same = np.nonzero(k[1:] == k[:-1])[0]
    first, second = order[same], order[same + 1]
    nbr[first], nbr[second] = second, first
    tri = np.where(nbr >= 0, nbr // 3, -1).reshape(n, 3)
    edge = np.where(nbr >= 0, nbr % 3, -1).reshape(n, 3)
    return tri, edge


def tri_tri_adjacency(indices: Any, vertex_count: int | None = None,
                      return_neighbor_edge_indices: bool = True) -> Any:  # fmt: skip
    """Per triangle and local vertex j, the triangle across the edge opposite j (-1 on a
    boundary), and with ``return_neighbor_edge_indices`` that edge's local index there."""
    tris = _tris(indices)
    if vertex_count is None:
        if indices.device.is_capturing:
            raise RuntimeError("tri_tri_adjacency needs vertex_count during graph capture.")
        vertex_count = int(tris.max()) + 1 if tris.size else 0
    tri, edge = adjacency(tris, vertex_count)
    out = wp.array(tri.astype(np.int32), dtype=wp.int32, device=indices.device)
    if not return_neighbor_edge_indices:
        return out
    return out, wp.array(edge.astype(np.int32), dtype=wp.int32, device=indices.device)


def _area(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Signed areas (positive counter-clockwise) of triangles (a, b, c) over points p."""
    u, v = p[b] - p[a], p[c] - p[a]
    return 0.5 * (u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0])


def _in_circle(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """> 0 where d lies inside the circumcircle of counter-clockwise (a, b, c)."""
    ad, bd, cd = p[a] - p[d], p[b] - p[d], p[c] - p[d]
    a2, b2, c2 = (x[:, 0] ** 2 + x[:, 1] ** 2 for x in (ad, bd, cd))
    return (ad[:, 0] * (bd[:, 1] * c2 - cd[:, 1] * b2) - ad[:, 1] * (bd[:, 0] * c2 - cd[:, 0] * b2)
            + a2 * (bd[:, 0] * cd[:, 1] - bd[:, 1] * cd[:, 0]))  # fmt: skip


def _candidates(tris: np.ndarray, p: np.ndarray, ref: np.ndarray | None, eps: float,
                ref_eps: float) -> tuple[np.ndarray, ...]:  # fmt: skip
    """Flippable non-Delaunay edges: (t0, j0, t1, j1, violation), each edge once."""
    nbr, nedge = adjacency(tris, len(p))
    t0, j0 = np.nonzero((nbr >= 0) & (nbr > np.arange(len(tris))[:, None]))
    t1, j1 = nbr[t0, j0], nedge[t0, j0]
    c, a, b = tris[t0, j0], tris[t0, (j0 + 1) % 3], tris[t0, (j0 + 2) % 3]
    d = tris[t1, j1]
    det = _in_circle(p, c, a, b, d)
    ok = (det > 0.0) & (_area(p, c, a, d) > eps) & (_area(p, c, d, b) > eps)
    if ref is not None:
        ok &= (np.abs(_area(ref, c, a, d)) > ref_eps) & (np.abs(_area(ref, c, d, b)) > ref_eps)
    return t0[ok], j0[ok], t1[ok], j1[ok], det[ok]


def _flip_pass(tris: np.ndarray, p: np.ndarray, ref: np.ndarray | None, eps: float, ref_eps: float) -> int:
    """One pass: flips an independent set of candidate edges in place; returns how many."""
    t0, j0, t1, j1, det = _candidates(tris, p, ref, eps, ref_eps)
    used = np.zeros(len(tris), dtype=bool)
    flips = 0
    for k in np.argsort(-det, kind="stable"):
        s, t = int(t0[k]), int(t1[k])
        if used[s] or used[t]:
            continue
        used[s] = used[t] = True
        j = int(j0[k])
        c, a, b = tris[s, j], tris[s, (j + 1) % 3], tris[s, (j + 2) % 3]
        d = tris[t, int(j1[k])]
        tris[s] = (c, a, d)
        tris[t] = (c, d, b)
        flips += 1
    return flips


def delaunay_edge_flip(positions: Any, indices: Any, ref_positions: Any = None, max_passes: int = 1000,
                       area_epsilon: float = 0.0, ref_area_epsilon: float = 1e-10) -> Any:  # fmt: skip
    """Flip non-Delaunay interior edges of a counter-clockwise triangulation in place, in up to
    ``max_passes`` passes; returns a (1,) int32 array holding the number of flips."""
    _tris(indices)
    if max_passes < 1:
        raise ValueError(f"max_passes must be at least 1, got {max_passes}.")
    for name, eps in (("area_epsilon", area_epsilon), ("ref_area_epsilon", ref_area_epsilon)):
        if not (math.isfinite(eps) and eps >= 0.0):
            raise ValueError(f"{name} must be finite and non-negative, got {eps}.")
    count = wp.zeros(1, dtype=wp.int32, device=indices.device)

    def run() -> None:
        flipped, total = _flip_all(_tris(indices), positions, ref_positions, max_passes, area_epsilon,
                                   ref_area_epsilon)  # fmt: skip
        if total:
            indices.assign(wp.array(flipped.astype(np.int32), dtype=wp.int32, device=indices.device))
        count.assign(wp.array(np.array([total], dtype=np.int32), dtype=wp.int32, device=indices.device))

    # inside a graph capture the flips are recorded, and run on the then current mesh at each replay
    if not defer(run, "delaunay_edge_flip"):
        run()
    return count


def _flip_all(tris: np.ndarray, positions: Any, ref_positions: Any, max_passes: int, eps: float,
              ref_eps: float) -> tuple[np.ndarray, int]:  # fmt: skip
    """(the flipped triangles, the number of flips) after up to ``max_passes`` passes."""
    p = np.asarray(positions.numpy(), dtype=np.float64).reshape(-1, 2)
    ref = None if ref_positions is None else np.asarray(ref_positions.numpy(), dtype=np.float64).reshape(-1, 2)
    total = 0
    for _ in range(max_passes):
        flipped = _flip_pass(tris, p, ref, eps, ref_eps) if len(tris) else 0
        total += flipped
        if flipped == 0:
            break
    return tris, total
