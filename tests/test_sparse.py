"""gradloom.sparse (Warp's warp.sparse) against scipy.sparse / numpy: assembly, products, sums,
restructuring, layouts, gradients (float64 finite differences) and errors."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp

sp = pytest.importorskip("scipy.sparse")
S = wp.sparse


def dense(A) -> np.ndarray:
    """The matrix as a dense numpy array, read from its arrays (independent of gradloom's code)."""
    out = np.zeros(A.shape)
    br, bc = A.block_shape
    off, cols = A.offsets.numpy(), A.columns.numpy()
    vals = A.values.numpy().reshape(-1, br, bc)
    counts = None if A.row_counts is None else A.row_counts.numpy()
    for r in range(A.nrow):
        end = off[r + 1] if counts is None else off[r] + counts[r]
        for k in range(off[r], end):
            out[r * br:(r + 1) * br, cols[k] * bc:(cols[k] + 1) * bc] += vals[k]
    return out


def triplets(rng, nrow, ncol, n, block=(1, 1), dtype=np.float64):
    rows = rng.integers(0, nrow, n).astype(np.int32)
    cols = rng.integers(0, ncol, n).astype(np.int32)
    vals = rng.standard_normal((n, *block)).astype(dtype)
    return rows, cols, vals


def _coords(rng, nrow, ncol, n):
    """The block coordinates `make` drew (same generator state replayed)."""
    return rng.integers(0, nrow, n), rng.integers(0, ncol, n)


def scipy_dense(nrow, ncol, rows, cols, vals):
    """Sum of the triplet blocks, through scipy's COO duplicate summation (scalars per entry)."""
    _n, br, bc = vals.shape
    ii, jj = np.meshgrid(np.arange(br), np.arange(bc), indexing="ij")
    r = (rows[:, None, None] * br + ii[None]).ravel()
    c = (cols[:, None, None] * bc + jj[None]).ravel()
    return sp.coo_matrix((vals.ravel(), (r, c)), shape=(nrow * br, ncol * bc)).toarray()


def make(rng, nrow, ncol, n, block=(1, 1), dtype=wp.float64):
    rows, cols, vals = triplets(rng, nrow, ncol, n, block, wp.dtype_to_numpy(dtype))
    bt = dtype if block == (1, 1) else wp.types.matrix(shape=block, dtype=dtype)
    A = S.bsr_zeros(nrow, ncol, bt)
    v = wp.array(vals.reshape(n) if block == (1, 1) else vals, dtype=dtype)
    S.bsr_set_from_triplets(A, wp.array(rows), wp.array(cols), v)
    return A, scipy_dense(nrow, ncol, rows, cols, vals.reshape(n, *block))


@pytest.mark.parametrize("block", [(1, 1), (2, 3), (3, 3)])
def test_from_triplets_sums_duplicates(block):
    rng = np.random.default_rng(1)
    A, ref = make(rng, 7, 5, 60, block)
    assert A.nnz_sync() == len(set(zip(*_coords(np.random.default_rng(1), 7, 5, 60))))
    np.testing.assert_allclose(dense(A), ref, atol=1e-12)
    # compact rows are sorted by column and hold no duplicates
    off, cols = A.offsets.numpy(), A.columns.numpy()
    for r in range(A.nrow):
        row = cols[off[r]:off[r + 1]]
        assert np.all(np.diff(row) > 0)


def test_from_triplets_drops_out_of_range_and_zeros():
    rows = wp.array([0, -1, 1, 5, 1, 2], dtype=int)
    cols = wp.array([0, 0, 1, 0, 3, 2], dtype=int)
    vals = wp.array([1.0, 2.0, 3.0, 4.0, 5.0, 0.0], dtype=float)
    A = S.bsr_from_triplets(3, 3, rows, cols, vals)
    assert A.nnz_sync() == 2  # (-1, 0), (5, 0), (1, 3) out of range; (2, 2) a numerical zero
    np.testing.assert_array_equal(dense(A), np.diag([1.0, 3.0, 0.0]))
    B = S.bsr_from_triplets(3, 3, rows, cols, vals, prune_numerical_zeros=False)
    assert B.nnz_sync() == 3


@pytest.mark.parametrize("block", [(1, 1), (1, 3), (3, 2)])
def test_bsr_mv_matches_scipy(block):
    rng = np.random.default_rng(2)
    A, ref = make(rng, 9, 6, 40, block)
    x = rng.standard_normal(6 * block[1])
    y0 = rng.standard_normal(9 * block[0])
    xa = wp.array(x, dtype=wp.float64) if block[1] == 1 else \
        wp.array(x.reshape(6, block[1]), dtype=wp.types.vector(block[1], wp.float64))
    ya = wp.array(y0, dtype=wp.float64) if block[0] == 1 else \
        wp.array(y0.reshape(9, block[0]), dtype=wp.types.vector(block[0], wp.float64))
    S.bsr_mv(A, xa, ya, alpha=-0.5, beta=2.0)
    np.testing.assert_allclose(ya.numpy().ravel(), -0.5 * ref @ x + 2.0 * y0, rtol=1e-12, atol=1e-12)
    xt = S.bsr_mv(A, ya, transpose=True)
    np.testing.assert_allclose(xt.numpy().ravel(), ref.T @ ya.numpy().ravel(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose((A @ xa).numpy().ravel(), ref @ x, rtol=1e-12, atol=1e-12)


def test_bsr_mv_aliased_vector():
    rng = np.random.default_rng(3)
    A, ref = make(rng, 6, 6, 20)
    y = rng.standard_normal(6)
    ya = wp.array(y, dtype=wp.float64)
    S.bsr_mv(A, ya, ya, alpha=1.0, beta=1.0)  # y = A y + y, reading the old y
    np.testing.assert_allclose(ya.numpy(), ref @ y + y, rtol=1e-12)


@pytest.mark.parametrize("block", [(1, 1), (2, 3)])
def test_bsr_mm_with_beta_reuse_and_aliasing(block):
    rng = np.random.default_rng(4)
    x, xd = make(rng, 5, 4, 12, block)
    y, yd = make(rng, 4, 6, 12, block[::-1])
    z, zd = make(rng, 5, 6, 8, (block[0], block[0]))
    work = S.bsr_mm_work_arrays()
    S.bsr_mm(x, y, z, alpha=2.0, beta=-1.0, work_arrays=work)
    ref = 2.0 * xd @ yd - zd
    np.testing.assert_allclose(dense(z), ref, atol=1e-12)
    # same topology, new numbers: scale x's values, redo with reuse_topology
    S.bsr_scale(x, 3.0)
    S.bsr_mm(x, y, z, alpha=1.0, beta=0.0, work_arrays=work, reuse_topology=True)
    np.testing.assert_allclose(dense(z), 3.0 * xd @ yd, atol=1e-12)
    sq, sqd = make(rng, 5, 5, 10, (block[0], block[0]))
    S.bsr_mm(sq, sq, sq, alpha=1.0, beta=1.0)  # z = z z + z, all the same matrix
    np.testing.assert_allclose(dense(sq), sqd @ sqd + sqd, atol=1e-12)


def test_axpy_scale_and_operators():
    rng = np.random.default_rng(5)
    a, ad = make(rng, 6, 7, 15, (2, 2))
    b, bd = make(rng, 6, 7, 15, (2, 2))
    np.testing.assert_allclose(dense(a + b), ad + bd, atol=1e-12)
    np.testing.assert_allclose(dense(a - 2.0 * b), ad - 2.0 * bd, atol=1e-12)
    S.bsr_axpy(a, b, alpha=-1.5, beta=0.5)
    np.testing.assert_allclose(dense(b), -1.5 * ad + 0.5 * bd, atol=1e-12)
    b += b * 2.0  # aliasing: y += 2 y
    np.testing.assert_allclose(dense(b), 3.0 * (-1.5 * ad + 0.5 * bd), atol=1e-12)
    c, cd = make(rng, 7, 3, 10, (2, 1))
    np.testing.assert_allclose(dense((0.5 * a) @ c), 0.5 * ad @ cd, atol=1e-12)


def test_transpose_copy_and_reblock():
    rng = np.random.default_rng(6)
    A, ad = make(rng, 4, 8, 20, (4, 2))
    np.testing.assert_allclose(dense(S.bsr_transposed(A)), ad.T, atol=1e-12)
    np.testing.assert_allclose(dense((2.0 * A).transpose().eval()), 2.0 * ad.T, atol=1e-12)
    for shape in [(2, 2), (1, 1), (4, 4), (8, 8)]:
        B = S.bsr_copy(A, block_shape=shape)
        assert B.block_shape == shape
        np.testing.assert_allclose(dense(B), ad, atol=1e-12)
    C = S.bsr_copy(A, scalar_type=wp.float32)
    assert C.scalar_type == wp.float32
    np.testing.assert_allclose(dense(C), ad, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="Incompatible dest and src block shapes"):
        S.bsr_copy(A, block_shape=(3, 3))


def test_diagonals():
    rng = np.random.default_rng(7)
    A, ad = make(rng, 5, 5, 25, (3, 3))
    d = S.bsr_get_diag(A).numpy()
    for i in range(5):
        np.testing.assert_allclose(d[i], ad[3 * i:3 * i + 3, 3 * i:3 * i + 3], atol=1e-12)
    D = S.bsr_diag(wp.array(d, dtype=A.dtype))
    np.testing.assert_allclose(dense(D), sp.block_diag(list(d)).toarray(), atol=1e-12)
    np.testing.assert_array_equal(dense(S.bsr_identity(4, wp.mat22)), np.eye(8))
    with pytest.raises(ValueError, match="either warp matrix or scalar"):
        S.bsr_diag(wp.vec3(1.0, 2.0, 3.0), rows_of_blocks=3)


def test_padded_layout_and_capacity_status():
    A = S.bsr_zeros(2, 4, float, row_capacity=2)
    rows = wp.array([1, 0, 1, 1], dtype=int)
    cols = wp.array([3, 2, 0, 3], dtype=int)
    vals = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float)
    S.bsr_set_from_triplets(A, rows, cols, vals, topology="padded")
    np.testing.assert_array_equal(A.offsets.numpy(), [0, 2, 4])
    np.testing.assert_array_equal(A.row_counts.numpy(), [1, 2])
    np.testing.assert_array_equal(dense(A), [[0, 0, 2, 0], [3, 0, 0, 5]])
    x = wp.array([1.0, 10.0, 100.0, 1000.0], dtype=float)
    np.testing.assert_allclose(S.bsr_mv(A, x).numpy(), [200.0, 5003.0])
    small = S.bsr_zeros(2, 4, float, row_capacity=1)
    S.bsr_set_from_triplets(small, rows, cols, vals, topology="padded")
    assert small.status_sync() == S.BSR_STATUS_ROW_CAPACITY_EXCEEDED


def test_bsr_mv_gradients_match_finite_differences():
    """Gradients of w . (A x) reach x (analytic: A^T w) and A.values (float64 central FD)."""
    rng = np.random.default_rng(8)
    rows, cols, vals = triplets(rng, 4, 5, 12, (2, 3))
    w = rng.standard_normal(8)
    x0 = rng.standard_normal(15)
    v = wp.array(vals, dtype=wp.types.matrix((2, 3), wp.float64), requires_grad=True)
    x = wp.array(x0.reshape(5, 3), dtype=wp.vec3d, requires_grad=True)
    with wp.Tape() as tape:
        A = S.bsr_from_triplets(4, 5, wp.array(rows), wp.array(cols), v)
        y = S.bsr_mv(A, x)
    tape.backward(grads={y: wp.array(w.reshape(4, 2), dtype=wp.vec2d)})
    ref = scipy_dense(4, 5, rows, cols, vals)
    np.testing.assert_allclose(x.grad.numpy().ravel(), ref.T @ w, rtol=1e-12)

    def loss(values):
        return w @ (scipy_dense(4, 5, rows, cols, values) @ x0)

    fd = np.zeros_like(vals)
    h = 1e-6
    for idx in np.ndindex(vals.shape):
        p, m = vals.copy(), vals.copy()
        p[idx] += h
        m[idx] -= h
        fd[idx] = (loss(p) - loss(m)) / (2 * h)
    np.testing.assert_allclose(v.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_transpose_and_mm_gradients():
    rng = np.random.default_rng(9)
    rows, cols, vals = triplets(rng, 3, 3, 6, (2, 2))
    v = wp.array(vals, dtype=wp.mat22d, requires_grad=True)
    with wp.Tape() as tape:
        A = S.bsr_from_triplets(3, 3, wp.array(rows), wp.array(cols), v)
        T = S.bsr_transposed(2.0 * A)
    tape.backward(grads={T.values: wp.array(np.ones((T.values.shape[0], 2, 2)), dtype=wp.mat22d)})
    # every triplet lands in exactly one block of T (scaled by 2): d(sum T)/d(vals) = 2
    np.testing.assert_allclose(v.grad.numpy(), np.full(vals.shape, 2.0))


def test_errors_name_the_argument():
    A = S.bsr_zeros(2, 3, float)
    with pytest.raises(TypeError, match="int32"):
        S.bsr_set_from_triplets(A, wp.array([0.0]), wp.array([0.0]), wp.array([1.0]))
    with pytest.raises(ValueError, match="Incompatible 'x'"):
        S.bsr_mv(A, wp.zeros(4, dtype=float))
    with pytest.raises(ValueError, match="Incompatible number of rows/columns"):
        S.bsr_mm(A, A)
    with pytest.raises(ValueError, match="same number of rows and columns"):
        S.bsr_axpy(A, S.bsr_zeros(3, 3, float))


def test_not_loaded_by_import_gradloom():
    import subprocess
    import sys

    code = "import gradloom, sys; print([m for m in sys.modules if m.startswith('gradloom.sparse')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("ncol", "nx", "ny"), [(40, 160, 160), (700, 8000, 5000)])
def test_bsr_mm_new_topology_parallel_and_host_paths(ncol, nx, ny):
    """A fresh product takes the parallel symbolic phase (short rows) or the host one (rows of
    more than 512 terms); both equal scipy's product, columns sorted in each row."""
    rng = np.random.default_rng(10)
    x, xd = make(rng, 30, ncol, nx)
    y, yd = make(rng, ncol, 25, ny)
    z = S.bsr_mm(x, y)
    np.testing.assert_allclose(dense(z), (sp.csr_matrix(xd) @ sp.csr_matrix(yd)).toarray(),
                               atol=1e-12)
    off, cols = z.offsets.numpy(), z.columns.numpy()
    assert all(np.all(np.diff(cols[off[r]:off[r + 1]]) > 0) for r in range(z.nrow))
