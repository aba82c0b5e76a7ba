"""FSAI preconditioner (gradloom.optim.linear.FSAI): factors checked against numpy inverses and
local solves, application against dense products, refits, and solver convergence."""

import numpy as np
import pytest

import gradloom as wp
import gradloom.sparse as sp
from gradloom.optim.linear import FSAI, cg, preconditioner

DEVICE = "cpu"


def csr(a, dtype=wp.float64, block=1):
    r, c = np.nonzero(a)
    A = sp.bsr_from_triplets(a.shape[0], a.shape[1], wp.array(r, dtype=int, device=DEVICE),
                             wp.array(c, dtype=int, device=DEVICE),
                             wp.array(a[r, c], dtype=dtype, device=DEVICE))
    return sp.bsr_copy(A, block_shape=(block, block)) if block > 1 else A


def dense(M):
    out = np.zeros(M.shape)
    off, col, val = M.offsets.numpy(), M.columns.numpy(), M.values.numpy().astype(np.float64)
    for i in range(M.nrow):
        out[i, col[off[i]:off[i + 1]]] = val[off[i]:off[i + 1]]
    return out


def tridiag(n, d=4.0):
    return np.diag(np.full(n, d)) + np.diag(-np.ones(n - 1), 1) + np.diag(-np.ones(n - 1), -1)


def spd(n, seed, density=0.3):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n))
    a[rng.random(a.shape) > density] = 0.0
    a = a + a.T
    np.fill_diagonal(a, np.abs(a).sum(1) + 1.0)
    return a


@pytest.mark.parametrize("dtype,tol", [(wp.float32, 1e-5), (wp.float64, 1e-12)])
def test_full_support_is_the_inverse_cholesky_factor(dtype, tol):
    a = spd(7, 1, density=1.0)
    P = FSAI(csr(a, dtype), max_row_size=7, kap_tolerance=0.0)
    g = dense(P.G)
    assert np.array_equal(g, np.tril(g)) and np.all(np.diag(g) > 0)
    np.testing.assert_allclose(g.T @ g, np.linalg.inv(a), rtol=tol * 10, atol=tol)
    np.testing.assert_array_equal(dense(P.GT), g.T)


def test_rows_solve_their_local_systems():
    a = spd(30, 2)
    P = FSAI(csr(a), max_row_size=6, max_step_size=2)
    g = dense(P.G)
    off, col = P.G.offsets.numpy(), P.G.columns.numpy()
    for i in range(30):
        s = col[off[i]:off[i + 1]]
        assert s[-1] == i and np.all(np.diff(s) > 0)
        e = np.zeros(len(s))
        e[-1] = 1.0
        z = np.linalg.solve(a[np.ix_(s, s)], e)
        np.testing.assert_allclose(g[i, s], z / np.sqrt(z[-1]), rtol=1e-10, atol=1e-12)


def test_one_entry_per_row_is_jacobi_and_blocks_expand_to_scalars():
    a = tridiag(12)
    for block in (1, 3):
        P = FSAI(csr(a, block=block), max_row_size=1)
        np.testing.assert_allclose(dense(P.G), np.eye(12) / 2.0)
        assert P.G.block_shape == (1, 1)


def test_pivot_guard_truncates_a_nearly_singular_pair():
    a = np.array([[1.0, 1.0 - 1e-14, 0.0], [1.0 - 1e-14, 1.0, 0.0], [0.0, 0.0, 4.0]])
    P = FSAI(csr(a), max_row_size=2)
    assert P.truncated_rows == 1
    np.testing.assert_allclose(dense(P.G), np.diag([1.0, 1.0, 0.5]))


def test_matvec_alpha_beta_aliasing_and_nan_inputs():
    a = tridiag(9)
    P = FSAI(csr(a), max_row_size=3)
    g = dense(P.G)
    rng = np.random.default_rng(0)
    x = wp.array(rng.normal(size=9), dtype=wp.float64, device=DEVICE)
    y = wp.array(rng.normal(size=9), dtype=wp.float64, device=DEVICE)
    want = 0.5 * g.T @ g @ x.numpy() - 2.0 * y.numpy()
    P.matvec(x, y, x, 0.5, -2.0)  # z aliases x
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-12)
    nan = wp.full(9, float("nan"), dtype=wp.float64, device=DEVICE)
    z = wp.empty_like(nan)
    P.matvec(wp.ones(9, dtype=wp.float64, device=DEVICE), nan, z, 1.0, 0.0)  # beta 0: y unread
    np.testing.assert_allclose(z.numpy(), g.T @ g @ np.ones(9), rtol=1e-12)
    P.matvec(nan, wp.full(9, 2.0, dtype=wp.float64, device=DEVICE), z, 0.0, 0.5)  # alpha 0
    np.testing.assert_array_equal(z.numpy(), 1.0)


