"""Rows for the vector/matrix builtins of gradloom/builtins/linalg.py and the arithmetic operators."""

from __future__ import annotations

import numpy as np
from builtin_table import Row

S2 = "(a: Scalar, b: Scalar) -> Scalar"
VV = "(a: Vector, b: Vector) -> Vector"
MM = "(a: Matrix, b: Matrix) -> Matrix"
QQ = "(a: Quat, b: Quat) -> Quat"
TT = "(a: Transform, b: Transform) -> Transform"


def away(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Vectors with length in [0.5, 1.5]: length / normalize stay away from the zero vector."""
    v = rng.normal(size=shape)
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    return v * rng.uniform(0.5, 1.5, (*shape[:-1], 1))


def nonzero_ints(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.choice([-7, -3, -2, -1, 1, 2, 3, 5], shape)


def _sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=-1)


def _norm(a: np.ndarray) -> np.ndarray:
    return np.linalg.norm(a, axis=-1)


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def _t(m: np.ndarray) -> np.ndarray:
    return np.swapaxes(m, -1, -2)


def _scale(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Scalar times vector/matrix, vectorised over the sample axis (either operand order)."""
    if a.ndim > b.ndim:
        a, b = b, a
    return a.reshape(a.shape + (1,) * (b.ndim - a.ndim)) * b


def _bcast(s: np.ndarray, like: np.ndarray) -> np.ndarray:
    return s.reshape(s.shape + (1,) * (like.ndim - s.ndim))


def hamilton(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Quaternion product, components (x, y, z, w) as in Warp."""
    u, w, v, s = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([w * v + s * u + np.cross(u, v), w * s - _sum(u, v)[:, None]], axis=1)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Warp's quat_rotate: v (2w^2 - 1) + 2w (u x v) + 2u (u . v)."""
    u, w = q[:, :3], q[:, 3:]
    return v * (2 * w * w - 1) + 2 * w * np.cross(u, v) + 2 * u * _sum(u, v)[:, None]


def compose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Transform (p, q) composition: (p_a + rotate(q_a, p_b), q_a q_b)."""
    return np.concatenate([a[:, :3] + rotate(a[:, 3:], b[:, :3]),
                           hamilton(a[:, 3:], b[:, 3:])], axis=1)


VECS = ("v2", "v3", "v4", "v6")
SQUARE = ("m22", "m33", "m44", "m55")


def _vector_rows() -> list[Row]:
    rows: list[Row] = []
    for v in VECS:
        rows += [
            Row("dot", "(a: Vector, b: Vector) -> Float", (v, v), ("f",), ref=_sum),
            Row("length_sq", "(a: Vector) -> Float", (v,), ("f",), ref=lambda a: _sum(a, a)),
            Row("length", "(a: Vector) -> Float", (v,), ("f",), sample=(away,), ref=_norm),
            Row("normalize", "(a: Vector) -> Vector", (v,), (v,), sample=(away,), ref=_unit),
            Row("cw_mul", VV, (v, v), (v,), ref=np.multiply),
            Row("cw_div", VV, (v, v), (v,), sample=("any", "pos"), ref=np.divide),
        ]
    rows += [
        Row("dot", "(a: Quat, b: Quat) -> Float", ("q", "q"), ("f",), sample=("any", "any"),
            ref=_sum),
        Row("length_sq", "(a: Quat) -> Float", ("q",), ("f",), sample=("any",),
            ref=lambda a: _sum(a, a)),
        Row("length", "(a: Quat) -> Float", ("q",), ("f",), sample=(away,), ref=_norm),
        Row("normalize", "(a: Quat) -> Quat", ("q",), ("q",), sample=(away,), ref=_unit),
        Row("cross", "(a: Vector3, b: Vector3) -> Vector3", ("v3", "v3"), ("v3",), ref=np.cross),
        Row("outer", "(a: Vector, b: Vector) -> Matrix", ("v3", "v2"), ("m32",),
            ref=lambda a, b: np.einsum("ni,nj->nij", a, b)),
        Row("outer", "(a: Vector, b: Vector) -> Matrix", ("v4", "v4"), ("m44",),
            ref=lambda a, b: np.einsum("ni,nj->nij", a, b)),
    ]
    return rows


def _matrix_rows() -> list[Row]:
    rows: list[Row] = []
    for m in SQUARE:
        rows += [
            Row("trace", "(m: Matrix) -> Float", (m,), ("f",),
                ref=lambda a: np.trace(a, axis1=1, axis2=2)),
            Row("determinant", "(m: Matrix) -> Float", (m,), ("f",), ref=np.linalg.det),
            Row("inverse", "(m: Matrix) -> Matrix", (m,), (m,), sample=("wellcond",),
                ref=np.linalg.inv),
            Row("transpose", "(m: Matrix) -> Matrix", (m,), (m,), ref=_t),
        ]
    rows += [
        Row("transpose", "(m: Matrix) -> Matrix", ("m23",), ("m32",), ref=_t),
        Row("inverse_approx", "(m: Matrix) -> Matrix", ("m33",), ("m33",), sample=("wellcond",),
            ref=np.linalg.inv),
        Row("inverse_approx", "(m: Matrix) -> Matrix", ("m22",), ("m22",), sample=("wellcond",),
            ref=np.linalg.inv),
        Row("cw_mul", MM, ("m33", "m33"), ("m33",), ref=np.multiply),
        Row("cw_mul", MM, ("m24", "m24"), ("m24",), ref=np.multiply),
        Row("cw_div", MM, ("m33", "m33"), ("m33",), sample=("any", "pos"), ref=np.divide),
    ]
    return rows


def _operator_rows() -> list[Row]:
    rows = [
        Row("add", S2, ("f", "f"), ("f",), ref=np.add),
        Row("add", S2, ("i", "i"), ("i",), ref=np.add, grad=False,
            label="int"),
        Row("sub", S2, ("f", "f"), ("f",), ref=np.subtract),
        Row("sub", S2, ("i", "i"), ("i",), ref=np.subtract, grad=False,
            label="int"),
        Row("mul", S2, ("f", "f"), ("f",), ref=np.multiply),
        Row("mul", S2, ("i", "i"), ("i",), ref=np.multiply, grad=False,
            label="int"),
        Row("div", S2, ("f", "f"), ("f",), sample=("any", "pos"), ref=np.divide),
        # integer division truncates toward zero (C, Warp), unlike numpy's floor division
        Row("div", S2, ("i", "i"), ("i",), sample=("int", nonzero_ints),
            ref=lambda a, b: np.trunc(a / b), grad=False, label="int"),
        Row("neg", "(x: Scalar) -> Scalar", ("f",), ("f",), ref=np.negative),
        Row("neg", "(x: Scalar) -> Scalar", ("i",), ("i",), ref=np.negative, grad=False,
            label="int"),
        Row("neg", "(x: Vector) -> Vector", ("v3",), ("v3",), ref=np.negative),
        Row("neg", "(x: Matrix) -> Matrix", ("m33",), ("m33",), ref=np.negative),
        Row("neg", "(x: Quat) -> Quat", ("q",), ("q",), ref=np.negative),
    ]
    for name, fn in (("add", np.add), ("sub", np.subtract)):
        rows += [
            Row(name, VV, ("v3", "v3"), ("v3",), ref=fn),
            Row(name, VV, ("v6", "v6"), ("v6",), ref=fn),
            Row(name, MM, ("m33", "m33"), ("m33",), ref=fn),
            Row(name, MM, ("m23", "m23"), ("m23",), ref=fn),
            Row(name, QQ, ("q", "q"), ("q",), ref=fn),
            Row(name, TT, ("t", "t"), ("t",), ref=fn),
        ]
    return rows + _product_rows()


def _product_rows() -> list[Row]:
    return [
        Row("mul", "(a: Scalar, b: Vector) -> Vector", ("f", "v3"), ("v3",), ref=_scale),
        Row("mul", "(a: Vector, b: Scalar) -> Vector", ("v4", "f"), ("v4",), ref=_scale),
        Row("mul", "(a: Scalar, b: Matrix) -> Matrix", ("f", "m33"), ("m33",), ref=_scale),
        Row("mul", "(a: Matrix, b: Scalar) -> Matrix", ("m22", "f"), ("m22",), ref=_scale),
        Row("mul", "(a: Matrix, b: Vector) -> Vector", ("m33", "v3"), ("v3",),
            ref=lambda a, b: np.einsum("nij,nj->ni", a, b)),
        Row("mul", "(a: Matrix, b: Vector) -> Vector", ("m34", "v4"), ("v3",),
            ref=lambda a, b: np.einsum("nij,nj->ni", a, b)),
        Row("mul", "(a: Vector, b: Matrix) -> Vector", ("v3", "m33"), ("v3",),
            ref=lambda a, b: np.einsum("ni,nij->nj", a, b)),
        Row("mul", "(a: Vector, b: Matrix) -> Vector", ("v2", "m23"), ("v3",),
            ref=lambda a, b: np.einsum("ni,nij->nj", a, b)),
        Row("mul", "(a: Matrix, b: Matrix) -> Matrix", ("m44", "m44"), ("m44",), ref=np.matmul),
        Row("mul", "(a: Matrix, b: Matrix) -> Matrix", ("m23", "m34"), ("m24",), ref=np.matmul),
        Row("mul", "(a: Scalar, b: Quat) -> Quat", ("f", "q"), ("q",), ref=_scale),
        Row("mul", "(a: Quat, b: Scalar) -> Quat", ("q", "f"), ("q",), ref=_scale),
        Row("mul", "(a: Quat, b: Quat) -> Quat", ("q", "q"), ("q",), sample=("any", "any"),
            ref=hamilton),
        Row("mul", "(a: Scalar, b: Transform) -> Transform", ("f", "t"), ("t",), ref=_scale),
        Row("mul", "(a: Transform, b: Scalar) -> Transform", ("t", "f"), ("t",), ref=_scale),
        Row("mul", "(a: Transform, b: Transform) -> Transform", ("t", "t"), ("t",),
            ref=compose),
        Row("div", "(a: Quat, b: Scalar) -> Quat", ("q", "f"), ("q",), sample=("any", "pos"),
            ref=lambda a, b: a / _bcast(b, a)),
        Row("div", "(a: Scalar, b: Quat) -> Quat", ("f", "q"), ("q",), sample=("any", "pos"),
            ref=lambda a, b: _bcast(a, b) / b),
        Row("div", "(a: Vector, b: Scalar) -> Vector", ("v3", "f"), ("v3",),
            sample=("any", "pos"), ref=lambda a, b: a / _bcast(b, a)),
        Row("div", "(a: Scalar, b: Vector) -> Vector", ("f", "v3"), ("v3",),
            sample=("any", "pos"), ref=lambda a, b: _bcast(a, b) / b),
        Row("div", "(a: Matrix, b: Scalar) -> Matrix", ("m33", "f"), ("m33",),
            sample=("any", "pos"), ref=lambda a, b: a / _bcast(b, a)),
        Row("div", "(a: Scalar, b: Matrix) -> Matrix", ("f", "m22"), ("m22",),
            sample=("any", "pos"), ref=lambda a, b: _bcast(a, b) / b),
    ]


ROWS: list[Row] = _vector_rows() + _matrix_rows() + _operator_rows()
