"""Perlin noise builtins: noise, pnoise, curlnoise.

Gradient (Perlin) noise on the integer lattice in 1 to 4 dimensions, written from the textbook
construction (Perlin 1985, with the quintic fade of Perlin 2002): each lattice corner gets a
pseudo-random gradient g with components in [-1, 1], hashed with the PCG hash (see random.py)
from the state and the corner's integer coordinates; the noise at p is the fade-weighted
multilinear blend of g . (p - corner) over the cell's 2^d corners. The fade
6t^5 - 15t^4 + 10t^3 makes the field C2, so its gradient (and curlnoise) is C1.

* |noise| <= d (corner weights are convex, |g_k| <= 1, and |p - corner|_1 <= d); the field is 0
  on lattice points.
* pnoise wraps the lattice coordinates modulo the periods (floor modulo, so negative coordinates
  work too, where Warp leaves them unsupported).
* curlnoise sums octaves i = 0 .. octaves-1 with frequency lacunarity^i and weight gain^i of the
  curl of noise potentials: 2-D: (dn/dy, -dn/dx); 3-D/4-D: the curl of three potentials
  (independent fields picked by hashing the state), taking derivatives in x, y, z only. The
  gradient of the noise is computed analytically, so the curl is exactly divergence-free.

The fields are not Warp's bit for bit (Warp documents its noise values as version- and
device-dependent). None of these builtins advances `state`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Var
from ..types import ScalarType, VectorType, int32, uint32
from .random import as_u32, pcg_hash, u32
from .registry import builtin
from .values import Composite, Ctx, Literal, Value, describe, scalar, while_loop

_GROUP = "Random"
# curlnoise's defaults (Warp's): one octave, lacunarity 2, gain 1/2
_OCTAVES, _LACUNARITY, _GAIN = Literal(1), Literal(2.0), Literal(0.5)


@dataclass
class Field:
    """One noise evaluation: the value and (when asked for) its gradient w.r.t. the position."""

    value: Var
    grad: list[Var]


def _position(ctx: Ctx, name: str, p: Value) -> tuple[list[Var], ScalarType]:
    if isinstance(p, Literal):
        p = scalar(ctx, Literal(float(p.value)))
    if isinstance(p, Composite) and isinstance(p.type, VectorType) and p.type.kind == "vec" \
            and 1 <= p.type.length <= 4 and p.type.dtype.is_float:
        return list(p.comps), p.type.dtype
    if isinstance(p, Var) and p.type.is_float:
        return [p], p.type
    raise ctx.error(f"wp.{name}() needs a float or a float vector of length 2 to 4 as the "
                    f"position, got {describe(p)}")


def _period(ctx: Ctx, name: str, v: Value) -> Var:
    if isinstance(v, Literal) and not isinstance(v.value, float):
        return ctx.const(int(v.value), int32)
    if isinstance(v, Var) and v.type.is_int:
        return v if v.type == int32 else ctx.op("cast", v, type=int32)
    raise ctx.error(f"wp.{name}() periods must be integers, got {describe(v)}")


def _wrap(ctx: Ctx, i: Var, period: Var) -> Var:
    """i modulo period, in [0, period) also for negative i."""
    r = ctx.op("mod", i, period)
    return ctx.op("select", ctx.op("lt", r, ctx.const(0, int32)), ctx.op("add", r, period), r)


def _corner_gradient(ctx: Ctx, h: Var, d: int, t: ScalarType) -> list[Var]:
    """Gradient components in [-1, 1] from the bytes of a corner's hash."""
    out = []
    for k in range(d):
        byte = ctx.op("and", ctx.op("shr", h, u32(ctx, 8 * k)), u32(ctx, 255))
        scaled = ctx.op("mul", ctx.op("cast", byte, type=t), ctx.const(2.0 / 255.0, t))
        out.append(ctx.op("sub", scaled, ctx.const(1.0, t)))
    return out


def _fade(ctx: Ctx, f: Var) -> tuple[Var, Var]:
    """The quintic fade 6f^5 - 15f^4 + 10f^3 and its derivative 30 f^2 (f - 1)^2."""
    t = f.type
    c = lambda v: ctx.const(v, t)  # noqa: E731
    f3 = ctx.op("mul", ctx.op("mul", f, f), f)
    s = ctx.op("mul", f3, ctx.op("add", ctx.op("mul", f, ctx.op("sub", ctx.op("mul", c(6.0), f),
                                                                  c(15.0))), c(10.0)))
    g = ctx.op("mul", f, ctx.op("sub", f, c(1.0)))
    return s, ctx.op("mul", c(30.0), ctx.op("mul", g, g))


