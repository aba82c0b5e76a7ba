"""Rows for spatial-vector builtins (Warp's "Spatial Math"); numpy references.

A spatial vector is (w, v): angular part first (components 0-2), then linear (3-5).
In kernels `wp.spatial_vector` is the float32 type, as in Warp (which rejects both float64
components and `dtype=` there), so the constructor rows call the type of the row's precision:
`wp.spatial_vectord(...)` in float64.
"""

from __future__ import annotations

import numpy as np
from builtin_table import Row

from builtin_cases.quat import rotate

SS = "(a: SpatialVector, b: SpatialVector) -> SpatialVector"
TS = "(t: Transform, x: SpatialVector) -> SpatialVector"


def _typed(call: str) -> str:
    """y0 = <the spatial vector type of the row's float type><call> (a compile-time branch)."""
    return (f"if wp.static(F == wp.float64):\n    y0 = wp.spatial_vectord{call}\n"
            f"else:\n    y0 = wp.spatial_vector{call}")


def _cross_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    wa, va, wb, vb = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([np.cross(wa, wb), np.cross(va, wb) + np.cross(wa, vb)], 1)


def _cross_dual_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w, v, n, f = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([np.cross(w, n) + np.cross(v, f), np.cross(w, f)], 1)


def _adjoint_ref(r: np.ndarray, s: np.ndarray) -> np.ndarray:
    m = np.zeros((len(r), 6, 6))
    m[:, :3, :3], m[:, 3:, 3:], m[:, 3:, :3] = r, r, s
    return m


def _twist_ref(t: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The 6x6 motion transform [[R, 0], [skew(p) R, R]] applied to x."""
    w = rotate(t[:, 3:], x[:, :3])
    return np.concatenate([w, rotate(t[:, 3:], x[:, 3:]) + np.cross(t[:, :3], w)], 1)


def _wrench_ref(t: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The 6x6 force transform [[R, skew(p) R], [0, R]] applied to x."""
    f = rotate(t[:, 3:], x[:, 3:])
    return np.concatenate([rotate(t[:, 3:], x[:, :3]) + np.cross(t[:, :3], f), f], 1)


ROWS: list[Row] = [
    Row("spatial_vector", "(dtype: Float = float32) -> SpatialVector", ("f",), ("sv", "f"),
        label="zeros", body=_typed("()") + "\ny1 = x0 * x0",
        ref=lambda x: (np.zeros((len(x), 6)), x * x)),
    Row("spatial_vector", "(w: Vector3, v: Vector3, dtype: Float = None) -> SpatialVector",
        ("v3", "v3"), ("sv",), body=_typed("(x0, x1)"),
        ref=lambda w, v: np.concatenate([w, v], 1)),
    Row("spatial_vector", "(wx: Float, wy: Float, wz: Float, vx: Float, vy: Float, vz: Float, "
        "dtype: Float = None) -> SpatialVector", ("f",) * 6, ("sv",),
        body=_typed("(x0, x1, x2, x3, x4, x5)"),
        ref=lambda *c: np.stack(c, 1)),
    Row("spatial_top", "(svec: SpatialVector) -> Vector3", ("sv",), ("v3",),
        ref=lambda s: s[:, :3]),
    Row("spatial_bottom", "(svec: SpatialVector) -> Vector3", ("sv",), ("v3",),
        ref=lambda s: s[:, 3:]),
    Row("spatial_dot", "(a: SpatialVector, b: SpatialVector) -> Float", ("sv", "sv"), ("f",),
        ref=lambda a, b: np.sum(a * b, axis=1)),
    Row("spatial_cross", SS, ("sv", "sv"), ("sv",), ref=_cross_ref),
    Row("spatial_cross_dual", SS, ("sv", "sv"), ("sv",), ref=_cross_dual_ref),
    Row("spatial_adjoint", "(r: Matrix33, s: Matrix33) -> SpatialMatrix", ("m33", "m33"),
        ("sm",), ref=_adjoint_ref),
    Row("velocity_at_point", "(qd: SpatialVector, r: Vector3) -> Vector3", ("sv", "v3"),
        ("v3",), ref=lambda s, r: s[:, 3:] + np.cross(s[:, :3], r)),
    Row("transform_twist", TS, ("t", "sv"), ("sv",), ref=_twist_ref),
    Row("transform_wrench", TS, ("t", "sv"), ("sv",), ref=_wrench_ref),
]
