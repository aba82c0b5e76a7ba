"""The BVH shape (runtime/geometry/bvh_tree.py): a radix tree over Morton codes, stored depth
first with skip pointers. Checked against a direct recursive construction in plain Python: every
inner node splits its leaf range where the highest differing bit of the sorted codes flips."""

from __future__ import annotations

import numpy as np

from gradloom.runtime.geometry.bvh_tree import Tree


def _morton(c: np.ndarray, bits: int = 21) -> list[int]:
    """Morton codes of (n, 3) points in [0, 1] (`bits` per axis, x the highest of each
    triple), interleaved bit by bit in Python integers."""
    top = (1 << bits) - 1
    q = np.clip(c * top, 0, top).astype(np.int64)
    out = []
    for x, y, z in q.tolist():
        out.append(sum(((x >> b & 1) << (3 * b + 2)) | ((y >> b & 1) << (3 * b + 1))
                       | ((z >> b & 1) << (3 * b)) for b in range(bits)))
    return out


def _expected(keys: list[int], a: int, b: int, out: list[tuple[int, int]]) -> None:
    """Depth-first (first leaf, leaf count) of every node over sorted keys[a:b]."""
    out.append((a, b - a))
    if b - a == 1:
        return
    x = keys[a] ^ keys[b - 1]
    if x == 0:  # equal keys: split by the indices' highest differing bit
        x = a ^ (b - 1)
        bit = x.bit_length() - 1
        split = ((b - 1) >> bit) << bit
    else:
        bit = x.bit_length() - 1
        split = next(i for i in range(a, b) if keys[i] >> bit & 1)
    _expected(keys, a, split, out)
    _expected(keys, split, b, out)


def _check(centroids: np.ndarray) -> None:
    tree = Tree(centroids)
    lo, hi = centroids.min(0), centroids.max(0)
    codes = _morton((centroids - lo) / np.maximum(hi - lo, 1e-30))
    keys = sorted(codes)
    want: list[tuple[int, int]] = []
    _expected(keys, 0, len(keys), want)
    # the tree's depth-first nodes: leaf count from the skip pointer, first leaf by counting
    skip, prim = tree.skip_and_prim()
    leaves_before = np.cumsum(np.r_[0, prim >= 0])
    got = [(int(leaves_before[i]), int(leaves_before[skip[i]] - leaves_before[i]))
           for i in range(len(skip))]
    assert got == want
    leaves = prim[prim >= 0]  # every primitive once, in code order
    assert sorted(leaves) == list(range(len(centroids)))
    assert [codes[k] for k in leaves] == keys


def test_radix_tree_splits_at_the_highest_differing_bit() -> None:
    rng = np.random.default_rng(3)
    _check(rng.random((300, 3)))


def test_equal_codes_split_by_index() -> None:
    rng = np.random.default_rng(4)
    pts = rng.random((40, 3))
    _check(np.concatenate([pts, pts, pts[:7]]))  # many equal codes


def test_single_primitive() -> None:
    tree = Tree(np.zeros((1, 3)))
    assert list(tree.skip) == [1] and list(tree.prim) == [0]


def test_nearest_walk_over_many_equal_centroids() -> None:
    """Closest point and ray against 400 copies of one triangle and 400 copies of a far one
    (equal Morton codes, so the tree splits them by index, deep and degenerate): the distance
    above the near triangle's interior is the height, a ray straight down hits at t = height,
    and the face found is one of the near copies."""
    import gradloom as wp

    tri = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    pts = np.concatenate([tri] * 400 + [tri + np.float32([10, 0, 0])] * 400)
    mesh = wp.Mesh(wp.array(pts, dtype=wp.vec3),
                   wp.array(np.arange(len(pts), dtype=np.int32), dtype=wp.int32))

    @wp.kernel
    def query(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), dist: wp.array(dtype=float),
              t: wp.array(dtype=float), faces: wp.array(dtype=int)):
        i = wp.tid()
        q = wp.mesh_query_point_no_sign(mesh, xs[i], 100.0)
        dist[i] = wp.length(xs[i] - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
        r = wp.mesh_query_ray(mesh, xs[i], wp.vec3(0.0, 0.0, -1.0), 100.0)
        t[i] = r.t
        faces[i] = q.face * 10000 + r.face

    h = np.array([0.1, 0.5, 2.0, 7.0], np.float32)
    xs = np.stack([np.full(4, 0.2), np.full(4, 0.3), h], 1).astype(np.float32)
    dist, t = wp.zeros(4, dtype=float), wp.zeros(4, dtype=float)
    faces = wp.zeros(4, dtype=int)
    wp.launch(query, dim=4, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3), dist, t, faces])
    np.testing.assert_allclose(dist.numpy(), h, rtol=1e-6)
    np.testing.assert_allclose(t.numpy(), h, rtol=1e-6)
    assert (faces.numpy() // 10000 < 400).all() and (faces.numpy() % 10000 < 400).all()
