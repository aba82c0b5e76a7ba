"""gradloom's own float32 exp, log, sin and cos (codegen/float32_math.py): within half an ulp
of the exact value (float64 numpy) in the scalar thread loop, in SIMD lanes of every width and
in Python scope, with the same bits in all three, and the special values C gives."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom import config

FUNCS = {"exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos}
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -1e-45, 1.1754942e-38,
                    1.1754944e-38, 3.4028235e38, 88.72283, 88.722839, 89.0, -87.33654,
                    -103.27893, -103.972084, -104.0, 0.5, 2.0, 0.99999994, 1.0000001, 1e-7,
                    -1e-7, 199.9, 200.0, -200.0, 524287.97, 524288.0, 1e30, -1e30],
                   np.float32)


@pytest.fixture(autouse=True)
def _restore():
    saved = config.simd, config.simd_width
    yield
    config.simd, config.simd_width = saved


def _inputs(seed: int) -> np.ndarray:
    """Random float32 bit patterns (every sign and exponent, subnormals, inf, NaN), the ranges
    the functions are used in, and the specials."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near = np.concatenate([rng.uniform(-10, 10, 200_000), rng.uniform(0, 3, 100_000),
                           rng.uniform(-104, 89, 100_000), rng.uniform(-5e5, 5e5, 100_000),
                           rng.uniform(0.99, 1.01, 100_000)])  # log's cancellation near 1
    return np.concatenate([SPECIAL, bits, near.astype(np.float32)])


@wp.kernel
def four(x: wp.array(dtype=float), ex: wp.array(dtype=float), lg: wp.array(dtype=float),
         sn: wp.array(dtype=float), cs: wp.array(dtype=float)):
    i = wp.tid()
    ex[i] = wp.exp(x[i])
    lg[i] = wp.log(x[i])
    sn[i] = wp.sin(x[i])
    cs[i] = wp.cos(x[i])


def _run(xs: np.ndarray, simd: bool, width: int = 0) -> dict[str, np.ndarray]:
    config.simd, config.simd_width = simd, width
    x = wp.array(xs)
    outs = [wp.zeros(len(xs), dtype=float) for _ in range(4)]
    wp.launch(four, len(xs), inputs=[x, *outs])
    return {name: o.numpy() for name, o in zip(FUNCS, outs, strict=True)}


def _ulps(got: np.ndarray, xs: np.ndarray, ref: np.ufunc) -> np.ndarray:
    """|got - exact| in ulps of the float32 result, where that is finite and non-zero."""
    with np.errstate(all="ignore"):
        exact = ref(xs.astype(np.float64))
        rounded = exact.astype(np.float32)
    ok = np.isfinite(rounded) & (rounded != 0)
    return np.abs(got[ok] - exact[ok]) / np.spacing(np.abs(rounded[ok])).astype(np.float64)


def test_within_half_an_ulp_and_the_same_bits_scalar_and_in_lanes() -> None:
    xs = _inputs(1)
    scalar = _run(xs, False)
    for width in (4, 8, 16):
        lanes = _run(xs, True, width)
        for name in FUNCS:
            np.testing.assert_array_equal(lanes[name].view(np.uint32),
                                          scalar[name].view(np.uint32), err_msg=name)
    reduced = np.abs(xs) < 524288.0  # sin/cos past it: the C library's (glibc: 0.56 ulp)
    for name, ref in FUNCS.items():
        mask = reduced if name in ("sin", "cos") else np.ones(len(xs), bool)
        assert _ulps(scalar[name][mask], xs[mask], ref).max() <= 0.5001, name


def test_special_values() -> None:
    xs = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 100.0, -200.0, -1e-45],
                  np.float32)
    got = _run(xs, True, 16)
    inf, nan = np.inf, np.nan
    assert got["exp"][5] == np.float32(np.exp(-1.0))
    np.testing.assert_array_equal(got["log"], [-inf, -inf, inf, nan, nan, nan,
                                               np.float32(np.log(100.0)), nan, nan])
    np.testing.assert_array_equal(got["exp"][:5], [1.0, 1.0, inf, 0.0, nan])
    assert got["exp"][6] == inf and got["exp"][7] == 0.0
    assert np.signbit(got["sin"][1]) and got["sin"][0] == 0.0 and got["cos"][1] == 1.0
    assert np.isnan(got["sin"][2:5]).all() and np.isnan(got["cos"][2:5]).all()


def test_python_scope_calls_compute_what_kernels_do() -> None:
    xs = np.concatenate([SPECIAL, np.random.default_rng(2).uniform(-50, 50, 400)
                         .astype(np.float32)])
    got = _run(xs, True, 16)
    for name in FUNCS:
        fn = getattr(wp, name)
        host = np.array([fn(wp.float32(v)) for v in xs], np.float32)
        np.testing.assert_array_equal(host.view(np.uint32), got[name].view(np.uint32),
                                      err_msg=name)


@wp.kernel
def half_chain(x: wp.array(dtype=wp.float16), y: wp.array(dtype=wp.float16)):
    i = wp.tid()
    y[i] = wp.exp(x[i] * wp.float16(0.01)) + wp.sin(x[i])


def test_half_goes_through_float32() -> None:
    xs = np.array([0.5, 1.0, 3.0, 1000.0, 0.001, 60000.0], np.float16)
    x, y = wp.array(xs, dtype=wp.float16), wp.zeros(len(xs), dtype=wp.float16)
    wp.launch(half_chain, len(xs), inputs=[x, y])
    f32 = xs.astype(np.float32)
    scaled = (xs * np.float16(0.01)).astype(np.float32)
    ex = _run(scaled, False)["exp"].astype(np.float16)
    sn = _run(f32, False)["sin"].astype(np.float16)
    np.testing.assert_array_equal(y.numpy(), ex + sn)


@wp.kernel
def softplus_loss(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, wp.log(1.0 + wp.exp(x[i])) * wp.cos(x[i]) + wp.sin(x[i]))


@pytest.mark.parametrize("simd", [False, True])
def test_gradients_match_float64_finite_differences(simd: bool) -> None:
    config.simd = simd
    xs = np.linspace(-3.0, 3.0, 37)
    x = wp.array(xs.astype(np.float32), requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(softplus_loss, len(xs), inputs=[x, out])
    tape.backward(loss=out)

    def f(v: np.ndarray) -> np.ndarray:
        return np.log1p(np.exp(v)) * np.cos(v) + np.sin(v)
    h = 1e-6
    fd = (f(xs + h) - f(xs - h)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-5, atol=1e-6)
