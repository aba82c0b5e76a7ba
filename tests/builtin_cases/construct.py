"""Rows for the vector/matrix constructors: vector, matrix, matrix_from_rows/cols, identity."""

from __future__ import annotations

import numpy as np
from builtin_table import Row

VEC = "(*args: Scalar, length: Int, dtype: Any) -> Vector"
MAT = "(*args: Scalar, shape: (Int, Int), dtype: Any) -> Matrix"
ROWS_SIG = "(*args: Vector) -> Matrix"


def _stack(*xs: np.ndarray) -> np.ndarray:
    return np.stack(xs, axis=1)


ROWS: list[Row] = [
    Row("vector", VEC, ("f", "f", "f"), ("v3",), body="y0 = wp.vector(x0, x1, x2)", ref=_stack),
    Row("vector", VEC, ("f", "f"), ("v2",), body="y0 = wp.vector(x0, x1, dtype=F)", ref=_stack,
        label="dtype"),
    Row("vector", VEC, ("f",), ("v4",), body="y0 = wp.vector(x0, length=4)",
        ref=lambda a: np.repeat(a[:, None], 4, axis=1), label="fill"),
    Row("matrix", MAT, ("f",) * 4, ("m22",), body="y0 = wp.matrix(x0, x1, x2, x3, shape=(2, 2))",
        ref=lambda *xs: _stack(*xs).reshape(-1, 2, 2)),
    Row("matrix", MAT, ("f",) * 6, ("m23",),
        body="y0 = wp.matrix(x0, x1, x2, x3, x4, x5, shape=(2, 3), dtype=F)",
        ref=lambda *xs: _stack(*xs).reshape(-1, 2, 3), label="rect"),
    Row("matrix", MAT, ("f",), ("m33",), body="y0 = wp.matrix(x0, shape=(3, 3))",
        ref=lambda a: np.broadcast_to(a[:, None, None], (len(a), 3, 3)), label="fill"),
    Row("matrix_from_rows", ROWS_SIG, ("v3", "v3", "v3"), ("m33",), ref=_stack),
    Row("matrix_from_rows", ROWS_SIG, ("v2", "v2", "v2"), ("m32",), ref=_stack),
    Row("matrix_from_cols", ROWS_SIG, ("v3", "v3", "v3"), ("m33",),
        ref=lambda *xs: np.stack(xs, axis=2)),
    Row("matrix_from_cols", ROWS_SIG, ("v3", "v3"), ("m32",),
        ref=lambda *xs: np.stack(xs, axis=2)),
    Row("identity", "(n: Int, dtype: Any) -> Matrix", (), ("m33",), grad=False,
        body="y0 = wp.identity(n=3, dtype=F)", ref=lambda: np.eye(3)),
    Row("identity", "(n: Int, dtype: Any) -> Matrix", (), ("m44",), grad=False,
        body="y0 = wp.identity(n=4, dtype=F)", ref=lambda: np.eye(4), label="n4"),
]
