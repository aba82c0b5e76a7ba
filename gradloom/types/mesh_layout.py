"""Byte offsets of the `wp.Mesh` descriptor that runtime/mesh.py writes and builtins/mesh.py reads."""

from __future__ import annotations

MESH_POINTS = 0  # ptr: vec3f per vertex (the user's points array)
MESH_INDICES = 8  # ptr: int32, 3 per triangle
MESH_VELOCITIES = 16  # ptr: vec3f per vertex, or 0
MESH_NODES = 24  # ptr: BVH nodes in depth-first order, MESH_NODE_SIZE bytes each
MESH_NUM_NODES = 32  # int32
MESH_NUM_TRIS = 36  # int32
MESH_NUM_POINTS = 40  # int32
MESH_DESCRIPTOR_SIZE = 48

# one BVH node: lower (3 x float32), upper (3 x float32), skip (int32: the node after this
# subtree in depth-first order), prim (int32: the triangle of a leaf, -1 for an inner node)
NODE_LOWER = 0
NODE_UPPER = 12
NODE_SKIP = 24
NODE_PRIM = 28
MESH_NODE_SIZE = 32
