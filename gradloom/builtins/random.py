"""Random number builtins: a per-thread PCG state, uniform/normal/Poisson draws and samplers.

The generator is the PCG hash of Jarzynski & Olano ("Hash Functions for GPU Rendering", JCGT
2020), which Warp's documentation names as its RNG:

    pcg(x) = (w >> 22) ^ w,  w = ((s >> ((s >> 28) + 4)) ^ s) * 277803737,
             s = x * 747796405 + 2891336453        (all uint32, wrapping)

* ``rand_init(seed) = pcg(seed)``; ``rand_init(seed, offset) = pcg(seed + pcg(offset))``.
* Every draw first advances the state, ``state = pcg(state)``, and uses the new state:
  ``randu`` returns it, ``randi`` is its int32 reinterpretation, ``randf`` is
  ``(state >> 8) * 2^-24`` (a multiple of 2^-24 in [0, 1)). The bounded forms reduce modulo
  ``high - low``, as Warp documents.

These choices reproduce warp-lang 1.19's bit streams for rand_init, randi, randu, randf and randn
and the two-draw samplers (checked against warp-lang outputs; no Warp code was used). Builtins
that draw advance the caller's state variable in place (Warp's semantics), through OutArgs on
argument 0: the state must be passed as a variable name. Rejection samplers and poisson take a
data-dependent number of draws; their loops carry integers only, so they never touch autodiff.
"""

from __future__ import annotations

import functools
import math

from ..ir.nodes import Var
from ..types import ArrayType, ScalarType, VectorType, bool_, float32, float64, int32, int64, uint32
from .ops import unify
from .registry import builtin
from .values import (
    ArrayVal,
    Composite,
    Ctx,
    Literal,
    OutArgs,
    Value,
    describe,
    scalar,
    while_loop,
)

_GROUP = "Random"
_SAMPLE_SIG1 = "(state: Int) -> Vector2"
_SAMPLE_SIG3 = "(state: Int) -> Vector3"

# -- the generator ----------------------------------------------------------------------------


def u32(ctx: Ctx, v: int) -> Var:
    return ctx.const(v & 0xFFFFFFFF, uint32)


def pcg_hash(ctx: Ctx, x: Var) -> Var:
    """Jarzynski & Olano's PCG hash of a uint32 (a bijection of the 32-bit integers)."""
    s = ctx.op("add", ctx.op("mul", x, u32(ctx, 747796405)), u32(ctx, 2891336453))
    shift = ctx.op("add", ctx.op("shr", s, u32(ctx, 28)), u32(ctx, 4))
    w = ctx.op("mul", ctx.op("xor", ctx.op("shr", s, shift), s), u32(ctx, 277803737))
    return ctx.op("xor", ctx.op("shr", w, u32(ctx, 22)), w)


def as_u32(ctx: Ctx, name: str, v: Value, what: str = "state") -> Var:
    """An integer argument as uint32 (int32 and other integer types are reinterpreted)."""
    if isinstance(v, Literal):
        if isinstance(v.value, float):
            raise ctx.error(f"wp.{name}() needs an integer {what}, got {v.value!r}")
        return u32(ctx, int(v.value))
    if not isinstance(v, Var) or not v.type.is_int:
        raise ctx.error(f"wp.{name}() needs an integer {what} (a uint32 from wp.rand_init()), "
                        f"got {describe(v)}")
    return v if v.type == uint32 else ctx.op("cast", v, type=uint32)


def unit_float(ctx: Ctx, bits: Var, t: ScalarType = float32) -> Var:
    """The top 24 bits of a uint32 as a float in [0, 1): a multiple of 2^-24."""
    top = ctx.op("cast", ctx.op("shr", bits, u32(ctx, 8)), type=t)
    return ctx.op("mul", top, ctx.const(2.0 ** -24, t))


