"""The adjoint of a kernel that stores in both branches of an if (passes/threads.py): its reverse
part mirrors the branches and takes each branch's store offset out of the forward's if (the
other branch yields a placeholder); inside a branch on the same condition that offset is the
branch's own, so the adjoint is thread-own and may run split across workers and in lanes.
Branches storing at different elements keep the adjoint serial."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom import config
from gradloom.passes.threads import thread_plan
from gradloom.pipeline import Variant, kernel_ir


@wp.kernel
def _select(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    if x[i] > 0.0:
        y[i] = wp.sin(x[i]) * 2.0
    else:
        y[i] = x[i] * x[i] * 3.0


@wp.kernel
def _select_shifted(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    if x[i] > 0.0:
        y[i] = wp.sin(x[i]) * 2.0
    else:
        y[(i + 1) % n] = x[i] * x[i] * 3.0


@pytest.fixture
def _settings():
    saved = config.num_threads, config.simd
    yield
    config.num_threads, config.simd = saved


def _plan(kernel):
    ir, _ = kernel_ir(kernel, Variant.ADJOINT)
    return thread_plan(ir, permutations=True)


def test_stores_in_both_branches_leave_the_adjoint_thread_own():
    assert _plan(_select).serial is None
    assert _plan(_select_shifted).serial is not None  # the else branch's store is shared


def _gradient(xs: np.ndarray, threads: int, simd: bool) -> np.ndarray:
    config.num_threads, config.simd = threads, simd
    x = wp.array(xs, dtype=float, requires_grad=True)
    y = wp.zeros(len(xs), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_select, len(xs), inputs=[x, y])
    tape.backward(grads={y: wp.array(np.linspace(0.5, 1.5, len(xs), dtype=np.float32))})
    return x.grad.numpy().copy()


@pytest.mark.usefixtures("_settings")
def test_its_gradients_are_exact_split_and_in_lanes_as_serially():
    n = 200_003  # enough threads to split, and a tail
    xs = np.random.default_rng(5).uniform(-1, 1, n).astype(np.float32)
    serial, split = _gradient(xs, 1, False), _gradient(xs, 2, True)
    np.testing.assert_array_equal(serial.view(np.uint32), split.view(np.uint32))
    x64 = xs.astype(np.float64)
    seed = np.linspace(0.5, 1.5, n, dtype=np.float32).astype(np.float64)
    expected = seed * np.where(x64 > 0, 2.0 * np.cos(x64), 6.0 * x64)
    np.testing.assert_allclose(split, expected, rtol=2e-6, atol=1e-6)


@pytest.mark.usefixtures("_settings")
def test_branches_storing_at_other_elements_keep_exact_gradients():
    config.num_threads = 2
    xs = np.array([0.5, -1.0, 2.0, -0.25, 1.5], dtype=np.float32)
    x = wp.array(xs, dtype=float, requires_grad=True)
    y = wp.zeros(len(xs), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_select_shifted, len(xs), inputs=[x, y, len(xs)])
    tape.backward(grads={y: wp.ones(len(xs), dtype=float)})
    x64 = xs.astype(np.float64)
    # thread i writes y[i] (x > 0) or y[i + 1] (x <= 0); where two threads write one element,
    # the later one's value is what y holds (threads 2 and 4 overwrite 1's and 3's)
    target = [i if v > 0 else (i + 1) % len(xs) for i, v in enumerate(xs)]
    last = {j: i for i, j in enumerate(target)}
    slope = np.where(x64 > 0, 2.0 * np.cos(x64), 6.0 * x64)
    expected = [slope[i] if last[j] == i else 0.0 for i, j in enumerate(target)]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)
    assert expected[1] == expected[3] == 0.0
