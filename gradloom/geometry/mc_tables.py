"""The marching-cubes lookup tables, generated from the cube's geometry (not typed in).

Corners are numbered as in Lorensen & Cline's paper and Paul Bourke's tables (0..3 around the
bottom face z = 0 counter-clockwise from the origin, 4..7 above them), edges 0..3 around the
bottom face, 4..7 around the top, 8..11 upward. Case ``c`` has bit ``k`` set when corner ``k`` is
inside (its value is below the threshold). Each case's polygons are traced on the cube's faces:
on a face, every crossing where the boundary walk (counter-clockwise, seen from outside) enters
the inside region is joined to the next crossing where it leaves, so a face with two diagonal
inside corners cuts each of them off on its own. The rule depends only on the face's signs, so
two cells sharing a face trace the same segments there, and closed surfaces come out watertight.
Each loop of segments becomes a triangle fan; walking the segments from entering to leaving
crossing winds it counter-clockwise seen from outside (the side where the field is above the
threshold): tests/test_marching_cubes.py checks every case's winding.
"""

from __future__ import annotations

import numpy as np

CUBE_CORNER_OFFSETS: tuple[tuple[int, int, int], ...] = (
    (0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1),
)  # fmt: skip
EDGE_TO_CORNERS: tuple[tuple[int, int], ...] = (
    (0, 1), (1, 2), (3, 2), (0, 3), (4, 5), (5, 6), (7, 6), (4, 7), (0, 4), (1, 5), (2, 6), (3, 7),
)  # fmt: skip  (each edge from its lower corner to its upper one)


def _faces() -> list[list[int]]:
    """The six faces, each as its four corners counter-clockwise seen from outside the cube."""
    pts = np.array(CUBE_CORNER_OFFSETS, dtype=float)
    faces = []
    for axis in range(3):
        for side in (0, 1):
            corners = [c for c in range(8) if CUBE_CORNER_OFFSETS[c][axis] == side]
            normal = np.zeros(3)
            normal[axis] = 1.0 if side else -1.0
            centre = pts[corners].mean(axis=0)
            u = pts[corners[0]] - centre
            v = np.cross(normal, u)  # a quarter turn counter-clockwise about the normal

            def angle(c: int, u: np.ndarray = u, v: np.ndarray = v, centre: np.ndarray = centre) -> float:
                d = pts[c] - centre
                return float(np.arctan2(d @ v, d @ u))

            faces.append(sorted(corners, key=angle))
    return faces


def _edge_of(a: int, b: int) -> int:
    for e, (p, q) in enumerate(EDGE_TO_CORNERS):
        if {p, q} == {a, b}:
            return e
    raise ValueError((a, b))


def _segments(case: int, faces: list[list[int]]) -> dict[int, int]:
    """Directed segments (from edge -> to edge) of one case over all faces."""
    inside = [(case >> c) & 1 == 1 for c in range(8)]
    nxt: dict[int, int] = {}
    for face in faces:
        walk = [(face[k], face[(k + 1) % 4]) for k in range(4)]
        enters = [k for k, (a, b) in enumerate(walk) if not inside[a] and inside[b]]
        leaves = [k for k, (a, b) in enumerate(walk) if inside[a] and not inside[b]]
        for k in enters:
            j = min(leaves, key=lambda m: (m - k) % 4)
            nxt[_edge_of(*walk[k])] = _edge_of(*walk[j])
    return nxt


def _loops(nxt: dict[int, int]) -> list[list[int]]:
    loops, seen = [], set()
    for start in sorted(nxt):
        if start in seen:
            continue
        loop, e = [], start
        while e not in seen:
            seen.add(e)
            loop.append(e)
            e = nxt[e]
        loops.append(loop)
    return loops


def build() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(CASE_TO_TRI_RANGE: 257 triangle offsets, TRI_LOCAL_INDICES: 3 edges per triangle)."""
    faces = _faces()
    ranges: list[int] = [0]
    tris: list[int] = []
    for case in range(256):
        for loop in _loops(_segments(case, faces)):
            for k in range(1, len(loop) - 1):
                tris.extend((loop[0], loop[k], loop[k + 1]))
        ranges.append(len(tris) // 3)
    return tuple(ranges), tuple(tris)


CASE_TO_TRI_RANGE, TRI_LOCAL_INDICES = build()


def case_loops() -> tuple[tuple[tuple[int, ...], ...], ...]:
    """Per case, the loops of crossed edges: each loop is one sheet of the surface in the cell
    (surface nets places one vertex per loop)."""
    faces = _faces()
    return tuple(tuple(tuple(loop) for loop in _loops(_segments(case, faces))) for case in range(256))