class Draws:
    """The state of one builtin call: each draw advances it; `out` writes it back to the caller."""

    def __init__(self, ctx: Ctx, name: str, state: Value) -> None:
        self.ctx, self.name = ctx, name
        self.given = state
        self.state = as_u32(ctx, name, state)

    def bits(self) -> Var:
        self.state = pcg_hash(self.ctx, self.state)
        return self.state

    def uniform(self, t: ScalarType = float32) -> Var:
        return unit_float(self.ctx, self.bits(), t)

    def out(self, result: Value) -> OutArgs:
        """The result, with the advanced state written back in the caller's own integer type."""
        new: Value = self.state
        if isinstance(self.given, Var) and self.given.type != uint32:
            new = self.ctx.op("cast", self.state, type=self.given.type)
        return OutArgs(result, ((0, new),), temporaries_ok=True)


# -- seeding and uniform integers ---------------------------------------------------------------


@builtin("rand_init", "a random-number state from a seed (and a per-thread offset)",
         differentiable=False, group=_GROUP,
         signatures=("(seed: Int) -> Int", "(seed: Int, offset: Int) -> Int"))
def rand_init(ctx: Ctx, seed: Value, offset: Value | None = None) -> Value | OutArgs:
    s = as_u32(ctx, "rand_init", seed, "seed")
    if offset is None:
        return pcg_hash(ctx, s)
    o = as_u32(ctx, "rand_init", offset, "offset")
    return pcg_hash(ctx, ctx.op("add", s, pcg_hash(ctx, o)))


def _bounds(ctx: Ctx, name: str, low: Value, high: Value, t: ScalarType) -> tuple[Var, Var]:
    """Integer bounds as t (int32 for randi, uint32 for randu); other integer types convert."""
    out = []
    for v in (low, high):
        if isinstance(v, Literal) and not isinstance(v.value, float):
            out.append(ctx.const(int(v.value), t))
        elif isinstance(v, Var) and v.type.is_int:
            out.append(v if v.type == t else ctx.op("cast", v, type=t))
        else:
            raise ctx.error(f"wp.{name}() needs integer bounds, got {describe(v)}")
    return out[0], out[1]


def _modulo_range(ctx: Ctx, r: Var, low: Var, high: Var) -> Var:
    """low + r mod (high - low), the span taken as unsigned (Warp's modulo reduction)."""
    span = ctx.op("sub", high, low)
    span_u = span if span.type == uint32 else ctx.op("cast", span, type=uint32)
    off = ctx.op("mod", r, span_u)
    return ctx.op("add", low, off if low.type == uint32 else ctx.op("cast", off, type=low.type))


@builtin("randi", "a uniform random int32: any value, or in [low, high); advances state",
         differentiable=False, group=_GROUP,
         signatures=("(state: Int) -> Int", "(state: Int, low: Int, high: Int) -> Int"))
def randi(ctx: Ctx, state: Value, low: Value | None = None, high: Value | None = None) -> Value | OutArgs:
    return _int_draw(ctx, "randi", state, low, high, int32)


@builtin("randu", "a uniform random uint32: any value, or in [low, high); advances state",
         differentiable=False, group=_GROUP,
         signatures=("(state: Int) -> Int", "(state: Int, low: Int, high: Int) -> Int"))
def randu(ctx: Ctx, state: Value, low: Value | None = None, high: Value | None = None) -> Value | OutArgs:
    return _int_draw(ctx, "randu", state, low, high, uint32)


def _int_draw(ctx: Ctx, name: str, state: Value, low: Value | None, high: Value | None,
              t: ScalarType) -> OutArgs:
    """One draw as an integer of type t: all 32 bits, or reduced into [low, high)."""
    d = Draws(ctx, name, state)
    r = d.bits()
    if low is None or high is None:
        return d.out(r if t == uint32 else ctx.op("cast", r, type=t))
    lo, hi = _bounds(ctx, name, low, high, t)
    return d.out(_modulo_range(ctx, r, lo, hi))


# -- uniform and normal floats ------------------------------------------------------------------


@builtin("randf", "a uniform random float in [0, 1) or [low, high); advances state",
         differentiable=False, group=_GROUP,
         signatures=("(state: Int) -> Float", "(state: Int, low: Float, high: Float) -> Float"))
