"""wp.inverse of a float32 4x4 matrix: cofactors, determinant and scaling in double precision,
rounded once, so ill-conditioned random matrices still give m * inverse(m) close to identity
(as Warp's inverse, which also works in double). Gradients still flow through the casts."""

from __future__ import annotations

import numpy as np

import gradloom as wp


@wp.kernel
def _inverses(m: wp.array(dtype=wp.mat44), inv: wp.array(dtype=wp.mat44),
              prod: wp.array(dtype=wp.mat44)):
    i = wp.tid()
    inv[i] = wp.inverse(m[i])
    prod[i] = m[i] * inv[i]


def test_float32_4x4_inverses_are_accurate() -> None:
    rng = np.random.default_rng(42)
    n = 1024
    a, b, c = (rng.random((n, 4, 4)) for _ in range(3))
    mats = (a @ b + 2.0 * c).astype(np.float32)  # some of them badly conditioned
    m = wp.array(mats, dtype=wp.mat44)
    inv, prod = wp.zeros_like(m), wp.zeros_like(m)
    wp.launch(_inverses, dim=n, inputs=[m, inv, prod])
    np.testing.assert_allclose(prod.numpy(), np.broadcast_to(np.eye(4), (n, 4, 4)), atol=1e-3)
    # each entry within a few float32 roundings of the exact inverse of the float32 matrix
    exact = np.linalg.inv(mats.astype(np.float64))
    scale = np.abs(exact).max(axis=(1, 2), keepdims=True)
    assert np.max(np.abs(inv.numpy() - exact) / scale) < 1e-5


@wp.kernel
def _trace_of_inverse(m: wp.array(dtype=wp.mat44), out: wp.array(dtype=float)):
    out[0] = wp.trace(wp.inverse(m[0]))


def test_the_gradient_is_minus_inverse_squared_transposed() -> None:
    rng = np.random.default_rng(1)
    mat = (np.eye(4) * 3.0 + rng.random((4, 4))).astype(np.float32)
    m = wp.array(mat[None], dtype=wp.mat44, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_trace_of_inverse, dim=1, inputs=[m, out])
    tape.backward(grads={out: wp.ones_like(out)})
    inv = np.linalg.inv(mat.astype(np.float64))
    np.testing.assert_allclose(m.grad.numpy()[0], -(inv @ inv).T, rtol=1e-4, atol=1e-6)
