"""tile_matmul's fast form (the `lgemm` op, codegen/tile_gemm.py): results against numpy over
shapes, views, dtypes and alpha/beta; forward kernels use it, adjoints differentiate the scalar
loops (gradients of the blocked GEMM loop against float64 finite differences); its blocking."""


import numpy as np
import pytest

import gradloom as wp
from gradloom import pipeline
from gradloom.codegen.tile_gemm import Gemm, plan
from gradloom.ir.nodes import walk_ops

CASES = [(32, 32, 32), (16, 48, 8), (7, 5, 3), (8, 16, 24), (64, 64, 16), (3, 32, 5), (24, 8, 1)]


def _product_kernel(m: int, n: int, k: int, dtype: object, ta: bool, tb: bool) -> object:
    sa = (k, m) if ta else (m, k)
    sb = (n, k) if tb else (k, n)

    @wp.kernel(enable_backward=False, module="unique")
    def prod(a: wp.array2d(dtype=dtype), b: wp.array2d(dtype=dtype),  # type: ignore[valid-type]
             c: wp.array2d(dtype=dtype), d: wp.array2d(dtype=dtype),  # type: ignore[valid-type]
             alpha: dtype, beta: dtype):  # type: ignore[valid-type]
        x = wp.tile_load(a, shape=sa)
        y = wp.tile_load(b, shape=sb)
        if wp.static(ta):
            x = wp.tile_transpose(x)
        if wp.static(tb):
            y = wp.tile_transpose(y)
        out = wp.tile_load(c, shape=(m, n))
        wp.tile_matmul(x, y, out, alpha=alpha, beta=beta)
        wp.tile_store(c, out)
        wp.tile_store(d, wp.tile_matmul(x, y))
    return prod


@pytest.mark.parametrize("m,n,k", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True)])
def test_products_match_numpy(m: int, n: int, k: int, dtype: type, ta: bool, tb: bool) -> None:
    rng = np.random.default_rng(m * 100 + n + k)
    A, B = rng.normal(size=(m, k)).astype(dtype), rng.normal(size=(k, n)).astype(dtype)
    C = rng.normal(size=(m, n)).astype(dtype)
    wt = wp.float32 if dtype == np.float32 else wp.float64
    kern = _product_kernel(m, n, k, wt, ta, tb)
    c, d = wp.array(C), wp.zeros((m, n), dtype=wt)
    inputs = [wp.array(np.ascontiguousarray(A.T) if ta else A),
              wp.array(np.ascontiguousarray(B.T) if tb else B), c, d, dtype(0.5), dtype(-1.5)]
    wp.launch_tiled(kern, dim=[1], inputs=inputs, block_dim=1)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    ref = A.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_allclose(d.numpy(), ref, rtol=tol, atol=tol * k)
    np.testing.assert_allclose(c.numpy(), 0.5 * ref - 1.5 * C, rtol=tol, atol=tol * k)


def test_beta_zero_ignores_nan_in_out() -> None:
    m = n = k = 16
    kern = _product_kernel(m, n, k, wp.float32, False, False)
    A = np.arange(m * k, dtype=np.float32).reshape(m, k) / 100
    c = wp.array(np.full((m, n), np.nan, dtype=np.float32))
    d = wp.zeros((m, n), dtype=float)
    wp.launch_tiled(kern, dim=[1], inputs=[wp.array(A), wp.array(A), c, d, 2.0, 0.0],
                    block_dim=1)
    np.testing.assert_allclose(c.numpy(), 2.0 * (A.astype(np.float64) @ A), rtol=1e-5)


@wp.kernel(module="unique")
def _blocked_gemm(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64),
                  c: wp.array2d(dtype=wp.float64)):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(8, 8), dtype=wp.float64)
    for q in range(3):  # the tiles' buffers are reloaded every trip
        x = wp.tile_load(a, shape=(8, 4), offset=(i * 8, q * 4))
        y = wp.tile_load(b, shape=(4, 8), offset=(q * 4, j * 8))
        wp.tile_matmul(x, y, acc)
    wp.tile_store(c, acc, offset=(i * 8, j * 8))


