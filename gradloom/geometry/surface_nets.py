"""Surface nets over a dense grid (Warp's `wp.geometry.IsoSurfaceNets`): one vertex per sheet
of the surface in each cell it crosses, at the mean of the sheet's edge crossings, and one quad
per crossed grid edge joining the vertices of the four cells around it (two triangles when
``topology="triangle"``). The sheets of a cell are marching cubes' loops (mc_tables.py), so the
mesh is the dual of the marching-cubes mesh: closed and manifold for a surface inside the grid.
Topology on the host with numpy; positions by recorded launches (gradients reach the field)."""

from __future__ import annotations

from typing import Any

import numpy as np

import gradloom as wp

from . import mc_tables
from .iso_surface import Bound, IsoSurfaceBase, grid_frame, validate_field
from .marching_cubes import _EDGE_AXIS, _EDGE_BASE, cell_cases, crossed_edges

_TOPOLOGIES = ("triangle", "quad")


def _loop_tables() -> tuple[np.ndarray, np.ndarray]:
    """(loops per case, (256, 4, 12) local edges of each loop, -1 padded)."""
    loops = mc_tables.case_loops()
    count = np.array([len(x) for x in loops], dtype=np.int64)
    edges = np.full((256, 4, 12), -1, dtype=np.int64)
    for case, case_loops in enumerate(loops):
        for k, loop in enumerate(case_loops):
            edges[case, k, :len(loop)] = loop
    return count, edges


_LOOP_COUNT, _LOOP_EDGES = _loop_tables()
_LOCAL_EDGE = np.full((2, 2, 2, 3), -1, dtype=np.int64)  # (lower corner offset, axis) -> local edge
for _e in range(12):
    _LOCAL_EDGE[(*_EDGE_BASE[_e], _EDGE_AXIS[_e])] = _e


# the four cells around an edge along axis a, counter-clockwise about +a in the plane of the next
# two axes; the first cell as warp-lang's quads start (seen running it side by side), so the
# triangle split of each quad is the same
_AROUND = (((0, 0), (-1, 0), (-1, -1), (0, -1)), ((0, 0), (-1, 0), (-1, -1), (0, -1)),
           ((-1, 0), (-1, -1), (0, -1), (0, 0)))


def _check_topology(topology: str) -> None:
    if topology not in _TOPOLOGIES:
        raise ValueError(f"topology must be 'triangle' or 'quad', got {topology!r}.")


