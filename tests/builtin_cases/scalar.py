"""Rows for the scalar math builtins of gradloom/builtins/math.py (scalar and per-component
vector overloads), against numpy/scipy references."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from builtin_table import Row
from scipy import special

F1, V1 = "(x: Float) -> Float", "(x: Vector) -> Vector"
S1 = "(x: Scalar) -> Scalar"
S2 = "(a: Scalar, b: Scalar) -> Scalar"
VV = "(a: Vector, b: Vector) -> Vector"

Shape = tuple[int, ...]
Gen = np.random.Generator


# -- samplers: inputs away from kinks, poles and domain edges (the FD step is 1e-6) ------------

def away(rng: Gen, shape: Shape) -> np.ndarray:
    """Magnitudes in [0.3, 1.5] with random signs."""
    return rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


def off_integers(rng: Gen, shape: Shape) -> np.ndarray:
    """Values in (-3, 3) at least 0.1 from every integer and half-integer (steps and rounding)."""
    frac = rng.choice([0.2, 0.3, 0.7, 0.8], shape) + rng.uniform(-0.08, 0.08, shape)
    return rng.integers(-3, 3, shape) + frac


def wide(rng: Gen, shape: Shape) -> np.ndarray:
    return rng.uniform(-3.0, 3.0, shape)


def with_zeros(rng: Gen, shape: Shape) -> np.ndarray:
    """U(-1, 1) with about a third of the values exactly 0 (nonzero's two cases)."""
    return np.where(rng.uniform(size=shape) < 0.35, 0.0, rng.uniform(-1.0, 1.0, shape))


def signed_zeros(rng: Gen, shape: Shape) -> np.ndarray:
    """Only +0.0 and -0.0: copysign reads the sign bit, not the comparison y < 0."""
    return rng.choice([0.0, -0.0], shape)


def specials(rng: Gen, shape: Shape) -> np.ndarray:
    """Finite values mixed with NaN, +inf and -inf (isnan/isinf/isfinite)."""
    pick = rng.choice([0, 0, 0, 1, 2, 3], shape)
    return np.choose(pick, [rng.uniform(-1.0, 1.0, shape), np.full(shape, np.nan),
                            np.full(shape, np.inf), np.full(shape, -np.inf)])


def rare_specials(rng: Gen, shape: Shape) -> np.ndarray:
    """Mostly finite components, so that composite rows see both all-finite and mixed values."""
    v = rng.uniform(-1.0, 1.0, shape)
    hit = rng.uniform(size=shape) < 0.12
    return np.where(hit, rng.choice([np.nan, np.inf, -np.inf], shape), v)


def uniform(lo: float, hi: float) -> Callable[[Gen, Shape], np.ndarray]:
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def int_range(lo: int, hi: int) -> Callable[[Gen, Shape], np.ndarray]:
    return lambda rng, shape: rng.integers(lo, hi, shape).astype(np.float64)


def nonzero_ints(rng: Gen, shape: Shape) -> np.ndarray:
    return rng.choice([-7, -3, -2, -1, 1, 2, 3, 5], shape)


def any_ints(rng: Gen, shape: Shape) -> np.ndarray:
    return rng.choice([-2**31, -12345, -7, -1, 0, 1, 2, 255, 2**31 - 1], shape).astype(np.float64)


# -- references -----------------------------------------------------------------------------

def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _bits32(x: np.ndarray) -> np.ndarray:
    return np.array([bin(int(v) & 0xFFFFFFFF).count("1") for v in np.ravel(x)]).reshape(x.shape)


def _col(s: np.ndarray, like: np.ndarray) -> np.ndarray:
    """A per-sample scalar broadcast against a per-sample vector/matrix."""
    return s.reshape(s.shape + (1,) * (like.ndim - s.ndim))


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    t = _col(t, a)
    return a * (1 - t) + b * t


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _col(a, b) / b if a.ndim < b.ndim else a / _col(b, a)


def _smoothstep(a: np.ndarray, width: np.ndarray, x: np.ndarray) -> np.ndarray:
    u = np.clip((x - a) / ((a + width) - a), 0.0, 1.0)
    return u * u * (3 - 2 * u)


def _any_axes(test: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: test(x).reshape(len(x), -1).any(axis=1)


def _all_axes(test: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: test(x).reshape(len(x), -1).all(axis=1)


# -- unary float functions: scalar and per-component vector overloads --------------------------

_UNARY: dict[str, tuple[Any, Callable[..., Any], bool]] = {
    # name: (sampler, reference, differentiable)
    "sqrt": ("pos", np.sqrt, True), "cbrt": (away, np.cbrt, True),
    "sin": (wide, np.sin, True), "cos": (wide, np.cos, True), "tan": ("unit", np.tan, True),
    "asin": ("unit", np.arcsin, True), "acos": ("unit", np.arccos, True),
    "atan": (wide, np.arctan, True), "sinh": ("any", np.sinh, True),
    "cosh": ("any", np.cosh, True), "tanh": (wide, np.tanh, True), "exp": ("any", np.exp, True),
    "log": ("pos", np.log, True), "log2": ("pos", np.log2, True),
    "log10": ("pos", np.log10, True), "erf": (wide, special.erf, True),
    "erfc": (wide, special.erfc, True),
    "erfinv": (uniform(-0.97, 0.97), special.erfinv, True),
    "erfcinv": (uniform(0.03, 1.97), special.erfcinv, True),
    "frac": (off_integers, lambda x: x - np.trunc(x), True),
    "degrees": (wide, np.degrees, True), "radians": (wide, np.radians, True),
    "floor": (wide, np.floor, False), "ceil": (wide, np.ceil, False),
    "round": (off_integers, _round_half_away, False), "rint": (off_integers, np.rint, False),
    "trunc": (wide, np.trunc, False),
}


def _unary_rows() -> list[Row]:
    rows = []
    for name, (sampler, ref, grad) in _UNARY.items():
        rows.append(Row(name, F1, ("f",), ("f",), sample=(sampler,), ref=ref, grad=grad))
        rows.append(Row(name, V1, ("v3",), ("v3",), sample=(sampler,), ref=ref, grad=grad))
    return rows


# -- the rest -------------------------------------------------------------------------------

def _sign_step_rows() -> list[Row]:
    def sign_ref(x: np.ndarray) -> np.ndarray:
        return np.where(x < 0, -1.0, 1.0)

    return [
        Row("abs", S1, ("f",), ("f",), sample=(away,), ref=np.abs),
        Row("abs", S1, ("i",), ("i",), ref=np.abs, grad=False),
        Row("abs", V1, ("v3",), ("v3",), sample=(away,), ref=np.abs),
        Row("sign", S1, ("f",), ("f",), sample=(with_zeros,), ref=sign_ref, grad=False),
        Row("sign", S1, ("i",), ("i",), ref=sign_ref, grad=False),
        Row("sign", V1, ("v3",), ("v3",), sample=(with_zeros,), ref=sign_ref, grad=False),
        Row("step", S1, ("f",), ("f",), sample=(with_zeros,), ref=lambda x: (x < 0) * 1.0,
            grad=False),
        Row("step", S1, ("i",), ("i",), ref=lambda x: (x < 0) * 1.0, grad=False),
        Row("nonzero", S1, ("f",), ("f",), sample=(with_zeros,), ref=lambda x: (x != 0) * 1.0,
            grad=False),
        Row("nonzero", S1, ("i",), ("i",), ref=lambda x: (x != 0) * 1.0, grad=False),
        Row("copysign", "(x: Float, y: Float) -> Float", ("f", "f"), ("f",),
            sample=(away, away), ref=np.copysign),
        Row("copysign", "(x: Float, y: Float) -> Float", ("f", "f"), ("f",),
            sample=(with_zeros, signed_zeros), ref=np.copysign, grad=False, label="signed_zeros"),
        Row("bit_count", "(x: Int) -> Int", ("i",), ("i",), sample=(any_ints,), ref=_bits32,
            grad=False),
        Row("bit_count", "(x: Int) -> Int", ("u",), ("i",), sample=(any_ints,), ref=_bits32,
            grad=False, label="uint"),
    ]


def _binary_rows() -> list[Row]:
    clamp_body = "y0 = wp.clamp(x0, x1, x1 + x2)"
    return [
        Row("pow", "(x: Float, y: Float) -> Float", ("f", "f"), ("f",), sample=("pos", "any"),
            ref=np.power),
        Row("pow", "(x: Vector, y: Float) -> Vector", ("v3", "f"), ("v3",), sample=("pos", "any"),
            ref=lambda x, y: np.power(x, _col(y, x))),
        Row("atan2", "(y: Float, x: Float) -> Float", ("f", "f"), ("f",), sample=(away, away),
            ref=np.arctan2),
        Row("min", S2, ("f", "f"), ("f",), ref=np.minimum),
        Row("min", S2, ("i", "i"), ("i",), ref=np.minimum, grad=False),
        Row("min", VV, ("v3", "v3"), ("v3",), ref=np.minimum),
        Row("min", "(a: Vector) -> Float", ("v3",), ("f",), ref=lambda v: v.min(axis=-1)),
        Row("max", S2, ("f", "f"), ("f",), ref=np.maximum),
        Row("max", S2, ("i", "i"), ("i",), ref=np.maximum, grad=False),
        Row("max", VV, ("v3", "v3"), ("v3",), ref=np.maximum),
        Row("max", "(a: Vector) -> Float", ("v3",), ("f",), ref=lambda v: v.max(axis=-1)),
        Row("clamp", "(x: Scalar, low: Scalar, high: Scalar) -> Scalar", ("f", "f", "f"), ("f",),
            body=clamp_body, sample=(wide, uniform(-1.0, 0.0), "pos"),
            ref=lambda x, lo, w: np.clip(x, lo, lo + w)),
        Row("clamp", "(x: Scalar, low: Scalar, high: Scalar) -> Scalar", ("i", "i", "i"), ("i",),
            body="y0 = wp.clamp(x0, x1, x2)", sample=("int", int_range(-4, -2), int_range(2, 5)),
            ref=np.clip, grad=False),
        Row("clamp", "(x: Vector, low: Vector, high: Vector) -> Vector", ("v3", "v3", "v3"),
            ("v3",), body=clamp_body, sample=(wide, uniform(-1.0, 0.0), "pos"),
            ref=lambda x, lo, w: np.clip(x, lo, lo + w)),
        Row("mod", S2, ("f", "f"), ("f",), sample=(wide, away), ref=np.fmod),
        Row("mod", S2, ("i", "i"), ("i",), sample=("int", nonzero_ints), ref=np.fmod, grad=False),
        Row("mod", VV, ("v3", "v3"), ("v3",), sample=(wide, away), ref=np.fmod),
    ]


def _select_rows() -> list[Row]:
    def where_ref(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(_col(c != 0, a), a, b)

    def select_ref(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(_col(c != 0, a), b, a)  # Warp's old order: value if false first

    rows = []
    for cond, kind in (("b", "Bool"), ("i", "Int")):
        for name, ref, params in (("where", where_ref, "value_if_true: Any, value_if_false: Any"),
                                  ("select", select_ref,
                                   "value_if_false: Any, value_if_true: Any")):
            sig = f"(cond: {kind}, {params}) -> Any"
            rows.append(Row(name, sig, (cond, "f", "f"), ("f",), ref=ref))
            rows.append(Row(name, sig, (cond, "v3", "v3"), ("v3",), ref=ref))
    return rows


def _classify_rows() -> list[Row]:
    tests = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}
    rows = []
    for name, test in tests.items():
        reduce = _all_axes if name == "isfinite" else _any_axes
        rows.append(Row(name, "(a: Float) -> Bool", ("f",), ("b",), sample=(specials,),
                        ref=test, grad=False))
        for code, kind in (("v3", "Vector"), ("q", "Quat"), ("m22", "Matrix")):
            rows.append(Row(name, f"(a: {kind}) -> Bool", (code,), ("b",), sample=(rare_specials,),
                            ref=reduce(test), grad=False))
    return rows


def _interpolation_rows() -> list[Row]:
    rows = [Row("lerp", "(a: Float, b: Float, t: Float) -> Float", ("f", "f", "f"), ("f",),
                ref=_lerp)]
    for code, kind in (("v3", "Vector"), ("m33", "Matrix"), ("q", "Quat"), ("t", "Transform")):
        rows.append(Row("lerp", f"(a: {kind}, b: {kind}, t: Float) -> {kind}", (code, code, "f"),
                        (code,), ref=_lerp))
    rows.append(Row("smoothstep", "(a: Float, b: Float, x: Float) -> Float", ("f", "f", "f"),
                    ("f",), body="y0 = wp.smoothstep(x0, x0 + x1, x2)",
                    sample=("any", "pos", uniform(-1.5, 2.5)), ref=_smoothstep))
    return rows


def _div_approx_rows() -> list[Row]:
    rows = [Row("div_approx", "(a: Float, b: Float) -> Float", ("f", "f"), ("f",),
                sample=("any", away), ref=_divide)]
    for code, kind in (("v3", "Vector"), ("m33", "Matrix"), ("q", "Quat")):
        rows.append(Row("div_approx", f"(a: {kind}, b: Float) -> {kind}", (code, "f"), (code,),
                        sample=("any", away), ref=_divide))
        rows.append(Row("div_approx", f"(a: Float, b: {kind}) -> {kind}", ("f", code), (code,),
                        sample=("any", away), ref=_divide))
    return rows


ROWS: list[Row] = [*_unary_rows(), *_sign_step_rows(), *_binary_rows(), *_select_rows(),
                   *_classify_rows(), *_interpolation_rows(), *_div_approx_rows()]
