"""Prefetches in the SIMD thread loop (codegen/lane_memory.py `prefetch`): a long loop body asks
for its windows' cache lines a fixed number of vectors of threads ahead, in the direction the
window moves; a short one asks for nothing. Prefetches change no value: the kernels' results
are checked against numpy too."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gradloom as wp
from gradloom import config
from gradloom.codegen import lanes


@pytest.fixture(autouse=True)
def _width_16():
    saved = config.simd, config.simd_width, config.num_threads
    config.simd, config.simd_width, config.num_threads = True, 16, 1
    yield
    config.simd, config.simd_width, config.num_threads = saved


@wp.kernel
def long_body(F: wp.array(dtype=wp.mat33), out: wp.array(dtype=float)):
    i = wp.tid()
    f = F[i]
    j = wp.determinant(f) - 1.0
    out[i] = 0.5 * (wp.trace(wp.transpose(f) @ f) - 3.0) - j + 2.0 * j * j


@wp.kernel
def short_body(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


def prefetch_offsets(kernel, adjoint=False) -> list[tuple[int, int]]:
    """(byte offset from the window's start, 1 for a write) of each prefetch in the entry."""
    text, facts = kernel._codegen("gl_test_prefetch", adjoint)
    assert facts["lanes"] is None  # the loop runs in lanes
    geps = dict(re.findall(r"(%lpf\d+) = getelementptr i8, ptr %\S+, i64 (-?\d+)", text))
    calls = re.findall(r"call void @llvm\.prefetch\.p0\(ptr (%lpf\d+), i32 (\d)", text)
    return [(int(geps[p]), int(rw)) for p, rw in calls]


def energies(F: np.ndarray) -> np.ndarray:
    f = F.astype(np.float64)
    j = np.linalg.det(f) - 1.0
    return 0.5 * ((f * f).sum(axis=(1, 2)) - 3.0) - j + 2.0 * j * j


def test_a_long_body_prefetches_each_line_of_its_window_once_ahead():
    ahead = lanes.PREFETCH_VECTORS * 16 * 36  # 16 lanes' mat33 elements: 9 cache lines
    written = lanes.PREFETCH_VECTORS * 16 * 4  # `out`: one line, for a write
    assert sorted(prefetch_offsets(long_body)) == \
        sorted([(written, 1)] + [(ahead + 64 * k, 0) for k in range(9)])
    # the adjoint runs threads last first: its windows move backwards; read are F's window,
    # F.grad's (added into: read first) and out.grad's
    backwards = prefetch_offsets(long_body, adjoint=True)
    assert sorted(backwards) == sorted([(-written, 0)] + 2 * [(-ahead + 64 * k, 0)
                                                              for k in range(9)])
    assert prefetch_offsets(short_body) == []


def energies_and_grads(F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f = F.astype(np.float64)
    det = np.linalg.det(f)
    j = det - 1.0
    e = 0.5 * ((f * f).sum(axis=(1, 2)) - 3.0) - j + 2.0 * j * j
    # d det / dF = det · F^-T
    grad = f + ((4.0 * j - 1.0) * det)[:, None, None] * np.linalg.inv(f).transpose(0, 2, 1)
    return e, grad


@pytest.mark.parametrize("n", [5, 37, 1000])
def test_prefetching_kernels_compute_the_same(n):
    rng = np.random.default_rng(n)
    F0 = (np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3))).astype(np.float32)
    F = wp.array(F0, dtype=wp.mat33, requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(long_body, n, inputs=[F, out])
    tape.backward(grads={out: wp.ones(n, dtype=float)})
    e, grad = energies_and_grads(F0)
    np.testing.assert_allclose(out.numpy(), e, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(F.grad.numpy(), grad, rtol=1e-4, atol=1e-4)
