"""wp.Bvh with bvh_query_aabb / bvh_query_ray / bvh_query_next and `for index in query:`: the
candidate boxes against numpy (box overlap; the slab test in float64), each exactly once, and
refit after moving the boxes."""

# ruff: noqa: UP018  (Warp-style `int(0)` declares an int32 loop variable)

import numpy as np
from wpcompat import wp


@wp.kernel
def by_box(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
           hits: wp.array2d(dtype=int)):
    i = wp.tid()
    for b in wp.bvh_query_aabb(bvh, lo[i], hi[i]):
        hits[i, b] += 1


@wp.kernel
def by_ray(bvh: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
           hits: wp.array2d(dtype=int)):
    i = wp.tid()
    q = wp.bvh_query_ray(bvh, o[i], d[i])
    b = int(0)
    while wp.bvh_query_next(q, b):
        hits[i, b] += 1


def boxes(n: int, seed: int, size: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    c = rng.uniform(-1, 1, size=(n, 3))
    h = rng.uniform(0.01, size, size=(n, 3))
    return (c - h).astype(np.float32), (c + h).astype(np.float32)


def overlaps(lo: np.ndarray, hi: np.ndarray, qlo: np.ndarray, qhi: np.ndarray) -> np.ndarray:
    return ((lo[None] <= qhi[:, None]) & (hi[None] >= qlo[:, None])).all(-1).astype(int)


def ray_hits(lo: np.ndarray, hi: np.ndarray, o: np.ndarray, d: np.ndarray) -> np.ndarray:
    lo, hi, o, d = (x.astype(np.float64) for x in (lo, hi, o, d))
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (lo[None] - o[:, None]) / d[:, None]
        e = (hi[None] - o[:, None]) / d[:, None]
    t0 = np.maximum(np.minimum(s, e).max(-1), 0.0)
    t1 = np.maximum(s, e).min(-1)
    return (t0 <= t1).astype(int)


def test_aabb_query_matches_numpy_and_follows_refit() -> None:
    lo, hi = boxes(500, 0)
    lows, ups = wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3)
    bvh = wp.Bvh(lows, ups)
    qc = np.random.default_rng(1).uniform(-1, 1, size=(30, 3)).astype(np.float32)
    qlo, qhi = qc - np.float32(0.2), qc + np.float32(0.2)
    for shift in (0.0, 0.3):
        if shift:
            lows.assign(lo + np.float32(shift))
            ups.assign(hi + np.float32(shift))
            bvh.refit()
        hits = wp.zeros((30, 500), dtype=int)
        wp.launch(by_box, dim=30, inputs=[bvh.id, wp.array(qlo, dtype=wp.vec3),
                                          wp.array(qhi, dtype=wp.vec3), hits])
        want = overlaps(lo + np.float32(shift), hi + np.float32(shift), qlo, qhi)
        assert want.sum() > 30
        np.testing.assert_array_equal(hits.numpy(), want)


def test_ray_query_matches_numpy() -> None:
    lo, hi = boxes(400, 2, size=0.3)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    rng = np.random.default_rng(3)
    o = rng.uniform(-1.5, 1.5, size=(40, 3)).astype(np.float32)
    d = rng.normal(size=(40, 3)).astype(np.float32)
    hits = wp.zeros((40, 400), dtype=int)
    wp.launch(by_ray, dim=40, inputs=[bvh.id, wp.array(o, dtype=wp.vec3),
                                      wp.array(d, dtype=wp.vec3), hits])
    want = ray_hits(lo, hi, o, d)
    assert want.sum() > 40
    got = hits.numpy()
    assert got.max() <= 1
    # boxes the ray only grazes may differ by rounding (float32 vs float64)
    assert (got != want).sum() <= 2


def test_rebuild_after_boxes_move_far() -> None:
    """rebuild() makes a new tree (a shuffled set of boxes is still found exactly)."""
    lo, hi = boxes(300, 4)
    lows, ups = wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3)
    bvh = wp.Bvh(lows, ups)
    perm = np.random.default_rng(5).permutation(300)
    lo2, hi2 = lo[perm] * np.float32(1.5), hi[perm] * np.float32(1.5)
    lows.assign(lo2)
    ups.assign(hi2)
    bvh.rebuild()
    qc = np.random.default_rng(6).uniform(-1, 1, size=(20, 3)).astype(np.float32)
    qlo, qhi = qc - np.float32(0.3), qc + np.float32(0.3)
    hits = wp.zeros((20, 300), dtype=int)
    wp.launch(by_box, dim=20, inputs=[bvh.id, wp.array(qlo, dtype=wp.vec3),
                                      wp.array(qhi, dtype=wp.vec3), hits])
    np.testing.assert_array_equal(hits.numpy(), overlaps(lo2, hi2, qlo, qhi))
