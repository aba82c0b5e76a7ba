"""Block-Jacobi preconditioners (Warp's 'block_jacobi_direct' / '_sequential' / '_tile'): each
diagonal block inverted once on the host (float64), applied as a block-diagonal `bsr_mv`."""

from __future__ import annotations

from typing import Any

import numpy as np

import gradloom as wp

from .operators import LinearOperator, flat

PTYPES = ("block_jacobi_direct", "block_jacobi_sequential", "block_jacobi_tile")


def _singular(block: np.ndarray, eps: float) -> bool:
    """Numerically singular: the smallest singular value is lost in the block's rounding."""
    s = np.linalg.svd(block, compute_uv=False)
    return not np.all(np.isfinite(s)) or s[0] == 0.0 or s[-1] <= s[0] * block.shape[0] * eps


def _inverse(block: np.ndarray, ptype: str, eps: float) -> np.ndarray:
    """The block's inverse, or the identity where the strategy cannot factor it (Warp's zero-safe
    convention): any singular block; for the LDL^T / Cholesky strategies, a non-symmetric or
    non positive definite one as well."""
    n = block.shape[0]
    if ptype != "block_jacobi_direct":
        if not np.array_equal(block, block.T):
            return np.eye(n)
        if ptype == "block_jacobi_sequential" and np.linalg.eigvalsh(block)[0] <= 0.0:
            return np.eye(n)
    if _singular(block, eps):
        return np.eye(n)
    return np.linalg.inv(block)


def block_jacobi(A: Any, ptype: str) -> LinearOperator | None:
    """The block-Jacobi preconditioner of a square BsrMatrix of square blocks (None: use 'diag',
    for 1x1 blocks, as Warp)."""
    from ...sparse import bsr_diag, bsr_get_diag, bsr_mv
    from ...sparse.matrix import BsrMatrix

    if not isinstance(A, BsrMatrix):
        raise ValueError(f"preconditioner: {ptype!r} needs a BsrMatrix, got {type(A).__name__}")
    br, bc = A.block_shape
    if br != bc:
        raise ValueError(f"preconditioner: {ptype!r} needs square matrix blocks, got blocks of "
                         f"shape {A.block_shape}")
    if A.nrow != A.ncol:
        raise ValueError(f"preconditioner: {ptype!r} needs a square matrix, got {A.nrow}x{A.ncol} "
                         "blocks")
    if ptype == "block_jacobi_tile" and A.scalar_type not in (wp.float32, wp.float64):
        raise ValueError("preconditioner: 'block_jacobi_tile' needs float32 or float64 blocks, got "
                         f"{A.scalar_type.__name__}")
    if br == 1:
        return None
    eps = float(np.finfo(wp.dtype_to_numpy(A.scalar_type)).eps)
    blocks = bsr_get_diag(A).numpy().astype(np.float64).reshape(-1, br, br)
    inv = np.stack([_inverse(b, ptype, eps) for b in blocks]) if blocks.size else blocks
    M = bsr_diag(wp.array(inv.astype(wp.dtype_to_numpy(A.scalar_type)), dtype=A.dtype,
                          device=A.device))

    def matvec(x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        if beta != 0.0 and y is not None and y.ptr != z.ptr:
            wp.copy(z, y)
        bsr_mv(M, flat(x), flat(z), alpha=alpha, beta=beta)

    return LinearOperator(A.shape, A.dtype, A.device, matvec)
