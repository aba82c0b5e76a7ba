"""Gradient conventions at special points (docs/gradient-conventions.md), under wp.Tape.

Each convention is checked at the special point against the documented value, and next to it at
an ordinary point against the analytic derivative. All the special-point functions of one kernel
run in the same thread and only one output is seeded at a time, so a NaN from one function's
rule would show up in another's gradient ("no leak"); further kernels put a special point
beside ordinary math, `y = f(special) * 0 + g(x)`, and check that x gets exactly g'(x).
"""

# no `from __future__ import annotations`: the kernels made in kernels(F) need their
# annotations evaluated where F is in scope

import math
from functools import cache
from typing import Any

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE

if BACKEND != "gradloom":
    pytest.skip("gradloom's documented conventions (Warp differs at several points)",
                allow_module_level=True)

import gradloom as wp

INF, NAN = math.inf, math.nan
SQRT_PI_2 = math.sqrt(math.pi) / 2

# -- one kernel of unary functions, one of binary ones ---------------------------------------

UNARY = ("sqrt", "cbrt", "asin", "acos", "log", "erfinv", "erfcinv")
BINARY = ("atan2", "pow", "copysign")


@cache
def kernels(F: Any) -> dict[str, Any]:
    FArr, FArr2 = wp.array(dtype=F), wp.array2d(dtype=F)

    @wp.kernel
    def k_unary(x: FArr, out: FArr2):
        i = wp.tid()
        v = x[i]
        out[i, 0] = wp.sqrt(v)
        out[i, 1] = wp.cbrt(v)
        out[i, 2] = wp.asin(v)
        out[i, 3] = wp.acos(v)
        out[i, 4] = wp.log(v)
        out[i, 5] = wp.erfinv(v)
        out[i, 6] = wp.erfcinv(v)

    @wp.kernel
    def k_binary(a: FArr, b: FArr, out: FArr2):
        i = wp.tid()
        out[i, 0] = wp.atan2(a[i], b[i])
        out[i, 1] = wp.pow(a[i], b[i])
        out[i, 2] = wp.copysign(a[i], b[i])

    return {"unary": k_unary, "binary": k_binary}


