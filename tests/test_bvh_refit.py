"""The compiled BVH refit (codegen/native_bvh.py) behind wp.Mesh.refit and wp.Bvh.refit: every
node box holds its subtree (leaf boxes hold their triangle, one float32 step wider; a Bvh's leaf
boxes are the user's boxes exactly), the mesh's mean edge length matches numpy's, and the pair
records the nearest-first walk reads hold the children's boxes and references of each inner node
above the walk's leaves, and its triangle records the corners in key order."""

import numpy as np

import gradloom as wp
from gradloom.runtime.geometry.bvh_tree import WalkData
from gradloom.types.mesh_layout import MESH_AVG_EDGE, WALK_COUNT_BITS, WALK_LEAF


def _check_nested(nodes: np.ndarray) -> None:
    """Each inner node's box is the union of its two children's (left = next, right = skip of
    the left child)."""
    inner = np.flatnonzero(nodes["prim"] < 0)
    left = inner + 1
    right = nodes["skip"][left]
    lo = np.minimum(nodes["lower"][left], nodes["lower"][right])
    hi = np.maximum(nodes["upper"][left], nodes["upper"][right])
    np.testing.assert_array_equal(nodes["lower"][inner], lo)
    np.testing.assert_array_equal(nodes["upper"][inner], hi)


def _check_walk(nodes: np.ndarray, refs: np.ndarray, walk: WalkData, corners: np.ndarray) -> None:
    """The nearest-first walk's data (types/mesh_layout.py): a node over more than WALK_LEAF
    leaves has the next record index in depth-first order, and its record holds its left
    child's box (the next node), its right child's (the left child's skip) and their
    references; any other node ~(first << WALK_COUNT_BITS | count - 1) (its leaves' range in
    key order); the triangle records hold the leaves' corners and triangles in key order."""
    n = len(nodes)
    is_leaf = nodes["prim"] >= 0
    count = (nodes["skip"].astype(np.int64) - np.arange(n) + 1) // 2
    first = np.cumsum(is_leaf) - is_leaf
    big = count > WALK_LEAF
    np.testing.assert_array_equal(refs[big], np.arange(big.sum()))
    np.testing.assert_array_equal(refs[~big], ~((first << WALK_COUNT_BITS) | (count - 1))[~big])
    parents = np.flatnonzero(big)
    left = parents + 1
    right = nodes["skip"][left]
    boxes = walk.pairs.view(np.float32).reshape(-1, 16)[:len(parents)]
    links = walk.pairs.view(np.int32).reshape(-1, 16)[:len(parents)]
    for j, child in enumerate((left, right)):
        np.testing.assert_array_equal(boxes[:, 6 * j:6 * j + 3], nodes["lower"][child])
        np.testing.assert_array_equal(boxes[:, 6 * j + 3:6 * j + 6], nodes["upper"][child])
        np.testing.assert_array_equal(links[:, 12 + j], refs[child])
    records = walk.leaf_tris.view(np.float32).reshape(len(walk.leaf_tris), -1)
    leaves = np.flatnonzero(is_leaf)
    np.testing.assert_array_equal(records[:, :9], corners.reshape(-1, 9)[nodes["prim"][leaves]])
    np.testing.assert_array_equal(records[:, 9].view(np.int32), nodes["prim"][leaves])


def test_mesh_refit_boxes_and_mean_edge_follow_the_points() -> None:
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(300, 3)).astype(np.float32)
    tris = rng.integers(0, 300, size=(500, 3)).astype(np.int32)
    points = wp.array(pts, dtype=wp.vec3)
    mesh = wp.Mesh(points, wp.array(tris.reshape(-1), dtype=wp.int32))
    moved = (pts * np.float32(2.5) + np.float32(1.0)).astype(np.float32)
    points.assign(moved)
    mesh.refit()
    nodes = mesh._nodes
    leaves = np.flatnonzero(nodes["prim"] >= 0)
    corners = moved[tris[nodes["prim"][leaves]]]
    np.testing.assert_array_equal(nodes["lower"][leaves],
                                  np.nextafter(corners.min(1), np.float32(-np.inf)))
    np.testing.assert_array_equal(nodes["upper"][leaves],
                                  np.nextafter(corners.max(1), np.float32(np.inf)))
    _check_nested(nodes)
    _check_walk(nodes, mesh._tree.refs, mesh._walk, moved[tris])
    p = moved.astype(np.float64)[tris]
    want = np.linalg.norm(p - np.roll(p, 1, axis=1), axis=2).mean()
    got = np.frombuffer(mesh._desc[MESH_AVG_EDGE:MESH_AVG_EDGE + 4].tobytes(), np.float32)[0]
    assert abs(got - want) <= 1e-6 * want


def test_bvh_refit_keeps_the_users_boxes_exactly() -> None:
    rng = np.random.default_rng(1)
    lo = rng.uniform(-1, 1, size=(200, 3)).astype(np.float32)
    hi = (lo + rng.uniform(0, 0.2, size=(200, 3))).astype(np.float32)
    lows, ups = wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3)
    bvh = wp.Bvh(lows, ups, groups=wp.array(np.arange(200, dtype=np.int32) % 3, dtype=wp.int32))
    lows.assign(lo - np.float32(0.5))
    ups.assign(hi + np.float32(0.5))
    bvh.refit()
    nodes = bvh._nodes
    leaves = np.flatnonzero(nodes["prim"] >= 0)
    np.testing.assert_array_equal(nodes["lower"][leaves], lo[nodes["prim"][leaves]] - 0.5)
    np.testing.assert_array_equal(nodes["upper"][leaves], hi[nodes["prim"][leaves]] + 0.5)
    _check_nested(nodes)
