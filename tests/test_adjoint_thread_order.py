"""The order an adjoint runs its threads in (pipeline.thread_order): launch order where its
thread plan says the order cannot matter, last first where a gradient passes between threads
through memory, and last first again for a launch whose zero-stride view defeats the plan's
proof (runtime/cpu/launch.py runs the variant that keeps the reverse order)."""

from __future__ import annotations

import numpy as np

import gradloom as wp
from gradloom.runtime.cpu.launch import prepared_adjoint


@wp.kernel
def _energy(F: wp.array(dtype=wp.mat33), energy: wp.array(dtype=float)):
    i = wp.tid()
    f = F[i]
    log_j = wp.log(wp.determinant(f))
    wp.atomic_add(energy, 0, 0.5 * wp.trace(wp.transpose(f) @ f) - log_j + 2.0 * log_j * log_j)


@wp.kernel
def _integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt
    v[i] = v[i] * 0.5


@wp.kernel
def _read_first_then_overwrite(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    # every thread reads y[0], which thread 0 then overwrites: the read's gradient reaches x[0]
    # only if thread 0's adjoint runs after the others' (last first)
    i = wp.tid()
    a = y[0]
    y[i] = a + x[i] * x[i]


@wp.kernel
def _scaled(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * float(i + 1)


def test_an_adjoint_of_thread_own_accesses_runs_in_launch_order_with_exact_gradients():
    rng = np.random.default_rng(3)
    fs = (np.eye(3) + 0.1 * rng.standard_normal((37, 3, 3))).astype(np.float32)
    F = wp.array(fs, dtype=wp.mat33, requires_grad=True)
    e = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_energy, len(fs), inputs=[F, e])
    tape.backward(loss=e)
    compiled = prepared_adjoint(_energy).compiled
    assert not compiled.reverse_threads and compiled.reversed == "adjoint:rev"
    f64 = fs.astype(np.float64)
    log_j = np.log(np.linalg.det(f64))[:, None, None]
    inv_t = np.transpose(np.linalg.inv(f64), (0, 2, 1))
    expected = f64 - inv_t + 4.0 * log_j * inv_t  # d/dF of 0.5 tr(F^T F) - log J + 2 log^2 J
    np.testing.assert_allclose(F.grad.numpy(), expected, rtol=2e-4, atol=2e-5)


def test_a_fresh_variant_runs_in_launch_order_too():
    # large enough that Tape.zero() defers the zeroing, so backward runs a FRESH variant
    n = 1 << 17
    rng = np.random.default_rng(4)
    x = wp.array(rng.random((n, 3)).astype(np.float32), dtype=wp.vec3, requires_grad=True)
    v = wp.array(rng.random((n, 3)).astype(np.float32), dtype=wp.vec3, requires_grad=True)
    seed_x, seed_v = rng.random((n, 3)).astype(np.float32), rng.random((n, 3)).astype(np.float32)
    for _ in range(2):  # the second backward finds the gradients Tape.zero() left pending
        tape = wp.Tape()
        with tape:
            wp.launch(_integrate, n, inputs=[x, v, 0.25])
        tape.backward(grads={x: wp.array(seed_x, dtype=wp.vec3),
                             v: wp.array(seed_v, dtype=wp.vec3)})
        np.testing.assert_allclose(x.grad.numpy(), seed_x, rtol=1e-6)
        np.testing.assert_allclose(v.grad.numpy(), 0.25 * seed_x + 0.5 * seed_v, rtol=1e-6)
        tape.zero()
    fresh = [p.compiled for name, p in prepared_adjoint(_integrate).variants.items()
             if name.startswith("fresh:")]
    assert fresh and all(not c.reverse_threads and c.reversed.endswith(":rev") for c in fresh)


def test_an_adjoint_passing_gradients_between_threads_keeps_the_reverse_order():
    xs = np.array([0.5, -1.5, 2.0, 1.0], dtype=np.float32)
    x = wp.array(xs, dtype=float, requires_grad=True)
    y = wp.array([3.0, 0.0, 0.0, 0.0], dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_read_first_then_overwrite, len(xs), inputs=[x, y])
    tape.backward(grads={y: wp.ones(len(xs), dtype=float)})
    compiled = prepared_adjoint(_read_first_then_overwrite).compiled
    assert compiled.reverse_threads and compiled.reversed is None
    # y[0] = 3 + x0^2 is read by threads 1..3: d(sum y)/dx0 = 2 x0 (own) + 3 * 2 x0 (theirs);
    # the serial forward's thread 0 ran first, so threads 1..3 read its new y[0]
    expected = 2.0 * xs.astype(np.float64)
    expected[0] *= 4.0
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_a_zero_stride_output_runs_the_reverse_variant():
    # every thread stores into the one element a zero-stride view reaches: the last store
    # wins, so its gradient belongs to the last thread; in launch order the first would take it
    n = 5
    out_mem = wp.zeros(1, dtype=float, requires_grad=True)
    out = wp.array(ptr=out_mem.ptr, shape=(n,), strides=(0,), dtype=float)
    out.grad = wp.array(ptr=out_mem.grad.ptr, shape=(n,), strides=(0,), dtype=float)
    x = wp.array(np.arange(1, n + 1, dtype=np.float32), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_scaled, n, inputs=[x, out])
    assert out_mem.numpy()[0] == n * n
    out_mem.grad.fill_(1.0)
    tape.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0, 0.0, float(n)])
    assert "adjoint:rev" in prepared_adjoint(_scaled).variants
