"""Tile gradients (wp.Tape through tile_load/store, elementwise, tile_map, reductions, matmul)
against float64 central finite differences (tests/gradfd.py); runs on warp-lang too."""

from __future__ import annotations

import numpy as np
import pytest
from gradfd import arr, check_kernel
from wpcompat import BACKEND, DEVICE, wp

M, N, K = 3, 4, 5


@wp.func
def soft(x: wp.float64):
    return wp.sin(x) * x + wp.float64(0.5) * x * x


@wp.kernel
def elementwise_k(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64),
                  out: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    x = wp.tile_load(a, shape=(M, N), offset=(i * M, 0))
    y = wp.tile_load(b, shape=(M, N), offset=(i * M, 0))
    z = x * y + wp.float64(2.0) * x - y
    wp.tile_store(out, wp.tile_map(soft, z), offset=(i * M, 0))


@wp.kernel
def padded_k(a: wp.array2d(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    i, j = wp.tid()
    # 3x3 tiles over a 4x5 array: the last tiles hang over the edge (zero padding, no stores)
    t = wp.tile_load(a, shape=(3, 3), offset=(i * 3, j * 3))
    wp.tile_store(out, t * t, offset=(i * 3, j * 3))


@wp.kernel
def sum_k(a: wp.array2d(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    t = wp.tile_load(a, shape=(M, N))
    s = wp.tile_sum(t * t)
    rows = wp.tile_sum(t, axis=1)
    out[0] = s[0]
    out[1] = rows[2] * rows[0]


@wp.kernel
def reduce_k(a: wp.array2d(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    t = wp.tile_load(a, shape=(M, N))
    r = wp.tile_reduce(wp.mul, wp.tile_view(t, offset=(1, 0), shape=(1, N)))
    out[0] = r[0]
    out[1] = wp.tile_max(t)[0] + wp.tile_min(t)[0]


@wp.kernel
def matmul_k(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64),
             c: wp.array2d(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    x = wp.tile_load(a, shape=(M, K))
    y = wp.tile_load(b, shape=(K, N))
    acc = wp.tile_load(c, shape=(M, N))
    wp.tile_matmul(x, y, acc)
    d = wp.tile_matmul(acc, wp.tile_transpose(acc))
    wp.tile_store(out, d)


@wp.kernel
def loop_k(a: wp.array2d(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    acc = wp.tile_zeros(shape=(M, N), dtype=wp.float64)
    for k in range(3):
        t = wp.tile_load(a, shape=(M, N), offset=(k, 0))
        acc = acc * t + t
    wp.tile_store(out, acc)


@wp.kernel
def views_k(a: wp.array2d(dtype=wp.float64), x: wp.array(dtype=wp.float64),
            out: wp.array2d(dtype=wp.float64), s: wp.array(dtype=wp.float64)):
    t = wp.tile_load(a, shape=(M, N))
    col = wp.tile_broadcast(wp.tile_sum(t, axis=0), shape=(M, N))
    u = wp.tile_full(shape=(M, N), value=x[0], dtype=wp.float64) * col
    wp.tile_assign(u, wp.tile_view(t, offset=(0, 0), shape=(1, N)), offset=(2, 0))
    u[1, 2] = u[1, 2] * wp.tile_extract(t, 0, 3)
    wp.tile_store(out, u)
    s[0] = wp.untile(wp.tile(x[1] * x[1])) + t[2, 1]


@wp.kernel(module="unique")  # warp-lang cannot build float64 scans: keep its module apart
def more_k(a: wp.array2d(dtype=wp.float64), acc: wp.array2d(dtype=wp.float64),
           out: wp.array(dtype=wp.float64)):
    t = wp.tile_load(a, shape=(2, 4))
    r = wp.tile_reshape(t, shape=(4, -1))
    s = wp.tile_squeeze(wp.tile_view(t, offset=(1, 0), shape=(1, 4)))
    u = wp.tile_astype(wp.tile_ones(shape=(2, 4), dtype=float), dtype=wp.float64)
    wp.tile_axpy(r[1, 1], t, u)
    sc = wp.tile_scan_inclusive(u)
    mx = wp.tile_scan_max_inclusive(t)
    mn = wp.tile_scan_min_inclusive(t)
    ex = wp.tile_scan_exclusive(t * t)
    d = wp.tile_diag_add(wp.tile_view(t, offset=(0, 1), shape=(2, 2)), wp.tile_view(s, offset=(1,), shape=(2,)))
    f = wp.tile_from_thread(shape=(2,), value=s[3], thread_idx=0)
    out[0] = wp.tile_dot(t, u)[0] + sc[1, 2] * ex[1, 3] + d[1, 1] * d[0, 1] + f[1] * s[0] \
        + mx[1, 1] * mn[1, 2]
    wp.tile_atomic_add(acc, t * t)


@wp.kernel
def cholesky_k(a: wp.array2d(dtype=wp.float64), y: wp.array(dtype=wp.float64),
               x: wp.array(dtype=wp.float64), lo: wp.array2d(dtype=wp.float64)):
    A = wp.tile_load(a, shape=(4, 4))
    L = wp.tile_cholesky(A)
    b = wp.tile_load(y, shape=4)
    wp.tile_store(x, wp.tile_cholesky_solve(L, b))
    wp.tile_store(lo, L)


@wp.kernel
def triangular_k(m: wp.array2d(dtype=wp.float64), y: wp.array2d(dtype=wp.float64),
                 z: wp.array2d(dtype=wp.float64), w: wp.array2d(dtype=wp.float64)):
    T = wp.tile_load(m, shape=(4, 4))
    b = wp.tile_load(y, shape=(4, 2))
    wp.tile_store(z, wp.tile_lower_solve(T, b))
    c = wp.tile_load(y, shape=(4, 2))
    wp.tile_upper_solve_inplace(T, c)
    wp.tile_store(w, c)


@wp.kernel
def inplace_k(a: wp.array2d(dtype=wp.float64), y: wp.array2d(dtype=wp.float64),
              x: wp.array2d(dtype=wp.float64), u: wp.array2d(dtype=wp.float64),
              v: wp.array2d(dtype=wp.float64)):
    A = wp.tile_load(a, shape=(4, 4))
    wp.tile_cholesky_inplace(A)  # A now holds its factor L
    b = wp.tile_load(y, shape=(4, 2))
    wp.tile_cholesky_solve_inplace(A, b)
    wp.tile_store(x, b)
    c = wp.tile_load(y, shape=(4, 2))
    wp.tile_lower_solve_inplace(A, c)
    wp.tile_store(u, c)
    wp.tile_store(v, wp.tile_upper_solve(wp.tile_transpose(A), wp.tile_load(y, shape=(4, 2))))


@wp.kernel
def gather_k(a: wp.array2d(dtype=wp.float64), rows: wp.array(dtype=int),
             out: wp.array2d(dtype=wp.float64)):
    idx = wp.tile_load(rows, shape=4)
    t = wp.tile_load_indexed(a, idx, shape=(4, 3), axis=0)
    wp.tile_store(out, t * t)


@wp.kernel
def scatter_k(src: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    t = wp.tile_zeros(shape=4, dtype=wp.float64)
    s = wp.tile_zeros(shape=4, dtype=wp.float64)
    for e in range(5):
        wp.tile_scatter_masked(t, e % 4, src[e] * src[e], e != 1)
        wp.tile_scatter_add(s, e % 4, src[e], True)
    wp.tile_store(out, t * s)


@wp.kernel
def vec_k(a: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.vec3d),
          s: wp.array(dtype=wp.float64)):
    x = wp.tile_load(a, shape=4)
    y = wp.tile_map(wp.normalize, x * wp.float64(2.0))
    wp.tile_store(out, y)
    t = wp.tile_sum(x)
    s[0] = wp.dot(t[0], y[1])


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape)


def test_elementwise_and_map_gradients() -> None:
    args = [arr(_rand(2 * M, N)), arr(_rand(2 * M, N, seed=1)),
            arr(np.zeros((2 * M, N)))]
    check_kernel(elementwise_k, 2, args, wrt=[0, 1], outputs=[2])


@pytest.mark.xfail(BACKEND == "warp", strict=True,
                   reason="warp-lang 1.19 passes no gradient to tile_full's value (0 against "
                          "finite differences)")
def test_view_broadcast_assign_gradients() -> None:
    args = [arr(_rand(M, N)), arr(_rand(2, seed=4)), arr(np.zeros((M, N))), arr(np.zeros(1))]
    check_kernel(views_k, 1, args, wrt=[0, 1], outputs=[2, 3])


@pytest.mark.skipif(BACKEND == "warp", reason="warp-lang 1.19's tile scans take float32, int32 "
                    "and uint32 tiles only (this check runs in float64)")
def test_reshape_scan_axpy_dot_atomic_gradients() -> None:
    args = [arr(_rand(2, 4, seed=6)), arr(_rand(2, 4, seed=7)), arr(np.zeros(1))]
    check_kernel(more_k, 1, args, wrt=[0], outputs=[1, 2])


def _spd(seed: int) -> np.ndarray:
    r = np.random.default_rng(seed).normal(size=(4, 4))
    return r @ r.T + 4 * np.eye(4)


@pytest.mark.xfail(BACKEND == "warp", strict=True, reason="warp-lang 1.19's CPU adjoints of "
                   "tile_cholesky / tile_*_solve disagree with finite differences (no gradient "
                   "into the right-hand side)")
def test_cholesky_solve_gradients() -> None:
    # the factor reads A's lower triangle only: perturb a symmetric A in the lower triangle
    args = [arr(_spd(8)), arr(_rand(4, seed=9)), arr(np.zeros(4)), arr(np.zeros((4, 4)))]
    check_kernel(cholesky_k, 1, args, wrt=[0, 1], outputs=[2, 3])


@pytest.mark.xfail(BACKEND == "warp", strict=True, reason="warp-lang 1.19's CPU adjoints of "
                   "tile_cholesky / tile_*_solve disagree with finite differences (no gradient "
                   "into the right-hand side)")
def test_triangular_solve_gradients() -> None:
    args = [arr(_spd(10)), arr(_rand(4, 2, seed=11)), arr(np.zeros((4, 2))),
            arr(np.zeros((4, 2)))]
    check_kernel(triangular_k, 1, args, wrt=[0, 1], outputs=[2, 3])


def test_vector_tile_gradients() -> None:
    args = [arr(_rand(4, 3, seed=12), dtype=wp.vec3d), arr(np.zeros((4, 3)), dtype=wp.vec3d),
            arr(np.zeros(1))]
    check_kernel(vec_k, 1, args, wrt=[0], outputs=[1, 2])


def test_padded_load_store_gradients() -> None:
    args = [arr(_rand(4, 5)), arr(np.zeros((4, 5)))]
    check_kernel(padded_k, (2, 2), args, wrt=[0], outputs=[1])


def test_sum_gradients() -> None:
    args = [arr(_rand(M, N)), arr(np.zeros(2))]
    check_kernel(sum_k, 1, args, wrt=[0], outputs=[1])


@pytest.mark.xfail(BACKEND == "warp", strict=True,
                   reason="warp-lang 1.19's CPU adjoints of tile_reduce(wp.mul) and "
                          "tile_max/tile_min disagree with finite differences")
def test_reduce_and_minmax_gradients() -> None:
    args = [arr(_rand(M, N)), arr(np.zeros(2))]
    check_kernel(reduce_k, 1, args, wrt=[0], outputs=[1])


def test_matmul_gradients() -> None:
    args = [arr(_rand(M, K)), arr(_rand(K, N, seed=1)), arr(_rand(M, N, seed=2)),
            arr(np.zeros((M, M)))]
    check_kernel(matmul_k, 1, args, wrt=[0, 1, 2], outputs=[3])


def test_loop_carried_tile_gradients() -> None:
    args = [arr(_rand(M + 2, N)), arr(np.zeros((M, N)))]
    check_kernel(loop_k, 1, args, wrt=[0], outputs=[1])


def test_tape_matmul_gradient_is_analytic() -> None:
    """d/dA sum(W * (A @ B)) = W @ B^T, d/dB = A^T @ W: the Tape against numpy."""
    rng = np.random.default_rng(3)
    A, B, W = rng.normal(size=(M, K)), rng.normal(size=(K, N)), rng.normal(size=(M, N))
    a = wp.array(A, dtype=wp.float64, requires_grad=True, device=DEVICE)
    b = wp.array(B, dtype=wp.float64, requires_grad=True, device=DEVICE)
    c = wp.zeros((M, N), dtype=wp.float64, requires_grad=True, device=DEVICE)
    out = wp.zeros((M, M), dtype=wp.float64, requires_grad=True, device=DEVICE)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(gemm_k, dim=[1], inputs=[a, b, c], block_dim=1, device=DEVICE)
    tape.backward(grads={c: wp.array(W, dtype=wp.float64, device=DEVICE)})
    np.testing.assert_allclose(c.numpy(), A @ B, rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), W @ B.T, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), A.T @ W, rtol=1e-12)
    del out


@wp.kernel
def gemm_k(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64),
           c: wp.array2d(dtype=wp.float64)):
    wp.tile_store(c, wp.tile_matmul(wp.tile_load(a, shape=(M, K)), wp.tile_load(b, shape=(K, N))))


if __name__ == "__main__":
    pytest.main([__file__, "-q"])


@wp.kernel
def four_reductions_k(positive: wp.array2d(dtype=float), negative: wp.array2d(dtype=float),
                      sums: wp.array(dtype=float), prods: wp.array(dtype=float),
                      mins: wp.array(dtype=float), maxs: wp.array(dtype=float)):
    p = wp.tile_load(positive, shape=(32, 8))
    n = wp.tile_load(negative, shape=(32, 8))
    wp.tile_store(sums, wp.tile_sum(p, axis=0))
    wp.tile_store(prods, wp.tile_reduce(wp.mul, p, axis=0))
    wp.tile_store(mins, wp.tile_reduce(wp.min, p, axis=0))
    wp.tile_store(maxs, wp.tile_reduce(wp.max, n, axis=0))


@pytest.mark.xfail(BACKEND == "warp", strict=True, reason="warp-lang 1.19's CPU passes no "
                   "gradient through tile_reduce(wp.mul, t, axis=0) (only the tile_sum part)")
def test_four_axis_reductions_adjoint_compiles_and_is_analytic() -> None:
    """Regression: this adjoint made LLVM 22's loop vectoriser abort the process (and took 11 s
    at O3); tile modules now compile at O2 without it (codegen/llvm_tiles.MARK)."""
    P = (1.0 + np.arange(32 * 8, dtype=np.float32).reshape(32, 8) * 0.01).astype(np.float32)
    pos = wp.array(P, dtype=float, requires_grad=True, device=DEVICE)
    neg = wp.array(-P, dtype=float, requires_grad=True, device=DEVICE)
    outs = [wp.zeros(8, dtype=float, requires_grad=True, device=DEVICE) for _ in range(4)]
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(four_reductions_k, dim=[1], inputs=[pos, neg, *outs], block_dim=1,
                        device=DEVICE)
    tape.backward(grads={outs[0]: wp.ones(8, dtype=float, device=DEVICE),
                         outs[1]: wp.ones(8, dtype=float, device=DEVICE)})
    np.testing.assert_allclose(outs[1].numpy(), P.prod(axis=0), rtol=1e-5)
    np.testing.assert_allclose(outs[2].numpy(), P.min(axis=0))
    np.testing.assert_allclose(outs[3].numpy(), (-P).max(axis=0))
    want = 1.0 + P.prod(axis=0)[None, :] / P
    np.testing.assert_allclose(pos.grad.numpy(), want, rtol=1e-4)


@pytest.mark.xfail(BACKEND == "warp", strict=True, reason="warp-lang 1.19's CPU adjoints of "
                   "tile_cholesky / tile_*_solve disagree with finite differences (no gradient "
                   "into the right-hand side)")
def test_inplace_factor_and_solve_gradients() -> None:
    # tile_cholesky_inplace, tile_cholesky_solve_inplace, tile_lower_solve_inplace and
    # tile_upper_solve against float64 central differences
    args = [arr(_spd(13)), arr(_rand(4, 2, seed=14)), arr(np.zeros((4, 2))),
            arr(np.zeros((4, 2))), arr(np.zeros((4, 2)))]
    check_kernel(inplace_k, 1, args, wrt=[0, 1], outputs=[2, 3, 4])


def test_indexed_load_gradients_add_at_gathered_rows() -> None:
    # row 1 is gathered twice (its gradient adds up), -1 pads with zeros
    args = [arr(_rand(3, 3, seed=15)), arr(np.array([1, 0, 1, -1]), dtype=wp.int32),
            arr(np.zeros((4, 3)))]
    check_kernel(gather_k, 1, args, wrt=[0], outputs=[2])


def test_scatter_gradients() -> None:
    # index 0 is written twice (e = 0, then e = 4 overwrites it: src[0] gets nothing from t)
    args = [arr(_rand(5, seed=16)), arr(np.zeros(4))]
    check_kernel(scatter_k, 1, args, wrt=[0], outputs=[1])
