"""Warp's `preconditioner`: diagonal (Jacobi, |diagonal|), block-Jacobi and FSAI preconditioners."""

from __future__ import annotations

from typing import Any

import numpy as np

import gradloom as wp

from . import _kernels as K
from .block_jacobi import PTYPES, block_jacobi
from .operators import LinearOperator, aslinearoperator, flat


def _diagonal(A: Any) -> Any:
    """The diagonal of `A` (array or BsrMatrix) as a flat scalar array."""
    from ...sparse import BsrMatrix, bsr_get_diag

    if isinstance(A, BsrMatrix):
        blocks = bsr_get_diag(A).numpy().reshape(-1, *A.block_shape)
        d = np.diagonal(blocks, axis1=1, axis2=2).reshape(-1)
        return wp.array(np.ascontiguousarray(d), dtype=A.scalar_type, device=A.device)
    if isinstance(A, wp.array) and A.ndim == 2:
        return wp.array(np.ascontiguousarray(np.diagonal(A.numpy())), dtype=A.dtype, device=A.device)
    if isinstance(A, wp.array):
        return flat(A)
    raise TypeError("preconditioner: A must be a BsrMatrix or an array")


def preconditioner(A: Any, ptype: str = "diag") -> LinearOperator | None:
    """A preconditioner for `A`: 'diag' (inverse diagonal), 'diag_abs' (inverse |diagonal|), or
    'id' (None: no preconditioning), a block-Jacobi ptype, or 'fsai' (`FSAI(A)`)."""
    if ptype == "id":
        return None
    if ptype == "fsai":
        from .fsai import FSAI

        return FSAI(A)
    if ptype in PTYPES:
        M = block_jacobi(A, ptype)
        if M is not None:
            return M
        ptype = "diag"  # 1x1 blocks: scalar Jacobi, as Warp
    if ptype not in ("diag", "diag_abs"):
        raise ValueError("preconditioner: ptype must be 'diag', 'diag_abs', 'id', 'fsai' or one "
                         f"of {PTYPES}, got {ptype!r}")
    d = _diagonal(A)
    inv = wp.empty_like(d)
    wp.launch(K.inverse_diag(d.dtype, ptype == "diag_abs"), dim=d.size, device=d.device,
              inputs=[d, inv])
    return aslinearoperator(inv)