def randf(ctx: Ctx, state: Value, low: Value | None = None, high: Value | None = None) -> Value | OutArgs:
    d = Draws(ctx, "randf", state)
    if low is None or high is None:
        return d.out(d.uniform())
    lo, hi = unify(ctx, _floaty(low), _floaty(high), "randf")
    if not lo.type.is_float:
        raise ctx.error(f"wp.randf() needs float bounds, got {lo.type}")
    u = d.uniform(lo.type)
    return d.out(ctx.op("add", lo, ctx.op("mul", ctx.op("sub", hi, lo), u)))


def _floaty(v: Value) -> Value:
    """Integer literals as bounds of a float draw (`randf(s, 0, 10)`) mean floats."""
    return Literal(float(v.value)) if isinstance(v, Literal) else v


def _normal(ctx: Ctx, d: Draws) -> Var:
    """Box-Muller: sqrt(-2 ln u1) cos(2 pi u2). u1 = 0 (odds 2^-24) is taken as 2^-25, so the
    result stays finite (about 5.8 sigma) where Warp's gives an infinity."""
    u1 = ctx.op("max", d.uniform(), ctx.const(2.0 ** -25, float32))
    u2 = d.uniform()
    r = ctx.op("sqrt", ctx.op("mul", ctx.const(-2.0, float32), ctx.op("log", u1)))
    return ctx.op("mul", r, ctx.op("cos", ctx.op("mul", ctx.const(2.0 * math.pi, float32), u2)))


@builtin("randn", "a standard normal random float (Box-Muller, two draws); advances state",
         differentiable=False, group=_GROUP, signatures="(state: Int) -> Float")
def randn(ctx: Ctx, state: Value) -> Value | OutArgs:
    d = Draws(ctx, "randn", state)
    return d.out(_normal(ctx, d))


# -- Poisson --------------------------------------------------------------------------------------


def _f64(ctx: Ctx, v: float) -> Var:
    return ctx.const(v, float64)


def _log_factorial(ctx: Ctx, k: Var) -> Var:
    """ln k! for a float64 k >= 0: Stirling's series at x = k + 1 >= 16, else at x + 8 minus
    ln(x (x+1) ... (x+7)) (error below 1e-12 either way)."""
    x = ctx.op("add", k, _f64(ctx, 1.0))

    def stirling(z: Var) -> Var:
        inv = ctx.op("div", _f64(ctx, 1.0), z)
        inv2 = ctx.op("mul", inv, inv)
        series = ctx.op("mul", inv, ctx.op("sub", _f64(ctx, 1 / 12), ctx.op(
            "mul", inv2, ctx.op("sub", _f64(ctx, 1 / 360), ctx.op("mul", inv2, _f64(ctx, 1 / 1260))))))
        main = ctx.op("sub", ctx.op("mul", ctx.op("sub", z, _f64(ctx, 0.5)), ctx.op("log", z)), z)
        return ctx.op("add", ctx.op("add", main, _f64(ctx, 0.5 * math.log(2 * math.pi))), series)

    small = ctx.op("min", x, _f64(ctx, 16.0))
    prod = small
    for j in range(1, 8):
        prod = ctx.op("mul", prod, ctx.op("add", small, _f64(ctx, float(j))))
    shifted = ctx.op("sub", stirling(ctx.op("add", small, _f64(ctx, 8.0))), ctx.op("log", prod))
    return ctx.op("select", ctx.op("ge", x, _f64(ctx, 16.0)), stirling(x), shifted)


def _poisson_knuth(ctx: Ctx, state: Var, lam: Var, active: Var) -> tuple[Var, Var]:
    """Knuth's product method (lam < 10): multiply uniforms until below exp(-lam)."""
    limit = ctx.op("exp", ctx.op("neg", lam))

    def cond(p: list[Var]) -> Var:
        return ctx.op("and", active, ctx.op("gt", p[2], limit))

    def body(p: list[Var]) -> list[Var]:
        s = pcg_hash(ctx, p[0])
        return [s, ctx.op("add", p[1], u32(ctx, 1)), ctx.op("mul", p[2], unit_float(ctx, s, float64))]

    s, k, _ = while_loop(ctx, [state, u32(ctx, 0), _f64(ctx, 1.0)], cond, body)
    positive = ctx.op("gt", k, u32(ctx, 0))
    return s, ctx.op("select", positive, ctx.op("sub", k, u32(ctx, 1)), u32(ctx, 0))


