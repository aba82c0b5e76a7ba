"""Two vectors of threads per trip of the SIMD loop (codegen/lanes.py `interleaves`): a long body
of window accesses only runs 32 lanes on a 16-lane host, with the bits of the scalar loop (and
so of one vector per trip); a body with a gather, a loop or a short one keeps one vector."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gradloom as wp
from gradloom import config
from gradloom.codegen import lanes
from gradloom.ir.nodes import walk_ops
from gradloom.pipeline import Variant, kernel_ir

pytestmark = pytest.mark.usefixtures("simd_width_16")


@wp.kernel
def _energy(F: wp.array(dtype=wp.mat33), mu: float, lam: float, e: wp.array(dtype=float)):
    i = wp.tid()
    f = F[i]
    log_j = wp.log(wp.determinant(f))
    w = 0.5 * mu * (wp.trace(wp.transpose(f) @ f) - 3.0) - mu * log_j + 0.5 * lam * log_j * log_j
    wp.atomic_add(e, 0, w)


@wp.kernel
def _energy_gathered(F: wp.array(dtype=wp.mat33), idx: wp.array(dtype=int), mu: float,
                     lam: float, e: wp.array(dtype=float)):
    i = wp.tid()
    f = F[idx[i]]
    log_j = wp.log(wp.determinant(f))
    w = 0.5 * mu * (wp.trace(wp.transpose(f) @ f) - 3.0) - mu * log_j + 0.5 * lam * log_j * log_j
    wp.atomic_add(e, 0, w)


@wp.kernel
def _branchy(F: wp.array(dtype=wp.mat33), out: wp.array(dtype=wp.vec3)):
    # a long body whose lanes take different branches: masks of 32 lanes
    i = wp.tid()
    f = F[i]
    j = wp.determinant(f)
    h = f @ f
    v = wp.vec3(wp.exp(-h[0, 1] * h[0, 1]), wp.sqrt(wp.abs(h[2, 2]) + 1.0), j * j)
    if f[0, 0] > 1.0:
        g = wp.transpose(f) @ f
        v = wp.vec3(wp.log(j) * g[0, 0], wp.sin(g[1, 1]), wp.trace(g) * j)
    out[i] = v


def _lanes_of(kernel, variant) -> set[int]:
    text, facts = kernel._codegen("gl_test_interleave", variant)
    assert facts["lanes"] is None  # the loop runs in lanes
    return {int(w) for w in re.findall(r"<(\d+) x float>", text)}


def test_a_long_adjoint_of_windows_runs_two_vectors_per_trip():
    assert 32 in _lanes_of(_energy, "adjoint")
    assert 32 not in _lanes_of(_energy, False)  # the forward: short, and a shared sum


def test_a_long_adjoint_with_a_gather_keeps_one_vector_per_trip():
    assert 32 not in _lanes_of(_energy_gathered, "adjoint")


def test_which_bodies_may_interleave():
    adjoint, _ = kernel_ir(_energy, Variant.ADJOINT)
    forward, _ = kernel_ir(_energy, Variant.FORWARD)
    assert len(list(walk_ops(adjoint.body))) > lanes.INTERLEAVE_OPS
    assert lanes.interleaves(adjoint, 16)
    assert not lanes.interleaves(adjoint, 8)  # 16 registers of AVX2 cannot hold two vectors
    assert not lanes.interleaves(forward, 16)


def _gradients(simd: bool, fs: np.ndarray, idx: np.ndarray | None) -> list[np.ndarray]:
    config.simd = simd
    F = wp.array(fs, dtype=wp.mat33, requires_grad=True)
    e = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        if idx is None:
            wp.launch(_energy, len(fs), inputs=[F, 1.0, 10.0, e])
        else:
            wp.launch(_energy_gathered, len(fs), inputs=[F, wp.array(idx, dtype=int), 1.0,
                                                         10.0, e])
    tape.backward(loss=e)
    return [e.numpy().copy(), F.grad.numpy().copy()]


@pytest.mark.parametrize("gathered", [False, True])
def test_two_vectors_per_trip_give_the_scalar_loops_bits(gathered):
    n = 5 * 32 + 7  # whole trips of two vectors, one vector, and a tail
    rng = np.random.default_rng(11)
    fs = (np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3))).astype(np.float32)
    idx = np.arange(n, dtype=np.int32) if gathered else None
    scalar, in_lanes = _gradients(False, fs, idx), _gradients(True, fs, idx)
    np.testing.assert_array_equal(scalar[1].view(np.uint32), in_lanes[1].view(np.uint32))
    f64 = fs.astype(np.float64)
    log_j = np.log(np.linalg.det(f64))[:, None, None]
    inv_t = np.transpose(np.linalg.inv(f64), (0, 2, 1))
    expected = f64 - inv_t + 10.0 * log_j * inv_t  # mu F - mu F^-T + lam log J F^-T
    np.testing.assert_allclose(in_lanes[1], expected, rtol=1e-4, atol=1e-4)


def test_masked_branches_of_two_vectors_per_trip_give_the_scalar_loops_bits():
    assert 32 in _lanes_of(_branchy, "adjoint")
    n = 3 * 32 + 11
    rng = np.random.default_rng(12)
    fs = (np.eye(3) + 0.2 * rng.standard_normal((n, 3, 3))).astype(np.float32)
    results = []
    for simd in (False, True):
        config.simd = simd
        F = wp.array(fs, dtype=wp.mat33, requires_grad=True)
        out = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(_branchy, n, inputs=[F, out])
        tape.backward(grads={out: wp.array(np.ones((n, 3), np.float32), dtype=wp.vec3)})
        results.append([out.numpy().copy(), F.grad.numpy().copy()])
    on = fs[:, 0, 0] > 1.0
    assert on.any() and (~on).any()  # both branches run within the vectors
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    assert np.isfinite(results[1][1]).all()
