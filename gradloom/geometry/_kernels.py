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


@wp.func
def corner_position(rel: wp.vec3i, origin: wp.vec3, delta: wp.vec3):
    """The position of corner subscript ``rel`` (relative to ``origin``)."""
    return origin + wp.cw_mul(delta, wp.vec3(float(rel[0]), float(rel[1]), float(rel[2])))


@wp.func
def axis_step(axis: int):
    s = wp.vec3i(0, 0, 0)
    s[axis] = 1
    return s


@wp.kernel
def sparse_vertices(values: wp.array(dtype=float), ends: wp.array2d(dtype=wp.int32),
                    lowers: wp.array(dtype=wp.vec3i), axes: wp.array(dtype=wp.int32), threshold: float,
                    origin: wp.vec3, delta: wp.vec3, verts: wp.array(dtype=wp.vec3)):  # fmt: skip
    """Vertex v on the edge from corner lowers[v] along axes[v], whose values are values[ends[v]]."""
    v = wp.tid()
    f0 = values[ends[v, 0]]
    f1 = values[ends[v, 1]]
    t = (threshold - f0) / (f1 - f0)
    r0 = lowers[v]
    r1 = r0 + axis_step(axes[v])
    verts[v] = wp.lerp(corner_position(r0, origin, delta), corner_position(r1, origin, delta), t)


@wp.kernel
def sparse_vertices_2d(values: wp.array2d(dtype=float), ends: wp.array2d(dtype=wp.int32),
                       lowers: wp.array(dtype=wp.vec3i), axes: wp.array(dtype=wp.int32), threshold: float,
                       origin: wp.vec3, delta: wp.vec3, verts: wp.array(dtype=wp.vec3)):  # fmt: skip
    """As sparse_vertices, values read per (cell, corner): ends[v] = row0, col0, row1, col1."""
    v = wp.tid()
    f0 = values[ends[v, 0], ends[v, 1]]
    f1 = values[ends[v, 2], ends[v, 3]]
    t = (threshold - f0) / (f1 - f0)
    r0 = lowers[v]
    r1 = r0 + axis_step(axes[v])
    verts[v] = wp.lerp(corner_position(r0, origin, delta), corner_position(r1, origin, delta), t)


@wp.kernel
def average_points(points: wp.array(dtype=wp.vec3), refs: wp.array2d(dtype=wp.int32),
                   out: wp.array(dtype=wp.vec3)):  # fmt: skip
    """out[v]: the mean of the points refs[v] names (a row ends at its first -1)."""
    v = wp.tid()
    s = wp.vec3(0.0, 0.0, 0.0)
    n = float(0.0)
    for r in range(refs.shape[1]):
        k = refs[v, r]
        if k >= 0:
            s = s + points[k]
            n = n + 1.0
    out[v] = s / n


@wp.func
def find_triangle_neighbor_edge_index(triangle_neighbors: wp.array2d(dtype=wp.int32), triangle: wp.int32,
                                      neighbor: wp.int32):  # fmt: skip
    """The local edge j of ``triangle`` with triangle_neighbors[triangle, j] == neighbor, or -1."""
    found = int(-1)
    for j in range(3):
        if found < 0 and triangle_neighbors[triangle, j] == neighbor:
            found = j
    return found