def _corner_hashes(ctx: Ctx, state: Var, lattice: list[tuple[Var, Var]]) -> list[Var]:
    """The hash of every cell corner, corner index bit k choosing the upper lattice line in
    dimension k; hashed dimension by dimension so corners share their prefixes."""
    hashes = [state]
    for k, (lo, hi) in enumerate(lattice):
        nxt: list[Var | None] = [None] * (2 ** (k + 1))
        for c, h in enumerate(hashes):
            nxt[c] = pcg_hash(ctx, ctx.op("add", h, lo))
            nxt[c | (1 << k)] = pcg_hash(ctx, ctx.op("add", h, hi))
        hashes = [x for x in nxt if x is not None]
    return hashes


def perlin(ctx: Ctx, state: Var, p: list[Var], periods: list[Var] | None = None,
           with_grad: bool = False) -> Field:
    """Gradient noise at p (and its gradient when with_grad)."""
    t, d = p[0].type, len(p)
    lattice, frac = [], []
    for k, x in enumerate(p):
        fl = ctx.op("floor", x)
        frac.append(ctx.op("sub", x, fl))
        i0 = ctx.op("cast", fl, type=int32)
        i1 = ctx.op("add", i0, ctx.const(1, int32))
        if periods is not None:
            i0, i1 = _wrap(ctx, i0, periods[k]), _wrap(ctx, i1, periods[k])
        lattice.append((ctx.op("cast", i0, type=uint32), ctx.op("cast", i1, type=uint32)))
    fades = [_fade(ctx, f) for f in frac]
    one = ctx.const(1.0, t)
    value: Var | None = None
    grad: list[Var | None] = [None] * d
    for c, h in enumerate(_corner_hashes(ctx, state, lattice)):
        up = [(c >> k) & 1 == 1 for k in range(d)]
        g = _corner_gradient(ctx, h, d, t)
        rel = [ctx.op("sub", frac[k], one) if up[k] else frac[k] for k in range(d)]
        dot = _sum(ctx, [ctx.op("mul", g[k], rel[k]) for k in range(d)])
        w1 = [fades[k][0] if up[k] else ctx.op("sub", one, fades[k][0]) for k in range(d)]
        w = _prod(ctx, w1)
        value = _acc(ctx, value, ctx.op("mul", w, dot))
        if not with_grad:
            continue
        for k in range(d):  # d/dp_k of w * dot
            dw = fades[k][1] if up[k] else ctx.op("neg", fades[k][1])
            dwk = _prod(ctx, [dw, *(w1[j] for j in range(d) if j != k)])
            term = ctx.op("add", ctx.op("mul", dwk, dot), ctx.op("mul", w, g[k]))
            grad[k] = _acc(ctx, grad[k], term)
    assert value is not None
    return Field(value, [v for v in grad if v is not None])


def _sum(ctx: Ctx, xs: list[Var]) -> Var:
    acc = xs[0]
    for x in xs[1:]:
        acc = ctx.op("add", acc, x)
    return acc


def _prod(ctx: Ctx, xs: list[Var]) -> Var:
    acc = xs[0]
    for x in xs[1:]:
        acc = ctx.op("mul", acc, x)
    return acc


def _acc(ctx: Ctx, acc: Var | None, x: Var) -> Var:
    return x if acc is None else ctx.op("add", acc, x)


_NOISE_SIGS = ("(state: Int, x: Float) -> Float", "(state: Int, xy: Vector2) -> Float",
               "(state: Int, xyz: Vector3) -> Float", "(state: Int, xyzt: Vector4) -> Float")
_PNOISE_SIGS = (
    "(state: Int, x: Float, px: Int) -> Float",
    "(state: Int, xy: Vector2, px: Int, py: Int) -> Float",
    "(state: Int, xyz: Vector3, px: Int, py: Int, pz: Int) -> Float",
    "(state: Int, xyzt: Vector4, px: Int, py: Int, pz: Int, pt: Int) -> Float",
)
_CURL_SIGS = (
    "(state: Int, xy: Vector2, octaves: Int, lacunarity: Float, gain: Float) -> Vector2",
    "(state: Int, xyz: Vector3, octaves: Int, lacunarity: Float, gain: Float) -> Vector3",
    "(state: Int, xyzt: Vector4, octaves: Int, lacunarity: Float, gain: Float) -> Vector3",
)


