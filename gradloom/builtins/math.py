"""Scalar math builtins (sqrt, pow, erfinv, lerp, clamp, ...), per component on vectors.

Gradients come from the primitives' rules (gradloom/ir/prims.py); the conventions at special
points (sqrt at 0, acos at ±1, pow with a zero base, ...) are in docs/gradient-conventions.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..ir.nodes import Var
from ..types import ScalarType, VectorType, bool_, float32, float64, int32
from . import ops
from .ops import scalar_binary, truth, unify
from .registry import builtin
from .values import Composite, Ctx, Literal, StructVal, Value, describe, flatten, rebuild, scalar

_SM, _UT, _OP = "Scalar Math", "Utility", "Operators"
F1, V1 = "(x: Float) -> Float", "(x: Vector) -> Vector"

_UNARY_DOCS = {
    "sqrt": "square root (gradient 0 where the result is 0)", "cbrt": "cube root",
    "sin": "sine", "cos": "cosine", "tan": "tangent",
    "asin": "arcsine; x is clamped to [-1, 1]", "acos": "arccosine; x is clamped to [-1, 1]",
    "atan": "arctangent", "sinh": "hyperbolic sine", "cosh": "hyperbolic cosine",
    "tanh": "hyperbolic tangent", "exp": "e to the x", "log": "natural logarithm",
    "log2": "base-2 logarithm", "log10": "base-10 logarithm", "floor": "round down",
    "ceil": "round up", "round": "round half away from zero", "rint": "round half to even",
    "trunc": "round toward 0", "erf": "error function",
    "erfc": "complementary error function 1 - erf(x), accurate where erf(x) is near 1",
}
_STEPS = ("floor", "ceil", "round", "rint", "trunc")


# -- argument helpers ---------------------------------------------------------------------------

def _float_arg(ctx: Ctx, name: str, v: Value) -> Var:
    """A float scalar: an untyped literal becomes float32, an integer is an error."""
    x = scalar(ctx, Literal(float(v.value))) if isinstance(v, Literal) else scalar(ctx, v)
    if not x.type.is_float:
        raise ctx.error(f"wp.{name}() needs a float argument, got {x.type} "
                        f"(convert with float(x))")
    return x


def _per_component(ctx: Ctx, name: str, v: Value, fn: Callable[[Value], Var]) -> Value:
    """fn on a scalar, or on each component of a vector (Warp's vec_t overloads)."""
    if isinstance(v, Composite):
        if not isinstance(v.type, VectorType) or v.type.kind not in ("vec", "spatial"):
            raise ctx.error(f"wp.{name}() takes a scalar or a vector, got {describe(v)}")
        return Composite(v.type, tuple(fn(c) for c in v.comps))
    return fn(v)


def _unary_float(name: str, emit: Callable[[Ctx, Var], Var]) -> Callable[[Ctx, Value], Value]:
    def fn(ctx: Ctx, x: Value) -> Value:
        return _per_component(ctx, name, x, lambda c: emit(ctx, _float_arg(ctx, name, c)))
    return fn


def _const_like(ctx: Ctx, value: float, like: Var) -> Var:
    return ctx.const(value, like.type)


def _clamp_unit(ctx: Ctx, x: Var) -> Var:
    """x clamped to [-1, 1] with selects, so that NaN stays NaN (minnum would drop it)."""
    one = _const_like(ctx, 1.0, x)
    neg_one = _const_like(ctx, -1.0, x)
    low = ctx.op("select", ctx.op("lt", x, neg_one), neg_one, x)
    return ctx.op("select", ctx.op("gt", low, one), one, low)


def _register_unary(name: str) -> None:
    def emit(ctx: Ctx, x: Var) -> Var:
        if name in ("asin", "acos"):  # Warp clamps: acos(dot(a, b)) of unit vectors stays finite
            x = _clamp_unit(ctx, x)
        return ctx.op(name, x)

    builtin(name, _UNARY_DOCS[name], differentiable=name not in _STEPS, signatures=(F1, V1),
            group=_SM)(_unary_float(name, emit))


for _name in _UNARY_DOCS:
    _register_unary(_name)


# -- new scalar functions (Warp "Scalar Math") ----------------------------------------------------

def _frac(ctx: Ctx, x: Var) -> Var:
    return ctx.op("sub", x, ctx.op("trunc", x))


def _scale(factor: float) -> Callable[[Ctx, Var], Var]:
    return lambda ctx, x: ctx.op("mul", x, _const_like(ctx, factor, x))


builtin("frac", "fractional part x - trunc(x) (the sign of x); gradient 1",
        signatures=(F1, V1), group=_SM)(_unary_float("frac", _frac))
builtin("degrees", "radians to degrees", signatures=(F1, V1),
        group=_SM)(_unary_float("degrees", _scale(180.0 / math.pi)))
builtin("radians", "degrees to radians", signatures=(F1, V1),
        group=_SM)(_unary_float("radians", _scale(math.pi / 180.0)))


def _indicator(ctx: Ctx, name: str, x: Value, test: str) -> Value:
    """1 where `x test 0` holds, else 0, in x's type (Scalar: floats and integers)."""
    v = scalar(ctx, x)
    if not (v.type.is_float or v.type.is_int):
        raise ctx.error(f"wp.{name}() needs a number, got {v.type}")
    zero, one = ctx.const(0, v.type), ctx.const(1, v.type)
    return ctx.op("select", ctx.op(test, v, zero), one, zero)


@builtin("step", "1 where x < 0, else 0 (Warp's convention, the reverse of GLSL's step)",
         differentiable=False, signatures="(x: Scalar) -> Scalar", group=_SM)
def step(ctx: Ctx, x: Value) -> Value:
    return _indicator(ctx, "step", x, "lt")


@builtin("nonzero", "1 where x != 0, else 0", differentiable=False,
         signatures="(x: Scalar) -> Scalar", group=_SM)
def nonzero(ctx: Ctx, x: Value) -> Value:
    return _indicator(ctx, "nonzero", x, "ne")


@builtin("sign", "-1 where x < 0, else 1 (Warp: sign(0) is 1); per component for vectors",
         differentiable=False, signatures=("(x: Scalar) -> Scalar", V1), group=_SM)
def sign(ctx: Ctx, x: Value) -> Value:
    def one_sign(c: Value) -> Var:
        v = scalar(ctx, c)
        one = ctx.const(1, v.type)
        return ctx.op("select", ctx.op("lt", v, ctx.const(0, v.type)), ctx.op("neg", one), one)
    return _per_component(ctx, "sign", x, one_sign)


@builtin("copysign", "the magnitude of x with the sign (bit) of y", group=_SM,
         signatures="(x: Float, y: Float) -> Float")
def copysign(ctx: Ctx, x: Value, y: Value) -> Value:
    a, b = unify(ctx, x, y, "copysign")
    if not a.type.is_float:
        raise ctx.error(f"wp.copysign() needs float arguments, got {a.type}")
    return ctx.op("copysign", a, b)


@builtin("bit_count", "the number of set bits of an integer (two's complement), as int32",
         differentiable=False, signatures="(x: Int) -> Int", group=_SM)
def bit_count(ctx: Ctx, x: Value) -> Value:
    v = scalar(ctx, x)
    if not v.type.is_int:
        raise ctx.error(f"Couldn't find function overload for 'bit_count' that matched inputs "
                        f"with types: [{v.type}] (wp.bit_count() needs an integer)")
    return ctx.op("cast", ctx.op("popcount", v), type=int32)


# -- erfinv / erfcinv ---------------------------------------------------------------------------
# No libm function: an initial guess (M. Giles' single-precision erfinv polynomials, "Approximating
# the erfinv function", 2010; an asymptotic expansion of erfc in the far tail), then Newton steps
# on erf(y) = a for small a and on log erfc(y) = log q in the tails (q = 1 - a, passed in exactly,
# so erfcinv keeps its precision down to tiny q). The gradient is autodiff of that composition:
# the last Newton step's derivative is 1 / erf'(y) to within the iterate's error, squared.

_GILES_BODY = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
               -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_TAIL_Q = 1e-8  # below this q the asymptotic guess beats Giles' polynomials
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


class _Arith:
    """Terse float arithmetic on SSA scalars of one type (the erfinv composition is long)."""

    def __init__(self, ctx: Ctx, t: ScalarType) -> None:
        self.ctx, self.t = ctx, t

    def c(self, value: float) -> Var:
        return self.ctx.const(value, self.t)

    def __call__(self, prim: str, *args: Var) -> Var:
        return self.ctx.op(prim, *args)

    def poly(self, coeffs: tuple[float, ...], w: Var) -> Var:
        p = self.c(coeffs[0])
        for k in coeffs[1:]:
            p = self("add", self.c(k), self("mul", p, w))
        return p


def _initial_guess(f: _Arith, a: Var, q: Var) -> Var:
    """erfinv(a) for a in [0, 1), to ~1e-7 (Giles) or ~2e-3 (asymptotic, q < 1e-8)."""
    w = f("neg", f("log", f("mul", q, f("add", f.c(1.0), a))))
    body = f.poly(_GILES_BODY, f("sub", w, f.c(2.5)))
    tail = f.poly(_GILES_TAIL, f("sub", f("sqrt", w), f.c(3.0)))
    giles = f("mul", f("select", f("lt", w, f.c(5.0)), body, tail), a)
    # erfc(y) ~ exp(-y²) / (y √π) (1 - 1/(2y²) + 3/(4y⁴)): solve for y by fixed-point steps
    s = f("neg", f("log", f("min", q, f.c(_TAIL_Q))))
    y = f("sqrt", s)
    for _ in range(3):
        inv2 = f("div", f.c(1.0), f("mul", y, y))
        series = f("add", f.c(1.0), f("mul", inv2, f("sub", f("mul", f.c(0.75), inv2), f.c(0.5))))
        y = f("sqrt", f("sub", s, f("log", f("mul", f.c(math.sqrt(math.pi)), f("mul", y, series)))))
    return f("select", f("lt", q, f.c(_TAIL_Q)), y, giles)


def _refine(f: _Arith, y: Var, a: Var, q: Var) -> Var:
    """One Newton step: on erf(y) - a where a < 1/2, else on log erfc(y) - log q."""
    capped = f("min", y, f.c(1.0))  # keeps the discarded branch finite in the tails
    slope = f("mul", f.c(_TWO_OVER_SQRT_PI), f("exp", f("neg", f("mul", capped, capped))))
    near = f("sub", capped, f("div", f("sub", f("erf", capped), a), slope))
    e = f("erfc", y)
    tail_slope = f("mul", f.c(_TWO_OVER_SQRT_PI), f("exp", f("neg", f("mul", y, y))))
    far = f("add", y, f("div", f("mul", f("sub", f("log", e), f("log", q)), e), tail_slope))
    return f("select", f("lt", a, f.c(0.5)), near, far)


def _erfinv_magnitude(ctx: Ctx, a: Var, q: Var) -> Var:
    """y >= 0 with erf(y) = a, given a and q = 1 - a (q exact); +inf at q = 0, NaN for q < 0."""
    t = a.type
    f = _Arith(ctx, t)
    valid = f("gt", q, f.c(0.0))
    # the iteration sees safe inputs where the result is not taken: no inf/NaN to leak into
    # gradients through the unselected side of the final select
    tiny = float(2.2250738585072014e-308 if t == float64 else 1.1754943508222875e-38)
    qs = f("select", valid, f("max", q, f.c(tiny)), f.c(0.5))
    as_ = f("select", valid, a, f.c(0.5))
    y = _initial_guess(f, as_, qs)
    for _ in range(3 if t == float64 else 2):
        y = _refine(f, y, as_, qs)
    edge = f("select", f("eq", q, f.c(0.0)), f.c(math.inf), f.c(math.nan))
    return f("select", valid, y, edge)


def _in_working_type(ctx: Ctx, x: Var, fn: Callable[[Var], Var]) -> Var:
    """fn in float32 for float16 inputs (too few bits for the iteration), else in x's type."""
    if x.type.bits > 16:
        return fn(x)
    return ctx.op("cast", fn(ctx.op("cast", x, type=float32)), type=x.type)


def _erfinv(ctx: Ctx, x: Var) -> Var:
    def body(v: Var) -> Var:
        a = ctx.op("abs", v)
        y = _erfinv_magnitude(ctx, a, ctx.op("sub", _const_like(ctx, 1.0, v), a))
        return ctx.op("copysign", y, v)
    return _in_working_type(ctx, x, body)


def _erfcinv(ctx: Ctx, x: Var) -> Var:
    def body(v: Var) -> Var:
        one, two = _const_like(ctx, 1.0, v), _const_like(ctx, 2.0, v)
        lower = ctx.op("le", v, one)  # erfcinv(x) = -erfcinv(2 - x); both q forms are exact
        q = ctx.op("select", lower, v, ctx.op("sub", two, v))
        a = ctx.op("select", lower, ctx.op("sub", one, v), ctx.op("sub", v, one))
        y = _erfinv_magnitude(ctx, a, q)
        return ctx.op("select", lower, y, ctx.op("neg", y))
    return _in_working_type(ctx, x, body)


builtin("erfinv", "inverse error function on [-1, 1] (±inf at ±1)", signatures=(F1, V1),
        group=_SM)(_unary_float("erfinv", _erfinv))
builtin("erfcinv", "inverse complementary error function on [0, 2]", signatures=(F1, V1),
        group=_SM)(_unary_float("erfcinv", _erfcinv))


# -- existing scalar math -------------------------------------------------------------------------

@builtin("abs", "absolute value (per component for vectors)", group=_SM,
         signatures=("(x: Scalar) -> Scalar", V1))
def abs_(ctx: Ctx, x: Value) -> Value:
    return _per_component(ctx, "abs", x, lambda v: ctx.op("abs", scalar(ctx, v)))


@builtin("pow", "x raised to the power y (per component for a vector x)", group=_SM,
         signatures=("(x: Float, y: Float) -> Float", "(x: Vector, y: Float) -> Vector"))
def pow_(ctx: Ctx, x: Value, y: Value) -> Value:
    def one_pow(c: Value) -> Var:
        a, b = unify(ctx, c, y, "pow")
        if not a.type.is_float:
            raise ctx.error(f"wp.pow() needs float arguments, got {a.type}")
        return ctx.op("pow", a, b)
    return _per_component(ctx, "pow", x, one_pow)


@builtin("atan2", "the angle of the point (x, y): atan2(y, x); gradient 0 at the origin",
         group=_SM, signatures="(y: Float, x: Float) -> Float")
def atan2(ctx: Ctx, y: Value, x: Value) -> Value:
    a, b = unify(ctx, y, x, "atan2")
    if not a.type.is_float:
        raise ctx.error(f"wp.atan2() needs float arguments, got {a.type}")
    return ctx.op("atan2", a, b)


def _minmax(ctx: Ctx, prim: str, a: Value, b: Value | None) -> Value:
    if b is None:
        if not isinstance(a, Composite):
            raise ctx.error(f"wp.{prim}() with one argument needs a vector, got {describe(a)}")
        acc = a.comps[0]
        for c in a.comps[1:]:
            acc = ctx.op(prim, acc, c)
        return acc
    if isinstance(a, Composite) and isinstance(b, Composite):
        if a.type != b.type:
            raise ctx.error(f"wp.{prim}() arguments differ: {a.type!r} and {b.type!r}")
        return Composite(a.type, tuple(ctx.op(prim, x, y)
                                       for x, y in zip(a.comps, b.comps, strict=True)))
    x, y = unify(ctx, a, b, prim)
    return ctx.op(prim, x, y)


_MINMAX_SIGS = ("(a: Scalar, b: Scalar) -> Scalar", "(a: Vector, b: Vector) -> Vector",
                "(a: Vector) -> Float")


@builtin("min", "smaller of two values (per component), or the smallest component of a vector",
         group=_SM, signatures=_MINMAX_SIGS)
def min_(ctx: Ctx, a: Value, b: Value | None = None) -> Value:
    return _minmax(ctx, "min", a, b)


@builtin("max", "larger of two values (per component), or the largest component of a vector",
         group=_SM, signatures=_MINMAX_SIGS)
def max_(ctx: Ctx, a: Value, b: Value | None = None) -> Value:
    return _minmax(ctx, "max", a, b)


@builtin("clamp", "x limited to [low, high] (per component for vectors)", group=_SM,
         signatures=("(x: Scalar, low: Scalar, high: Scalar) -> Scalar",
                     "(x: Vector, low: Vector, high: Vector) -> Vector"))
def clamp(ctx: Ctx, x: Value, low: Value, high: Value) -> Value:
    return _minmax(ctx, "min", _minmax(ctx, "max", x, low), high)


@builtin("mod", "C-style remainder (the sign of the dividend); per component for vectors",
         group=_OP, signatures=("(a: Scalar, b: Scalar) -> Scalar",
                                "(a: Vector, b: Vector) -> Vector"))
def mod(ctx: Ctx, a: Value, b: Value) -> Value:
    if isinstance(a, Composite) or isinstance(b, Composite):
        if not (isinstance(a, Composite) and isinstance(b, Composite)) or a.type != b.type:
            raise ctx.error(f"wp.mod() needs two scalars or two vectors of one type, got "
                            f"{describe(a)} and {describe(b)}")
        return ops.elementwise(ctx, "mod", a, b)
    return scalar_binary(ctx, "mod", a, b)


@builtin("div_approx", "Warp's fast approximate division; here exact division, as on Warp's CPU",
         group=_OP, signatures=(
             "(a: Float, b: Float) -> Float", "(a: Vector, b: Float) -> Vector",
             "(a: Float, b: Vector) -> Vector", "(a: Matrix, b: Float) -> Matrix",
             "(a: Float, b: Matrix) -> Matrix", "(a: Quat, b: Float) -> Quat",
             "(a: Float, b: Quat) -> Quat"))
def div_approx(ctx: Ctx, a: Value, b: Value) -> Value:
    if isinstance(a, Composite) and isinstance(b, Composite):
        raise ctx.error("wp.div_approx() divides by a scalar or a scalar by a vector/matrix/quat; "
                        "use wp.cw_div() for component-wise division")
    for v in (a, b):
        t = v.type.dtype if isinstance(v, Composite) else _float_arg(ctx, "div_approx", v).type
        if not t.is_float:
            raise ctx.error(f"wp.div_approx() needs float values, got {describe(v)}")
    return ops.binary(ctx, "div", a, b)


# -- interpolation (Warp "Utility") --------------------------------------------------------------

@builtin("lerp", "a*(1-t) + b*t, per component for vectors, matrices, quaternions, transforms",
         group=_UT, signatures=(
             "(a: Float, b: Float, t: Float) -> Float", "(a: Vector, b: Vector, t: Float) -> Vector",
             "(a: Matrix, b: Matrix, t: Float) -> Matrix", "(a: Quat, b: Quat, t: Float) -> Quat",
             "(a: Transform, b: Transform, t: Float) -> Transform"))
def lerp(ctx: Ctx, a: Value, b: Value, t: Value) -> Value:
    if isinstance(a, Composite) or isinstance(b, Composite):
        if not (isinstance(a, Composite) and isinstance(b, Composite)) or a.type != b.type:
            raise ctx.error(f"wp.lerp() needs a and b of one type, got {describe(a)} and "
                            f"{describe(b)}")
        w = scalar(ctx, _float_literal(t), a.type.dtype)
        return Composite(a.type, tuple(_lerp1(ctx, x, y, w)
                                       for x, y in zip(a.comps, b.comps, strict=True)))
    x, y = unify(ctx, a, b, "lerp")
    if not x.type.is_float:
        raise ctx.error(f"wp.lerp() needs float values, got {x.type}")
    return _lerp1(ctx, x, y, scalar(ctx, _float_literal(t), x.type))


def _float_literal(v: Value) -> Value:
    return Literal(float(v.value)) if isinstance(v, Literal) else v


def _lerp1(ctx: Ctx, a: Var, b: Var, t: Var) -> Var:
    if t.type != a.type:
        raise ctx.error(f"wp.lerp() factor t must be {a.type}, got {t.type}")
    one_minus = ctx.op("sub", _const_like(ctx, 1.0, t), t)
    return ctx.op("add", ctx.op("mul", a, one_minus), ctx.op("mul", b, t))


@builtin("smoothstep", "cubic Hermite step 3u² - 2u³ of u = clamp((x - a) / (b - a), 0, 1)",
         group=_UT, signatures="(a: Float, b: Float, x: Float) -> Float")
def smoothstep(ctx: Ctx, a: Value, b: Value, x: Value) -> Value:
    lo, hi = unify(ctx, a, b, "smoothstep")
    v, _ = unify(ctx, x, lo, "smoothstep")
    if not v.type.is_float:
        raise ctx.error(f"wp.smoothstep() needs float arguments, got {v.type}")
    zero, one = _const_like(ctx, 0.0, v), _const_like(ctx, 1.0, v)
    u = ctx.op("div", ctx.op("sub", v, lo), ctx.op("sub", hi, lo))
    u = ctx.op("min", ctx.op("max", u, zero), one)
    three_minus_2u = ctx.op("sub", _const_like(ctx, 3.0, v), ctx.op("add", u, u))
    return ctx.op("mul", ctx.op("mul", u, u), three_minus_2u)


# -- classification and selection ---------------------------------------------------------------

def _classify(ctx: Ctx, name: str, x: Value, test: Callable[[Var], Var], any_: bool) -> Value:
    """test per float component, reduced with or (any_) or and: Warp's vector overloads."""
    if isinstance(x, Composite):
        if not x.type.dtype.is_float:
            raise ctx.error(f"wp.{name}() needs float values, got {describe(x)}")
        acc = test(x.comps[0])
        for c in x.comps[1:]:
            acc = ctx.op("or" if any_ else "and", acc, test(c))
        return acc
    return test(_float_arg(ctx, name, x))


_CLASSIFY_SIGS = ("(a: Float) -> Bool", "(a: Vector) -> Bool", "(a: Quat) -> Bool",
                  "(a: Matrix) -> Bool")


@builtin("isnan", "true where x is NaN (any component, for vectors and matrices)",
         differentiable=False, signatures=_CLASSIFY_SIGS, group=_SM)
def isnan(ctx: Ctx, x: Value) -> Value:
    return _classify(ctx, "isnan", x, lambda v: ctx.op("isnan", v), any_=True)


@builtin("isinf", "true where x is ±infinity (any component, for vectors and matrices)",
         differentiable=False, signatures=_CLASSIFY_SIGS, group=_SM)
def isinf(ctx: Ctx, x: Value) -> Value:
    return _classify(ctx, "isinf", x, lambda v: ctx.op("isinf", v), any_=True)


@builtin("isfinite", "true where x is neither NaN nor infinite (every component)",
         differentiable=False, signatures=_CLASSIFY_SIGS, group=_SM)
def isfinite(ctx: Ctx, x: Value) -> Value:
    def finite(v: Var) -> Var:
        return ctx.op("not", ctx.op("or", ctx.op("isnan", v), ctx.op("isinf", v)))
    return _classify(ctx, "isfinite", x, finite, any_=False)


@builtin("select", "Warp's old select(cond, value_if_false, value_if_true); prefer wp.where",
         group=_UT, signatures=("(cond: Bool, value_if_false: Any, value_if_true: Any) -> Any",
                                "(cond: Int, value_if_false: Any, value_if_true: Any) -> Any"))
def select(ctx: Ctx, cond: Value, if_false: Value, if_true: Value) -> Value:
    return where(ctx, cond, if_true, if_false)


@builtin("where", "value_if_true where cond holds (nonzero for integers), else value_if_false",
         group=_UT, signatures=("(cond: Bool, value_if_true: Any, value_if_false: Any) -> Any",
                                "(cond: Int, value_if_true: Any, value_if_false: Any) -> Any"))
def where(ctx: Ctx, cond: Value, if_true: Value, if_false: Value) -> Value:
    c = truth(ctx, cond)
    if isinstance(if_true, StructVal) or isinstance(if_false, StructVal):  # field by field
        if not (isinstance(if_true, StructVal) and isinstance(if_false, StructVal)) or \
                if_true.type != if_false.type:
            raise ctx.error("wp.where() branches must have the same type")
        picked = [ctx.op("select", c, a, b)
                  for a, b in zip(flatten(if_true), flatten(if_false), strict=True)]
        return rebuild(if_true, iter(picked))
    if isinstance(if_true, Composite) or isinstance(if_false, Composite):
        if not (isinstance(if_true, Composite) and isinstance(if_false, Composite)) or \
                if_true.type != if_false.type:
            raise ctx.error("wp.where() branches must have the same type")
        return Composite(if_true.type, tuple(
            ctx.op("select", c, a, b) for a, b in zip(if_true.comps, if_false.comps, strict=True)))
    a, b = unify(ctx, if_true, if_false, "where")
    if c.type != bool_:
        raise ctx.error("wp.where() condition must be a bool")
    return ctx.op("select", c, a, b)

