"""Warp's `warp.fem.linalg` kernel functions that libraries call from plain kernels:
`symmetric_eigenvalues_qr` (newton's Kamino LOX solver imports it).

Written against the public API (`import gradloom as wp`), as a user's kernel code is, and
imported only on `import gradloom.fem.linalg` (never by the package itself).
"""

# mypy: ignore-errors
# (kernel source: `type(v).length`, `A.dtype(0.0)` are kernel-language forms mypy cannot read)

from __future__ import annotations

from typing import Any

import gradloom as wp

#: Jacobi sweeps before giving up (each sweep rotates every off-diagonal pair once; a 6x6
#: float32 matrix converges in about six)
MAX_SWEEPS = 32


@wp.func
def _rotate(M: Any, P: Any, p: int, q: int, c: Any, s: Any):
    """M = J^T M J and P = J^T P for the rotation J of the (p, q) plane (J[p, p] = J[q, q] = c,
    J[p, q] = s, J[q, p] = -s)."""
    n = type(wp.get_diag(M)).length
    for k in range(n):
        mkp = M[k, p]
        mkq = M[k, q]
        M[k, p] = c * mkp - s * mkq
        M[k, q] = s * mkp + c * mkq
    for k in range(n):
        mpk = M[p, k]
        mqk = M[q, k]
        M[p, k] = c * mpk - s * mqk
        M[q, k] = s * mpk + c * mqk
        ppk = P[p, k]
        pqk = P[q, k]
        P[p, k] = c * ppk - s * pqk
        P[q, k] = s * ppk + c * pqk
    return M, P


@wp.func
def symmetric_eigenvalues_qr(A: Any, tol: Any):
    """Eigenvalues and eigenvectors of a square symmetric matrix A: a tuple (D, P), D the vector
    of eigenvalues and P one eigenvector per row, so that A = P^T diag(D) P (Warp's contract).

    Computed by cyclic Jacobi rotations (each zeroes one off-diagonal pair), until every
    off-diagonal term is at most `tol` times the geometric mean of its two diagonal terms (or
    exactly zero). The eigenvalues come in no particular order, as Warp's."""
    n = type(wp.get_diag(A)).length
    M = A
    P = wp.identity(n=type(wp.get_diag(A)).length, dtype=A.dtype)
    zero = A.dtype(0.0)
    one = A.dtype(1.0)
    for _sweep in range(MAX_SWEEPS):
        rotated = int(0)
        for p in range(n):
            for q in range(p + 1, n):
                apq = M[p, q]
                if apq != zero and wp.abs(apq) > tol * wp.sqrt(wp.abs(M[p, p] * M[q, q])):
                    theta = (M[q, q] - M[p, p]) / (A.dtype(2.0) * apq)
                    # the smaller root of t^2 + 2 theta t - 1 = 0: rotations by at most 45 degrees
                    t = one / (wp.abs(theta) + wp.sqrt(theta * theta + one))
                    if theta < zero:
                        t = -t
                    c = one / wp.sqrt(t * t + one)
                    M, P = _rotate(M, P, p, q, c, t * c)
                    rotated += 1
        if rotated == 0:
            break
    return wp.get_diag(M), P
