"""`warp._src.context.runtime.core` under the alias: Warp's exported builtins
(`wp_builtin_<builtin>_<argument types>`), evaluated by gradloom and written through the
`ctypes.byref(result)` argument, as newton's host_transform.py calls them."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gradloom as wp
from gradloom.as_warp import context

core = context.runtime.core


def _qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of (x, y, z, w) quaternions, in float64."""
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.r_[aw * bv + bw * av + np.cross(av, bv), aw * bw - av @ bv]


def _rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    conj = np.r_[-q[:3], q[3]]
    return _qmul(_qmul(q, np.r_[v, 0.0]), conj)[:3]


def _unit(q: list[float]) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return q / np.linalg.norm(q)


A = np.r_[1.0, -2.0, 0.5, _unit([0.1, 0.7, -0.3, 0.6])]
B = np.r_[0.25, 3.0, -1.0, _unit([-0.4, 0.2, 0.5, 0.7])]


def test_names_parse_into_builtins_and_types() -> None:
    b, types = context.parse("wp_builtin_transform_point_transformf_vec3f")
    assert b is wp.transform_point and types == [wp.transformf, wp.vec3f]
    b, types = context.parse("wp_builtin_spatial_dot_spatial_vectorf_spatial_vectorf")
    assert b is wp.spatial_dot and types == [wp.spatial_vectorf, wp.spatial_vectorf]
    b, types = context.parse("wp_builtin_quat_from_matrix_mat44f")
    assert b is wp.quat_from_matrix and types == [wp.mat44f]
    assert context.parse("wp_builtin_no_such_builtin_vec3f") is None
    assert context.parse("wp_builtin_mul_transformf_vec9q") is None
    with pytest.raises(AttributeError, match="wp_float_to_half_bits"):
        core.wp_float_to_half_bits  # noqa: B018 (the rest of Warp's native library)


def test_transform_products_are_written_through_byref() -> None:
    a, b = wp.transform(*A), wp.transform(*B)
    out = wp.transform()
    core.wp_builtin_mul_transformf_transformf(a, b, ctypes.byref(out))
    expected = np.r_[_rotate(A[3:], B[:3]) + A[:3], _qmul(A[3:], B[3:])]
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-6)
    inv = wp.transform()
    core.wp_builtin_transform_inverse_transformf(a, ctypes.byref(inv))
    q_inv = np.r_[-A[3:6], A[6]]
    np.testing.assert_allclose(np.asarray(inv), np.r_[-_rotate(q_inv, A[:3]), q_inv],
                               rtol=1e-5, atol=1e-6)


def test_points_vectors_scalars_and_rows_of_numpy_arrays() -> None:
    a = wp.transform(*A)
    p, v = wp.vec3(), wp.vec3()
    core.wp_builtin_transform_point_transformf_vec3f(a, wp.vec3(1.0, 2.0, 3.0), ctypes.byref(p))
    core.wp_builtin_transform_vector_transformf_vec3f(a, wp.vec3(1.0, 2.0, 3.0), ctypes.byref(v))
    np.testing.assert_allclose(np.asarray(v), _rotate(A[3:], np.r_[1.0, 2.0, 3.0]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(p), np.asarray(v) + A[:3], rtol=1e-5)
    length = ctypes.c_float()
    core.wp_builtin_length_vec3f(wp.vec3(3.0, 4.0, 12.0), ctypes.byref(length))
    assert length.value == 13.0
    rows = np.stack([A, B]).astype(np.float32)
    out = np.zeros((2, 7), dtype=np.float32)  # newton's _native_transform_rows
    for i, row in enumerate(out):
        core.wp_builtin_mul_transformf_transformf(
            wp.transform.from_buffer_copy(rows[i]), wp.transform.from_buffer_copy(rows[1 - i]),
            ctypes.byref(wp.transform.from_buffer(row)))  # fmt: skip
    np.testing.assert_allclose(out[0, 3:], _qmul(A[3:], B[3:]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1, 3:], _qmul(B[3:], A[3:]), rtol=1e-5, atol=1e-6)


def test_quat_from_a_numpy_matrix_buffer() -> None:
    q = _unit([0.2, -0.1, 0.4, 0.8])
    r = np.array([_rotate(q, e) for e in np.eye(3)]).T  # columns: the rotated axes
    matrix = np.eye(4, dtype=np.float32)
    matrix[:3, :3] = r
    out = wp.quat()
    core.wp_builtin_quat_from_matrix_mat44f(wp.mat44.from_buffer(matrix), ctypes.byref(out))
    got = np.asarray(out)
    np.testing.assert_allclose(got * np.sign(got[3]), q * np.sign(q[3]), rtol=1e-5, atol=1e-6)


def test_newtons_call_path_through_the_alias(tmp_path: Path) -> None:
    code = ("import ctypes\n"
            "import numpy as np\n"
            "import warp as wp\n"
            "f = getattr(wp._src.context.runtime.core, 'wp_builtin_mul_transformf_transformf')\n"
            "r = wp.transform()\n"
            "f(wp.transform((1.0, 2.0, 3.0), wp.quat_identity()),\n"
            "  wp.transform((1.0, 0.0, 0.0), wp.quat_identity()), ctypes.byref(r))\n"
            "print(np.asarray(r).tolist())\n")  # fmt: skip
    repo = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-m", "gradloom.as_warp", "-c", code], cwd=tmp_path,
                         capture_output=True, text=True, timeout=180,
                         env={"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "[2.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]"