def run(kernel: Any, F: Any, inputs: list[list[float]], column: int, n_cols: int
        ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Launch under a tape, seed output column `column` with ones; (that column, input grads)."""
    arrays = [wp.array(np.array(v), dtype=F, requires_grad=True, device=DEVICE) for v in inputs]
    n = len(inputs[0])
    out = wp.zeros((n, n_cols), dtype=F, requires_grad=True, device=DEVICE)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=n, inputs=[*arrays, out], device=DEVICE)
    seed = np.zeros((n, n_cols))
    seed[:, column] = 1.0
    tape.backward(grads={out: wp.array(seed, dtype=F, device=DEVICE)})
    return out.numpy()[:, column].astype(np.float64), [a.grad.numpy().astype(np.float64)
                                                         for a in arrays]


# (x, f(x), f'(x)) per function: the special points with their documented values, then an
# ordinary point with the analytic derivative
UNARY_CASES: dict[str, list[tuple[float, float, float]]] = {
    "sqrt": [(0.0, 0.0, 0.0), (-1.0, NAN, 0.0), (4.0, 2.0, 0.25)],
    "cbrt": [(0.0, 0.0, 0.0), (8.0, 2.0, 1 / 12), (-8.0, -2.0, 1 / 12)],
    "asin": [(1.0, math.pi / 2, 0.0), (-1.0, -math.pi / 2, 0.0), (1.5, math.pi / 2, 0.0),
             (0.6, math.asin(0.6), 1.25)],
    "acos": [(1.0, 0.0, 0.0), (-1.0, math.pi, 0.0), (-2.0, math.pi, 0.0),
             (0.6, math.acos(0.6), -1.25)],
    "log": [(0.0, -INF, INF), (2.0, math.log(2.0), 0.5)],
    "erfinv": [(1.0, INF, 0.0), (-1.0, -INF, 0.0), (0.0, 0.0, SQRT_PI_2), (1.5, NAN, 0.0)],
    "erfcinv": [(0.0, INF, 0.0), (2.0, -INF, 0.0), (1.0, 0.0, -SQRT_PI_2)],
}

# ((a, b), f(a, b), (df/da, df/db))
BINARY_CASES: dict[str, list[tuple[tuple[float, float], float, tuple[float, float]]]] = {
    "atan2": [((0.0, 0.0), 0.0, (0.0, 0.0)), ((1.0, 1.0), math.pi / 4, (0.5, -0.5))],
    "pow": [  # x^y at x = 0 for y > 1, y = 1, 0 < y < 1, y = 0, y < 0; d/dy is 0 at x <= 0
        ((0.0, 2.5), 0.0, (0.0, 0.0)), ((0.0, 1.0), 0.0, (1.0, 0.0)),
        ((0.0, 0.5), 0.0, (0.0, 0.0)), ((0.0, 0.0), 1.0, (0.0, 0.0)),
        ((0.0, -1.0), INF, (-INF, 0.0)),  # a pole, like 1/x
        ((-1.5, 2.0), 2.25, (-3.0, 0.0)), ((-1.5, 0.5), NAN, (0.0, 0.0)),
        ((2.0, 3.0), 8.0, (12.0, 8.0 * math.log(2.0))),
    ],
    "copysign": [((2.0, -0.0), -2.0, (-1.0, 0.0)), ((-3.0, 1.0), 3.0, (-1.0, 0.0)),
                 ((0.5, 2.0), 0.5, (1.0, 0.0))],
}

FLOATS = [pytest.param(wp.float64, id="f64"), pytest.param(wp.float32, id="f32")]


def _tol(F: Any) -> dict[str, float]:
    return {"rtol": 1e-12, "atol": 0.0} if F is wp.float64 else {"rtol": 2e-6, "atol": 1e-7}


@pytest.mark.parametrize("F", FLOATS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_convention(name: str, F: Any) -> None:
    xs, values, slopes = zip(*UNARY_CASES[name], strict=True)
    got, (grad,) = run(kernels(F)["unary"], F, [list(xs)], UNARY.index(name), len(UNARY))
    np.testing.assert_allclose(got, values, err_msg=f"{name} values at {xs}", **_tol(F))
    np.testing.assert_allclose(grad, slopes, err_msg=f"{name} gradients at {xs}", **_tol(F))


@pytest.mark.parametrize("F", FLOATS)
@pytest.mark.parametrize("name", BINARY)
def test_binary_convention(name: str, F: Any) -> None:
    points, values, slopes = zip(*BINARY_CASES[name], strict=True)
    a, b = zip(*points, strict=True)
    got, (ga, gb) = run(kernels(F)["binary"], F, [list(a), list(b)], BINARY.index(name),
                        len(BINARY))
    np.testing.assert_allclose(got, values, err_msg=f"{name} values at {points}", **_tol(F))
    np.testing.assert_allclose(np.stack([ga, gb], axis=1), np.array(slopes),
                               err_msg=f"{name} gradients at {points}", **_tol(F))


def test_unseeded_outputs_leave_no_nan() -> None:
    """Seeding nothing: every special point above gives exactly zero gradients (0 * inf is
    never formed)."""
    for kernel, cases, n_in, n_cols in (("unary", UNARY_CASES, 1, len(UNARY)),
                                        ("binary", BINARY_CASES, 2, len(BINARY))):
        pts = [p[0] for c in cases.values() for p in c]
        inputs = [list(pts)] if n_in == 1 else [list(v) for v in zip(*pts, strict=True)]
        arrays = [wp.array(np.array(v), dtype=wp.float64, requires_grad=True) for v in inputs]
        out = wp.zeros((len(pts), n_cols), dtype=wp.float64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(kernels(wp.float64)[kernel], dim=len(pts), inputs=[*arrays, out])
        tape.backward(grads={out: wp.zeros((len(pts), n_cols), dtype=wp.float64)})
        for a in arrays:
            np.testing.assert_array_equal(a.grad.numpy(), 0.0, err_msg=kernel)


# -- length / normalize of the zero vector -------------------------------------------------------

@wp.kernel
def k_length_normalize(v: wp.array(dtype=wp.vec3d), length: wp.array(dtype=wp.float64),
                       unit: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    length[i] = wp.length(v[i])
    unit[i] = wp.normalize(v[i])


def _vector_grads(which: str) -> tuple[np.ndarray, np.ndarray]:
    pts = np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]])
    v = wp.array(pts, dtype=wp.vec3d, requires_grad=True)
    length = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    unit = wp.zeros(2, dtype=wp.vec3d, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_length_normalize, dim=2, inputs=[v, length, unit])
    seed = ({length: wp.array(np.ones(2), dtype=wp.float64)} if which == "length" else
            {unit: wp.array(np.array([[1.0, 2.0, 3.0]] * 2), dtype=wp.vec3d)})
    tape.backward(grads=seed)
    result = length.numpy() if which == "length" else unit.numpy()
    return result, v.grad.numpy()


def test_length_of_zero_vector_has_zero_gradient() -> None:
    values, grad = _vector_grads("length")
    np.testing.assert_array_equal(values, [0.0, 5.0])
    np.testing.assert_array_equal(grad[0], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(grad[1], [0.6, 0.8, 0.0], rtol=1e-15)  # v / |v|


def test_normalize_of_zero_vector_has_zero_gradient() -> None:
    values, grad = _vector_grads("normalize")
    np.testing.assert_array_equal(values[0], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(grad[0], [0.0, 0.0, 0.0])
    v = np.array([3.0, 4.0, 0.0])
    n = np.linalg.norm(v)
    jac = (np.eye(3) - np.outer(v, v) / n**2) / n  # d(v/|v|)/dv, symmetric
    np.testing.assert_allclose(grad[1], jac @ np.array([1.0, 2.0, 3.0]), rtol=1e-14)


# -- no leak: a special point beside ordinary math in the same thread ----------------------------

@wp.kernel
def k_sqrt_beside(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64),
                  y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.sqrt(a[i] * 0.0) + 2.0 * b[i]


@wp.kernel
def k_normalize_beside(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64),
                       y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    z = a[i] * 0.0
    v = wp.vec3d(z, z, z)
    n = wp.normalize(v)
    y[i] = wp.sin(b[i]) * a[i] + wp.dot(n, n) + wp.length(v) + n[1] * b[i]


@wp.kernel
def k_specials_times_zero(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64),
                          y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    z = a[i] * 0.0
    one = z + 1.0
    special = (wp.sqrt(z) + wp.cbrt(z) + wp.acos(one) + wp.asin(-one) + wp.atan2(z, z)
               + wp.pow(z, 0.5) + wp.pow(z, 0.0) + wp.pow(z, 1.0) + wp.pow(z, 2.5))
    y[i] = special * 0.0 + b[i] * b[i] + wp.exp(a[i])


@wp.kernel
def k_guarded(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64),
              y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x = a[i]
    log_part = wp.where(x > 0.0, wp.log(x), 0.0)  # the log side is computed at x <= 0 too
    sqrt_part = wp.where(x > 0.0, wp.sqrt(x), 0.0)
    ratio = b[i] / wp.where(x != 0.0, x, 1.0)  # the safe-denominator pattern for division
    y[i] = log_part + sqrt_part + wp.where(x != 0.0, ratio, 0.0)


def _grads(kernel: Any, a: list[float], b: list[float]) -> tuple[np.ndarray, np.ndarray]:
    _, (ga, gb) = run_1d(kernel, a, b)
    return ga, gb


def run_1d(kernel: Any, a: list[float], b: list[float]
           ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    aa = wp.array(np.array(a), dtype=wp.float64, requires_grad=True)
    bb = wp.array(np.array(b), dtype=wp.float64, requires_grad=True)
    y = wp.zeros(len(a), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(a), inputs=[aa, bb, y])
    tape.backward(grads={y: wp.array(np.ones(len(a)), dtype=wp.float64)})
    return y.numpy(), (aa.grad.numpy(), bb.grad.numpy())


A = [0.7, -1.3, 0.0, 2.5]
B = [0.4, 1.1, -0.6, 0.0]


def test_sqrt_at_zero_beside_other_math() -> None:
    ga, gb = _grads(k_sqrt_beside, A, B)
    np.testing.assert_array_equal(ga, 0.0)
    np.testing.assert_array_equal(gb, 2.0)


def test_normalize_of_zero_vector_beside_other_math() -> None:
    y, (ga, gb) = run_1d(k_normalize_beside, A, B)
    np.testing.assert_allclose(y, np.sin(B) * np.array(A), rtol=1e-15)
    np.testing.assert_allclose(ga, np.sin(B), rtol=1e-15)
    np.testing.assert_allclose(gb, np.cos(B) * np.array(A), rtol=1e-15)


def test_special_points_times_zero_leave_ordinary_gradients_exact() -> None:
    y, (ga, gb) = run_1d(k_specials_times_zero, A, B)
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(ga, np.exp(A), rtol=1e-15)  # the specials contribute exactly 0
    np.testing.assert_allclose(gb, 2.0 * np.array(B), rtol=1e-15)


def test_guarded_log_sqrt_and_division_have_no_nan() -> None:
    a = [0.0, -1.0, 2.0, 0.0]
    b = [1.5, 0.5, 3.0, 0.0]
    y, (ga, gb) = run_1d(k_guarded, a, b)
    want_y = [0.0, -0.5, math.log(2.0) + math.sqrt(2.0) + 1.5, 0.0]
    np.testing.assert_allclose(y, want_y, rtol=1e-15)
    want_ga = [0.0, -0.5, 0.5 + 0.5 / math.sqrt(2.0) - 3.0 / 4.0, 0.0]
    np.testing.assert_allclose(ga, want_ga, rtol=1e-15)
    np.testing.assert_allclose(gb, [0.0, -1.0, 0.5, 0.0], rtol=1e-15)


# -- division by zero is a pole, not a special point ---------------------------------------------

@wp.kernel
def k_divide(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64),
             y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = a[i] / b[i]


def test_division_by_zero_gives_infinite_gradients() -> None:
    y, (ga, gb) = run_1d(k_divide, [1.0, -2.0], [0.0, 0.0])
    np.testing.assert_array_equal(y, [INF, -INF])
    np.testing.assert_array_equal(ga, [INF, INF])  # 1/b
    np.testing.assert_array_equal(gb, [-INF, INF])  # -a/b²
