"""Rows for transform builtins (Warp's "Transformations"); numpy/scipy references.

A transform row value is (p.x, p.y, p.z, q.x, q.y, q.z, q.w) and maps x to R(q) x + p.
"""

from __future__ import annotations

import numpy as np
from builtin_table import Row

from builtin_cases.quat import Rotation, qmul, rigid44, rotate, rotmat, scipy_ref

T1 = "(xform: Transform) -> Transform"


def _homogeneous(lin: np.ndarray, p: np.ndarray) -> np.ndarray:
    m = np.zeros((len(p), 4, 4))
    m[:, :3, :3], m[:, :3, 3], m[:, 3, 3] = lin, p, 1.0
    return m


def _scaled44(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """[[R diag(s), p], [0, 0, 0, 1]] with positive scales s in [0.5, 2]."""
    m = rigid44(rng, shape)
    m[:, :3, :3] *= rng.uniform(0.5, 2.0, (shape[0], 1, 3))
    return m


def _any44(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, shape)


def _multiply_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.concatenate([a[:, :3] + rotate(a[:, 3:], b[:, :3]), qmul(a[:, 3:], b[:, 3:])], 1)


def _inverse_ref(t: np.ndarray) -> np.ndarray:
    inv = Rotation.from_quat(t[:, 3:]).inv()
    return np.concatenate([-inv.apply(t[:, :3]), inv.as_quat()], 1)


def _decompose_ref(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    scale = np.linalg.norm(m[:, :3, :3], axis=1)
    q = Rotation.from_matrix(m[:, :3, :3] / scale[:, None, :]).as_quat(canonical=True)
    return m[:, :3, 3], q, scale


ROWS: list[Row] = [
    Row("transformation", "(p: Vector3, q: Quat, dtype: Float = None) -> Transform",
        ("v3", "q"), ("t",), ref=lambda p, q: np.concatenate([p, q], 1)),
    Row("transformation", "(*args: Float, dtype: Float = None) -> Transform", ("f",) * 7,
        ("t",), ref=lambda *c: np.stack(c, 1)),
    Row("transformation", "(*args: Float, dtype: Float = None) -> Transform", ("f",), ("t",),
        label="fill", body="y0 = wp.transformation(x0, dtype=F)",
        ref=lambda x: np.repeat(x[:, None], 7, 1)),
    Row("transform_identity", "(dtype: Float = float32) -> Transform", (), ("t",), grad=False,
        body="y0 = wp.transform_identity(dtype=F)", ref=lambda: np.eye(7)[6]),
    Row("transform_get_translation", "(xform: Transform) -> Vector3", ("t",), ("v3",),
        ref=lambda t: t[:, :3]),
    Row("transform_get_rotation", "(xform: Transform) -> Quat", ("t",), ("q",),
        ref=lambda t: t[:, 3:]),
    Row("transform_set_translation", "(xform: Transform, p: Vector3) -> None", ("t", "v3"),
        ("t",), body="wp.transform_set_translation(x0, x1)\ny0 = x0",
        ref=lambda t, p: np.concatenate([p, t[:, 3:]], 1)),
    Row("transform_set_rotation", "(xform: Transform, q: Quat) -> None", ("t", "q"), ("t",),
        body="wp.transform_set_rotation(x0, x1)\ny0 = x0",
        ref=lambda t, q: np.concatenate([t[:, :3], q], 1)),
    Row("transform_point", "(xform: Transform, point: Vector3) -> Vector3", ("t", "v3"), ("v3",),
        ref=scipy_ref(lambda t, v: Rotation.from_quat(t[:, 3:]).apply(v) + t[:, :3])),
    Row("transform_point", "(mat: Matrix44, point: Vector3) -> Vector3", ("m44", "v3"),
        ("v3",), ref=lambda m, v: np.einsum("nij,nj->ni", m[:, :3, :3], v) + m[:, :3, 3]),
    Row("transform_vector", "(xform: Transform, vec: Vector3) -> Vector3", ("t", "v3"),
        ("v3",), ref=scipy_ref(lambda t, v: Rotation.from_quat(t[:, 3:]).apply(v))),
    Row("transform_vector", "(mat: Matrix44, vec: Vector3) -> Vector3", ("m44", "v3"),
        ("v3",), ref=lambda m, v: np.einsum("nij,nj->ni", m[:, :3, :3], v)),
    Row("transform_multiply", "(a: Transform, b: Transform) -> Transform", ("t", "t"), ("t",),
        ref=_multiply_ref),
    Row("transform_inverse", T1, ("t",), ("t",), ref=scipy_ref(_inverse_ref)),
    Row("transform_to_matrix", "(xform: Transform) -> Matrix44", ("t",), ("m44",),
        ref=lambda t: _homogeneous(rotmat(t[:, 3:]), t[:, :3])),
    Row("transform_from_matrix", "(mat: Matrix44) -> Transform", ("m44",), ("t",),
        sample=(rigid44,), body="t = wp.transform_from_matrix(x0)\nq = t.q\n"
                                "y0 = wp.transformation(t.p, q * wp.sign(q[3]))",
        ref=scipy_ref(lambda m: np.concatenate(
            [m[:, :3, 3], Rotation.from_matrix(m[:, :3, :3]).as_quat(canonical=True)], 1))),
    Row("transform_compose", "(position: Vector3, rotation: Quat, scale: Vector3) -> Matrix44",
        ("v3", "q", "v3"), ("m44",),
        ref=lambda p, q, s: _homogeneous(rotmat(q) * s[:, None, :], p)),
    Row("transform_decompose", "(m: Matrix44) -> (Vector3, Quat, Vector3)", ("m44",),
        ("v3", "q", "v3"), sample=(_scaled44,),
        body="y0, q, y2 = wp.transform_decompose(x0)\ny1 = q * wp.sign(q[3])",
        ref=scipy_ref(_decompose_ref)),
    Row("transform_point", "(mat: Matrix44, point: Vector3) -> Vector3", ("m44", "v3"),
        ("v3",), label="general", sample=(_any44, "any"),
        ref=lambda m, v: (m @ np.concatenate([v, np.ones((len(v), 1))], 1)[:, :, None])
        [:, :3, 0]),
]