def _ptrs_trial(ctx: Ctx, s: Var, lam: Var) -> tuple[Var, Var, Var]:
    """One trial of Hörmann's transformed rejection (PTRS, 1993): new state, k, accepted."""
    c = lambda v: _f64(ctx, v)  # noqa: E731
    slam = ctx.op("sqrt", lam)
    b = ctx.op("add", c(0.931), ctx.op("mul", c(2.53), slam))
    a = ctx.op("add", c(-0.059), ctx.op("mul", c(0.02483), b))
    inv_alpha = ctx.op("add", c(1.1239), ctx.op("div", c(1.1328), ctx.op("sub", b, c(3.4))))
    vr = ctx.op("sub", c(0.9277), ctx.op("div", c(3.6224), ctx.op("sub", b, c(2.0))))
    s1 = pcg_hash(ctx, s)
    s2 = pcg_hash(ctx, s1)
    u = ctx.op("sub", unit_float(ctx, s1, float64), c(0.5))
    v = unit_float(ctx, s2, float64)
    us = ctx.op("sub", c(0.5), ctx.op("abs", u))
    us_safe = ctx.op("max", us, c(1e-300))
    spread = ctx.op("add", ctx.op("div", ctx.op("mul", c(2.0), a), us_safe), b)
    k = ctx.op("floor", ctx.op("add", ctx.op("add", ctx.op("mul", spread, u), lam), c(0.43)))
    nonneg = ctx.op("ge", k, c(0.0))
    quick = ctx.op("and", ctx.op("ge", us, c(0.07)), ctx.op("le", v, vr))
    hopeless = ctx.op("and", ctx.op("lt", us, c(0.013)), ctx.op("gt", v, us))
    lhs = ctx.op("sub", ctx.op("add", ctx.op("log", ctx.op("max", v, c(1e-300))),
                               ctx.op("log", inv_alpha)),
                 ctx.op("log", ctx.op("add", ctx.op("div", a, ctx.op("mul", us_safe, us_safe)), b)))
    k_safe = ctx.op("max", k, c(0.0))
    rhs = ctx.op("sub", ctx.op("sub", ctx.op("mul", k_safe, ctx.op("log", lam)), lam),
                 _log_factorial(ctx, k_safe))
    slow = ctx.op("and", ctx.op("not", hopeless), ctx.op("le", lhs, rhs))
    ok = ctx.op("and", nonneg, ctx.op("or", quick, slow))
    return s2, ctx.op("cast", k_safe, type=uint32), ok


def _poisson_ptrs(ctx: Ctx, state: Var, lam: Var, active: Var) -> tuple[Var, Var]:
    def cond(p: list[Var]) -> Var:
        return ctx.op("and", active, ctx.op("not", p[2]))

    def body(p: list[Var]) -> list[Var]:
        return list(_ptrs_trial(ctx, p[0], lam))

    s, k, _ = while_loop(ctx, [state, u32(ctx, 0), ctx.const(False, bool_)], cond, body)
    return s, k


@builtin("poisson", "a Poisson-distributed uint32 with mean lam; advances state (unless lam=0)",
         differentiable=False, group=_GROUP, signatures="(state: Int, lam: Float) -> Int")
def poisson(ctx: Ctx, state: Value, lam: Value) -> Value | OutArgs:
    d = Draws(ctx, "poisson", state)
    rate = scalar(ctx, _floaty(lam), float32)
    if not rate.type.is_float:
        raise ctx.error(f"wp.poisson() needs a float rate lam, got {rate.type}")
    lam64 = rate if rate.type == float64 else ctx.op("cast", rate, type=float64)
    big = ctx.op("ge", lam64, _f64(ctx, 10.0))
    s, k_small = _poisson_knuth(ctx, d.state, lam64, ctx.op("not", big))
    d.state, k_big = _poisson_ptrs(ctx, s, lam64, big)
    return d.out(ctx.op("select", big, k_big, k_small))


