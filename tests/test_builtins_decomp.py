"""svd3, svd2, qr3, eig3 against numpy.linalg: reconstruction, orthogonality, ordering and sign
conventions, singular values / eigenvalues, degenerate inputs, and errors for bad calls.

The table rows in builtin_cases/decomp.py check gradients; this file checks forward values on many
matrices, including the degenerate ones a sampler never produces.
"""

# no `from __future__ import annotations`: kernel annotations here name closure variables

import re
from typing import Any

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

GRADLOOM = BACKEND == "gradloom"
FLOATS = ["float64", "float32"]
TOL = {"float64": 1e-12, "float32": 2e-6}  # relative to the matrix's norm


def _types(ft: str) -> tuple[Any, Any, Any, Any]:
    f = getattr(wp, ft)
    return (wp.types.matrix(shape=(3, 3), dtype=f), wp.types.vector(length=3, dtype=f),
            wp.types.matrix(shape=(2, 2), dtype=f), wp.types.vector(length=2, dtype=f))


def make_kernels(M3: Any, V3: Any, M2: Any, V2: Any) -> dict[str, Any]:
    @wp.kernel
    def svd3_k(a: wp.array(dtype=M3), u: wp.array(dtype=M3), s: wp.array(dtype=V3),
               v: wp.array(dtype=M3)):
        i = wp.tid()
        U = a[i]
        sigma = wp.get_diag(a[i])
        V = a[i]
        wp.svd3(a[i], U, sigma, V)
        u[i] = U
        s[i] = sigma
        v[i] = V

    @wp.kernel
    def svd2_k(a: wp.array(dtype=M2), u: wp.array(dtype=M2), s: wp.array(dtype=V2),
               v: wp.array(dtype=M2)):
        i = wp.tid()
        U, sigma, V = wp.svd2(a[i])
        u[i] = U
        s[i] = sigma
        v[i] = V

    @wp.kernel
    def qr3_k(a: wp.array(dtype=M3), q: wp.array(dtype=M3), r: wp.array(dtype=M3)):
        i = wp.tid()
        Q = a[i]
        R = a[i]
        wp.qr3(a[i], Q, R)
        q[i] = Q
        r[i] = R

    @wp.kernel
    def eig3_k(a: wp.array(dtype=M3), q: wp.array(dtype=M3), d: wp.array(dtype=V3)):
        i = wp.tid()
        Q, e = wp.eig3(a[i])
        q[i] = Q
        d[i] = e

    return {"svd3": svd3_k, "svd2": svd2_k, "qr3": qr3_k, "eig3": eig3_k}


KERNELS = {ft: make_kernels(*_types(ft)) for ft in FLOATS}


def run(name: str, ft: str, a: np.ndarray) -> list[np.ndarray]:
    """Launch one decomposition over a batch of matrices; its outputs as float64 arrays."""
    m3, v3, m2, v2 = _types(ft)
    k = a.shape[-1]
    mt, vt = (m3, v3) if k == 3 else (m2, v2)
    out_types = {"svd3": (mt, vt, mt), "svd2": (mt, vt, mt), "qr3": (mt, mt), "eig3": (mt, vt)}
    src = wp.array(a.astype(np.float64 if ft == "float64" else np.float32), dtype=mt,
                   device=DEVICE)
    outs = [wp.zeros(len(a), dtype=t, device=DEVICE) for t in out_types[name]]
    wp.launch(KERNELS[ft][name], dim=len(a), inputs=[src, *outs], device=DEVICE)
    return [np.asarray(o.numpy(), dtype=np.float64) for o in outs]


def _t(m: np.ndarray) -> np.ndarray:
    return np.swapaxes(m, -1, -2)


