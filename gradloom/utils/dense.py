"""Warp's small dense linear-algebra helpers for kernels (`wp.dense_gemm`, `wp.dense_chol`,
`wp.dense_subs`, `wp.dense_solve`): row-major float matrices stored flat in 1-D arrays, each
call run by one thread. Warp keeps them as hidden, work-in-progress builtins; here they are
@wp.func loops, so their gradients come from the loads, products and stores they are made of.

`dense_gemm(m, n, p, t1, t2, A, B, C)`: C (m x n) = op(A) op(B), where op(A) is A (m x p) or,
with t1 = 1, the transpose of A stored as p x m (t2 likewise for B, p x n).
`dense_chol(n, A, regularization, L)`: the lower Cholesky factor of A + regularization * I.
`dense_subs(n, L, b, x)` / `dense_solve(n, A, L, b, x)`: x solving (L L^T) x = b.
"""

# mypy: ignore-errors
# (kernel source: its annotations are gradloom types, which mypy cannot read)

from ..builtins import catalog  # noqa: F401  (registers every builtin)
from ..builtins.registry import REGISTRY
from ..frontend.func import func
from ..runtime.array.array import array
from ..types import float32

sqrt = REGISTRY["sqrt"]


@func
def _at(rows: int, cols: int, i: int, j: int, transposed: int) -> int:
    """The flat index of element (i, j) of a rows x cols operand stored as given or, when
    transposed, stored as its cols x rows transpose."""
    if transposed != 0:
        return j * rows + i
    return i * cols + j


@func
def dense_gemm(m: int, n: int, p: int, t1: int, t2: int, A: array(dtype=float32),
               B: array(dtype=float32), C: array(dtype=float32)):
    for i in range(m):
        for j in range(n):
            total = float32(0.0)
            for k in range(p):
                total += A[_at(m, p, i, k, t1)] * B[_at(p, n, k, j, t2)]
            C[i * n + j] = total


@func
def dense_chol(n: int, A: array(dtype=float32), regularization: float32,
               L: array(dtype=float32)):
    for j in range(n):
        s = A[j * n + j] + regularization
        for k in range(j):
            r = L[j * n + k]
            s -= r * r
        s = sqrt(s)
        inv = float32(1.0) / s
        L[j * n + j] = s
        for i in range(j + 1, n):
            t = A[i * n + j]
            for k in range(j):
                t -= L[i * n + k] * L[j * n + k]
            L[i * n + j] = t * inv


@func
def dense_subs(n: int, L: array(dtype=float32), b: array(dtype=float32),
               x: array(dtype=float32)):
    for i in range(n):  # forward substitution: L y = b
        s = b[i]
        for j in range(i):
            s -= L[i * n + j] * x[j]
        x[i] = s / L[i * n + i]
    for r in range(n):  # backward substitution: L^T x = y
        i = n - 1 - r
        s = x[i]
        for j in range(i + 1, n):
            s -= L[j * n + i] * x[j]
        x[i] = s / L[i * n + i]


@func
def dense_solve(n: int, A: array(dtype=float32), L: array(dtype=float32),
                b: array(dtype=float32), x: array(dtype=float32)):
    dense_subs(n, L, b, x)