# -- sampling a discrete distribution -------------------------------------------------------------


@builtin("sample_cdf", "the index of the first cdf entry >= a uniform draw; advances state",
         differentiable=False, group=_GROUP, signatures="(state: Int, cdf: Array) -> Int")
def sample_cdf(ctx: Ctx, state: Value, cdf: Value) -> Value | OutArgs:
    if not isinstance(cdf, ArrayVal) or cdf.type.ndim != 1 or not (
            isinstance(cdf.type, ArrayType) and isinstance(cdf.type.dtype, ScalarType)
            and cdf.type.dtype.is_float):
        raise ctx.error(f"wp.sample_cdf() needs a 1-D float array as cdf, got {describe(cdf)}")
    d = Draws(ctx, "sample_cdf", state)
    t = cdf.type.dtype
    u = d.uniform(t)
    one = ctx.const(1, int64)

    def cond(p: list[Var]) -> Var:
        return ctx.op("lt", p[0], p[1])

    def body(p: list[Var]) -> list[Var]:  # binary search: keep cdf[hi] >= u
        mid = ctx.op("div", ctx.op("add", p[0], p[1]), ctx.const(2, int64))
        value = ctx.op("load", cdf.data, ctx.op("mul", mid, cdf.strides[0]), attr=0, type=t)
        right = ctx.op("lt", value, u)
        return [ctx.op("select", right, ctx.op("add", mid, one), p[0]),
                ctx.op("select", right, p[1], mid)]

    lo, _ = while_loop(ctx, [ctx.const(0, int64), ctx.op("sub", cdf.shape[0], one)], cond, body)
    return d.out(ctx.op("cast", lo, type=int32))


# -- samplers ---------------------------------------------------------------------------------------


def _vec(comps: list[Var]) -> Composite:
    return Composite(VectorType(len(comps), float32), tuple(comps))


def _angle(ctx: Ctx, u: Var) -> tuple[Var, Var]:
    theta = ctx.op("mul", ctx.const(2.0 * math.pi, float32), u)
    return ctx.op("cos", theta), ctx.op("sin", theta)


@builtin("sample_unit_ring", "a uniform point on the unit circle; advances state",
         differentiable=False, group=_GROUP, signatures=_SAMPLE_SIG1)
def sample_unit_ring(ctx: Ctx, state: Value) -> Value | OutArgs:
    d = Draws(ctx, "sample_unit_ring", state)
    c, s = _angle(ctx, d.uniform())
    return d.out(_vec([c, s]))


@builtin("sample_unit_disk", "a uniform point in the unit disk; advances state",
         differentiable=False, group=_GROUP, signatures=_SAMPLE_SIG1)
def sample_unit_disk(ctx: Ctx, state: Value) -> Value | OutArgs:
    d = Draws(ctx, "sample_unit_disk", state)
    r = ctx.op("sqrt", d.uniform())
    c, s = _angle(ctx, d.uniform())
    return d.out(_vec([ctx.op("mul", r, c), ctx.op("mul", r, s)]))


def _on_sphere(ctx: Ctx, d: Draws, z: Var) -> Composite:
    """The point of the unit sphere at height z and a uniform azimuth (one more draw)."""
    one = ctx.const(1.0, float32)
    rho = ctx.op("sqrt", ctx.op("max", ctx.op("sub", one, ctx.op("mul", z, z)),
                                ctx.const(0.0, float32)))
    c, s = _angle(ctx, d.uniform())
    return _vec([ctx.op("mul", rho, c), ctx.op("mul", rho, s), z])


@builtin("sample_unit_sphere_surface", "a uniform point on the unit sphere; advances state",
         differentiable=False, group=_GROUP, signatures=_SAMPLE_SIG3)
