"""gradloom.optim.linear (Warp's warp.optim.linear): the Krylov solvers against scipy's direct
solve, Warp's return values and tolerances, functors, operators and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradloom as wp

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")
S = wp.sparse
L = wp.optim.linear


def laplacian_2d(n: int, shift: float = 0.0):
    """The 5-point Laplacian on an n x n grid (+ shift I), as scipy CSR."""
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kronsum(t, t) + shift * sp.identity(n * n)).tocsr()


def to_bsr(csr, dtype=wp.float64):
    coo = csr.tocoo()
    return S.bsr_from_triplets(csr.shape[0], csr.shape[1], wp.array(coo.row.astype(np.int32)),
                               wp.array(coo.col.astype(np.int32)), wp.array(coo.data, dtype=dtype))


def nonsymmetric(n: int):
    """A convection-diffusion-like nonsymmetric, diagonally dominant matrix."""
    t = sp.diags([-1.3, 3.0, -0.7], [-1, 0, 1], shape=(n, n))
    return (sp.kronsum(t, t)).tocsr()


@pytest.mark.parametrize("solver", ["cg", "cr"])
@pytest.mark.parametrize("precond", [None, "diag"])
def test_symmetric_solvers_match_direct_solve(solver, precond):
    A = laplacian_2d(12, 0.1)
    rng = np.random.default_rng(0)
    b = rng.standard_normal(A.shape[0])
    Ab = to_bsr(A)
    M = L.preconditioner(Ab, precond) if precond else None
    x = wp.zeros(A.shape[0], dtype=wp.float64)
    niter, err, atol = getattr(L, solver)(Ab, wp.array(b, dtype=wp.float64), x, tol=1e-10,
                                          maxiter=1000, M=M)
    assert 0 < niter < 1000 and err <= atol
    assert atol == pytest.approx(1e-10 * np.linalg.norm(b))
    np.testing.assert_allclose(x.numpy(), spla.spsolve(A.tocsc(), b), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("solver", ["bicgstab", "gmres"])
@pytest.mark.parametrize("precond", [None, "diag"])
def test_nonsymmetric_solvers_match_direct_solve(solver, precond):
    A = nonsymmetric(10)
    rng = np.random.default_rng(1)
    b = rng.standard_normal(A.shape[0])
    Ab = to_bsr(A)
    M = L.preconditioner(Ab, precond) if precond else None
    x = wp.zeros(A.shape[0], dtype=wp.float64)
    _niter, err, atol = getattr(L, solver)(Ab, wp.array(b, dtype=wp.float64), x, tol=1e-10,
                                          maxiter=2000, M=M)
    assert err <= atol
    np.testing.assert_allclose(x.numpy(), spla.spsolve(A.tocsc(), b), rtol=1e-7, atol=1e-8)


def test_default_tolerances_and_callback():
    """Warp's defaults: tol = atol = 1e-6 (float32) / 1e-12 (float64); atol = max(atol, tol |b|);
    the callback sees iteration 0 and the last iteration."""
    A = wp.array(np.diag([2.0, 3.0, 4.0]), dtype=wp.float32)
    b = wp.array([2.0, 6.0, 12.0], dtype=wp.float32)
    calls = []
    niter, _err, atol = L.cg(A, b, wp.zeros_like(b), callback=lambda i, e, t: calls.append(i),
                            check_every=1)
    assert atol == pytest.approx(1e-6 * math.sqrt(4 + 36 + 144), rel=1e-6)
    assert calls[0] == 0 and calls[-1] == niter == 3
    _, _, atol = L.cg(A, b, wp.zeros_like(b), atol=1e-3)
    assert atol == pytest.approx(1e-3 * math.sqrt(184), rel=1e-6)
    b64 = wp.array([2.0, 6.0, 12.0], dtype=wp.float64)
    _, _, atol = L.cg(wp.array(np.diag([2.0, 3.0, 4.0])), b64, wp.zeros_like(b64))
    assert atol == pytest.approx(1e-12 * math.sqrt(184))


def test_block_system_with_vector_unknowns():
    rng = np.random.default_rng(2)
    A = laplacian_2d(6, 1.0)
    K = sp.kron(A, np.eye(3) + 0.1 * np.ones((3, 3))).tocsr()  # SPD with 3x3 blocks
    bsr = K.tobsr(blocksize=(3, 3))
    rows = np.repeat(np.arange(bsr.shape[0] // 3), np.diff(bsr.indptr)).astype(np.int32)
    Ab = S.bsr_from_triplets(36, 36, wp.array(rows), wp.array(bsr.indices.astype(np.int32)),
                             wp.array(bsr.data, dtype=wp.mat33d))
    b = rng.standard_normal(108)
    x = wp.zeros(36, dtype=wp.vec3d)
    _, err, atol = L.cg(Ab, wp.array(b.reshape(36, 3), dtype=wp.vec3d), x, tol=1e-10,
                        M=L.preconditioner(Ab, "diag"))
    assert err <= atol
    np.testing.assert_allclose(x.numpy().ravel(), spla.spsolve(K.tocsc(), b), rtol=1e-7, atol=1e-8)


def test_functor_reuse_and_custom_operator():
    A1, A2 = laplacian_2d(5, 0.5), laplacian_2d(5, 2.0)
    b = wp.array(np.ones(25), dtype=wp.float64)
    x = wp.zeros(25, dtype=wp.float64)
    state = L.cg(to_bsr(A1), b, x, tol=1e-10, run=False)
    assert isinstance(state, L.CG)
    state()
    np.testing.assert_allclose(x.numpy(), spla.spsolve(A1.tocsc(), np.ones(25)), rtol=1e-7)
    x2 = wp.zeros(25, dtype=wp.float64)
    state(A=to_bsr(A2), x=x2)
    np.testing.assert_allclose(x2.numpy(), spla.spsolve(A2.tocsc(), np.ones(25)), rtol=1e-7)
    with pytest.raises(ValueError):
        state(b=wp.zeros(7, dtype=wp.float64))

    Ab = to_bsr(A2)

    def matvec(xv, yv, zv, alpha, beta):  # z = alpha A x + beta y, as Warp's protocol says
        if beta != 0.0 and yv.ptr != zv.ptr:
            wp.copy(zv, yv)
        S.bsr_mv(Ab, xv, zv, alpha, beta)

    op = L.LinearOperator((25, 25), wp.float64, Ab.device, matvec)
    x3 = wp.zeros(25, dtype=wp.float64)
    L.gmres(op, b, x3, tol=1e-10)
    np.testing.assert_allclose(x3.numpy(), x2.numpy(), rtol=1e-7)


def test_restart_and_argument_errors():
    A = wp.array(np.eye(3))
    b = wp.array([1.0, 2.0, 3.0])
    x = wp.zeros_like(b)
    with pytest.raises(TypeError):
        L.cg(A, b, x, restart=True)
    with pytest.raises(ValueError):
        L.cr(A, b, x, restart=0)
    with pytest.raises(ValueError, match="batch_offsets"):
        L.aslinearoperator(A, max_batch_length=3)
    with pytest.raises(ValueError, match="ptype"):
        L.preconditioner(A, "ilu")
    assert L.preconditioner(A, "id") is None
    niter, err, atol = L.cg(A, b, x, maxiter=0.5, check_every=1, restart=1)
    assert niter == 1 and err <= atol


def test_block_jacobi_inverts_diagonal_blocks():
    """'block_jacobi_direct' applies the inverse of each diagonal block (numpy's solve); a singular
    block, and a non-symmetric one under 'block_jacobi_sequential', act as the identity."""
    rng = np.random.default_rng(3)
    blocks = [c @ c.T + 3.0 * np.eye(3) for c in rng.uniform(-1, 1, (4, 3, 3))]
    blocks[2] = np.zeros((3, 3))
    rows = np.arange(4, dtype=np.int32)
    A = S.bsr_from_triplets(4, 4, wp.array(rows), wp.array(rows), wp.array(np.stack(blocks),
                                                                           dtype=wp.mat33d))
    x = rng.standard_normal(12)
    z = wp.zeros(12, dtype=wp.float64)
    L.preconditioner(A, "block_jacobi_direct").matvec(wp.array(x), z, z, 1.0, 0.0)
    expected = np.concatenate([x[3 * i:3 * i + 3] if i == 2 else np.linalg.solve(b, x[3 * i:3 * i + 3])
                               for i, b in enumerate(blocks)])
    np.testing.assert_allclose(z.numpy(), expected, rtol=1e-10)
    nonsym = S.bsr_from_triplets(1, 1, wp.array([0], dtype=int), wp.array([0], dtype=int),
                                 wp.array(np.array([[[4.0, 1.0], [0.1, 3.0]]]), dtype=wp.mat22d))
    z2 = wp.zeros(2, dtype=wp.float64)
    L.preconditioner(nonsym, "block_jacobi_sequential").matvec(wp.array([1.0, 2.0]), z2, z2, 1.0, 0.0)
    np.testing.assert_array_equal(z2.numpy(), [1.0, 2.0])
    with pytest.raises(ValueError, match="positive diagonals"):  # a zero block: FSAI refuses it
        L.preconditioner(A, "fsai")
    with pytest.raises(ValueError, match="ptype must be"):
        L.preconditioner(A, "ilu")
    for shape, nrow, ncol, what in (((3, 2), 2, 3, "square matrix blocks"), ((3, 3), 3, 5, "square matrix")):
        bad = S.bsr_zeros(nrow, ncol, wp.types.matrix(shape, wp.float64))
        with pytest.raises(ValueError, match=what):
            L.preconditioner(bad, "block_jacobi_direct")


@pytest.mark.parametrize("solver,kw", [(L.cg, {}), (L.cr, {}), (L.bicgstab, {}),
                                       (L.gmres, {"restart": 2})])
def test_batches_solve_separately_and_leave_the_inactive_tail(solver, kw):
    # two batches of a diagonal system (scalars 0-1 and 2-3) and a tail (4-5) in no batch
    d = np.array([2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    rhs = np.array([2.0, 6.0, 1200.0, 2000.0, 100.0, 200.0])
    A = L.aslinearoperator(wp.array(d.reshape(3, 2), dtype=wp.vec2d),
                           batch_offsets=wp.array([0, 2, 4], dtype=int), max_batch_length=2)
    x = wp.array(np.array([[0.0, 0.0], [0.0, 0.0], [7.0, 8.0]]), dtype=wp.vec2d)
    _, err, atol = solver(A, wp.array(rhs.reshape(3, 2), dtype=wp.vec2d), x, tol=1e-8,
                          maxiter=20, check_every=1, **kw)
    assert err <= atol
    np.testing.assert_allclose(x.numpy().ravel(), [1.0, 2.0, 300.0, 400.0, 7.0, 8.0], rtol=1e-7)
