"""Byte offsets of the `wp.Mesh` descriptor that runtime/geometry/mesh.py writes and builtins/mesh.py reads."""

from __future__ import annotations

MESH_POINTS = 0  # ptr: vec3f per vertex (the user's points array)
MESH_INDICES = 8  # ptr: int32, 3 per triangle
MESH_VELOCITIES = 16  # ptr: vec3f per vertex, or 0
MESH_NODES = 24  # ptr: BVH nodes in depth-first order, MESH_NODE_SIZE bytes each
MESH_NUM_NODES = 32  # int32
MESH_NUM_TRIS = 36  # int32
MESH_NUM_POINTS = 40  # int32
MESH_AVG_EDGE = 44  # float32: the mean edge length (scales mesh_query_point_sign_normal's epsilon)
MESH_WINDING = 48  # ptr: per node winding-number data (WIND_NODE_SIZE bytes each), or 0
MESH_PAIRS = 56  # ptr: the nearest-first walk's PAIR_SIZE records (below), 64-byte aligned
MESH_ROOT = 64  # int32: the root's walk reference (below)
MESH_SOLID_TOL = 68  # float32: > 0 when the mesh bounds a solid (runtime/geometry/mesh_solid.py):
# mesh_query_point signs points this far from the surface by their closest face; 0: rays
#: a face whose |cross(b - a, c - a)| is below this times its summed squared edge lengths is a
#: sliver: mesh_query_point leaves points closest to it to the rays (mesh_solid.py relies on it)
SOLID_SLIVER = 1e-4
MESH_LEAF_TRIS = 72  # ptr: LEAF_TRI_SIZE records of the triangles in key order (below)
MESH_DESCRIPTOR_SIZE = 80

# one BVH node: lower (3 x float32), upper (3 x float32), skip (int32: the node after this
# subtree in depth-first order), prim (int32: the triangle of a leaf; for an inner node ~k,
# k its index among the inner nodes in depth-first order)
NODE_LOWER = 0
NODE_UPPER = 12
NODE_SKIP = 24
NODE_PRIM = 28
MESH_NODE_SIZE = 32

# winding-number data of one node (same depth-first order as the nodes), for
# mesh_query_point_sign_winding_number: the area-weighted centre of its triangles (3 x float32),
# the sum of their area vectors (3 x float32), and the squared radius around the centre that
# holds all their vertices (float32)
WIND_CENTER = 0
WIND_NORMAL = 12
WIND_RADIUS2 = 24
WIND_NODE_SIZE = 32

# the nearest-first walk's coarser tree: the inner nodes over more than WALK_LEAF triangles
# again, in depth-first order, each with both children's boxes (left lower, left upper, right
# lower, right upper: 3 x float32 each) and their references in one cache line, so a step of
# the walk loads one line. A reference >= 0 is such a node's record index; any other node (of
# at most WALK_LEAF triangles) is a leaf of the walk: ~(first << WALK_COUNT_BITS | count - 1), its triangles
# the records MESH_LEAF_TRIS[first : first + count]
PAIR_BOXES = 0
PAIR_LEFT = 48
PAIR_RIGHT = 52
PAIR_SIZE = 64
#: bits of a walk leaf's count in its reference, and the most triangles in a walk leaf
WALK_COUNT_BITS = 4
WALK_LEAF = 12

# the walk's triangles in key order (written by the refit), so a walk leaf's triangles are one
# run of memory: the three corners (3 x 3 float32, copies of the points at the last refit or
# build) and the triangle's index
LEAF_TRI_CORNERS = 0
LEAF_TRI_ID = 36
LEAF_TRI_SIZE = 40
