"""Calls checked at Python scope against kernels and warp-lang (tests/test_host_eval.py).

Each case is an expression over x0, x1, ... (and F, the float type), written as it would be in a
kernel, with a function giving the arguments for F = float32 or float64. Flags: "nowarp" where
warp-lang has no such call at Python scope (gradloom extensions) or computes it differently on
purpose (docs/differences.md); "warp_xfail" where gradloom's kernels also differ from Warp's (a
known builtin difference); "f32" for cases that do not depend on the float type; "python" for
forms Warp accepts at Python scope only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import gradloom as gl


@dataclass(frozen=True)
class Case:
    expr: str
    args: Callable[[Any], list[Any]]
    flags: frozenset[str] = frozenset()

    @property
    def id(self) -> str:
        return self.expr


def V(F: Any, *c: float) -> Any:
    return gl.types.vector(len(c), F)(*c)


def M(F: Any, n: int, *c: float) -> Any:
    return gl.types.matrix((n, n), F)(*c)


def Q(F: Any, *c: float) -> Any:
    return gl.types.quaternion(F)(*c)


def T(F: Any, *c: float) -> Any:
    return gl.types.transformation(F)(*c)


def SV(F: Any, *c: float) -> Any:
    return gl.types.VectorType(6, F, "spatial")(*c)


def _q(F: Any, axis: tuple[float, float, float], angle: float) -> Any:
    n = math.sqrt(sum(a * a for a in axis))
    s = math.sin(angle / 2) / n
    return Q(F, axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2))


def _m3(F: Any) -> Any:
    return M(F, 3, 2.0, -1.0, 0.5, 0.3, 1.5, -0.7, 1.1, 0.2, 3.0)


def _sym3(F: Any) -> Any:
    return M(F, 3, 4.0, 1.0, -0.5, 1.0, 3.0, 0.25, -0.5, 0.25, 2.0)


def _case(expr: str, args: Callable[[Any], list[Any]], *flags: str) -> Case:
    return Case(expr, args, frozenset(flags))


def _s(*vals: float) -> Callable[[Any], list[Any]]:
    return lambda F: [F(v) for v in vals]


U32 = gl.uint32

SCALAR = [
    *(_case(f"wp.{n}(x0)", _s(0.7)) for n in (
        "sqrt", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
        "exp", "log", "log2", "log10", "erf", "erfc", "degrees", "radians")),
    *(_case(f"wp.{n}(x0)", _s(v)) for n in ("floor", "ceil", "round", "rint", "trunc")
      for v in (-2.5, 2.5, 0.49999997)),
    _case("wp.erfinv(x0)", _s(0.3), "nowarp"),
    _case("wp.pow(x0, x1)", _s(1.7, 2.3)), _case("wp.atan2(x0, x1)", _s(0.3, -0.8)),
    _case("wp.min(x0, x1)", _s(1.5, -0.5)), _case("wp.max(x0, x1)", _s(1.5, -0.5)),
    _case("wp.clamp(x0, x1, x2)", _s(3.0, 0.0, 2.0)), _case("wp.abs(x0)", _s(-1.5)),
    _case("wp.sign(x0)", _s(-2.0)), _case("wp.lerp(x0, x1, x2)", _s(1.0, 3.0, 0.25)),
    _case("wp.smoothstep(x0, x1, x2)", _s(0.0, 1.0, 0.3)), _case("wp.step(x0)", _s(-1.0)),
    _case("wp.frac(x0)", _s(-2.75)), _case("wp.mod(x0, x1)", _s(7.5, 2.0)),
    _case("wp.copysign(x0, x1)", _s(1.5, -0.0), "nowarp"),
    _case("wp.floordiv(x0, x1)", _s(-7.5, 2.0), "nowarp"),
    _case("wp.isnan(x0)", _s(math.nan)), _case("wp.isinf(x0)", _s(math.inf)),
    _case("wp.isfinite(x0)", _s(1.0)),
    # literals adopt the other operand's type, as in kernels
    _case("wp.min(x0, 0.5)", _s(0.7)), _case("x0 * 2.0 + 1.0", _s(0.3)),
    _case("x0 / x1 - x0", _s(1.0, 3.0)), _case("-x0", _s(0.3)), _case("x0 ** 2.0", _s(1.1)),
    _case("wp.sqrt(2.0)", lambda F: [], "f32"),
    _case("wp.min(7, 3) + wp.max(2, 5)", lambda F: [], "f32"),
]

VECTOR = [
    *(_case(e, lambda F: [V(F, 1.0, -2.0, 0.5), V(F, 0.3, 0.8, -1.2)]) for e in (
        "wp.dot(x0, x1)", "wp.cross(x0, x1)", "wp.outer(x0, x1)", "wp.cw_mul(x0, x1)",
        "wp.cw_div(x0, x1)", "wp.min(x0, x1)", "wp.max(x0, x1)", "x0 + x1", "x0 - x1",
        "x0 == x1", "x0 != x1")),
    *(_case(e, lambda F: [V(F, 1.0, -2.0, 0.5)]) for e in (
        "wp.length(x0)", "wp.length_sq(x0)", "wp.normalize(x0)", "wp.norm_l1(x0)",
        "wp.norm_l2(x0)", "wp.argmin(x0)", "wp.argmax(x0)", "wp.abs(x0)", "x0 * 2.0",
        "2.0 * x0", "x0 / 2.0", "-x0", "x0[1]", "x0.z", "wp.skew(x0)", "wp.diag(x0)")),
    _case("wp.norm_huber(x0)", lambda F: [V(F, 1.0, -2.0, 0.5)], "nowarp"),
    _case("wp.norm_pseudo_huber(x0)", lambda F: [V(F, 1.0, -2.0, 0.5)], "nowarp"),
    _case("wp.sqrt(x0)", lambda F: [V(F, 1.0, 2.0, 0.5)], "nowarp"),
    _case("wp.length(x0)", lambda F: [V(F, 1.0, -2.0, 0.5, 3.0)]),
    _case("wp.dot(x0, x1)", lambda F: [V(F, 1.0, -2.0), V(F, 0.5, 0.25)]),
    _case("wp.normalize(x0)", lambda F: [V(F, 0.0, 0.0, 0.0)]),
    _case("x0 + 1.0", lambda F: [V(F, 1.0, -2.0, 0.5)], "python"),
    _case("1.0 - x0", lambda F: [V(F, 1.0, -2.0, 0.5)], "python"),
]

MATRIX = [
    _case("wp.transpose(x0)", lambda F: [_m3(F)]),
    _case("wp.inverse(x0)", lambda F: [M(F, 2, 1.0, 2.0, 3.0, 4.0)]),
    _case("wp.inverse(x0)", lambda F: [_m3(F)]),
    _case("wp.inverse(x0)", lambda F: [M(F, 4, 2, 0, 1, 0, 1, 3, 0, 1, 0, 1, 4, 0, 1, 0, 0, 5)]),
    _case("wp.determinant(x0)", lambda F: [_m3(F)]),
    _case("wp.determinant(x0)", lambda F: [M(F, 2, 1.0, 2.0, 3.0, 4.0)]),
    _case("wp.trace(x0)", lambda F: [_m3(F)]), _case("wp.get_diag(x0)", lambda F: [_m3(F)]),
    _case("wp.ddot(x0, x1)", lambda F: [_m3(F), _sym3(F)]),
    _case("x0 * x1", lambda F: [_m3(F), V(F, 1.0, 2.0, 3.0)]),
    _case("x0 * x1", lambda F: [V(F, 1.0, 2.0, 3.0), _m3(F)]),
    _case("x0 @ x1", lambda F: [_m3(F), _sym3(F)]),
    _case("x0 * x1", lambda F: [_m3(F), _sym3(F)]),
    _case("x0 + x1", lambda F: [_m3(F), _sym3(F)]),
    _case("x0 * 2.0", lambda F: [_m3(F)]), _case("x0[1]", lambda F: [_m3(F)]),
    _case("x0[1, 2]", lambda F: [_m3(F)]),
    _case("wp.matrix_from_rows(x0, x1, x0)", lambda F: [V(F, 1, 2, 3), V(F, 4, 5, 6)]),
    _case("wp.matrix_from_cols(x0, x1, x0)", lambda F: [V(F, 1, 2, 3), V(F, 4, 5, 6)]),
    _case("wp.identity(n=3, dtype=F)", lambda F: []),
    _case("wp.svd3(x0)", lambda F: [_m3(F)], "nowarp"),
    _case("wp.eig3(x0)", lambda F: [_sym3(F)], "nowarp"),
    _case("wp.qr3(x0)", lambda F: [_m3(F)], "nowarp"),
]

QUAT = [
    _case("wp.quat_from_axis_angle(x0, 0.5)", lambda F: [V(F, 0.0, 0.0, 1.0)]),
    _case("wp.quat_from_axis_angle(x0, x1)", lambda F: [V(F, 0.6, 0.0, 0.8), F(1.3)]),
    _case("wp.quat_rotate(x0, x1)", lambda F: [_q(F, (1, 2, 3), 0.7), V(F, 1.0, -2.0, 0.5)]),
    _case("wp.quat_rotate_inv(x0, x1)", lambda F: [_q(F, (1, 2, 3), 0.7), V(F, 1, -2, 0.5)]),
    _case("wp.quat_inverse(x0)", lambda F: [_q(F, (1, 2, 3), 0.7)]),
    _case("wp.quat_rpy(x0, x1, x2)", _s(0.1, 0.2, 0.3)),
    _case("wp.quat_to_matrix(x0)", lambda F: [_q(F, (1, 2, 3), 0.7)]),
    _case("wp.quat_from_matrix(x0)", lambda F: [M(F, 3, 0, -1, 0, 1, 0, 0, 0, 0, 1)]),
    _case("wp.quat_slerp(x0, x1, x2)",
          lambda F: [_q(F, (1, 0, 0), 0.3), _q(F, (0, 1, 1), 1.2), F(0.4)]),
    _case("wp.quat_identity(dtype=F)", lambda F: []),
    _case("wp.quat_to_axis_angle(x0)", lambda F: [_q(F, (1, 2, 3), 0.7)], "nowarp"),
    _case("wp.quat_twist(x0, x1)", lambda F: [V(F, 0, 0, 1), _q(F, (1, 2, 3), 0.7)]),
    _case("x0 * x1", lambda F: [_q(F, (0, 0, 1), 0.0), Q(F, 0.5, 0.5, 0.5, 0.5)]),
    _case("x0 * x1", lambda F: [_q(F, (1, 2, 3), 0.7), _q(F, (0, 1, 0), -0.4)]),
    _case("x0 * 2.0", lambda F: [_q(F, (1, 2, 3), 0.7)]),
    _case("x0 + x1", lambda F: [_q(F, (1, 2, 3), 0.7), _q(F, (0, 1, 0), -0.4)]),
]

TRANSFORM = [
    _case("wp.transform_identity(dtype=F)", lambda F: []),
    _case("wp.transform_point(x0, x1)", lambda F: [_tf(F), V(F, 1.0, -2.0, 0.5)]),
    _case("wp.transform_vector(x0, x1)", lambda F: [_tf(F), V(F, 1.0, -2.0, 0.5)]),
    _case("wp.transform_inverse(x0)", lambda F: [_tf(F)]),
    _case("wp.transform_multiply(x0, x1)", lambda F: [_tf(F), _tf2(F)]),
    _case("x0 * x1", lambda F: [_tf(F), _tf2(F)]),
    _case("wp.transform_get_translation(x0)", lambda F: [_tf(F)]),
    _case("wp.transform_get_rotation(x0)", lambda F: [_tf(F)]),
    _case("wp.transform_to_matrix(x0)", lambda F: [_tf(F)]),
    _case("wp.spatial_dot(x0, x1)", lambda F: [SV(F, 1, 2, 3, 4, 5, 6), SV(F, 0.5, -1, 2, 0, 1, 3)]),
    _case("wp.spatial_cross(x0, x1)", lambda F: [SV(F, 1, 2, 3, 4, 5, 6), SV(F, 0.5, -1, 2, 0, 1, 3)]),
    _case("wp.spatial_top(x0)", lambda F: [SV(F, 1, 2, 3, 4, 5, 6)]),
    _case("wp.spatial_bottom(x0)", lambda F: [SV(F, 1, 2, 3, 4, 5, 6)]),
]


def _tf(F: Any) -> Any:
    q = _q(F, (1, 2, 3), 0.7)
    return T(F, 1.0, 2.0, -0.5, *(float(c) for c in q))


def _tf2(F: Any) -> Any:
    q = _q(F, (0, 1, 0), -0.4)
    return T(F, -0.3, 0.1, 2.0, *(float(c) for c in q))


RANDOM = [
    _case("wp.rand_init(x0)", lambda F: [gl.int32(42)], "f32"),
    _case("wp.rand_init(x0, x1)", lambda F: [gl.int32(42), gl.int32(7)], "f32"),
    _case("wp.randf(x0)", lambda F: [U32(123456789)], "f32"),
    _case("wp.randf(x0, 1.0, 2.0)", lambda F: [U32(123456789)], "f32"),
    _case("wp.randi(x0)", lambda F: [U32(987654321)], "f32"),
    _case("wp.randn(x0)", lambda F: [U32(987654321)], "f32"),
    # gradloom's kernels give another point than Warp's kernels here (a builtin-library
    # difference, not a Python-scope one): xfail against warp-lang until they agree
    _case("wp.sample_unit_sphere(x0)", lambda F: [U32(5555)], "f32"),
    _case("wp.sample_unit_hemisphere(x0)", lambda F: [U32(77)], "f32"),
    _case("wp.sample_unit_disk(x0)", lambda F: [U32(5555)], "f32"),
    _case("wp.poisson(x0, 3.5)", lambda F: [U32(2024)], "f32", "nowarp"),
    _case("wp.noise(x0, x1)", lambda F: [U32(9), gl.float32(0.37)], "f32", "nowarp"),
    _case("wp.noise(x0, x1)", lambda F: [U32(9), V(gl.float32, 0.3, 1.7)], "f32", "nowarp"),
    _case("wp.pnoise(x0, x1, 4)", lambda F: [U32(9), gl.float32(2.5)], "f32", "nowarp"),
]

ALL: list[Case] = [*SCALAR, *VECTOR, *MATRIX, *QUAT, *TRANSFORM, *RANDOM]

#: float32 builtins whose IR has no multiply feeding an add, so that kernels (which may fuse
#: those into one FMA instruction) and the host round identically: bit-for-bit equal
BITWISE_F32 = [
    ("wp.sqrt(x0)", 1), ("wp.sin(x0)", 1), ("wp.exp(x0)", 1), ("wp.log(x0)", 1),
    ("wp.cbrt(x0)", 1), ("wp.erf(x0)", 1), ("wp.atan2(x0, x1)", 2), ("wp.pow(x0, x1)", 2),
    ("wp.floor(x0)", 1), ("wp.round(x0)", 1), ("wp.abs(x0)", 1), ("wp.tanh(x0)", 1),
    ("wp.min(x0, x1)", 2), ("x0 / x1", 2), ("x0 * x1 * x0", 2), ("x0 - x1", 2),
]


def random_inputs(n: int, k: int, seed: int = 0) -> np.ndarray:
    """n rows of k positive float32 values spanning several decades (pow, log and sqrt stay
    defined)."""
    rng = np.random.default_rng(seed)
    return (np.exp(rng.uniform(-4.0, 4.0, size=(n, k)))).astype(np.float32)


def _i(*vals: int, t: Any = gl.int32) -> Callable[[Any], list[Any]]:
    return lambda F: [t(v) for v in vals]


INTEGER = [  # numpy scalars keep numpy's operators at Python scope: the builtins here
    *(_case(e, _i(-7, 2), "f32", "nowarp") for e in (
        "wp.div(x0, x1)", "wp.mod(x0, x1)", "wp.floordiv(x0, x1)", "wp.mul(x0, x1)",
        "wp.neg(x0)", "wp.abs(x0)", "wp.min(x0, x1)", "wp.lshift(x0, x1)",
        "wp.rshift(x0, x1)", "wp.bit_and(x0, x1)", "wp.bit_or(x0, x1)", "wp.bit_xor(x0, x1)",
        "wp.invert(x0)", "wp.bit_count(x0)", "wp.cast(x0, wp.float32)", "wp.float32(x0)",
        "wp.uint8(x0)")),
    _case("wp.add(wp.div(x0, x1), wp.mod(x0, x1))", _i(7, 0), "f32", "nowarp"),  # 0 divisor: 0
    _case("wp.mul(x0, x1)", _i(2147483647, 2), "f32", "nowarp"),  # wraps around
    *(_case(e, _i(4000000000, 3, t=U32), "f32", "nowarp") for e in (
        "wp.div(x0, x1)", "wp.rshift(x0, x1)", "wp.mul(x0, x1)", "wp.sub(x0, wp.mul(x1, x0))",
        "wp.max(x0, x1)", "wp.float32(x0)")),
    _case("wp.int32(x0)", lambda F: [F(-2.7)], "nowarp"),
    _case("wp.float16(x0) * wp.float16(x0)", lambda F: [F(1.1)], "f32", "nowarp"),
    _case("wp.sqrt(wp.float16(x0))", lambda F: [F(2.0)], "f32", "nowarp"),
]

ALL += INTEGER
