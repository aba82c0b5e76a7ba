"""tile_cholesky on tiles large enough for its grouped rows (builtins/tile_linalg.py: rows below
the diagonal go four at a time, the last group moved up to overlap the one before it, the
factor kept transposed in the upper triangle until a last pass): values against numpy in every
fill mode, returning and in place, and gradients against float64 central differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradfd import arr, check_kernel
from wpcompat import BACKEND, DEVICE, wp

# 9: column 0 has 8 rows below (two whole groups), column 1 seven (the second group overlaps
# the first), the last three columns fewer than a group; 13: three groups and an overlap
N9 = 9
N13 = 13


@wp.kernel
def factor13_k(a: wp.array2d(dtype=wp.float64), y: wp.array(dtype=wp.float64),
               lo: wp.array2d(dtype=wp.float64), up: wp.array2d(dtype=wp.float64),
               inplace: wp.array2d(dtype=wp.float64), x: wp.array(dtype=wp.float64)):
    A = wp.tile_load(a, shape=(N13, N13))
    L = wp.tile_cholesky(A)
    wp.tile_store(lo, L)
    wp.tile_store(up, wp.tile_cholesky(A, fill_mode="upper"))
    B = wp.tile_load(a, shape=(N13, N13))
    wp.tile_cholesky_inplace(B)
    wp.tile_store(inplace, B)
    wp.tile_store(x, wp.tile_cholesky_solve(L, wp.tile_load(y, shape=N13)))


@wp.kernel
def factor9_k(a: wp.array2d(dtype=wp.float64), y: wp.array(dtype=wp.float64),
              lo: wp.array2d(dtype=wp.float64), x: wp.array(dtype=wp.float64)):
    A = wp.tile_load(a, shape=(N9, N9))
    L = wp.tile_cholesky(A)
    wp.tile_store(lo, L)
    wp.tile_store(x, wp.tile_cholesky_solve(L, wp.tile_load(y, shape=N9)))


def _spd(n: int, seed: int) -> np.ndarray:
    r = np.random.default_rng(seed).normal(size=(n, n))
    return r @ r.T + n * np.eye(n)


def test_grouped_rows_match_numpy_in_every_fill_mode() -> None:
    A = _spd(N13, 3)
    # the upper triangle holds garbage: a factor reads only the triangle its mode names
    # (the upper mode reads the upper one, so it gets the matrix transposed there)
    lower_only = np.tril(A) + np.triu(np.full_like(A, 7.0), 1)
    y = np.random.default_rng(4).normal(size=N13)
    a = wp.array(lower_only, dtype=wp.float64, device=DEVICE)
    outs = [wp.zeros((N13, N13), dtype=wp.float64, device=DEVICE) for _ in range(3)]
    x = wp.zeros(N13, dtype=wp.float64, device=DEVICE)
    wp.launch_tiled(factor13_k, dim=[1], inputs=[a, wp.array(y, dtype=wp.float64,
                                                               device=DEVICE), *outs, x],
                    block_dim=32, device=DEVICE)
    L = np.linalg.cholesky(A)
    np.testing.assert_allclose(outs[0].numpy(), L, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(outs[2].numpy(), L, rtol=1e-12, atol=1e-12)
    U = np.linalg.cholesky(lower_only.T).T  # upper mode: the transposed garbage as its matrix
    np.testing.assert_allclose(outs[1].numpy(), U, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(A, y), rtol=1e-10)


@pytest.mark.xfail(BACKEND == "warp", strict=True, reason="warp-lang 1.19's CPU adjoints of "
                   "tile_cholesky / tile_*_solve disagree with finite differences")
def test_grouped_rows_gradients_match_finite_differences() -> None:
    args = [arr(_spd(N9, 5)), arr(np.random.default_rng(6).uniform(-1, 1, N9)),
            arr(np.zeros((N9, N9))), arr(np.zeros(N9))]
    check_kernel(factor9_k, 1, args, wrt=[0, 1], outputs=[2, 3])
