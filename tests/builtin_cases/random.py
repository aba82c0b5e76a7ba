"""Rows for the Random group (rand_*, sample_*, poisson, noise, pnoise, curlnoise), with numpy
references: the PCG hash of Jarzynski & Olano (JCGT 2020) and the documented constructions
(gradloom/builtins/random.py and noise.py docstrings), re-implemented independently here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from builtin_table import Row

MASK = 0xFFFFFFFF


def np_pcg(x: Any) -> np.ndarray:
    """The PCG hash on uint32 values (computed in uint64, masked)."""
    x = np.asarray(x).astype(np.uint64) & MASK
    s = (x * np.uint64(747796405) + np.uint64(2891336453)) & MASK
    w = (((s >> ((s >> np.uint64(28)) + np.uint64(4))) ^ s) * np.uint64(277803737)) & MASK
    return (w >> np.uint64(22)) ^ w


def np_unit(bits: np.ndarray) -> np.ndarray:
    return (bits >> np.uint64(8)).astype(np.float64) * 2.0 ** -24


def np_draws(state: np.ndarray, n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """n successive uint32 draws from each state, and the final states."""
    s, out = np.asarray(state).astype(np.uint64), []
    for _ in range(n):
        s = np_pcg(s)
        out.append(s)
    return out, s


def u32(values: Any) -> np.ndarray:
    return np.asarray(values).astype(np.uint64) & MASK


# -- Perlin noise reference -----------------------------------------------------------------------
# Warp 1.19's construction (see gradloom/builtins/noise.py's docstring), written here as the
# closed form sum_c w_c(f) (g_c . (f - c)) with product weights w_c, not as nested blends.

_PRIMES = (73856093, 19349663, 53471161, 10000019)


def _corner_gradients(h: np.ndarray, d: int) -> np.ndarray:
    """Random gradients (n, d) from corner hashes used as random states."""
    draws, _ = np_draws(h, d)
    if d == 1:
        return (2.0 * np_unit(draws[0]) - 1.0)[:, None]
    g = np.stack([np_unit(b) - 0.5 for b in draws], axis=1)
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def np_perlin(state: np.ndarray, p: np.ndarray, periods: tuple[int, ...] | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Gradient noise and its gradient at points p of shape (n, d)."""
    p = np.asarray(p, dtype=np.float64).reshape(len(p), -1)
    n, d = p.shape
    fl = np.floor(p)
    f = p - fl
    lo = fl.astype(np.int64)
    hi = lo + 1
    if periods is not None:  # C's remainder, as Warp
        lo = np.fmod(lo, periods)
        hi = np.fmod(lo + 1, periods)
    s = f ** 3 * (f * (6 * f - 15) + 10)
    ds = 30 * f ** 2 * (f - 1) ** 2
    value, grad = np.zeros(n), np.zeros((n, d))
    for c in range(2 ** d):
        up = np.array([(c >> k) & 1 for k in range(d)], dtype=bool)
        h = u32(state)
        idx = np.zeros(n, dtype=np.uint64)
        for k in range(d):
            term = u32(np.where(up[k], hi[:, k], lo[:, k]) * _PRIMES[k])
            idx ^= u32(term + h) if k == d - 1 else term
        g = _corner_gradients(idx, d)
        dot = (g * (f - up)).sum(axis=1)
        w1 = np.where(up, s, 1 - s)
        dw1 = np.where(up, ds, -ds)
        w = w1.prod(axis=1)
        value += w * dot
        for k in range(d):
            others = np.prod(np.delete(w1, k, axis=1), axis=1) if d > 1 else 1.0
            grad[:, k] += dw1[:, k] * others * dot + w * g[:, k]
    return value, grad


def np_curl(state: np.ndarray, p: np.ndarray, octaves: int, lac: float, gain: float
            ) -> np.ndarray:
    """Octaves of noise gradients at freq * p (w.r.t. the scaled point, as Warp); 3-D/4-D:
    three fields whose state advances by rand_init(state, 10019689 / 13112221)."""
    p = np.asarray(p, dtype=np.float64)
    d = p.shape[1]
    s = u32(state)
    sums = [np.zeros((len(p), d)) for _ in range(1 if d == 2 else 3)]
    freq, amp = 1.0, 1.0
    for _ in range(octaves):
        for j in range(len(sums)):
            if j > 0:
                s = np_pcg(s + np_pcg((10019689, 13112221)[j - 1]))
            sums[j] = sums[j] + amp * np_perlin(s, p * freq)[1]
        freq, amp = freq * lac, amp * gain
    if d == 2:
        return np.stack([-sums[0][:, 1], sums[0][:, 0]], axis=1)
    a, b, c = sums
    return np.stack([c[:, 1] - b[:, 2], a[:, 2] - c[:, 0], b[:, 0] - a[:, 1]], axis=1)


