"""Grouped wp.Bvh (bvh_get_group_root, queries from a subtree root), bvh_query_capsule,
bvh_query_sphere, bvh_query_next's max_dist, a query kind chosen at run time, the
block-cooperative tile_bvh_query_* builtins, and the constructor checks: candidates against
numpy (float64 slab and distance tests), each reported once."""

# ruff: noqa: UP018  (Warp-style `int(0)` declares an int32 loop variable)

import warnings

import numpy as np
import pytest
from wpcompat import BACKEND, wp


@wp.kernel
def group_roots(bvh: wp.uint64, groups: wp.array(dtype=int), roots: wp.array(dtype=int)):
    i = wp.tid()
    roots[i] = wp.bvh_get_group_root(bvh, groups[i])


@wp.kernel
def box_from_root(bvh: wp.uint64, roots: wp.array(dtype=int), lo: wp.vec3, hi: wp.vec3,
                  hits: wp.array2d(dtype=int)):
    i = wp.tid()
    q = wp.bvh_query_aabb(bvh, lo, hi, roots[i])
    b = int(0)
    while wp.bvh_query_next(q, b):
        hits[i, b] += 1


@wp.kernel
def by_capsule(bvh: wp.uint64, p0: wp.array(dtype=wp.vec3), p1: wp.array(dtype=wp.vec3),
               r: float, hits: wp.array2d(dtype=int)):
    i = wp.tid()
    q = wp.bvh_query_capsule(bvh, p0[i], p1[i] - p0[i], r)
    b = int(0)
    while wp.bvh_query_next(q, b, 1.0):
        hits[i, b] += 1


@wp.kernel
def by_sphere(bvh: wp.uint64, c: wp.array(dtype=wp.vec3), r: float,
              hits: wp.array2d(dtype=int)):
    i = wp.tid()
    q = wp.bvh_query_sphere(bvh, c[i], r)
    b = int(0)
    while wp.bvh_query_next(q, b):
        hits[i, b] += 1


@wp.kernel
def by_ray_until(bvh: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
                 max_t: float, hits: wp.array2d(dtype=int)):
    i = wp.tid()
    q = wp.bvh_query_ray(bvh, o[i], d[i])
    b = int(0)
    while wp.bvh_query_next(q, b, max_t):
        hits[i, b] += 1


@wp.kernel
def box_or_sphere(bvh: wp.uint64, use_sphere: bool, lo: wp.vec3, hi: wp.vec3, c: wp.vec3,
                  r: float, hits: wp.array(dtype=int)):
    if use_sphere:
        q = wp.bvh_query_sphere(bvh, c, r)
    else:
        q = wp.bvh_query_aabb(bvh, lo, hi)
    b = int(0)
    while wp.bvh_query_next(q, b):
        hits[b] += 1


@wp.kernel
def tiled_box(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, hits: wp.array(dtype=int)):
    q = wp.tile_bvh_query_aabb(bvh, lo, hi)
    while wp.tile_query_valid(q):
        b = wp.untile(wp.tile_bvh_query_next(q))
        if b >= 0:
            wp.atomic_add(hits, b, 1)


