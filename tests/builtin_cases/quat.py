"""Rows for quaternion builtins (Warp's "Quaternion Math"), plus the numpy references and samplers
that the transform and spatial rows share.

References are scipy.spatial.transform.Rotation where it applies (as_quat gives (x, y, z, w),
like Warp), otherwise textbook numpy formulas. Rotations are equal up to the quaternion's sign,
so rows whose builtin leaves the sign unspecified canonicalise it in the kernel body
(``q * wp.sign(q[3])``) and compare with scipy's canonical (w >= 0) quaternion.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from builtin_table import Row

try:
    from scipy.spatial.transform import Rotation
except ImportError:  # scipy is optional: rows that need it run without a reference
    Rotation = None


# -- numpy references -----------------------------------------------------------------------------

def qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of (..., 4) arrays in (x, y, z, w) order."""
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    v = aw * bv + bw * av + np.cross(av, bv)
    w = aw * bw - np.sum(av * bv, axis=-1, keepdims=True)
    return np.concatenate([v, w], axis=-1)


def rotmat(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of unit quaternions, from the axis-angle (Rodrigues) form."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    s = np.linalg.norm(q[..., :3], axis=-1)
    angle = 2.0 * np.arctan2(s, q[..., 3])
    k = q[..., :3] / np.maximum(s, 1e-300)[..., None]
    kx = np.zeros((*q.shape[:-1], 3, 3))
    kx[..., 0, 1], kx[..., 0, 2], kx[..., 1, 2] = -k[..., 2], k[..., 1], -k[..., 0]
    kx = kx - np.swapaxes(kx, -1, -2)
    sa, ca = np.sin(angle)[..., None, None], np.cos(angle)[..., None, None]
    return np.eye(3) + sa * kx + (1.0 - ca) * (kx @ kx)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.einsum("nij,nj->ni", rotmat(q), v)


def canonical(q: np.ndarray) -> np.ndarray:
    return q * np.where(q[..., 3:] < 0.0, -1.0, 1.0)


def scipy_ref(fn: Any) -> Any:
    """fn as a row reference, or None (no forward check) when scipy is missing."""
    return fn if Rotation is not None else None


# -- samplers -------------------------------------------------------------------------------------

def unit_vec(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    v = rng.normal(size=shape)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def angles(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(-2.5, 2.5, shape)


def tait_bryan(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Euler angles away from gimbal lock: the middle angle in (-1.2, 1.2)."""
    return rng.uniform(-1.2, 1.2, shape) * np.array([2.0, 1.0, 2.0])


def rigid44(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """4x4 [[R, p], [0, 0, 0, 1]] with a random rotation R."""
    n = shape[0]
    q = unit_vec(rng, (n, 4))
    m = np.zeros((n, 4, 4))
    m[:, :3, :3] = rotmat(q)
    m[:, :3, 3] = rng.uniform(-1, 1, (n, 3))
    m[:, 3, 3] = 1.0
    return m


def unit_in_range(lo: float, hi: float) -> Any:
    return lambda rng, shape: rng.uniform(lo, hi, shape)


# -- rows -----------------------------------------------------------------------------------------

Q1 = "(quat: Quat) -> Quat"
QV = "(quat: Quat, vec: Vector3) -> Vector3"
TW = "(axis: Vector3, q: Quat) -> Quat"
TWF = "(axis: Vector3, q: Quat) -> Float"
CANON = "y0 = q * wp.sign(q[3])"


def _slerp_ref(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Textbook slerp along the shorter arc, with b normalised."""
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    d = np.sum(a * b, axis=-1)
    b = b * np.where(d < 0, -1.0, 1.0)[:, None]
    theta = np.arccos(np.clip(np.abs(d), -1.0, 1.0))[:, None]
    t = t[:, None]
    return (np.sin((1 - t) * theta) * a + np.sin(t * theta) * b) / np.sin(theta)


def _twist_ref(axis: np.ndarray, q: np.ndarray) -> np.ndarray:
    proj = np.concatenate([axis * np.sum(axis * q[:, :3], axis=1, keepdims=True), q[:, 3:]], 1)
    return proj / np.linalg.norm(proj, axis=1, keepdims=True)


def _axis_angle_ref(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rv = Rotation.from_quat(q).as_rotvec()
    angle = np.linalg.norm(rv, axis=1)
    return rv / angle[:, None], angle


ROWS: list[Row] = [
    Row("quaternion", "(dtype: Float = float32) -> Quat", ("f",), ("q", "f"), label="zeros",
        body="y0 = wp.quaternion(dtype=F)\ny1 = x0 * x0",
        ref=lambda x: (np.zeros((len(x), 4)), x * x)),
    Row("quaternion", "(x: Float, y: Float, z: Float, w: Float, dtype: Float = None) -> Quat",
        ("f", "f", "f", "f"), ("q",), ref=lambda *c: np.stack(c, axis=1)),
    Row("quaternion", "(ijk: Vector3, real: Float, dtype: Float = None) -> Quat",
        ("v3", "f"), ("q",), ref=lambda v, w: np.concatenate([v, w[:, None]], axis=1)),
    Row("quaternion", "(quat: Quat, dtype: Float = None) -> Quat", ("q",), ("q",),
        label="copy", body="y0 = wp.quaternion(x0, dtype=F)", ref=lambda q: q),
    Row("quat_identity", "(dtype: Float = float32) -> Quat", (), ("q",), grad=False,
        body="y0 = wp.quat_identity(dtype=F)", ref=lambda: np.array([0.0, 0.0, 0.0, 1.0])),
    Row("quat_inverse", Q1, ("q",), ("q",), ref=lambda q: q * np.array([-1, -1, -1, 1.0])),
    Row("quat_rotate", QV, ("q", "v3"), ("v3",), ref=rotate),
    Row("quat_rotate_inv", QV, ("q", "v3"), ("v3",),
        ref=lambda q, v: rotate(q * np.array([-1, -1, -1, 1.0]), v)),
    Row("quat_to_matrix", "(quat: Quat) -> Matrix33", ("q",), ("m33",), ref=rotmat),
    Row("quat_from_matrix", "(mat: Matrix33) -> Quat", ("m33",), ("q",), sample=("rot",),
        body=f"q = wp.quat_from_matrix(x0)\n{CANON}",
        ref=scipy_ref(lambda m: Rotation.from_matrix(m).as_quat(canonical=True))),
    Row("quat_from_matrix", "(mat: Matrix44) -> Quat", ("m44",), ("q",), sample=(rigid44,),
        body=f"q = wp.quat_from_matrix(x0)\n{CANON}",
        ref=scipy_ref(lambda m: Rotation.from_matrix(m[:, :3, :3]).as_quat(canonical=True))),
    Row("quat_from_axis_angle", "(axis: Vector3, angle: Float) -> Quat", ("v3", "f"), ("q",),
        sample=(unit_vec, angles),
        ref=scipy_ref(lambda a, t: Rotation.from_rotvec(a * t[:, None]).as_quat(canonical=True))),
    Row("quat_to_axis_angle", "(quat: Quat) -> (Vector3, Float)", ("q",), ("v3", "f"),
        body="y0, y1 = wp.quat_to_axis_angle(x0)", ref=scipy_ref(_axis_angle_ref)),
    Row("quat_to_axis_angle", "(quat: Quat, axis: Vector3, angle: Float) -> None", ("q",),
        ("v3", "f"), label="outargs",
        body="ax, ang = wp.quat_to_axis_angle(x0 * F(0.5))  # typed output variables\n"
             "wp.quat_to_axis_angle(x0, ax, ang)\ny0 = ax\ny1 = ang",
        ref=scipy_ref(_axis_angle_ref)),
    Row("quat_rpy", "(roll: Float, pitch: Float, yaw: Float) -> Quat", ("f", "f", "f"), ("q",),
        sample=(angles, unit_in_range(-1.3, 1.3), angles),
        body=f"q = wp.quat_rpy(x0, x1, x2)\n{CANON}",
        ref=scipy_ref(lambda r, p, y: Rotation.from_euler("xyz", np.stack([r, p, y], 1))
                      .as_quat(canonical=True))),
    Row("quat_to_rpy", "(q: Quat) -> Vector3", ("q",), ("v3",),
        ref=scipy_ref(lambda q: Rotation.from_quat(q).as_euler("xyz"))),
    Row("quat_from_euler", "(e: Vector3, i: Int, j: Int, k: Int) -> Quat", ("v3",), ("q",),
        sample=(angles,), body=f"q = wp.quat_from_euler(x0, 0, 1, 2)\n{CANON}",
        ref=scipy_ref(lambda e: Rotation.from_euler("xyz", e).as_quat(canonical=True))),
    Row("quat_from_euler", "(e: Vector3, i: Int, j: Int, k: Int) -> Quat", ("v3",), ("q",),
        sample=(angles,), label="zxz", body=f"q = wp.quat_from_euler(x0, 2, 0, 2)\n{CANON}",
        ref=scipy_ref(lambda e: Rotation.from_euler("zxz", e[:, [2, 0, 2]])
                      .as_quat(canonical=True))),
    Row("quat_to_euler", "(q: Quat, i: Int, j: Int, k: Int) -> Vector3", ("q",), ("v3",),
        body="y0 = wp.quat_to_euler(x0, 2, 1, 0)"),
    Row("quat_to_euler", "(q: Quat, i: Int, j: Int, k: Int) -> Vector3", ("q",), ("v3",),
        label="yxy", body="y0 = wp.quat_to_euler(x0, 1, 0, 1)"),
    Row("quat_slerp", "(a: Quat, b: Quat, t: Float) -> Quat", ("q", "q", "f"), ("q",),
        sample=("quat", "quat", unit_in_range(0.05, 0.95)), ref=_slerp_ref),
    Row("quat_twist", TW, ("v3", "q"), ("q",), sample=(unit_vec, "quat"), ref=_twist_ref),
    Row("quat_twist_angle", TWF, ("v3", "q"), ("f",), sample=(unit_vec, "quat")),
    Row("quat_twist_angle_signed", TWF, ("v3", "q"), ("f",), sample=(unit_vec, "quat")),
]