def test_refit_keeps_storage_and_rolls_back_bad_input():
    a = spd(12, 4, density=1.0)
    P = FSAI(csr(a), max_row_size=4, reuse_pattern=True)
    ptr = P.G.values.ptr
    b = a + np.diag(np.arange(12.0))
    P.update(csr(b))
    assert P.G.values.ptr == ptr
    g = dense(P.G)
    off, col = P.G.offsets.numpy(), P.G.columns.numpy()
    for i in range(12):  # the kept supports, solved for b's values
        s = col[off[i]:off[i + 1]]
        e = np.zeros(len(s))
        e[-1] = 1.0
        z = np.linalg.solve(b[np.ix_(s, s)], e)
        np.testing.assert_allclose(g[i, s], z / np.sqrt(z[-1]), rtol=1e-10, atol=1e-12)
    before = dense(P.G)
    bad = csr(b)
    bad.values.zero_()
    with pytest.raises(ValueError, match="positive diagonals"):
        P.update(bad)
    np.testing.assert_array_equal(dense(P.G), before)
    cols = bad.columns.numpy().copy()
    cols[0] += 1
    bad.columns.assign(cols)
    with pytest.raises(ValueError, match="sparsity"):
        P.update(bad)
    with pytest.raises(ValueError, match="shape, dtype, device"):
        P.update(csr(tridiag(6)))


def test_refit_regularizes_a_singular_pair():
    pair = np.zeros((4, 4))
    pair[:2, :2] = pair[2:, 2:] = [[1.0, 0.5], [0.5, 1.0]]
    P = FSAI(csr(pair), max_row_size=2, reuse_pattern=True, regularize_refit=True)
    singular = pair.copy()
    singular[:2, :2] = 1.0
    P.update(csr(singular))
    np.testing.assert_array_equal(P.update_status.numpy(), [0, 0, 0, 1])
    g = dense(P.G)
    assert np.all(np.isfinite(g)) and np.all(np.diag(g) > 0)


def test_deferred_pattern_is_identity_then_matches_construction():
    a = tridiag(10)
    A = csr(a)
    P = FSAI(A, max_row_size=4, reuse_pattern=True, defer_pattern=True)
    np.testing.assert_array_equal(dense(P.G), np.eye(10))
    P.update()
    np.testing.assert_array_equal(P.pattern_ready.numpy(), [1])
    np.testing.assert_array_equal(dense(P.G), dense(FSAI(A, max_row_size=4).G))


def test_invalid_options_and_matrices():
    A = csr(np.eye(3))
    for kw in ({"max_row_size": 0}, {"max_step_size": 65}, {"kap_tolerance": 1.0},
               {"pivot_floor": 0.0}, {"factor_dtype": wp.float16}, {"defer_pattern": True}):
        with pytest.raises(ValueError, match=next(iter(kw)) if "defer" not in str(kw) else "defer"):
            FSAI(A, **kw)
    with pytest.raises(ValueError, match="square"):
        FSAI(sp.bsr_zeros(2, 3, wp.float64, device=DEVICE))
    with pytest.raises(ValueError, match="positive diagonals"):
        FSAI(csr(np.diag([1.0, -1.0])))
    with pytest.raises(ValueError, match="reuse_pattern"):
        FSAI(A).update()
    with pytest.raises(ValueError, match="factor_dtype conversion"):
        FSAI(csr(np.eye(3) * 1e-100), factor_dtype=wp.float32)


@pytest.mark.parametrize("block", [1, 3])
def test_preconditioned_cg_converges(block):
    a = spd(24, 5, density=0.2)
    A = csr(a, block=block)
    M = preconditioner(A, "fsai")
    assert isinstance(M, FSAI)
    vec = wp.float64 if block == 1 else wp.types.vector(3, wp.float64)
    b = wp.ones(24 // block, dtype=vec, device=DEVICE)
    x = wp.zeros_like(b)
    cg(A, b, x, M=M, tol=1e-10, maxiter=200)
    np.testing.assert_allclose(a @ x.numpy().ravel(), 1.0, atol=1e-8)
