"""Warp's dense helpers in kernels (wp.dense_gemm, dense_chol, dense_subs, dense_solve): values
against numpy, dense_gemm's gradient against float64 central differences.

Runs on gradloom by default and on warp-lang with GL_TEST_BACKEND=warp (wpcompat.py).
"""

import numpy as np
import pytest
from wpcompat import DEVICE, wp


@wp.kernel
def gemm(m: int, n: int, p: int, t1: int, t2: int, a: wp.array(dtype=float),
         b: wp.array(dtype=float), c: wp.array(dtype=float)):
    wp.dense_gemm(m, n, p, t1, t2, a, b, c)


@wp.kernel
def chol_solve(n: int, a: wp.array(dtype=float), reg: float, factor: wp.array(dtype=float),
               rhs: wp.array(dtype=float), x: wp.array(dtype=float)):
    wp.dense_chol(n, a, reg, factor)
    wp.dense_solve(n, a, factor, rhs, x)


def flat(x):
    return wp.array(np.ascontiguousarray(x, dtype=np.float32).ravel(), dtype=float,
                    device=DEVICE)


@pytest.mark.parametrize("t1", [0, 1])
@pytest.mark.parametrize("t2", [0, 1])
def test_dense_gemm_with_transposed_operands(t1, t2):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    c = wp.zeros(6, dtype=float, device=DEVICE)
    wp.launch(gemm, dim=1, inputs=[3, 2, 4, t1, t2, flat(a.T if t1 else a), flat(b.T if t2 else b),
                                   c], device=DEVICE)
    np.testing.assert_allclose(c.numpy().reshape(3, 2), a @ b, rtol=1e-5, atol=1e-5)


def test_dense_cholesky_then_solve():
    rng = np.random.default_rng(4)
    m = rng.standard_normal((5, 5))
    spd = m @ m.T + 5.0 * np.eye(5)
    factor = wp.zeros(25, dtype=float, device=DEVICE)
    x = wp.zeros(5, dtype=float, device=DEVICE)
    rhs = rng.standard_normal(5)
    wp.launch(chol_solve, dim=1, inputs=[5, flat(spd), 0.25, factor, flat(rhs), x], device=DEVICE)
    low = np.tril(factor.numpy().reshape(5, 5))
    shifted = spd + 0.25 * np.eye(5)
    np.testing.assert_allclose(low @ low.T, shifted, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(shifted, rhs), rtol=1e-4, atol=1e-4)


def test_dense_gemm_gradient_matches_finite_differences():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    weights = rng.standard_normal(4)
    a_wp = wp.array(a.astype(np.float32).ravel(), dtype=float, requires_grad=True, device=DEVICE)
    b_wp = wp.array(b.astype(np.float32).ravel(), dtype=float, requires_grad=True, device=DEVICE)
    c = wp.zeros(4, dtype=float, requires_grad=True, device=DEVICE)
    tape = wp.Tape()
    with tape:
        wp.launch(gemm, dim=1, inputs=[2, 2, 3, 0, 0, a_wp, b_wp, c], device=DEVICE)
    tape.backward(grads={c: wp.array(weights.astype(np.float32), dtype=float, device=DEVICE)})

    def loss(a_, b_):
        return float(((a_ @ b_).ravel() * weights).sum())

    eps = 1e-6
    fd_a = np.array([(loss(a + eps * e.reshape(2, 3), b) - loss(a - eps * e.reshape(2, 3), b))
                     / (2 * eps) for e in np.eye(6)])
    fd_b = np.array([(loss(a, b + eps * e.reshape(3, 2)) - loss(a, b - eps * e.reshape(3, 2)))
                     / (2 * eps) for e in np.eye(6)])
    np.testing.assert_allclose(a_wp.grad.numpy(), fd_a, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b_wp.grad.numpy(), fd_b, rtol=1e-4, atol=1e-5)