def boxes(n: int, seed: int, size: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    c = rng.uniform(-1, 1, size=(n, 3))
    h = rng.uniform(0.01, size, size=(n, 3))
    return (c - h).astype(np.float32), (c + h).astype(np.float32)


def overlaps(lo: np.ndarray, hi: np.ndarray, qlo: np.ndarray, qhi: np.ndarray) -> np.ndarray:
    return ((lo[None] <= qhi[:, None]) & (hi[None] >= qlo[:, None])).all(-1).astype(int)


def slab(lo: np.ndarray, hi: np.ndarray, o: np.ndarray, d: np.ndarray, t_max: float
         ) -> np.ndarray:
    """Rays o + t d (t in [0, t_max]) against boxes, float64: (rays, boxes) 0/1."""
    lo, hi, o, d = (x.astype(np.float64) for x in (lo, hi, o, d))
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (lo[None] - o[:, None]) / d[:, None]
        e = (hi[None] - o[:, None]) / d[:, None]
    t0 = np.maximum(np.minimum(s, e).max(-1), 0.0)
    t1 = np.minimum(np.maximum(s, e).min(-1), t_max)
    return (t0 <= t1).astype(int)


def test_group_queries_see_their_group_only() -> None:
    lo, hi = boxes(600, 10, size=0.3)
    g = np.random.default_rng(11).choice(np.array([-7, 0, 3, 4, 1000], np.int32), 600)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3),
                 groups=wp.array(g, dtype=wp.int32))
    asked = np.array([-7, 0, 3, 4, 1000, 1, -1, 5, 999, 1001], np.int32)
    roots = wp.zeros(len(asked), dtype=int)
    wp.launch(group_roots, dim=len(asked), inputs=[bvh.id, wp.array(asked, dtype=int), roots])
    r = roots.numpy()
    assert (r[:5] >= 0).all() and len(set(r[:5])) == 5
    np.testing.assert_array_equal(r[5:], -1)  # groups that do not exist: the global root
    hits = wp.zeros((len(asked), 600), dtype=int)
    qlo, qhi = np.float32([-0.5, -0.5, -0.5]), np.float32([0.6, 0.5, 0.4])
    wp.launch(box_from_root, dim=len(asked), inputs=[bvh.id, roots, wp.vec3(*qlo),
                                                      wp.vec3(*qhi), hits])
    every = overlaps(lo, hi, qlo[None], qhi[None])[0]
    want = np.array([every * (g == k) for k in asked[:5]] + [every] * 5)
    assert want[:5].sum(1).min() > 3
    np.testing.assert_array_equal(hits.numpy(), want)


def test_ungrouped_tree_is_group_zero_and_rebuild_keeps_groups() -> None:
    lo, hi = boxes(50, 12)
    lows, ups = wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3)
    roots = wp.zeros(3, dtype=int)
    plain = wp.Bvh(lows, ups)
    wp.launch(group_roots, dim=3, inputs=[plain.id, wp.array([0, 1, -1], dtype=int), roots])
    np.testing.assert_array_equal(roots.numpy(), [0, -1, -1])
    g = (np.arange(50) % 2).astype(np.int32)
    bvh = wp.Bvh(lows, ups, groups=wp.array(g, dtype=wp.int32))
    lows.assign(lo[::-1] * np.float32(0.5))
    ups.assign(hi[::-1] * np.float32(0.5))
    bvh.rebuild()
    wp.launch(group_roots, dim=2, inputs=[bvh.id, wp.array([0, 1], dtype=int), roots])
    hits = wp.zeros((2, 50), dtype=int)
    wp.launch(box_from_root, dim=2, inputs=[bvh.id, roots, wp.vec3(-9.0), wp.vec3(9.0), hits])
    np.testing.assert_array_equal(hits.numpy(), [g == 0, g == 1])


def test_capsule_query_is_the_grown_box_slab_over_the_segment() -> None:
    lo, hi = boxes(400, 13)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    rng = np.random.default_rng(14)
    p0 = rng.uniform(-1.2, 1.2, size=(30, 3)).astype(np.float32)
    p1 = (p0 + rng.normal(scale=0.6, size=(30, 3))).astype(np.float32)
    hits = wp.zeros((30, 400), dtype=int)
    wp.launch(by_capsule, dim=30, inputs=[bvh.id, wp.array(p0, dtype=wp.vec3),
                                          wp.array(p1, dtype=wp.vec3), 0.15, hits])
    want = slab(lo - np.float32(0.15), hi + np.float32(0.15), p0, p1 - p0, 1.0)
    assert want.sum() > 60
    got = hits.numpy()
    assert got.max() <= 1 and (got != want).sum() <= 2  # grazing boxes may round either way


def test_sphere_query_and_negative_radius() -> None:
    lo, hi = boxes(400, 15)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    c = np.random.default_rng(16).uniform(-1, 1, size=(30, 3)).astype(np.float32)
    for r in (0.25, -1.0):
        hits = wp.zeros((30, 400), dtype=int)
        wp.launch(by_sphere, dim=30, inputs=[bvh.id, wp.array(c, dtype=wp.vec3), r, hits])
        gap = np.maximum(np.maximum(lo[None] - c[:, None], c[:, None] - hi[None]), 0.0)
        want = ((gap.astype(np.float64) ** 2).sum(-1) <= max(r, 0.0) ** 2).astype(int)
        np.testing.assert_array_equal(hits.numpy(), want)
        assert want.sum() > (30 if r > 0 else 0)


