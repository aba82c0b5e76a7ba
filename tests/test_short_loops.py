"""Loops that provably end within POLL_TRIPS trips are emitted without strips or Ctrl-C polls
(codegen/loops.py `short`), and compute what the strip-mined form computes."""

from __future__ import annotations

import numpy as np

import gradloom as wp
from gradloom.codegen.signals import POLL_TRIPS


@wp.kernel
def short_shapes(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tid()
    acc = float(0.0)
    for j in range(3):  # counted, constant bounds
        acc += a[j] * float(t + 1)
    for j in range(10, 0, -3):  # counted down: 10, 7, 4, 1
        acc += float(j)
    for j in range(5):  # with a break: the condition is `j < 5 and not broken`
        if a[j] > 3.5:
            break
        acc += 100.0 * a[j]
    k = int(0)
    while k < 4 and a[k] < 2.5:  # a while loop and-ed with a constant bound
        acc += 1000.0
        k += 1
    out[t] = acc


@wp.kernel
def long_constant(out: wp.array(dtype=float)):
    t = wp.tid()
    acc = float(0.0)
    for _j in range(3 * POLL_TRIPS):  # longer than a strip: polled
        acc += 1.0
    out[t] = acc


@wp.kernel
def runtime_bound(out: wp.array(dtype=float), n: int):
    t = wp.tid()
    acc = float(0.0)
    for _j in range(n):  # unknown trip count: polled
        acc += 1.0
    out[t] = acc


def _expected(a: np.ndarray, t: int) -> float:
    acc = sum(float(a[j]) * (t + 1) for j in range(3)) + (10 + 7 + 4 + 1)
    for j in range(5):
        if a[j] > 3.5:
            break
        acc += 100.0 * float(a[j])
    k = 0
    while k < 4 and a[k] < 2.5:
        acc += 1000.0
        k += 1
    return acc


def test_short_loops_compute_what_the_loops_compute():
    a_np = np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32)
    a = wp.array(a_np, dtype=float, device="cpu")
    out = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(short_shapes, dim=4, inputs=[a, out], device="cpu")
    np.testing.assert_allclose(out.numpy(), [_expected(a_np, t) for t in range(4)], rtol=1e-6)


def test_short_loops_have_no_strips_long_ones_keep_them():
    text, _ = short_shapes._codegen("gl_test_short_shapes", False)
    assert str(POLL_TRIPS) not in text  # no strip of POLL_TRIPS trips, no trip counter
    for kernel in (long_constant, runtime_bound):
        text, _ = kernel._codegen(f"gl_test_{kernel.key}", False)
        assert str(POLL_TRIPS) in text, kernel.key


def test_long_constant_loop_runs_across_strips():
    out = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(long_constant, dim=2, inputs=[out], device="cpu")
    np.testing.assert_array_equal(out.numpy(), [3.0 * POLL_TRIPS] * 2)
