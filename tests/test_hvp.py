"""Hessian-vector products (gradloom.autograd.hvp, reverse mode over forward mode) against
float64 central differences of reverse-mode gradients (wp.Tape, checked against differences on
its own elsewhere), against analytic Hessians, and the symmetry u·(H v) = v·(H u)."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom.autograd import hvp
from gradloom.errors import GradloomError


@wp.kernel
def chain_energy(x: wp.array(dtype=wp.float64), e: wp.array(dtype=wp.float64), n: int):
    i = wp.tid()
    s = wp.float64(0.0)
    p = x[i]
    for _k in range(n):  # a runtime loop: its values go on the adjoint stack
        s = s + wp.sin(p) * x[(i + 1) % 6]
        p = p * x[i]
        if p > 2.0:
            p = wp.sqrt(p)
    wp.atomic_add(e, 0, s * s)


@wp.kernel
def square(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.exp(0.3 * x[i]) * x[(i + 2) % 6]


def chain_loss(x):
    y = wp.zeros(6, dtype=wp.float64)  # an intermediate without requires_grad
    wp.launch(square, 6, inputs=[x, y])
    e = wp.zeros(1, dtype=wp.float64)
    wp.launch(chain_energy, 6, inputs=[y, e, 3])
    return e


def _gradient(function, x0: np.ndarray) -> np.ndarray:
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        y = wp.zeros(6, dtype=wp.float64, requires_grad=True)
        wp.launch(square, 6, inputs=[x, y])
        e = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        wp.launch(chain_energy, 6, inputs=[y, e, 3])
    tape.backward(loss=e)
    return x.grad.numpy().copy()


def test_hvp_matches_differences_of_gradients_through_a_runtime_loop() -> None:
    rng = np.random.default_rng(5)
    x0, v = rng.uniform(0.2, 1.0, 6), rng.normal(size=6)
    hv = hvp(chain_loss, [wp.array(x0, dtype=wp.float64)], [v])[0].numpy()
    h = 1e-5
    fd = (_gradient(chain_loss, x0 + h * v) - _gradient(chain_loss, x0 - h * v)) / (2 * h)
    assert np.allclose(hv, fd, rtol=1e-6, atol=1e-8 * np.abs(fd).max()), (hv, fd)


def test_hessian_is_symmetric() -> None:
    rng = np.random.default_rng(6)
    x0, u, v = rng.uniform(0.2, 1.0, 6), rng.normal(size=6), rng.normal(size=6)
    hv = hvp(chain_loss, [wp.array(x0, dtype=wp.float64)], [v])[0].numpy()
    hu = hvp(chain_loss, [wp.array(x0, dtype=wp.float64)], [u])[0].numpy()
    assert np.dot(u, hv) == pytest.approx(np.dot(v, hu), rel=1e-12)


@wp.kernel
def quartic(x: wp.array(dtype=wp.float64), w: wp.array(dtype=wp.float64),
            e: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(e, 0, w[i] * x[i] * x[i] * x[i] * x[i] + x[i] * w[i] * w[i])


def test_analytic_hessian_of_two_inputs() -> None:
    """L = Σ w x⁴ + x w²: ∂²L/∂x² = 12 w x², ∂²L/∂x∂w = 4 x³ + 2 w, ∂²L/∂w² = 2 x."""
    x0, w0 = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5])
    vx, vw = np.array([1.0, 2.0, -1.0]), np.array([0.5, -0.5, 3.0])
    e = wp.zeros(1, dtype=wp.float64)
    hx, hw = hvp(quartic, [wp.array(x0, dtype=wp.float64), wp.array(w0, dtype=wp.float64)],
                 [vx, vw], dim=3, outputs=[e])
    assert np.allclose(hx.numpy(), 12 * w0 * x0**2 * vx + (4 * x0**3 + 2 * w0) * vw, rtol=1e-13)
    assert np.allclose(hw.numpy(), (4 * x0**3 + 2 * w0) * vx + 2 * x0 * vw, rtol=1e-13)
    # a direction on one input only still gives both inputs' rows of H v
    hx, hw = hvp(quartic, [wp.array(x0, dtype=wp.float64), wp.array(w0, dtype=wp.float64)],
                 [vx, None], dim=3, outputs=[wp.zeros(1, dtype=wp.float64)])
    assert np.allclose(hw.numpy(), (4 * x0**3 + 2 * w0) * vx, rtol=1e-13)


def test_inputs_gradients_are_left_alone_and_bad_losses_refused() -> None:
    x = wp.array(np.linspace(0.2, 1.0, 6), dtype=wp.float64, requires_grad=True)
    x.grad.fill_(7.0)
    hvp(chain_loss, [x], [np.ones(6)])
    assert np.all(x.grad.numpy() == 7.0)

    def not_a_loss(x):
        y = wp.zeros(6, dtype=wp.float64)
        wp.launch(square, 6, inputs=[x, y])
        return y

    with pytest.raises(GradloomError, match="one element"):
        hvp(not_a_loss, [x], [np.ones(6)])


@wp.kernel
def own_min_energy(slot: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64),
                   e: wp.array(dtype=wp.float64)):
    i = wp.tid()
    old = wp.atomic_min(slot, i, x[i] * x[i])  # the thread's own element: the old value exact
    wp.atomic_add(e, 0, old * old * x[i] + slot[i] * slot[i] * slot[i])


def _min_energy(s0: np.ndarray, x0: np.ndarray) -> float:
    e = wp.zeros(1, dtype=wp.float64)
    wp.launch(own_min_energy, 4, inputs=[wp.array(s0, dtype=wp.float64),
                                         wp.array(x0, dtype=wp.float64), e])
    return float(e.numpy()[0])


def test_hvp_through_atomic_min_at_the_threads_own_element() -> None:
    s0, x0 = np.array([0.3, 2.0, 0.1, 5.0]), np.array([0.5, -0.9, 0.7, 1.2])
    u, v = np.array([0.2, -0.4, 0.1, 0.3]), np.array([0.3, -0.2, 0.5, 0.1])
    hv = hvp(own_min_energy, [wp.array(s0, dtype=wp.float64), wp.array(x0, dtype=wp.float64)],
             [u, v], dim=4, outputs=[wp.zeros(1, dtype=wp.float64)])
    z = np.concatenate([s0, x0])
    d = np.concatenate([u, v])

    def gradient(p: np.ndarray, h: float = 1e-5) -> np.ndarray:
        return np.array([(_min_energy(*np.split(p + h * e, 2)) -
                          _min_energy(*np.split(p - h * e, 2))) / (2 * h) for e in np.eye(8)])

    h = 1e-4
    fd = (gradient(z + h * d) - gradient(z - h * d)) / (2 * h)
    got = np.concatenate([hv[0].numpy(), hv[1].numpy()])
    assert np.allclose(got, fd, rtol=1e-4, atol=1e-5), (got, fd)
