"""`warp.fem.linalg.symmetric_eigenvalues_qr` from a plain kernel (newton's Kamino LOX solver):
A = P^T diag(D) P with orthonormal rows, eigenvalues against numpy's in float64."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom.fem.linalg import symmetric_eigenvalues_qr

mat66 = wp.types.matrix(shape=(6, 6), dtype=wp.float32)
vec6 = wp.types.vector(length=6, dtype=wp.float32)


@wp.kernel
def _eig66(a: wp.array(dtype=mat66), d: wp.array(dtype=vec6), p: wp.array(dtype=mat66)):
    i = wp.tid()
    values, vectors = symmetric_eigenvalues_qr(a[i], 1.0e-7)
    d[i] = values
    p[i] = vectors


@wp.kernel
def _eig33d(a: wp.array(dtype=wp.mat33d), d: wp.array(dtype=wp.vec3d), p: wp.array(dtype=wp.mat33d)):
    i = wp.tid()
    values, vectors = symmetric_eigenvalues_qr(a[i], wp.float64(1.0e-14))
    d[i] = values
    p[i] = vectors


def _check(a: np.ndarray, d: np.ndarray, p: np.ndarray, tol: float) -> None:
    n = a.shape[-1]
    rebuilt = np.einsum("bki,bk,bkj->bij", p, d, p)
    np.testing.assert_allclose(rebuilt, a, atol=tol * np.abs(a).max())
    np.testing.assert_allclose(np.einsum("bik,bjk->bij", p, p), np.broadcast_to(np.eye(n), a.shape),
                               atol=tol)
    want = np.linalg.eigvalsh(a.astype(np.float64))
    np.testing.assert_allclose(np.sort(d, axis=1), want, atol=tol * np.abs(a).max())


@pytest.mark.parametrize("spread", [1.0, 1.0e3])
def test_random_symmetric_6x6_float32(spread):
    rng = np.random.default_rng(7)
    b = rng.standard_normal((64, 6, 6))
    scale = np.logspace(0, np.log10(spread), 6)
    a = ((b + b.transpose(0, 2, 1)) * np.sqrt(np.outer(scale, scale))).astype(np.float32)
    d, p = wp.zeros(64, dtype=vec6), wp.zeros(64, dtype=mat66)
    wp.launch(_eig66, 64, inputs=[wp.array(a, dtype=mat66), d, p])
    _check(a, d.numpy(), p.numpy(), 1e-5)


def test_diagonal_and_repeated_eigenvalues_float64():
    a = np.stack([np.diag([3.0, -1.0, 2.0]), np.full((3, 3), 1.0), np.eye(3) * 5.0])
    d, p = wp.zeros(3, dtype=wp.vec3d), wp.zeros(3, dtype=wp.mat33d)
    wp.launch(_eig33d, 3, inputs=[wp.array(a, dtype=wp.mat33d), d, p])
    _check(a, d.numpy(), p.numpy(), 1e-12)
    np.testing.assert_array_equal(d.numpy()[0], [3.0, -1.0, 2.0])  # already diagonal: untouched