def test_ray_max_dist_cuts_the_ray() -> None:
    lo, hi = boxes(400, 17, size=0.2)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    rng = np.random.default_rng(18)
    o = rng.uniform(-1.5, 1.5, size=(40, 3)).astype(np.float32)
    d = rng.normal(size=(40, 3)).astype(np.float32)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    hits = wp.zeros((40, 400), dtype=int)
    wp.launch(by_ray_until, dim=40, inputs=[bvh.id, wp.array(o, dtype=wp.vec3),
                                            wp.array(d, dtype=wp.vec3), 0.7, hits])
    want = slab(lo, hi, o, d, 0.7)
    assert 20 < want.sum() < slab(lo, hi, o, d, np.inf).sum()
    assert (hits.numpy() != want).sum() <= 2


def test_query_kind_chosen_at_run_time() -> None:
    lo, hi = boxes(300, 19, size=0.3)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    qlo, qhi, c = np.float32([-0.3] * 3), np.float32([0.4] * 3), np.float32([0.2, -0.1, 0.3])
    for use_sphere in (False, True):
        hits = wp.zeros(300, dtype=int)
        wp.launch(box_or_sphere, dim=1, inputs=[bvh.id, use_sphere, wp.vec3(*qlo),
                                                wp.vec3(*qhi), wp.vec3(*c), 0.3, hits])
        gap = np.maximum(np.maximum(lo - c, c - hi), 0.0).astype(np.float64)
        want = ((gap ** 2).sum(-1) <= 0.09).astype(int) if use_sphere else \
            overlaps(lo, hi, qlo[None], qhi[None])[0]
        assert want.sum() > 5
        np.testing.assert_array_equal(hits.numpy(), want)


def test_tiled_box_query_reports_each_box_once() -> None:
    lo, hi = boxes(300, 20, size=0.3)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    hits = wp.zeros(300, dtype=int)
    wp.launch_tiled(tiled_box, dim=1, inputs=[bvh.id, wp.vec3(-0.5), wp.vec3(0.3), hits],
                    block_dim=8)
    want = overlaps(lo, hi, np.float32([[-0.5] * 3]), np.float32([[0.3] * 3]))[0]
    assert want.sum() > 5
    np.testing.assert_array_equal(hits.numpy(), want)


@pytest.mark.parametrize("block_dim", [8, 64])
def test_tiled_box_query_in_cpu_blocks_hands_each_box_to_one_thread(block_dim: int) -> None:
    # with config.enable_cpu_blocks a block's threads share the query (Warp's
    # tests/geometry/test_bvh tile tests run so): each box reaches exactly one thread
    lo, hi = boxes(300, 20, size=0.3)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    hits = wp.zeros(300, dtype=int)
    before = wp.config.enable_cpu_blocks
    wp.config.enable_cpu_blocks = True
    try:
        wp.launch_tiled(tiled_box, dim=1, inputs=[bvh.id, wp.vec3(-0.5), wp.vec3(0.3), hits],
                        block_dim=block_dim)
    finally:
        wp.config.enable_cpu_blocks = before
    want = overlaps(lo, hi, np.float32([[-0.5] * 3]), np.float32([[0.3] * 3]))[0]
    np.testing.assert_array_equal(hits.numpy(), want)


def test_constructor_names_and_checks(capfd: pytest.CaptureFixture[str]) -> None:
    lows = wp.array(np.zeros((2, 3), np.float32), dtype=wp.vec3)
    ups = wp.array(np.ones((2, 3), np.float32), dtype=wp.vec3)
    assert wp.is_cubql_available() is (BACKEND == "warp")  # warp-lang's wheel has cuBQL
    for name in ("sah", "median", "cubql", None):
        wp.Bvh(lows, ups, constructor=name)
    with warnings.catch_warnings(record=True) as seen:  # warp-lang prints it to stderr
        warnings.simplefilter("always")
        wp.Bvh(lows, ups, constructor="lbvh")
    assert "LBVH" in " ".join(str(w.message) for w in seen) + capfd.readouterr().err
    with pytest.raises(ValueError, match="Unknown BVH constructor"):
        wp.Bvh(lows, ups, constructor="bogus")
    with pytest.raises(RuntimeError, match="Grouped BVHs"):
        wp.Bvh(lows, ups, constructor="cubql", groups=wp.array([0, 1], dtype=wp.int32))
    with pytest.raises(RuntimeError, match="same length"):
        wp.Bvh(lows, ups, groups=wp.array([0], dtype=wp.int32))
    with pytest.raises(ValueError, match="leaf_size"):
        wp.Bvh(lows, ups, leaf_size=0)
