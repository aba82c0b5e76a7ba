"""Rows for the matrix decompositions (svd3, svd2, qr3, eig3).

Samplers build matrices with well-separated singular values / eigenvalues, where the
decompositions are differentiable, so the central-difference check is meaningful. Rows check the
outputs themselves (the implementation is a fixed smooth map near such inputs) and the
combinations that any correct decomposition must give (reconstruction, singular values,
eigenvalues), which have numpy references.
"""

from __future__ import annotations

import numpy as np
from builtin_table import Row

SVD3 = ("(A: Matrix33) -> (Matrix33, Vector3, Matrix33)",
        "(A: Matrix33, U: Matrix33, sigma: Vector3, V: Matrix33) -> None")
SVD2 = ("(A: Matrix22) -> (Matrix22, Vector2, Matrix22)",
        "(A: Matrix22, U: Matrix22, sigma: Vector2, V: Matrix22) -> None")
QR3 = ("(A: Matrix33) -> (Matrix33, Matrix33)", "(A: Matrix33, Q: Matrix33, R: Matrix33) -> None")
EIG3 = ("(A: Matrix33) -> (Matrix33, Vector3)", "(A: Matrix33, Q: Matrix33, d: Vector3) -> None")


def rotations(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """n random k x k rotation matrices (QR of Gaussian matrices, determinant made +1)."""
    q, r = np.linalg.qr(rng.normal(size=(n, k, k)))
    q = q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]
    q[:, :, 0] *= np.sign(np.linalg.det(q))[:, None]
    return q


def separated(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """k magnitudes per sample in disjoint bands, largest first (gaps of at least 0.4)."""
    bands = [(2.2, 3.0), (1.2, 1.8), (0.3, 0.8)][3 - k:]
    return np.stack([rng.uniform(lo, hi, n) for lo, hi in bands], axis=1)


def svd_sampler(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """U diag(s) V^T with separated singular values; half of them with negative determinant."""
    n, k = shape[0], shape[-1]
    s = separated(rng, n, k)
    s[: n // 2, -1] *= -1.0
    return np.einsum("nij,nj,nkj->nik", rotations(rng, n, k), s, rotations(rng, n, k))


def sym_sampler(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Symmetric Q diag(d) Q^T with separated eigenvalues of both signs, in random order."""
    n = shape[0]
    d = separated(rng, n, 3) * rng.choice([-1.0, 1.0], (n, 3))
    d = rng.permuted(d, axis=1)
    q = rotations(rng, n, 3)
    return np.einsum("nij,nj,nkj->nik", q, d, q)


def signed_singular_values(a: np.ndarray) -> np.ndarray:
    """numpy's singular values (decreasing) with the last given the sign of det(A) (Warp's svd3)."""
    s = np.linalg.svd(a, compute_uv=False)
    s[:, -1] *= np.sign(np.linalg.det(a))
    return s


def qr_unique(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy's QR made unique: R[0,0], R[1,1] > 0 and det Q = +1 (so R[2,2] has det A's sign)."""
    q, r = np.linalg.qr(a)
    d = np.sign(np.diagonal(r, axis1=1, axis2=2)).copy()
    d[:, 2] *= np.linalg.det(q * d[:, None, :])
    return q * d[:, None, :], r * d[:, :, None]


RECONSTRUCT_SVD = """
U, s, V = wp.{name}(x0)
y0 = U * wp.diag(s) * wp.transpose(V)
y1 = s
y2 = U * wp.transpose(U)
"""

OUT_SVD = """
U = x0
s = wp.get_diag(x0)
V = x0
wp.{name}(x0, U, s, V)
y0 = U
y1 = s
y2 = V
"""


def _svd_rows(name: str, sigs: tuple[str, str], m: str, v: str) -> list[Row]:
    k = int(m[1])
    ref_s = signed_singular_values if k == 3 else (lambda a: np.linalg.svd(a, compute_uv=False))
    eye = np.eye(k)
    return [
        Row(name, sigs[0], (m,), (m, v, m), body=RECONSTRUCT_SVD.format(name=name),
            sample=(svd_sampler,), ref=lambda a: (a, ref_s(a), eye), ref_rtol=1e-9,
            ref_atol=1e-12, label="tuple"),
        # the outputs themselves (variables written through the output-argument form)
        Row(name, sigs[1], (m,), (m, v, m), body=OUT_SVD.format(name=name),
            sample=(svd_sampler,), label="out"),
    ]


QR_TUPLE = """
Q, R = wp.qr3(x0)
y0 = Q
y1 = R
"""

QR_OUT = """
Q = x0
R = x0
wp.qr3(x0, Q, R)
y0 = Q * R
y1 = R
"""

EIG_TUPLE = """
Q, d = wp.eig3(x0)
y0 = d
y1 = Q * wp.diag(d) * wp.transpose(Q)
"""

EIG_OUT = """
Q = x0
d = wp.get_diag(x0)
wp.eig3(x0, Q, d)
y0 = Q
y1 = d
"""


def _sym_part(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + np.swapaxes(a, 1, 2))


ROWS: list[Row] = [
    *_svd_rows("svd3", SVD3, "m33", "v3"),
    *_svd_rows("svd2", SVD2, "m22", "v2"),
    Row("qr3", QR3[0], ("m33",), ("m33", "m33"), body=QR_TUPLE, sample=(svd_sampler,),
        ref=qr_unique, label="tuple"),
    Row("qr3", QR3[1], ("m33",), ("m33", "m33"), body=QR_OUT, sample=(svd_sampler,),
        ref=lambda a: (a, qr_unique(a)[1]), label="out"),
    # eigenvalues ascending (numpy's order) and the reconstruction of the symmetric input
    Row("eig3", EIG3[0], ("m33",), ("v3", "m33"), body=EIG_TUPLE, sample=(sym_sampler,),
        ref=lambda a: (np.linalg.eigvalsh(a), a), label="tuple"),
    # non-symmetric inputs: the symmetric part is decomposed (and the FD check sees that map)
    Row("eig3", EIG3[0], ("m33",), ("v3", "m33"), body=EIG_TUPLE,
        sample=(lambda rng, shape: sym_sampler(rng, shape) + rng.uniform(-0.1, 0.1, shape),),
        ref=lambda a: (np.linalg.eigvalsh(_sym_part(a)), _sym_part(a)), label="nonsym"),
    Row("eig3", EIG3[1], ("m33",), ("m33", "v3"), body=EIG_OUT, sample=(sym_sampler,),
        label="out"),
]
