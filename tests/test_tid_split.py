"""`wp.tid()` of 2-D to 4-D launches: indices computed without integer division (codegen/tid_split.py).

Every index of every thread is checked against numpy, on the SIMD and the scalar thread loop,
in forward kernels and in adjoints (whose threads run last first); the division in double it
rests on is checked against integer division where rounding is closest to going wrong.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp


@wp.kernel
def index2(out: wp.array2d(dtype=wp.int64)):
    i, j = wp.tid()
    out[i, j] = wp.int64(i) * wp.int64(1 << 24) + wp.int64(j)


@wp.kernel
def index3(out: wp.array3d(dtype=int)):
    i, j, k = wp.tid()
    out[i, j, k] = i * 1000000 + j * 1000 + k


@wp.kernel
def index4(out: wp.array4d(dtype=int)):
    i, j, k, l = wp.tid()
    out[i, j, k, l] = ((i * 100 + j) * 100 + k) * 100 + l


@wp.kernel
def weighted2(x: wp.array2d(dtype=wp.float64), y: wp.array2d(dtype=wp.float64)):
    i, j = wp.tid()
    y[i, j] = x[i, j] * wp.float64(i * 7 + j)


@pytest.fixture(params=[True, False], ids=["simd", "scalar"])
def simd(request):
    old = wp.config.simd
    wp.config.simd = request.param
    yield request.param
    wp.config.simd = old


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (5, 16), (7, 17), (2, 1000003), (1000, 33),
                                   (40000, 3)])
def test_2d_indices(simd, shape):
    out = wp.zeros(shape, dtype=wp.int64)
    wp.launch(index2, shape, inputs=[out])
    i, j = np.indices(shape, dtype=np.int64)
    np.testing.assert_array_equal(out.numpy(), i * (1 << 24) + j)


@pytest.mark.parametrize("shape", [(2, 3, 4), (3, 17, 19), (5, 1, 40), (2, 300, 5), (9, 9, 9)])
def test_3d_indices(simd, shape):
    out = wp.zeros(shape, dtype=int)
    wp.launch(index3, shape, inputs=[out])
    i, j, k = np.indices(shape)
    np.testing.assert_array_equal(out.numpy(), i * 1000000 + j * 1000 + k)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 1, 17, 18), (1, 20, 2, 33)])
def test_4d_indices(simd, shape):
    out = wp.zeros(shape, dtype=int)
    wp.launch(index4, shape, inputs=[out])
    i, j, k, m = np.indices(shape)
    np.testing.assert_array_equal(out.numpy(), ((i * 100 + j) * 100 + k) * 100 + m)


@pytest.mark.parametrize("shape", [(3, 5), (4, 37), (33, 16)])
def test_adjoint_sees_the_same_indices(simd, shape):
    rng = np.random.default_rng(0)
    x = wp.array(rng.uniform(-1, 1, shape), dtype=wp.float64, requires_grad=True)
    y = wp.zeros(shape, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(weighted2, shape, inputs=[x, y])
    seed = rng.uniform(0.5, 1.5, shape)
    tape.backward(grads={y: wp.array(seed, dtype=wp.float64)})
    i, j = np.indices(shape)
    np.testing.assert_array_equal(x.grad.numpy(), seed * (i * 7 + j))


def test_division_in_double_is_exact_below_2_to_50():
    """⌊(x + ½)·fl(1/d)⌋ == x // d where it is closest to failing: x = q·d + d − 1 and
    x = q·d (fraction nearest an integer), large x, divisors near powers of two and primes."""
    rng = np.random.default_rng(1)
    divisors = np.array([1, 2, 3, 7, 15, 16, 17, 127, 128, 129, 1000003, (1 << 20) - 1,
                         (1 << 20) + 1, (1 << 25) - 39, (1 << 31) - 1], dtype=np.uint64)
    for d in divisors:
        q = rng.integers(0, (1 << 50) // int(d), 20000, dtype=np.uint64)
        for x in (q * d, q * d + d - np.uint64(1)):
            x = x[x < (1 << 50)]
            inv = np.float64(1.0) / np.float64(d)
            got = ((x.astype(np.float64) + 0.5) * inv).astype(np.uint64)
            np.testing.assert_array_equal(got, x // d)


@wp.kernel
def masked_rows(x: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    if j % 3 != 0:  # a lane mask over consecutive elements: masked vector load and store
        out[i, j] = x[i, j] * 2.0


@wp.kernel
def clamped_stencil(p: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    n, m = p.shape[0], p.shape[1]
    s = p[wp.clamp(i - 1, 0, n - 1), j] + p[wp.clamp(i + 1, 0, n - 1), j]
    s += p[i, wp.clamp(j - 1, 0, m - 1)] + p[i, wp.clamp(j + 1, 0, m - 1)]
    out[i, j] = s * 0.25


@pytest.mark.parametrize("shape", [(4, 40), (33, 16), (3, 5)])
def test_masked_and_clamped_accesses_along_rows(simd, shape):
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    out = wp.zeros(shape, dtype=float)
    wp.launch(masked_rows, shape, inputs=[wp.array(x), out])
    want = np.where(np.indices(shape)[1] % 3 != 0, x * 2, 0)
    np.testing.assert_array_equal(out.numpy(), want)
    wp.launch(clamped_stencil, shape, inputs=[wp.array(x), out])
    pad = np.pad(x, 1, mode="edge")
    want = ((pad[:-2, 1:-1] + pad[2:, 1:-1]) + (pad[1:-1, :-2] + pad[1:-1, 2:])) * np.float32(0.25)
    np.testing.assert_array_equal(out.numpy(), want)
