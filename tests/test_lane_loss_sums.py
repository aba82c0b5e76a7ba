"""The lane plan's cost rule for loss sums (passes/lanes.py `_unprofitable`): an addition every
lane makes into one element outside loops (`wp.atomic_add(e, 0, v)`) is summed as a tree, so a
kernel whose only other work is a product or two still runs in lanes, and so does its tangent
kernel (two such sums: the loss and its tangent). Values checked against a model of the tree
order and against float64; `config.deterministic` (sums in lane order) keeps the scalar loop."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom import config
from gradloom.autograd import jvp


@pytest.fixture(autouse=True)
def _serial():
    saved = config.num_threads, config.simd, config.simd_width
    config.num_threads = 1
    yield
    config.num_threads = saved[0]
    config.simd, config.simd_width = saved[1], saved[2]


@wp.kernel
def square_sum(y: wp.array(dtype=float), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, 0, y[i] * y[i])


@wp.kernel
def square_sum_branch(y: wp.array(dtype=float), e: wp.array(dtype=float)):
    i = wp.tid()
    if y[i] > 0.0:
        wp.atomic_add(e, 0, y[i] * y[i])


@wp.kernel
def two_adds_one_array(y: wp.array(dtype=float), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, 0, y[i])
    wp.atomic_add(e, 1, y[i] * y[i])


@wp.kernel
def scatter_square(y: wp.array(dtype=float), idx: wp.array(dtype=int), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, idx[i], y[i] * y[i])


def reason(kernel):
    return kernel._codegen("gl_test_loss_lanes", False)[1]["lanes"]


def halving_total(values: np.ndarray, width: int) -> np.float32:
    """Each full vector of threads adds its lanes' halving sum; the tail adds thread by thread."""
    total = np.float32(0.0)
    full = len(values) - len(values) % width
    for start in range(0, full, width):
        lanes = values[start:start + width]
        while len(lanes) > 1:
            lanes = lanes[:len(lanes) // 2] + lanes[len(lanes) // 2:]
        total = np.float32(total + lanes[0])
    for v in values[full:]:
        total = np.float32(total + v)
    return total


def test_loss_sums_run_in_lanes_and_their_tangents_too():
    config.simd, config.simd_width = True, 16
    assert reason(square_sum) is None
    assert reason(square_sum_branch) is None
    assert reason(square_sum.tangent_kernel()) is None
    # what codegen logs per lane, not a tree, still counts as a cost
    assert "faster one thread at a time" in reason(two_adds_one_array)
    assert "faster one thread at a time" in reason(scatter_square)


def test_loss_sums_keep_lane_order_when_deterministic():
    config.simd, config.simd_width = True, 16
    config.deterministic = True
    try:
        assert "faster one thread at a time" in reason(square_sum)
    finally:
        config.deterministic = False


@pytest.mark.parametrize("width", (4, 16))
def test_loss_sum_values_follow_the_tree(width):
    config.simd, config.simd_width = True, width
    n = 211
    g = np.random.default_rng(3)
    y = (g.standard_normal(n) * 10.0 ** g.integers(-2, 3, n)).astype(np.float32)
    e = wp.zeros(1, dtype=float)
    wp.launch(square_sum, n, inputs=[wp.array(y), e])
    sq = (y * y).astype(np.float32)
    assert e.numpy()[0] == halving_total(sq, width)
    exact = float(np.sum(y.astype(np.float64) ** 2))
    assert abs(e.numpy()[0] - exact) <= 1e-5 * exact


def test_loss_tangent_in_lanes_matches_float64():
    config.simd, config.simd_width = True, 16
    n = 1000
    g = np.random.default_rng(5)
    y = g.uniform(-1, 1, n).astype(np.float32)
    v = g.standard_normal(n).astype(np.float32)

    def f(a):
        e = wp.zeros(1, dtype=float)
        wp.launch(square_sum, n, inputs=[a, e])
        return e

    _, t = jvp(f, [wp.array(y)], [v])
    exact = float(np.sum(2.0 * y.astype(np.float64) * v.astype(np.float64)))
    assert abs(t.numpy()[0] - exact) <= 1e-4 * np.sum(np.abs(2.0 * y * v))