def sample_unit_sphere_surface(ctx: Ctx, state: Value) -> Value | OutArgs:
    d = Draws(ctx, "sample_unit_sphere_surface", state)
    z = ctx.op("sub", ctx.const(1.0, float32), ctx.op("mul", ctx.const(2.0, float32), d.uniform()))
    return d.out(_on_sphere(ctx, d, z))


@builtin("sample_unit_hemisphere_surface",
         "a uniform point on the unit hemisphere surface (z >= 0); advances state",
         differentiable=False, group=_GROUP, signatures=_SAMPLE_SIG3)
def sample_unit_hemisphere_surface(ctx: Ctx, state: Value) -> Value | OutArgs:
    d = Draws(ctx, "sample_unit_hemisphere_surface", state)
    return d.out(_on_sphere(ctx, d, d.uniform()))  # Archimedes: z uniform gives uniform area


def _in_ball(ctx: Ctx, d: Draws, hemi: bool) -> Composite:
    """Warp's construction, three draws: polar angle acos(1 - 2u) (acos(1 - u) for the upper
    half), azimuth 2πu, radius u^(1/3): uniform in the ball (half-ball), no rejection loop."""
    f = functools.partial(ctx.const, t=float32)
    u = d.uniform()
    phi = ctx.op("acos", ctx.op("sub", f(1.0), u if hemi else ctx.op("mul", f(2.0), u)))
    theta = ctx.op("mul", f(2.0 * math.pi), d.uniform())
    r = ctx.op("pow", d.uniform(), f(1.0 / 3.0))
    sin_phi = ctx.op("sin", phi)
    return _vec([ctx.op("mul", ctx.op("mul", r, ctx.op("cos", theta)), sin_phi),
                 ctx.op("mul", ctx.op("mul", r, ctx.op("sin", theta)), sin_phi),
                 ctx.op("mul", r, ctx.op("cos", phi))])


@builtin("sample_unit_sphere", "a uniform point in the unit ball; advances state",
         differentiable=False, group=_GROUP, signatures=_SAMPLE_SIG3)
def sample_unit_sphere(ctx: Ctx, state: Value) -> Value | OutArgs:
    d = Draws(ctx, "sample_unit_sphere", state)
    return d.out(_in_ball(ctx, d, hemi=False))


@builtin("sample_unit_hemisphere", "a uniform point in the unit half-ball (z >= 0); advances state",
         differentiable=False, group=_GROUP, signatures=_SAMPLE_SIG3)
def sample_unit_hemisphere(ctx: Ctx, state: Value) -> Value | OutArgs:
    d = Draws(ctx, "sample_unit_hemisphere", state)
    return d.out(_in_ball(ctx, d, hemi=True))


def _centered(ctx: Ctx, d: Draws, n: int) -> Composite:
    half = ctx.const(0.5, float32)
    return _vec([ctx.op("sub", d.uniform(), half) for _ in range(n)])


@builtin("sample_unit_square", "a uniform point in [-0.5, 0.5)^2; advances state",
         differentiable=False, group=_GROUP, signatures=_SAMPLE_SIG1)
def sample_unit_square(ctx: Ctx, state: Value) -> Value | OutArgs:
    d = Draws(ctx, "sample_unit_square", state)
    return d.out(_centered(ctx, d, 2))


@builtin("sample_unit_cube", "a uniform point in [-0.5, 0.5)^3; advances state",
         differentiable=False, group=_GROUP, signatures=_SAMPLE_SIG3)
def sample_unit_cube(ctx: Ctx, state: Value) -> Value | OutArgs:
    d = Draws(ctx, "sample_unit_cube", state)
    return d.out(_centered(ctx, d, 3))


@builtin("sample_triangle", "uniform barycentric coordinates (u, v) in a triangle; advances state",
         differentiable=False, group=_GROUP, signatures=_SAMPLE_SIG1)
def sample_triangle(ctx: Ctx, state: Value) -> Value | OutArgs:
    d = Draws(ctx, "sample_triangle", state)
    root = ctx.op("sqrt", d.uniform())
    v = ctx.op("mul", d.uniform(), root)
    return d.out(_vec([ctx.op("sub", ctx.const(1.0, float32), root), v]))