# -- samplers -------------------------------------------------------------------------------------

def states(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(0, 2 ** 32, shape).astype(np.float64)


def seeds(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-2 ** 31, 2 ** 31, shape).astype(np.float64)


def wide(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(-3.0, 3.0, shape)


def _drawn(count: int, fn: Callable[..., tuple[np.ndarray, ...]]) -> Callable[..., Any]:
    """A reference for a builtin taking `count` draws: its outputs, then the new state."""
    def ref(state: np.ndarray) -> tuple[np.ndarray, ...]:
        bits, s = np_draws(state, count)
        return (*fn(*[np_unit(b) for b in bits]), s.astype(np.float64))
    return ref


TAU = 2 * np.pi
_SPHERE = lambda z, u: (np.sqrt(1 - z * z) * np.cos(TAU * u), np.sqrt(1 - z * z) * np.sin(TAU * u), z)  # noqa: E731
# a point of the ball: cos(polar angle) z, azimuth 2πu, radius v^(1/3) (Warp's construction)
_BALL = lambda z, u, v: tuple(np.cbrt(v) * c for c in _SPHERE(z, u))  # noqa: E731
_TOL = {"ref_rtol": 2e-6, "ref_atol": 2e-6}  # the draws are float32 also in float64 rows

OUT2 = "s = x0\nv = wp.{name}(s)\ny0 = F(v[0])\ny1 = F(v[1])\ny2 = s"
OUT3 = "s = x0\nv = wp.{name}(s)\ny0 = F(v[0])\ny1 = F(v[1])\ny2 = F(v[2])\ny3 = s"


def _sampler(name: str, sig: str, n: int, ref: Callable[..., Any] | None) -> Row:
    body = (OUT2 if n == 2 else OUT3).format(name=name)
    return Row(name, sig, ("u",), ("f",) * n + ("u",), body=body, sample=(states,), ref=ref,
               grad=False, **_TOL)


S2, S3 = "(state: Int) -> Vector2", "(state: Int) -> Vector3"

DRAW_ROWS: list[Row] = [
    Row("rand_init", "(seed: Int) -> Int", ("i",), ("u",), sample=(seeds,), grad=False,
        ref=lambda s: np_pcg(u32(s.astype(np.int64))).astype(np.float64)),
    Row("rand_init", "(seed: Int, offset: Int) -> Int", ("i", "i"), ("u",),
        sample=(seeds, seeds), grad=False,
        ref=lambda s, o: np_pcg(u32(s.astype(np.int64)) + np_pcg(u32(o.astype(np.int64))))
        .astype(np.float64)),
    Row("randu", "(state: Int) -> Int", ("u",), ("u", "u"), sample=(states,), grad=False,
        body="s = x0\ny0 = wp.randu(s)\ny1 = s",
        ref=lambda s: (np_pcg(s).astype(np.float64),) * 2),
    Row("randu", "(state: Int, low: Int, high: Int) -> Int", ("u",), ("u", "u"),
        sample=(states,), grad=False, label="u,bounded",
        body="s = x0\ny0 = wp.randu(s, wp.uint32(3), wp.uint32(1003))\ny1 = s",
        ref=lambda s: ((np_pcg(s) % 1000 + 3).astype(np.float64), np_pcg(s).astype(np.float64))),
    Row("randi", "(state: Int) -> Int", ("u",), ("i", "u"), sample=(states,), grad=False,
        body="s = x0\ny0 = wp.randi(s)\ny1 = s",
        ref=lambda s: (np_pcg(s).astype(np.uint32).view(np.int32).astype(np.float64),
                       np_pcg(s).astype(np.float64))),
    Row("randi", "(state: Int, low: Int, high: Int) -> Int", ("u",), ("i", "u"),
        sample=(states,), grad=False, label="u,bounded",
        body="s = x0\ny0 = wp.randi(s, -50, 7)\ny1 = s",
        ref=lambda s: ((np_pcg(s) % 57).astype(np.float64) - 50, np_pcg(s).astype(np.float64))),
    Row("randf", "(state: Int) -> Float", ("u",), ("f", "u"), sample=(states,), grad=False,
        body="s = x0\ny0 = F(wp.randf(s))\ny1 = s", ref=_drawn(1, lambda u: (u,))),
    Row("randf", "(state: Int, low: Float, high: Float) -> Float", ("u", "f", "f"), ("f", "u"),
        sample=(states, "any", "pos"), grad=False, body="s = x0\ny0 = wp.randf(s, x1, x2)\ny1 = s",
        ref=lambda s, lo, hi: (lo + (hi - lo) * np_unit(np_pcg(s)), np_pcg(s).astype(np.float64)),
        **_TOL),
    Row("randn", "(state: Int) -> Float", ("u",), ("f", "u"), sample=(states,), grad=False,
        body="s = x0\ny0 = F(wp.randn(s))\ny1 = s", **_TOL,
        ref=_drawn(2, lambda a, b: (np.sqrt(-2 * np.log(np.maximum(a, 2.0 ** -25)))
                                    * np.cos(TAU * b),))),
    Row("poisson", "(state: Int, lam: Float) -> Int", ("u", "f"), ("u",), grad=False,
        sample=(states, "pos")),  # no closed-form reference: see tests/test_builtins_random.py
    _sampler("sample_unit_ring", S2, 2, _drawn(1, lambda u: (np.cos(TAU * u), np.sin(TAU * u)))),
    _sampler("sample_unit_disk", S2, 2, _drawn(2, lambda r, u: (
        np.sqrt(r) * np.cos(TAU * u), np.sqrt(r) * np.sin(TAU * u)))),
    _sampler("sample_unit_square", S2, 2, _drawn(2, lambda a, b: (a - 0.5, b - 0.5))),
    _sampler("sample_triangle", S2, 2, _drawn(2, lambda a, b: (1 - np.sqrt(a), b * np.sqrt(a)))),
    _sampler("sample_unit_cube", S3, 3, _drawn(3, lambda a, b, c: (a - 0.5, b - 0.5, c - 0.5))),
    _sampler("sample_unit_sphere_surface", S3, 3, _drawn(2, lambda a, b: _SPHERE(1 - 2 * a, b))),
    _sampler("sample_unit_hemisphere_surface", S3, 3, _drawn(2, lambda a, b: _SPHERE(a, b))),
    _sampler("sample_unit_sphere", S3, 3, _drawn(3, lambda a, b, c: _BALL(1 - 2 * a, b, c))),
    _sampler("sample_unit_hemisphere", S3, 3, _drawn(3, lambda a, b, c: _BALL(1 - a, b, c))),
]

# -- noise: gradient rows w.r.t. the position -------------------------------------------------

_NOISE_TOL = {"ref_rtol": 1e-9, "ref_atol": 1e-12}
_POS = {1: "f", 2: "v2", 3: "v3", 4: "v4"}
_NAMES = {1: "x", 2: "xy", 3: "xyz", 4: "xyzt"}
_VEC = {1: "Float", 2: "Vector2", 3: "Vector3", 4: "Vector4"}
_PERIODS = (3, 2, 4, 5)


def _noise_rows(d: int) -> list[Row]:
    pos, name, vec = _POS[d], _NAMES[d], _VEC[d]
    per = _PERIODS[:d]
    psig = ", ".join(f"p{c}: Int" for c in "xyzt"[:d])
    return [
        Row("noise", f"(state: Int, {name}: {vec}) -> Float", ("u", pos), ("f",),
            sample=(states, wide), ref=lambda s, p: np_perlin(s, p)[0], **_NOISE_TOL),
        Row("pnoise", f"(state: Int, {name}: {vec}, {psig}) -> Float", ("u", pos), ("f",),
            body=f"y0 = wp.pnoise(x0, x1, {', '.join(map(str, per))})", sample=(states, wide),
            ref=lambda s, p, per=per: np_perlin(s, p, per)[0], **_NOISE_TOL),
    ]


def _curl_row(d: int, octaves: str, label: str) -> Row:
    out = "v2" if d == 2 else "v3"
    sig = (f"(state: Int, {_NAMES[d]}: {_VEC[d]}, octaves: Int, lacunarity: Float, gain: Float)"
           f" -> {'Vector2' if d == 2 else 'Vector3'}")
    return Row("curlnoise", sig, ("u", _POS[d]), (out,), label=label,
               body=f"y0 = wp.curlnoise(x0, x1, {octaves}, F(1.7), F(0.6))",
               sample=(states, wide), ref=lambda s, p: np_curl(s, p, 2, 1.7, 0.6),
               ref_rtol=1e-9, ref_atol=1e-10)


NOISE_ROWS: list[Row] = [r for d in (1, 2, 3, 4) for r in _noise_rows(d)] + [
    row for d in (2, 3, 4) for row in (
        _curl_row(d, "2", f"v{d},octaves=2"),
        _curl_row(d, "wp.uint32(x0 % wp.uint32(1) + wp.uint32(2))", f"v{d},runtime-octaves"),
    )
]

ROWS: list[Row] = DRAW_ROWS + NOISE_ROWS