def random_matrices(k: int, n: int = 400, seed: int = 0) -> np.ndarray:
    """Gaussian matrices over several scales, a quarter of them badly conditioned."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, k, k)) * 10.0 ** rng.uniform(-2, 2, (n, 1, 1))
    a[: n // 4, :, -1] *= 1e-3
    return a


def degenerate_matrices(k: int) -> np.ndarray:
    """Zero, identity, repeated values, rank 1 and 2, reflections, already-diagonal matrices."""
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=k), rng.normal(size=k)
    perm = np.eye(k)[::-1]
    mats = [np.zeros((k, k)), np.eye(k), -np.eye(k), 2.5 * np.eye(k), np.outer(x, y), perm,
            np.diag(np.arange(1.0, k + 1)), np.diag(np.arange(k, 0.0, -1.0)),
            np.triu(rng.normal(size=(k, k)))]
    if k == 3:
        mats += [np.outer(x, y) + np.outer(y, x), np.diag([2.0, 2.0, -1.0]),
                 np.diag([1.0, -3.0, 2.0])]
    return np.array([*mats, np.eye(k) + 1e-9 * rng.normal(size=(k, k))])  # nearly repeated last


def _rel(err: np.ndarray, a: np.ndarray) -> np.ndarray:
    scale = np.linalg.norm(a, axis=(1, 2))
    return np.abs(err).reshape(len(a), -1).max(axis=1) / np.where(scale > 0, scale, 1.0)


def assert_orthogonal(m: np.ndarray, tol: float, rotation: bool) -> None:
    k = m.shape[-1]
    np.testing.assert_allclose(m @ _t(m), np.broadcast_to(np.eye(k), m.shape), atol=tol * 10)
    if rotation:
        np.testing.assert_allclose(np.linalg.det(m), 1.0, atol=tol * 10)


# -- svd -------------------------------------------------------------------------------------------

def check_svd(a: np.ndarray, u: np.ndarray, s: np.ndarray, v: np.ndarray, tol: float,
              three: bool) -> None:
    rec = np.einsum("nij,nj,nkj->nik", u, s, v)
    assert _rel(rec - a, a).max() <= tol * 50, "U diag(sigma) V^T differs from A"
    assert_orthogonal(u, tol, rotation=three)
    assert_orthogonal(v, tol, rotation=three)
    mags = np.abs(s)
    scale = np.linalg.norm(a, axis=(1, 2))[:, None]
    assert np.all(mags[:, :-1] >= mags[:, 1:] - tol * 10 * scale), "not sorted by magnitude"
    want = np.linalg.svd(a, compute_uv=False)
    assert (np.abs(mags - want) <= tol * 50 * scale).all(), "singular values differ from numpy"
    nonneg = s[:, :2] if three else s
    assert (nonneg >= 0).all(), "these singular values must be nonnegative"


@pytest.mark.parametrize("ft", FLOATS)
@pytest.mark.parametrize("kind", ["random", "degenerate"])
def test_svd3(ft: str, kind: str) -> None:
    a = random_matrices(3) if kind == "random" else degenerate_matrices(3)
    u, s, v = run("svd3", ft, a)
    check_svd(a, u, s, v, TOL[ft], three=True)
    det = np.linalg.det(a)
    clear = np.abs(det) > 1e-3 * np.linalg.norm(a, axis=(1, 2)) ** 3
    assert np.all(np.sign(s[clear, 2]) == np.sign(det[clear])), "sigma[2] must have det's sign"


@pytest.mark.parametrize("ft", FLOATS)
@pytest.mark.parametrize("kind", ["random", "degenerate"])
def test_svd2(ft: str, kind: str) -> None:
    a = random_matrices(2) if kind == "random" else degenerate_matrices(2)
    u, s, v = run("svd2", ft, a)
    check_svd(a, u, s, v, TOL[ft], three=False)


@pytest.mark.skipif(not GRADLOOM, reason="which factor carries the reflection is gradloom's choice")
def test_svd2_v_is_a_rotation() -> None:
    a = random_matrices(2)
    _, _, v = run("svd2", "float64", a)
    np.testing.assert_allclose(np.linalg.det(v), 1.0, atol=1e-12)


# -- qr --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ft", FLOATS)
@pytest.mark.parametrize("kind", ["random", "degenerate"])
def test_qr3(ft: str, kind: str) -> None:
    a = random_matrices(3) if kind == "random" else degenerate_matrices(3)
    q, r = run("qr3", ft, a)
    tol = TOL[ft]
    assert _rel(q @ r - a, a).max() <= tol * 50, "Q R differs from A"
    assert_orthogonal(q, tol, rotation=True)
    assert np.all(np.tril(r, -1) == 0.0), "R is not upper triangular"
    assert (r[:, 0, 0] >= 0).all() and (r[:, 1, 1] >= 0).all()


def test_qr3_matches_numpy_up_to_signs() -> None:
    """For full-rank A the QR with R[0,0], R[1,1] > 0 and det Q = +1 is unique: it is numpy's
    QR with the signs fixed."""
    a = random_matrices(3)
    q, r = run("qr3", "float64", a)
    nq, nr = np.linalg.qr(a)
    d = np.sign(np.diagonal(nr, axis1=1, axis2=2)).copy()
    d[:, 2] *= np.linalg.det(nq * d[:, None, :])
    scale = np.linalg.norm(a, axis=(1, 2))[:, None, None]
    np.testing.assert_allclose(q, nq * d[:, None, :], atol=1e-9)
    np.testing.assert_allclose(r / scale, nr * d[:, :, None] / scale, atol=1e-12)


# -- eig -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ft", FLOATS)
@pytest.mark.parametrize("kind", ["random", "degenerate"])
def test_eig3(ft: str, kind: str) -> None:
    m = random_matrices(3) if kind == "random" else degenerate_matrices(3)
    a = m + _t(m)
    q, d = run("eig3", ft, a)
    tol = TOL[ft]
    assert _rel(np.einsum("nij,nj,nkj->nik", q, d, q) - a, a).max() <= tol * 50
    assert_orthogonal(q, tol, rotation=True)
    want = np.linalg.eigvalsh(a)
    got = d if GRADLOOM else np.sort(d, axis=1)  # gradloom sorts ascending; Warp promises no order
    scale = np.linalg.norm(a, axis=(1, 2))[:, None]
    assert (np.abs(got - want) <= tol * 50 * scale).all(), "eigenvalues differ from numpy"


@pytest.mark.skipif(not GRADLOOM, reason="gradloom decomposes the symmetric part (Warp: undefined)")
def test_eig3_uses_the_symmetric_part() -> None:
    a = random_matrices(3)
    _, d = run("eig3", "float64", a)
    np.testing.assert_allclose(d, np.linalg.eigvalsh(0.5 * (a + _t(a))), rtol=1e-9,
                               atol=1e-12 * np.abs(a).max())


# -- gradients at degenerate inputs ---------------------------------------------------------------

@wp.kernel
def eig_losses(a: wp.array(dtype=wp.mat33d), trace: wp.array(dtype=wp.float64),
               square: wp.array(dtype=wp.float64)):
    i = wp.tid()
    _Q, d = wp.eig3(a[i])
    trace[i] = d[0] + d[1] + d[2]
    square[i] = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]


def _eig_loss_grad(a: np.ndarray, which: int) -> np.ndarray:
    src = wp.array(a, dtype=wp.mat33d, device=DEVICE, requires_grad=True)
    outs = [wp.zeros(len(a), dtype=wp.float64, device=DEVICE, requires_grad=True) for _ in range(2)]
    tape = wp.Tape()
    with tape:
        wp.launch(eig_losses, dim=len(a), inputs=[src, *outs], device=DEVICE)
    seed = wp.array(np.ones(len(a)), dtype=wp.float64, device=DEVICE)
    tape.backward(grads={outs[which]: seed})
    return np.asarray(src.grad.numpy())


def _check_symmetric_losses(a: np.ndarray, tol: float) -> None:
    """sum(d) = trace(A) has gradient I; sum(d^2) = |A|_F^2 has gradient 2A (A symmetric)."""
    np.testing.assert_allclose(_eig_loss_grad(a, 0), np.broadcast_to(np.eye(3), a.shape),
                               atol=tol)
    scale = np.abs(a).reshape(len(a), -1).max(axis=1)[:, None, None]
    scale = np.where(scale > 0, scale, 1.0)
    np.testing.assert_allclose(_eig_loss_grad(a, 1) / scale, 2.0 * a / scale, atol=tol)


@pytest.mark.skipif(not GRADLOOM, reason="Warp's eig3 gradients at repeated eigenvalues differ")
def test_eig3_symmetric_losses_differentiate_at_repeated_eigenvalues() -> None:
    """Warp's contract: losses that are symmetric functions of d have gradients even where
    eigenvalues repeat (exactly: the Jacobi rotations are then exactly zero)."""
    m = degenerate_matrices(3)[:-1]  # all but the nearly-identity matrix (see below)
    r = random_matrices(3, 50)
    _check_symmetric_losses(np.concatenate([m + _t(m), r + _t(r)]), 1e-9)


@pytest.mark.skipif(not GRADLOOM, reason="documents gradloom's accuracy")
def test_eig3_symmetric_losses_near_repeated_eigenvalues() -> None:
    """A known limit of differentiating through Jacobi rotations: at eigenvalue gaps g (relative)
    the rotation angles' derivatives are ~1/g, and they multiply rounding residuals ~1e-16, so the
    gradient of a symmetric loss is off by ~1e-16/g (here g ~ 1e-9: ~1e-7, and up to ~2e-6 for
    the closest pair of the 20 when every operation rounds on its own, without FMA)."""
    rng = np.random.default_rng(3)
    m = np.eye(3) + 1e-9 * rng.normal(size=(20, 3, 3))
    _check_symmetric_losses(m + _t(m), 1e-5)


@wp.kernel
def decomp_sums(a: wp.array(dtype=wp.mat33d), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    U, s, V = wp.svd3(a[i])
    Q, R = wp.qr3(a[i])
    out[i] = wp.ddot(U, V) + s[0] + s[1] + s[2] + wp.ddot(Q, R)


@pytest.mark.skipif(not GRADLOOM, reason="gradloom's no-NaN guarantee")
def test_gradients_stay_finite_at_degenerate_inputs() -> None:
    a = degenerate_matrices(3)
    src = wp.array(a, dtype=wp.mat33d, device=DEVICE, requires_grad=True)
    out = wp.zeros(len(a), dtype=wp.float64, device=DEVICE, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(decomp_sums, dim=len(a), inputs=[src, out], device=DEVICE)
    tape.backward(grads={out: wp.array(np.ones(len(a)), dtype=wp.float64, device=DEVICE)})
    assert np.isfinite(src.grad.numpy()).all()


# -- bad calls -------------------------------------------------------------------------------------
# (gradloom only: Warp compiles a whole module at once, so these would break its other kernels)

if GRADLOOM:

    @wp.kernel
    def svd3_of_mat22(a: wp.array(dtype=wp.mat22), s: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        _U, sigma, _V = wp.svd3(a[i])
        s[i] = sigma

    @wp.kernel
    def svd3_out_not_a_name(a: wp.array(dtype=wp.mat33), s: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        U = a[i]
        sigma = s[i]
        wp.svd3(a[i], U, sigma, a[i])

    @wp.kernel
    def qr3_out_wrong_type(a: wp.array(dtype=wp.mat33), s: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        Q = a[i]
        R = s[i]
        wp.qr3(a[i], Q, R)


@pytest.mark.skipif(not GRADLOOM, reason="gradloom's error messages")
@pytest.mark.parametrize("kernel, message", [] if not GRADLOOM else [
    (svd3_of_mat22, "svd3() needs a float 3x3 matrix"),
    (svd3_out_not_a_name, "argument 4 is an output and must be a variable name"),
    (qr3_out_wrong_type, "qr3(): output R must be a variable of type"),
])
def test_bad_calls_name_the_builtin(kernel: Any, message: str) -> None:
    from gradloom.errors import CompileError

    n = 2
    a = wp.zeros(n, dtype=wp.mat22 if kernel is svd3_of_mat22 else wp.mat33, device=DEVICE)
    s = wp.zeros(n, dtype=wp.vec3, device=DEVICE)
    with pytest.raises(CompileError, match=re.escape(message)):
        wp.launch(kernel, dim=n, inputs=[a, s], device=DEVICE)