def _cell_vertices(code: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(per vertex its cell and its loop's local edges, (cells, 12): the vertex of each cell's
    local edge, -1 where none): vertices numbered by cell (C order), then loop."""
    per = _LOOP_COUNT[code]
    cells = np.nonzero(per)[0]
    n = per[cells]
    cell_of = np.repeat(cells, n)
    loop = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    edges = _LOOP_EDGES[code[cell_of], loop]  # (V, 12)
    vertex_at = np.full((len(code), 12), -1, dtype=np.int64)
    vid = np.broadcast_to(np.arange(len(cell_of))[:, None], edges.shape)
    rows = np.broadcast_to(cell_of[:, None], edges.shape)
    ok = edges >= 0
    vertex_at[rows[ok], edges[ok]] = vid[ok]
    return cell_of, edges, vertex_at


def _quads(cross: np.ndarray, inside: np.ndarray, vertex_at: np.ndarray, ncell: tuple[int, ...]) -> np.ndarray:
    """One quad per crossed edge with four cells around it, wound outward; in the order of
    the edges' lower nodes (C order), then axis."""
    quads, keys = [], []
    for a in range(3):
        b, c = (a + 1) % 3, (a + 2) % 3
        node = np.argwhere(cross[..., a])
        cells, local = [], []
        for ob, oc in _AROUND[a]:
            off = np.zeros(3, dtype=np.int64)
            off[b], off[c] = ob, oc
            cells.append(node + off)
            local.append(_LOCAL_EDGE[-off[0], -off[1], -off[2], a])
        cell = np.stack(cells, 1)  # (E, 4, 3)
        ok = ((cell >= 0) & (cell < np.array(ncell))).all(axis=(1, 2))
        cell, node = cell[ok], node[ok]
        flat = np.ravel_multi_index(tuple(cell.transpose(2, 0, 1)), ncell)
        q = vertex_at[flat, np.array(local)[None, :]]
        faces_down = ~inside[tuple(node.T)]  # the upper node inside: the surface faces -a
        q[faces_down] = q[faces_down][:, ::-1]
        quads.append(q)
        keys.append(np.ravel_multi_index(tuple(node.T), inside.shape) * 3 + a)
    return np.concatenate(quads)[np.argsort(np.concatenate(keys), kind="stable")]


def surface_nets_mesh(field: Any, threshold: float, lower: Bound, upper: Bound, topology: str) -> tuple[Any, Any]:
    """(vertices, flat int32 faces) of one field."""
    from . import _kernels

    validate_field(field)
    _check_topology(topology)
    values = field.numpy()
    inside = values < np.float32(threshold)
    cross = crossed_edges(inside)
    ncell = tuple(n - 1 for n in values.shape)
    cell_of, edges, vertex_at = _cell_vertices(cell_cases(inside).ravel())
    quads = _quads(cross, inside, vertex_at, ncell)
    used = np.unique(quads)
    remap = np.full(len(cell_of), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    quads = remap[quads]
    # the marching-cubes points each used vertex averages
    mc_of = np.cumsum(cross.ravel(), dtype=np.int64).reshape(cross.shape) - 1
    ijk = np.stack(np.unravel_index(cell_of[used], ncell), -1)[:, None, :]
    e = edges[used]
    node = ijk + _EDGE_BASE[np.maximum(e, 0)]
    refs = np.where(e >= 0, mc_of[node[..., 0], node[..., 1], node[..., 2], _EDGE_AXIS[np.maximum(e, 0)]], -1)
    device = field.device
    grad = bool(getattr(field, "requires_grad", False))
    verts = wp.zeros(len(used), dtype=wp.vec3, device=device, requires_grad=grad)
    if len(used):
        lo, delta = grid_frame(values.shape, lower, upper)
        crossings = wp.zeros(int(cross.sum()), dtype=wp.vec3, device=device, requires_grad=grad)
        wp.launch(_kernels.edge_vertices, dim=crossings.shape[0], device=device,
                  inputs=[field, wp.array(np.argwhere(cross).astype(np.int32), dtype=wp.int32, device=device),
                          float(threshold), wp.vec3(*lo), wp.vec3(*delta)], outputs=[crossings])  # fmt: skip
        wp.launch(_kernels.average_points, dim=len(used), device=device,
                  inputs=[crossings, wp.array(refs.astype(np.int32), dtype=wp.int32, device=device)],
                  outputs=[verts])  # fmt: skip
    faces = quads if topology == "quad" else quads[:, [0, 1, 2, 0, 2, 3]]
    return verts, wp.array(faces.astype(np.int32).ravel(), dtype=wp.int32, device=device)


class IsoSurfaceNets(IsoSurfaceBase):
    """Surface nets: a vertex per sheet of the surface in each crossed cell, at the mean of its
    edge crossings; quads (``topology="quad"``) or two triangles each; differentiable from the
    field to `verts` under a Tape."""

    def __init__(self, nx: int, ny: int, nz: int, *, lower: Bound = None, upper: Bound = None,
                 topology: str = "triangle") -> None:  # fmt: skip
        _check_topology(topology)
        super().__init__(nx, ny, nz, lower=lower, upper=upper)
        self.topology = topology

    def surface(self, field: Any, threshold: float) -> None:
        """Extract the surface of a field of the configured shape into `verts` and `indices`."""
        self._check_field_shape(field)
        self.verts, self.indices = surface_nets_mesh(field, threshold, self.lower, self.upper, self.topology)

    @classmethod
    def extract(cls, field: Any, threshold: float = 0.0, *, lower: Bound = None, upper: Bound = None,
                topology: str = "triangle") -> tuple[Any, Any]:  # fmt: skip
        """(vertices, flat int32 faces: three per triangle or four per quad)."""
        return surface_nets_mesh(field, threshold, lower, upper, topology)
