"""Random numbers and noise in kernels: determinism, independence, distributions (with tolerances
from the sample size), sampler domains, sample_cdf, and noise bounds/continuity/periodicity and
the divergence of curlnoise. Expected values come from analytic formulas or numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from builtin_cases.random import np_draws, np_unit
from wpcompat import DEVICE, wp

N = 1 << 16  # draws per statistic; tolerances are 5 standard errors


def _close(value: float, expected: float, sd: float, n: int = N, z: float = 5.0) -> None:
    tol = z * sd / math.sqrt(n)
    assert abs(value - expected) <= tol, f"{value} differs from {expected} by more than {tol}"


@wp.kernel
def draws_kernel(seed: int, out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    out[i, 0] = wp.randf(s)
    out[i, 1] = wp.randf(s)
    out[i, 2] = wp.randn(s)
    out[i, 3] = wp.randf(s, -2.0, 3.0)
    out[i, 4] = float(wp.randi(s, -50, 7))
    out[i, 5] = float(wp.randu(s, wp.uint32(10), wp.uint32(13)))


def _draws(seed: int, n: int = N) -> np.ndarray:
    out = wp.zeros((n, 6), dtype=float, device=DEVICE)
    wp.launch(draws_kernel, dim=n, inputs=[seed, out], device=DEVICE)
    return out.numpy().astype(np.float64)


def test_same_seed_same_draws_and_the_published_pcg_stream() -> None:
    a, b = _draws(42, 1000), _draws(42, 1000)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, _draws(43, 1000))
    # rand_init(seed, i) = pcg(seed + pcg(i)); every draw is state = pcg(state)
    start = np_draws(np.arange(1000), 1)[0][0] + 42
    (b1, b2), _ = np_draws(np_draws(start, 1)[1], 2)
    np.testing.assert_array_equal(a[:, 0], np_unit(b1).astype(np.float32))
    np.testing.assert_array_equal(a[:, 1], np_unit(b2).astype(np.float32))


def test_threads_draw_independent_streams() -> None:
    x = _draws(7)
    first, second = x[:, 0], x[:, 1]
    assert len(np.unique(first)) > 0.99 * N  # 24-bit values: few birthday collisions
    for a, b in ((first[:-1], first[1:]), (first, second)):
        r = np.corrcoef(a, b)[0, 1]
        assert abs(r) < 5 / math.sqrt(len(a)), f"correlation {r}"


def test_randf_is_uniform() -> None:
    u = _draws(1)[:, 0]
    assert u.min() >= 0.0 and u.max() < 1.0
    assert np.all(u * 2 ** 24 == np.round(u * 2 ** 24))  # multiples of 2^-24
    _close(u.mean(), 0.5, math.sqrt(1 / 12))
    _close(u.var(), 1 / 12, math.sqrt(1 / 80 - 1 / 144))
    w = _draws(2)[:, 3]
    assert w.min() >= -2.0 and w.max() < 3.0
    _close(w.mean(), 0.5, 5 / math.sqrt(12))
    stats = pytest.importorskip("scipy.stats")
    assert stats.kstest(u, "uniform").pvalue > 1e-4


def test_randn_is_standard_normal() -> None:
    z = _draws(3)[:, 2]
    assert np.all(np.isfinite(z))
    _close(z.mean(), 0.0, 1.0)
    _close(z.var(), 1.0, math.sqrt(2.0))
    stats = pytest.importorskip("scipy.stats")
    assert stats.kstest(z, "norm").pvalue > 1e-4


def test_randi_and_randu_ranges_are_covered_uniformly() -> None:
    x = _draws(4)
    for values, low, high in ((x[:, 4], -50, 7), (x[:, 5], 10, 13)):
        assert values.min() == low and values.max() == high - 1
        counts = np.bincount((values - low).astype(int), minlength=high - low)
        p = 1 / (high - low)
        assert np.all(np.abs(counts - N * p) <= 5 * math.sqrt(N * p * (1 - p)))


@wp.kernel
def poisson_kernel(seed: int, lam: float, out: wp.array(dtype=wp.uint32),
                   moved: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    before = s
    out[i] = wp.poisson(s, lam)
    moved[i] = wp.uint32(s != before)


@pytest.mark.parametrize("lam", [0.3, 3.5, 9.9, 10.0, 27.0, 1000.0])
def test_poisson_mean_and_variance(lam: float) -> None:
    out = wp.zeros(N, dtype=wp.uint32, device=DEVICE)
    moved = wp.zeros(N, dtype=wp.uint32, device=DEVICE)
    wp.launch(poisson_kernel, dim=N, inputs=[5, lam, out, moved], device=DEVICE)
    k = out.numpy().astype(np.float64)
    _close(k.mean(), lam, math.sqrt(lam))
    _close(k.var(), lam, math.sqrt(lam + 2 * lam * lam))  # Var(s^2) ~ (mu4 - sigma^4) / n
    if lam < 30:  # the probabilities of the smallest counts, against the pmf
        for j in range(3):
            p = math.exp(-lam) * lam ** j / math.factorial(j)
            _close(float(np.mean(k == j)), p, math.sqrt(p * (1 - p)) + 1e-12)
    assert moved.numpy().all()


def test_poisson_of_zero_is_zero_and_keeps_the_state() -> None:
    out = wp.zeros(64, dtype=wp.uint32, device=DEVICE)
    moved = wp.zeros(64, dtype=wp.uint32, device=DEVICE)
    wp.launch(poisson_kernel, dim=64, inputs=[5, 0.0, out, moved], device=DEVICE)
    assert not out.numpy().any() and not moved.numpy().any()


@wp.kernel
def samplers_kernel(seed: int, out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    a = wp.sample_unit_ring(s)
    b = wp.sample_unit_disk(s)
    c = wp.sample_unit_square(s)
    t = wp.sample_triangle(s)
    d = wp.sample_unit_sphere_surface(s)
    e = wp.sample_unit_sphere(s)
    f = wp.sample_unit_hemisphere_surface(s)
    g = wp.sample_unit_hemisphere(s)
    h = wp.sample_unit_cube(s)
    for k in range(2):
        out[i, k] = a[k]
        out[i, 2 + k] = b[k]
        out[i, 4 + k] = c[k]
        out[i, 6 + k] = t[k]
    for k in range(3):
        out[i, 8 + k] = d[k]
        out[i, 11 + k] = e[k]
        out[i, 14 + k] = f[k]
        out[i, 17 + k] = g[k]
        out[i, 20 + k] = h[k]


def test_samplers_stay_in_and_cover_their_domains() -> None:
    out = wp.zeros((N, 23), dtype=float, device=DEVICE)
    wp.launch(samplers_kernel, dim=N, inputs=[11, out], device=DEVICE)
    x = out.numpy().astype(np.float64)
    ring, disk, square, tri = x[:, 0:2], x[:, 2:4], x[:, 4:6], x[:, 6:8]
    sphere, ball, hsphere, hball, cube = (x[:, k:k + 3] for k in (8, 11, 14, 17, 20))
    norm = lambda v: np.linalg.norm(v, axis=1)  # noqa: E731
    for surface in (ring, sphere, hsphere):
        np.testing.assert_allclose(norm(surface), 1.0, atol=1e-5)
    for solid in (disk, ball, hball):
        assert norm(solid).max() <= 1.0 + 1e-6
    for box in (square, cube):
        assert box.min() >= -0.5 and box.max() < 0.5
        for col in box.T:
            _close(col.var(), 1 / 12, math.sqrt(1 / 80 - 1 / 144))
    assert hsphere[:, 2].min() >= 0.0 and hball[:, 2].min() >= 0.0
    assert tri.min() >= 0.0 and tri.sum(axis=1).max() <= 1.0 + 1e-6
    # centroids and second moments of the uniform distributions
    for pts, centre in ((ring, [0, 0]), (disk, [0, 0]), (square, [0, 0]), (sphere, [0, 0, 0]),
                        (ball, [0, 0, 0]), (cube, [0, 0, 0]), (tri, [1 / 3, 1 / 3]),
                        (hsphere, [0, 0, 1 / 2]), (hball, [0, 0, 3 / 8])):
        for col, c in zip(pts.T, centre):
            _close(col.mean(), c, 1.0)
    for pts, r2 in ((disk, 1 / 2), (ball, 3 / 5), (hball, 3 / 5)):
        _close(float((norm(pts) ** 2).mean()), r2, 1.0)


@wp.kernel
def cdf_kernel(seed: int, cdf: wp.array(dtype=float), out: wp.array(dtype=int)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    out[i] = wp.sample_cdf(s, cdf)


def test_sample_cdf_follows_the_discrete_distribution() -> None:
    weights = np.array([0.1, 0.4, 0.0, 0.3, 0.15, 0.05])
    cdf = wp.array(np.cumsum(weights).astype(np.float32), dtype=float, device=DEVICE)
    out = wp.zeros(N, dtype=int, device=DEVICE)
    wp.launch(cdf_kernel, dim=N, inputs=[9, cdf, out], device=DEVICE)
    counts = np.bincount(out.numpy(), minlength=len(weights))
    assert len(counts) == len(weights) and counts[2] == 0
    for c, p in zip(counts, weights):
        assert abs(c - N * p) <= 5 * math.sqrt(N * p * (1 - p)) + 1e-9


@wp.kernel
def loop_kernel(out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    s = wp.rand_init(3, i)
    for j in range(4):
        x = wp.randf(s)
        out[i, j] = x


def test_the_state_advances_inside_loops() -> None:
    out = wp.zeros((8, 4), dtype=float, device=DEVICE)
    wp.launch(loop_kernel, dim=8, inputs=[out], device=DEVICE)
    x = out.numpy()
    start = np_draws(np.arange(8), 1)[0][0] + 3
    bits, _ = np_draws(np_draws(start, 1)[1], 4)
    np.testing.assert_array_equal(x, np.stack([np_unit(b) for b in bits], axis=1))


@wp.kernel
def element_state_kernel(states: wp.array(dtype=wp.uint32), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.randf(states[i])  # a temporary state, as in Warp: states[i] is not advanced


def test_a_state_that_is_not_a_variable_is_a_temporary() -> None:
    seeds = np.arange(5, dtype=np.uint32) * 7 + 1
    states = wp.array(seeds, dtype=wp.uint32, device=DEVICE)
    out = wp.zeros(5, dtype=float, device=DEVICE)
    wp.launch(element_state_kernel, dim=5, inputs=[states, out], device=DEVICE)
    bits, _ = np_draws(seeds, 1)
    np.testing.assert_array_equal(out.numpy(), np_unit(bits[0]))
    np.testing.assert_array_equal(states.numpy(), seeds)


# -- noise --------------------------------------------------------------------------------------

@wp.kernel
def noise_kernel(p: wp.array(dtype=wp.vec4d), out: wp.array(dtype=wp.float64, ndim=2)):
    i = wp.tid()
    s = wp.rand_init(17, i % 1000)  # many fields, so that sample means are near 0
    q = p[i]
    out[i, 0] = wp.noise(s, q[0])
    out[i, 1] = wp.noise(s, wp.vec2d(q[0], q[1]))
    out[i, 2] = wp.noise(s, wp.vec3d(q[0], q[1], q[2]))
    out[i, 3] = wp.noise(s, q)
    out[i, 4] = wp.pnoise(s, q[0], 3)
    out[i, 5] = wp.pnoise(s, wp.vec2d(q[0], q[1]), 3, 5)
    out[i, 6] = wp.pnoise(s, wp.vec3d(q[0], q[1], q[2]), 3, 5, 2)
    out[i, 7] = wp.pnoise(s, q, 3, 5, 2, 4)


def _noise(p: np.ndarray) -> np.ndarray:
    pa = wp.array(p, dtype=wp.vec4d, device=DEVICE)
    out = wp.zeros((len(p), 8), dtype=wp.float64, device=DEVICE)
    wp.launch(noise_kernel, dim=len(p), inputs=[pa, out], device=DEVICE)
    return out.numpy()


def test_noise_is_bounded_centred_and_varied() -> None:
    p = np.random.default_rng(0).uniform(-20, 20, (20000, 4))
    v = _noise(p)
    for col, d in zip(v.T, (1, 2, 3, 4, 1, 2, 3, 4)):
        assert np.abs(col).max() <= d  # convex corner weights, |g_k| <= 1, |p - c|_1 <= d
        assert col.std() > 0.05
        assert abs(col.mean()) < 5 * col.std() / math.sqrt(len(col)) + 0.02
    lattice = np.random.default_rng(1).integers(-9, 9, (50, 4)).astype(np.float64)
    np.testing.assert_allclose(_noise(lattice), 0.0, atol=1e-12)  # zero on lattice points


def test_noise_is_continuous_across_cells() -> None:
    rng = np.random.default_rng(2)
    p = rng.integers(-5, 5, (4000, 4)) + rng.uniform(-1e-3, 1e-3, (4000, 4))  # near cell faces
    step = rng.normal(size=(4000, 4)) * 1e-6
    jump = np.abs(_noise(p + step) - _noise(p))
    assert jump[:, :4].max() < 1e-4  # Lipschitz: no jump where the cell (and its gradients) change
    # pnoise as well where the coordinates are >= 0 (below 0, Warp's remainder wrap jumps)
    q = np.abs(p) + 2e-3
    jump = np.abs(_noise(q + step) - _noise(q))
    assert jump.max() < 1e-4


def test_pnoise_repeats_with_its_periods() -> None:
    # Warp: whole-period shifts repeat while the coordinates stay on one side of zero
    rng = np.random.default_rng(3)
    periods = np.array([3, 5, 2, 4])
    for sign in (1.0, -1.0):
        p = sign * rng.uniform(0.01, 6, (2000, 4))
        shift = sign * rng.integers(0, 4, (2000, 4)) * periods
        a, b = _noise(p)[:, 4:], _noise(p + shift)[:, 4:]
        np.testing.assert_allclose(a, b, atol=1e-9)
        assert np.abs(_noise(p + sign * 0.5)[:, 4:] - a).max() > 0.05  # ...not other shifts


@wp.kernel
def curl_kernel(p: wp.array(dtype=wp.vec4d), h: wp.float64, octaves: int,
                out: wp.array(dtype=wp.float64, ndim=2)):
    i = wp.tid()
    s = wp.rand_init(5)
    q = p[i]
    div3 = wp.float64(0.0)
    div4 = wp.float64(0.0)
    div2 = wp.float64(0.0)
    for k in range(3):
        e = wp.vec4d(0.0, 0.0, 0.0, 0.0)
        e[k] = h
        a = q + e
        b = q - e
        c3 = wp.curlnoise(s, wp.vec3d(a[0], a[1], a[2]), wp.uint32(octaves), wp.float64(2.0),
                          wp.float64(0.5))
        d3 = wp.curlnoise(s, wp.vec3d(b[0], b[1], b[2]), wp.uint32(octaves), wp.float64(2.0),
                          wp.float64(0.5))
        c4 = wp.curlnoise(s, a, wp.uint32(octaves), wp.float64(2.0), wp.float64(0.5))
        d4 = wp.curlnoise(s, b, wp.uint32(octaves), wp.float64(2.0), wp.float64(0.5))
        div3 += (c3[k] - d3[k]) / (wp.float64(2.0) * h)
        div4 += (c4[k] - d4[k]) / (wp.float64(2.0) * h)
        out[i, 3 + k] = wp.abs(c3[k] - d3[k]) / (wp.float64(2.0) * h)
        if k < 2:
            c2 = wp.curlnoise(s, wp.vec2d(a[0], a[1]), wp.uint32(octaves), wp.float64(2.0),
                              wp.float64(0.5))
            d2 = wp.curlnoise(s, wp.vec2d(b[0], b[1]), wp.uint32(octaves), wp.float64(2.0),
                              wp.float64(0.5))
            div2 += (c2[k] - d2[k]) / (wp.float64(2.0) * h)
    out[i, 0] = div2
    out[i, 1] = div3
    out[i, 2] = div4


@pytest.mark.parametrize("octaves", [1, 3])
def test_curlnoise_is_divergence_free(octaves: int) -> None:
    p = np.random.default_rng(4).uniform(-4, 4, (500, 4))
    out = wp.zeros((500, 6), dtype=wp.float64, device=DEVICE)
    wp.launch(curl_kernel, dim=500, inputs=[wp.array(p, dtype=wp.vec4d, device=DEVICE), 1e-4,
                                            octaves, out], device=DEVICE)
    x = out.numpy()
    scale = x[:, 3:].sum(axis=1)  # the size of the terms that cancel
    assert np.median(scale) > 0.1
    assert np.abs(x[:, :3]).max() <= 1e-5 * (1.0 + scale.max())


@wp.kernel
def curl2_kernel(p: wp.array(dtype=wp.vec2d), h: wp.float64, out: wp.array(dtype=wp.vec2d),
                 fd: wp.array(dtype=wp.vec2d)):
    i = wp.tid()
    s = wp.rand_init(8)
    q = p[i]
    out[i] = wp.curlnoise(s, q, 1, wp.float64(2.0), wp.float64(0.5))
    dx = wp.noise(s, q + wp.vec2d(h, 0.0)) - wp.noise(s, q - wp.vec2d(h, 0.0))
    dy = wp.noise(s, q + wp.vec2d(0.0, h)) - wp.noise(s, q - wp.vec2d(0.0, h))
    fd[i] = wp.vec2d(-dy, dx) / (wp.float64(2.0) * h)  # Warp's orientation


def test_curlnoise_2d_is_the_rotated_gradient_of_noise() -> None:
    p = np.random.default_rng(5).uniform(-4, 4, (300, 2))
    out = wp.zeros(300, dtype=wp.vec2d, device=DEVICE)
    fd = wp.zeros(300, dtype=wp.vec2d, device=DEVICE)
    wp.launch(curl2_kernel, dim=300, inputs=[wp.array(p, dtype=wp.vec2d, device=DEVICE), 1e-5,
                                             out, fd], device=DEVICE)
    np.testing.assert_allclose(out.numpy(), fd.numpy(), atol=1e-7)
