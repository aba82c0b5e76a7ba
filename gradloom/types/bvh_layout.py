"""Byte offsets of the `wp.Bvh` descriptor that runtime/geometry/bvh.py writes and builtins/bvh.py reads.

The node array and count sit where the mesh descriptor has them (types/mesh_layout.py:
`MESH_NODES`, `MESH_NUM_NODES`), so the mesh's node reader walks a Bvh's tree too.
"""

from __future__ import annotations

from .mesh_layout import MESH_NODES, MESH_NUM_NODES

BVH_GROUP_KEYS = 0  # ptr: int32 group ids, sorted ascending (one entry, 0, for an ungrouped tree)
BVH_GROUP_ROOTS = 8  # ptr: int32, each group's subtree root (a depth-first node position)
BVH_NUM_GROUPS = 16  # int32
BVH_NODES = MESH_NODES
BVH_NUM_NODES = MESH_NUM_NODES
BVH_DESCRIPTOR_SIZE = 40
