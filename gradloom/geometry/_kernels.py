"""Kernels of the isosurface extractors: vertex positions interpolated along grid edges, written
against the public API (as a user's kernels are), so the Tape differentiates them."""

# mypy: ignore-errors
# (kernel source: its annotations are gradloom types, which mypy cannot read)

import gradloom as wp


@wp.func
def node_position(i: int, j: int, k: int, lower: wp.vec3, delta: wp.vec3):
    """The position of grid node (i, j, k)."""
    return lower + wp.cw_mul(delta, wp.vec3(float(i), float(j), float(k)))


@wp.kernel
def edge_vertices(field: wp.array3d(dtype=float), edges: wp.array2d(dtype=wp.int32), threshold: float,
                  lower: wp.vec3, delta: wp.vec3, verts: wp.array(dtype=wp.vec3)):  # fmt: skip
    """Vertex v lies where the field crosses the threshold on edge v: from node (i, j, k) one step
    along axis a (edges[v] = i, j, k, a), at the linear interpolation of the two node values."""
    v = wp.tid()
    i = edges[v, 0]
    j = edges[v, 1]
    k = edges[v, 2]
    a = edges[v, 3]
    i1 = i
    j1 = j
    k1 = k
    if a == 0:
        i1 = i + 1
    elif a == 1:
        j1 = j + 1
    else:
        k1 = k + 1
    f0 = field[i, j, k]
    f1 = field[i1, j1, k1]
    t = (threshold - f0) / (f1 - f0)
    verts[v] = wp.lerp(node_position(i, j, k, lower, delta), node_position(i1, j1, k1, lower, delta), t)