def _loss(A: np.ndarray, B: np.ndarray, W: np.ndarray) -> tuple[float, object, object]:
    a = wp.array(A, dtype=wp.float64, requires_grad=True)
    b = wp.array(B, dtype=wp.float64, requires_grad=True)
    c = wp.zeros((16, 16), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(_blocked_gemm, dim=[2, 2], inputs=[a, b, c], block_dim=1)
    tape.backward(grads={c: wp.array(W, dtype=wp.float64)})
    return float((c.numpy() * W).sum()), a.grad.numpy(), b.grad.numpy()


def test_blocked_gemm_gradients_against_finite_differences() -> None:
    rng = np.random.default_rng(5)
    A, B, W = rng.normal(size=(16, 12)), rng.normal(size=(12, 16)), rng.normal(size=(16, 16))
    _, ga, gb = _loss(A, B, W)
    h = 1e-6
    for grad, which in ((ga, 0), (gb, 1)):
        d = rng.normal(size=grad.shape)
        args_p = [A, B]
        args_m = [A, B]
        args_p[which] = args_p[which] + h * d
        args_m[which] = args_m[which] - h * d
        fd = (_loss(*args_p, W)[0] - _loss(*args_m, W)[0]) / (2 * h)
        np.testing.assert_allclose((grad * d).sum(), fd, rtol=1e-7)


def test_forward_kernels_use_lgemm_and_adjoints_the_scalar_loops() -> None:
    forward, _ = pipeline.kernel_ir(_blocked_gemm, "forward")
    adjoint, _ = pipeline.kernel_ir(_blocked_gemm, "adjoint")
    assert any(op.prim == "lgemm" for op in walk_ops(forward.body))
    assert not any(op.prim == "lgemm" for op in walk_ops(adjoint.body))


def test_blocking() -> None:
    g = Gemm(32, 32, 32, 0, 32, 1, 0, 32, 1, 0, 32, 1, True)
    assert plan(g, 4, 64) == (16, 8, 2, 8)  # 16 zmm accumulators, k unrolled 8 times
    assert plan(g, 4, 0) == (1, 4, 4, 8)  # no vectors: 4 x 4 scalars
    strided = g._replace(b_cs=32, b_rs=1)  # a transposed b: its rows are not contiguous
    assert plan(strided, 4, 64).vw == 1
    assert plan(g._replace(n=24, b_rs=24, c_rs=24), 4, 64).vw == 8


def test_precision_argument_is_checked() -> None:
    # refused kernels live here, not at module level, where tests/ptx_check.py collects kernels
    @wp.kernel(module="unique")
    def _tf32_half(a: wp.array2d(dtype=wp.float16), c: wp.array2d(dtype=wp.float16)):
        x = wp.tile_load(a, shape=(4, 4))
        wp.tile_store(c, wp.tile_matmul(x, x, precision="tf32"))

    @wp.kernel(module="unique")
    def _bad_precision(a: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
        x = wp.tile_load(a, shape=(4, 4))
        wp.tile_store(c, wp.tile_matmul(x, x, precision="fp8"))

    @wp.kernel(module="unique")
    def _tf32_float(a: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
        x = wp.tile_load(a, shape=(4, 4))
        wp.tile_store(c, wp.tile_matmul(x, x, precision="tf32"))

    h = wp.zeros((4, 4), dtype=wp.float16)
    with pytest.raises(TypeError, match="precision='tf32' requires float32 tiles"):
        wp.launch_tiled(_tf32_half, dim=[1], inputs=[h, h], block_dim=1)
    f = wp.array(np.eye(4, dtype=np.float32) * 2)
    c = wp.zeros((4, 4), dtype=float)
    with pytest.raises(ValueError, match="precision must be the string literal 'default' or "
                                         "'tf32', got 'fp8'"):
        wp.launch_tiled(_bad_precision, dim=[1], inputs=[f, c], block_dim=1)
    wp.launch_tiled(_tf32_float, dim=[1], inputs=[f, c], block_dim=1)
    np.testing.assert_array_equal(c.numpy(), np.eye(4) * 4)
