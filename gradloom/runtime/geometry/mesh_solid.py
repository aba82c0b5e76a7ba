"""Whether a wp.Mesh bounds a star-shaped solid, so that `mesh_query_point` may sign far points by their closest face.

The certificate, with vertices closer than _WELD (times the mesh's scale) merged and the
triangles that then repeat a vertex left out (a UV sphere's pole fans; each must be a sliver the
kernel leaves to the rays anyway):

- every edge is used by exactly two triangles, in opposite directions (closed, consistently
  oriented), so the surface has a degree over any sphere around a point off it;
- the enclosed volume is positive, and its centroid o lies strictly behind every triangle's
  plane: seen from o each triangle is a positively oriented spherical triangle;
- their solid angles at o sum to 4 pi: the radial projection from o has degree 1, so it is a
  bijection onto the sphere, and the surface is the boundary of a solid star-shaped about o.

Such a surface is embedded and its winding number is 1 inside and 0 outside, so the nearest hit
of a ray from a point off the surface is the back of a face exactly when the point is inside
(what the three rays of `mesh_query_point` vote on), and a point whose closest point lies inside
a face is inside exactly when it lies behind that face (builtins/mesh_sign.py). Every test has
slack on the safe side: a near-degenerate case fails it, and then the rays decide.
Meshes that are not star-shaped about their centroid (most non-convex ones) keep the rays.
"""

from __future__ import annotations

import math

import numpy as np

from ...types.mesh_layout import SOLID_SLIVER
from ..array.array import NDArray

#: the distance (times the mesh's scale: largest coordinate plus largest extent) beyond which
#: the closest face decides
SOLID_SCALE = 1e-4
#: vertices this close (times the mesh's scale) are one vertex
_WELD = 1e-6


def solid_tolerance(points: NDArray, indices: NDArray) -> float:
    """The distance beyond which a point may take its sign from its closest face (> 0) if the
    mesh passes the certificate above, else 0.0. O(n) numpy work."""
    p = np.asarray(points, np.float64).reshape(-1, 3)
    tris = np.asarray(indices, np.int64).reshape(-1, 3)
    if len(p) == 0 or len(tris) < 4 or not np.isfinite(p).all():
        return 0.0
    scale = float(np.abs(p).max() + np.ptp(p, axis=0).max())
    if scale == 0.0:
        return 0.0
    cell = np.round((p - p.min(0)) / (_WELD * scale)).astype(np.int64)  # below 2**20
    key = (cell[:, 0] << 40) | (cell[:, 1] << 20) | cell[:, 2]
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    pos, t = p[first], inv.reshape(-1)[tris]
    kept = (t[:, 0] != t[:, 1]) & (t[:, 1] != t[:, 2]) & (t[:, 2] != t[:, 0])
    # a triangle left out must be one the kernel's sliver test leaves out (with room for float32)
    if (_sliver_ratio(p[tris[~kept]]) >= 0.1 * SOLID_SLIVER).any():
        return 0.0
    t = t[kept]
    if len(t) < 4 or not _closed_oriented(t, len(pos)):
        return 0.0
    return SOLID_SCALE * scale if _star_shaped(pos[t], scale) else 0.0


def _sliver_ratio(tri: NDArray) -> NDArray:
    """|cross(b - a, c - a)| over the summed squared edge lengths (0.29 equilateral)."""
    e = (tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0], tri[:, 2] - tri[:, 1])
    return np.linalg.norm(np.cross(e[0], e[1]), axis=1) / np.maximum(
        sum((x * x).sum(1) for x in e), 1e-300)


def _closed_oriented(t: NDArray, nv: int) -> bool:
    """Every directed edge once, and its reverse once."""
    a, b = t.reshape(-1), t[:, [1, 2, 0]].reshape(-1)
    key, rev = np.sort(a * nv + b), np.sort(b * nv + a)
    return bool((np.diff(key) > 0).all() and np.array_equal(key, rev))


def _star_shaped(tri: NDArray, scale: float) -> bool:
    """Positive volume; its centroid strictly behind every triangle's plane; the triangles'
    solid angles at the centroid sum to 4 pi."""
    q = tri - tri.reshape(-1, 3).mean(0)
    vol = np.einsum("ij,ij->i", q[:, 0], np.cross(q[:, 1], q[:, 2]))  # 6 x each tetrahedron's
    if vol.sum() <= 0.0:
        return False
    o = (vol[:, None] * q.sum(1)).sum(0) / (4.0 * vol.sum())
    x, y, z = q[:, 0] - o, q[:, 1] - o, q[:, 2] - o
    n = np.cross(y - x, z - x)
    behind = np.einsum("ij,ij->i", n, x) > 1e-6 * scale * np.linalg.norm(n, axis=1)
    if not behind.all():
        return False
    lx, ly, lz = (np.linalg.norm(v, axis=1) for v in (x, y, z))
    num = np.einsum("ij,ij->i", x, np.cross(y, z))
    den = (lx * ly * lz + np.einsum("ij,ij->i", x, y) * lz + np.einsum("ij,ij->i", x, z) * ly
           + np.einsum("ij,ij->i", y, z) * lx)
    total = float((2.0 * np.arctan2(num, den)).sum())
    return abs(total - 4.0 * math.pi) < math.pi  # a degree of 2 or more sums to 8 pi or more
