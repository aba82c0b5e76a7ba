"""gradloom's own float32 log and exp (ir/float32_math.py, codegen/float32_math.py): correctly
rounded against float64 numpy, and the same bits in the scalar thread loop, the SIMD lanes, and
Python scope."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom import config
from gradloom.ir.float32_math import exp_f32, log_f32

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 1e-45, -1e-45,
                    1.1754942e-38, 1.1754944e-38, 3.4028235e38, 88.72283, 88.722839, 89.0,
                    -87.33654, -103.27893, -103.972084, -104.0, 0.5, 2.0, 1.4142135, 1.4142137,
                    0.70710677, 0.99999994, 1.0000001, 1e-7, -1e-7, 200.0, -200.0, 1e30],
                   np.float32)


def _inputs(n: int, seed: int) -> np.ndarray:
    """Random float32 bit patterns (every sign, exponent, subnormals, inf, NaN) and the specials."""
    bits = np.random.default_rng(seed).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([SPECIAL, bits.view(np.float32)])


def _rounded(fn: np.ufunc, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return fn(x.astype(np.float64)).astype(np.float32)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equal values (NaN matching NaN, -0.0 not matching 0.0)."""
    return ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))


@pytest.mark.parametrize("mine,ref", [(log_f32, np.log), (exp_f32, np.exp)])
def test_correctly_rounded_against_float64(mine, ref) -> None:  # type: ignore[no-untyped-def]
    x = _inputs(2_000_000, 1)
    got, want = mine(x), _rounded(ref, x)
    assert _same(got, want).all(), x[~_same(got, want)][:5]


def test_log_is_correctly_rounded_on_every_float_from_half_to_two() -> None:
    x = np.arange(0x3F000000, 0x40000000, 7, dtype=np.uint32).view(np.float32)
    assert _same(log_f32(x), _rounded(np.log, x)).all()


@wp.kernel
def log_exp(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.log(x[i])
    z[i] = wp.exp(x[i])


@wp.kernel
def log_exp_half(x: wp.array(dtype=wp.float16), y: wp.array(dtype=wp.float16)):
    i = wp.tid()
    y[i] = wp.exp(wp.log(x[i]))


@pytest.mark.parametrize("simd", [False, True])
def test_kernels_compute_the_reference_bits(monkeypatch, simd: bool) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(config, "simd", simd)
    xs = _inputs(100_003, 2)
    x, y, z = wp.array(xs), wp.zeros(len(xs), dtype=float), wp.zeros(len(xs), dtype=float)
    wp.launch(log_exp, len(xs), inputs=[x, y, z])
    np.testing.assert_array_equal(y.numpy().view(np.uint32), log_f32(xs).view(np.uint32))
    np.testing.assert_array_equal(z.numpy().view(np.uint32), exp_f32(xs).view(np.uint32))
    assert _same(y.numpy(), _rounded(np.log, xs)).all()


def test_python_scope_calls_compute_what_kernels_do() -> None:
    xs = SPECIAL[np.isfinite(SPECIAL)][:12]
    x, y, z = wp.array(xs), wp.zeros(len(xs), dtype=float), wp.zeros(len(xs), dtype=float)
    wp.launch(log_exp, len(xs), inputs=[x, y, z])
    for v, ly, ez in zip(xs, y.numpy(), z.numpy(), strict=True):
        assert _same(np.float32(wp.log(wp.float32(v))), ly)
        assert _same(np.float32(wp.exp(wp.float32(v))), ez)


def test_half_goes_through_float32() -> None:
    xs = np.array([0.5, 1.0, 3.0, 1000.0, 0.001, 60000.0], np.float16)
    x, y = wp.array(xs, dtype=wp.float16), wp.zeros(len(xs), dtype=wp.float16)
    wp.launch(log_exp_half, len(xs), inputs=[x, y])
    expected = exp_f32(log_f32(xs.astype(np.float32)).astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(y.numpy(), expected.astype(np.float16))


@wp.kernel
def log_exp_loss(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, wp.log(1.0 + wp.exp(x[i])) * wp.exp(-0.5 * x[i]))


def test_gradients_match_float64_finite_differences() -> None:
    xs = np.linspace(-3.0, 3.0, 37)
    x = wp.array(xs.astype(np.float32), requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(log_exp_loss, len(xs), inputs=[x, out])
    tape.backward(loss=out)

    def f(v: np.ndarray) -> np.ndarray:
        return np.log1p(np.exp(v)) * np.exp(-0.5 * v)
    h = 1e-6
    fd = (f(xs + h) - f(xs - h)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-5, atol=1e-6)
