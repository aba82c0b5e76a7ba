"""Rows for the vector/matrix helpers of gradloom/builtins/vecmath.py (norms, diagonals, skew, ...)."""

from __future__ import annotations

import numpy as np
from builtin_table import Row

from builtin_cases.linalg import away  # lengths in [0.5, 1.5]: both sides of Huber's delta 1

VF = "(v: Vector) -> Float"
HUBER = "(v: Vector, delta: Float = 1.0) -> Float"
SMOOTH = "(v: Vector, delta: Float = 1.0) -> Vector"


def signed_components(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Components with |x| in [0.2, 1]: away from the kink of |x| at 0."""
    return rng.uniform(0.2, 1.0, shape) * rng.choice([-1.0, 1.0], shape)


def with_zeros(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """U(-1, 1) vectors, a quarter of them exactly zero (functions smooth at 0 must stay finite)."""
    v = rng.uniform(-1.0, 1.0, shape)
    v[: shape[0] // 4] = 0.0
    return v


def _norm(v: np.ndarray) -> np.ndarray:
    return np.linalg.norm(v, axis=-1)


def huber(v: np.ndarray, delta: np.ndarray | float = 1.0) -> np.ndarray:
    n = _norm(v)
    return np.where(n <= delta, 0.5 * n * n, delta * (n - 0.5 * np.asarray(delta)))


def pseudo_huber(v: np.ndarray, delta: np.ndarray | float = 1.0) -> np.ndarray:
    n = _norm(v)
    return delta * np.sqrt(1.0 + (n / delta) ** 2)


def smooth_normalize(v: np.ndarray, delta: np.ndarray | float = 1.0) -> np.ndarray:
    return v / pseudo_huber(v, delta)[:, None]


def skew_ref(v: np.ndarray) -> np.ndarray:
    x, y, z = v.T
    o = np.zeros_like(x)
    return np.stack([o, -z, y, z, o, -x, -y, x, o], axis=1).reshape(-1, 3, 3)


def _diag_rows() -> list[Row]:
    rows: list[Row] = []
    for n in (2, 3, 4, 6):
        v, m = f"v{n}", f"m{n}{n}" if n < 6 else "sm"
        rows += [
            Row("diag", "(v: Vector) -> Matrix", (v if n < 6 else "sv",), (m,),
                ref=lambda a: a[:, :, None] * np.eye(a.shape[1])),
            Row("get_diag", "(m: Matrix) -> Vector", (m,), (v if n < 6 else "sv",),
                ref=lambda a: np.diagonal(a, axis1=1, axis2=2)),
        ]
    rows += [
        Row("ddot", "(a: Matrix, b: Matrix) -> Float", ("m33", "m33"), ("f",),
            ref=lambda a, b: (a * b).sum(axis=(1, 2))),
        Row("ddot", "(a: Matrix, b: Matrix) -> Float", ("m24", "m24"), ("f",),
            ref=lambda a, b: (a * b).sum(axis=(1, 2))),
        Row("skew", "(v: Vector3) -> Matrix33", ("v3",), ("m33",), ref=skew_ref),
        # the defining property: skew(a) @ b == cross(a, b)
        Row("skew", "(v: Vector3) -> Matrix33", ("v3", "v3"), ("v3",),
            body="y0 = wp.mul(wp.skew(x0), x1)", ref=np.cross, label="times"),
    ]
    return rows


def _arg_rows() -> list[Row]:
    rows: list[Row] = []
    for v in ("v2", "v3", "v4", "v6"):
        rows += [
            Row("argmin", "(v: Vector) -> Int", (v,), ("u",), grad=False,
                ref=lambda a: np.argmin(a, axis=-1)),
            Row("argmax", "(v: Vector) -> Int", (v,), ("u",), grad=False,
                ref=lambda a: np.argmax(a, axis=-1)),
        ]
    return rows


def _norm_rows() -> list[Row]:
    rows: list[Row] = []
    for v in ("v2", "v3", "v4", "v6"):
        rows += [
            Row("norm_l1", VF, (v,), ("f",), sample=(signed_components,),
                ref=lambda a: np.abs(a).sum(axis=-1)),
            Row("norm_l2", VF, (v,), ("f",), sample=(away,), ref=_norm),
            Row("norm_huber", HUBER, (v,), ("f",), sample=(away,), ref=huber),
            Row("norm_pseudo_huber", HUBER, (v,), ("f",), ref=pseudo_huber),
            Row("smooth_normalize", SMOOTH, (v,), (v,), ref=smooth_normalize),
        ]
    for name, sig, ref in (("norm_huber", HUBER, huber),
                           ("norm_pseudo_huber", HUBER, pseudo_huber),
                           ("smooth_normalize", SMOOTH, smooth_normalize)):
        out = "v3" if name == "smooth_normalize" else "f"
        rows += [
            Row(name, sig, ("v3", "f"), (out,), sample=(away, "pos"),
                body=f"y0 = wp.{name}(x0, x1)", ref=ref, label="delta"),
            Row(name, sig, ("v3",), (out,), sample=(away,),
                body=f"y0 = wp.{name}(x0, delta=0.75)", ref=lambda a, r=ref: r(a, 0.75),
                label="delta_kw"),
            Row(name, sig, ("v4",), (out if out == "f" else "v4",), sample=(with_zeros,),
                ref=ref, label="zeros"),
        ]
    return rows


ROWS: list[Row] = _diag_rows() + _arg_rows() + _norm_rows()
