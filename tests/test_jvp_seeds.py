"""Forward-mode seeds are read where they are (runtime/tape/tangent.py: a borrowed seed): never
written, and copied first wherever the program would write them, so results equal those of a
copied seed. Expected tangents are analytic."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom.autograd import hvp, jvp
from gradloom.errors import TapeError


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def sin_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = wp.sin(x[i])


@wp.kernel
def set_zero(w: wp.array(dtype=float)):
    i = wp.tid()
    w[i] = 0.0


@wp.kernel
def sum_sq(x: wp.array(dtype=float), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, 0, x[i] * x[i])


N = 37
RNG = np.random.default_rng(11)
X0 = RNG.uniform(-1, 1, N).astype(np.float32)
V0 = RNG.standard_normal(N).astype(np.float32)


def test_seed_is_not_written_by_an_in_place_update():
    x, v = wp.array(X0), V0.copy()

    def f(a):
        wp.launch(sin_in_place, N, inputs=[a])
        y = wp.zeros(N, dtype=float)
        wp.launch(square, N, inputs=[a, y])
        return y

    _, t = jvp(f, [x], [v])
    assert np.array_equal(v, V0)
    expected = 2.0 * np.sin(X0.astype(np.float64)) * np.cos(X0) * V0
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_seed_that_is_the_input_itself():
    x = wp.array(X0)

    def f(a):
        wp.launch(sin_in_place, N, inputs=[a])  # overwrites the seed's memory too
        y = wp.zeros(N, dtype=float)
        wp.launch(square, N, inputs=[a, y])
        return y

    _, t = jvp(f, [x], [x.numpy()])
    expected = 2.0 * np.sin(X0.astype(np.float64)) * np.cos(X0) * X0
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_seed_in_memory_a_launch_overwrites_before_it_is_read():
    x, w = wp.array(X0), wp.array(V0)

    def f(a, b):
        wp.launch(set_zero, N, inputs=[b])  # the seed of `a` lives in b's memory
        y = wp.zeros(N, dtype=float)
        wp.launch(square, N, inputs=[a, y])
        return y

    _, t = jvp(f, [x, w], [w.numpy(), None])
    np.testing.assert_allclose(t.numpy(), 2.0 * X0.astype(np.float64) * V0, rtol=1e-6)
    assert not w.numpy().any()


def test_seed_in_memory_filled_by_an_array_operation():
    x, w = wp.array(X0), wp.array(V0)

    def f(a, b):
        b.zero_()
        y = wp.zeros(N, dtype=float)
        wp.launch(square, N, inputs=[a, y])
        return y

    _, t = jvp(f, [x, w], [w.numpy(), None])
    np.testing.assert_allclose(t.numpy(), 2.0 * X0.astype(np.float64) * V0, rtol=1e-6)


def test_wp_copy_over_a_seed_is_refused():
    x, w, z = wp.array(X0), wp.array(V0), wp.zeros(N, dtype=float)

    def f(a, b):
        wp.copy(b, z)
        y = wp.zeros(N, dtype=float)
        wp.launch(square, N, inputs=[a, y])
        return y

    with pytest.raises(TapeError, match="pass a copy"):
        jvp(f, [x, w], [w.numpy(), None])


def test_seed_of_a_slice_and_an_array_seed():
    base = wp.array(np.concatenate([X0, X0]))
    part = base[N:]
    seed = wp.array(V0)

    def f(a):
        y = wp.zeros(N, dtype=float)
        wp.launch(square, N, inputs=[a, y])
        return y

    _, t = jvp(f, [part], [seed])
    np.testing.assert_allclose(t.numpy(), 2.0 * X0.astype(np.float64) * V0, rtol=1e-6)
    assert np.array_equal(seed.numpy(), V0)


def test_hvp_leaves_its_direction_alone():
    x, v = wp.array(X0), V0.copy()

    def f(a):
        e = wp.zeros(1, dtype=float)
        wp.launch(sum_sq, N, inputs=[a, e])
        return e

    (hv,) = hvp(f, [x], [v])
    np.testing.assert_allclose(hv.numpy(), 2.0 * V0, rtol=1e-6)
    assert np.array_equal(v, V0)