@builtin("noise", "Perlin noise at a 1-4 dimensional position; state picks the field",
         group=_GROUP, signatures=_NOISE_SIGS)
def noise(ctx: Ctx, state: Value, xyz: Value) -> Value:
    p, _ = _position(ctx, "noise", xyz)
    return perlin(ctx, as_u32(ctx, "noise", state), p).value


@builtin("pnoise", "Perlin noise repeating with integer periods (one per dimension)",
         group=_GROUP, signatures=_PNOISE_SIGS)
def pnoise(ctx: Ctx, state: Value, xyz: Value, *periods: Value) -> Value:
    p, _ = _position(ctx, "pnoise", xyz)
    if len(periods) != len(p):
        raise ctx.error(f"wp.pnoise() at a {len(p)}-D position needs {len(p)} periods, "
                        f"got {len(periods)}")
    per = [_period(ctx, "pnoise", v) for v in periods]
    return perlin(ctx, as_u32(ctx, "pnoise", state), p, per).value


def _curl_octave(ctx: Ctx, states: list[Var], p: list[Var], freq: Var) -> list[Var]:
    """The curl of the potentials at freq * p, differentiated w.r.t. p (hence the freq)."""
    q = [ctx.op("mul", x, freq) for x in p]
    if len(p) == 2:
        g = perlin(ctx, states[0], q, with_grad=True).grad
        return [ctx.op("mul", g[1], freq), ctx.op("neg", ctx.op("mul", g[0], freq))]
    a, b, c = (perlin(ctx, s, q, with_grad=True).grad for s in states)
    curl = [ctx.op("sub", c[1], b[2]), ctx.op("sub", a[2], c[0]), ctx.op("sub", b[0], a[1])]
    return [ctx.op("mul", v, freq) for v in curl]


def _curl_sum(ctx: Ctx, states: list[Var], p: list[Var], octaves: Value, lac: Var,
              gain: Var) -> list[Var]:
    """Sum the octaves: unrolled for a literal count, an IR loop otherwise."""
    t, n = p[0].type, (2 if len(p) == 2 else 3)
    one, zero = ctx.const(1.0, t), ctx.const(0.0, t)
    if isinstance(octaves, Literal):
        acc, freq, amp = [zero] * n, one, one
        for _ in range(int(octaves.value)):
            oct_v = _curl_octave(ctx, states, p, freq)
            acc = [ctx.op("add", a, ctx.op("mul", amp, v)) for a, v in zip(acc, oct_v)]
            freq, amp = ctx.op("mul", freq, lac), ctx.op("mul", amp, gain)
        return acc
    count = as_u32(ctx, "curlnoise", octaves, "octave count")

    def body(c: list[Var]) -> list[Var]:
        oct_v = _curl_octave(ctx, states, p, c[1])
        acc = [ctx.op("add", a, ctx.op("mul", c[2], v)) for a, v in zip(c[3:], oct_v)]
        return [ctx.op("add", c[0], u32(ctx, 1)), ctx.op("mul", c[1], lac),
                ctx.op("mul", c[2], gain), *acc]

    out = while_loop(ctx, [u32(ctx, 0), one, one, *([zero] * n)],
                     lambda c: ctx.op("lt", c[0], count), body)
    return out[3:]


@builtin("curlnoise", "a divergence-free field: the curl of Perlin noise potentials, in octaves",
         group=_GROUP, signatures=_CURL_SIGS)
def curlnoise(ctx: Ctx, state: Value, xyz: Value, octaves: Value = _OCTAVES,
              lacunarity: Value = _LACUNARITY, gain: Value = _GAIN) -> Value:
    p, t = _position(ctx, "curlnoise", xyz)
    if len(p) == 1:
        raise ctx.error("wp.curlnoise() needs a vec2, vec3 or vec4 position, got a scalar")
    s = as_u32(ctx, "curlnoise", state)
    # three independent potentials for the 3-D curl: fields picked by hashing the state
    states = [s] if len(p) == 2 else [pcg_hash(ctx, ctx.op("add", s, u32(ctx, j)))
                                      for j in range(3)]
    lac, gn = (scalar(ctx, Literal(float(v.value)) if isinstance(v, Literal) else v, t)
               for v in (lacunarity, gain))
    if lac.type != t or gn.type != t:
        raise ctx.error(f"wp.curlnoise() lacunarity and gain must be {t} like the position, "
                        f"got {lac.type} and {gn.type}")
    comps = _curl_sum(ctx, states, p, octaves, lac, gn)
    return Composite(VectorType(len(comps), t), tuple(comps))
