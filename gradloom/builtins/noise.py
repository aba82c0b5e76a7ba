"""Perlin noise builtins: noise, pnoise, curlnoise, giving warp-lang 1.19's fields.

The construction (Perlin gradient noise as Warp 1.19 defines it; the hash constants are the facts
that fix its values), in 1 to 4 dimensions:

* Cell: per dimension f = x - floor(x), corners i0 = int(floor(x)) and i1 = i0 + 1. pnoise wraps
  them with C's remainder, i0 % p and (i0 % p + 1) % p, as Warp does: at negative coordinates
  the lattice indices are negative, so the field repeats with the period on each side of 0 but
  the two sides differ.
* Corner hash (uint32, wrapping): (i_x * 73856093) ^ (i_y * 19349663) ^ (i_z * 53471161) ^
  (i_t * 10000019 + state), the state added to the last dimension's term.
* Corner gradient, drawn from the hash h as a random state: in 1-D `randf(h, -1, 1)`; in 2-4-D
  the d successive draws `randf - 0.5`, normalized.
* Value: the corners' dot products g . (p - corner), blended axis by axis (x first) as
  (hi - lo) * S(f) + lo with the quintic fade S(f) = f^3 (f (6 f - 15) + 10).
* curlnoise sums octaves i = 0 .. octaves-1 (point freq * p with freq = lacunarity^i, weight
  gain^i) of the noise gradient with respect to the scaled point (no factor freq, as Warp),
  blended level by level like the value with S'(f) = 30 f^2 (f (f - 2) + 1). 2-D: (-s_y, s_x).
  3-D/4-D: three fields, the state advancing by rand_init(state, 10019689) and then
  rand_init(state, 13112221) between them and on into the next octave; the result is
  (s3_y - s2_z, s1_z - s3_x, s2_x - s1_y) (4-D: derivatives in x, y, z only).

Everything is composed of primitives, so gradients (and curlnoise's second derivatives) follow
automatically. Positions may be float64 too (Warp: float32 only); the same steps then run in
float64. None of these builtins advances `state`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Var
from ..types import ScalarType, VectorType, int32, uint32
from .random import as_u32, pcg_hash, u32, unit_float
from .registry import builtin
from .values import Composite, Ctx, Literal, Value, describe, scalar, while_loop

_GROUP = "Random"
# curlnoise's defaults (Warp's): one octave, lacunarity 2, gain 1/2
_OCTAVES, _LACUNARITY, _GAIN = Literal(1), Literal(2.0), Literal(0.5)
_PRIMES = (73856093, 19349663, 53471161, 10000019)
_CURL_OFFSETS = (10019689, 13112221)  # rand_init(state, offset) between curlnoise's fields
_MASK = 0xFFFFFFFF


def _pcg(x: int) -> int:
    """The PCG hash of random.py on a Python int (to fold rand_init's constant offsets)."""
    s = (x * 747796405 + 2891336453) & _MASK
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & _MASK
    return (w >> 22) ^ w


@dataclass
class Cell:
    """The cell around a point: fractional parts, f - 1, and the corners' lattice terms
    (i * prime per dimension, lower and upper corner) that the hash XORs together."""

    frac: list[Var]
    frac1: list[Var]
    terms: list[tuple[Var, Var]]


def _cell(ctx: Ctx, p: list[Var], periods: list[Var] | None = None) -> Cell:
    frac, frac1, terms = [], [], []
    for k, x in enumerate(p):
        fl = ctx.op("floor", x)
        f = ctx.op("sub", x, fl)
        frac.append(f)
        frac1.append(ctx.op("sub", f, ctx.const(1.0, x.type)))
        i0 = ctx.op("cast", fl, type=int32)
        i1 = ctx.op("add", i0, ctx.const(1, int32))
        if periods is not None:
            i0 = ctx.op("mod", i0, periods[k])
            i1 = ctx.op("mod", ctx.op("add", i0, ctx.const(1, int32)), periods[k])
        prime = u32(ctx, _PRIMES[k])
        terms.append((ctx.op("mul", ctx.op("cast", i0, type=uint32), prime),
                       ctx.op("mul", ctx.op("cast", i1, type=uint32), prime)))
    return Cell(frac, frac1, terms)


def _corner_hashes(ctx: Ctx, state: Var, terms: list[tuple[Var, Var]]) -> list[Var]:
    """Every corner's hash; corner index bit k chooses the upper corner in dimension k."""
    last = len(terms) - 1
    hashes: list[Var] = []
    for k, (lo, hi) in enumerate(terms):
        if k == last:
            lo, hi = ctx.op("add", lo, state), ctx.op("add", hi, state)
        if k == 0:
            hashes = [lo, hi]
        else:
            hashes = ([ctx.op("xor", h, lo) for h in hashes]
                      + [ctx.op("xor", h, hi) for h in hashes])
    return hashes


def _corner_gradient(ctx: Ctx, h: Var, d: int, t: ScalarType) -> list[Var]:
    """The random gradient at a corner: draws from the hash used as a random state."""
    if d == 1:
        u = unit_float(ctx, pcg_hash(ctx, h), t)
        return [ctx.op("sub", ctx.op("mul", ctx.const(2.0, t), u), ctx.const(1.0, t))]
    comps = []
    for _ in range(d):
        h = pcg_hash(ctx, h)
        comps.append(ctx.op("sub", unit_float(ctx, h, t), ctx.const(0.5, t)))
    # |v| > 0 unless all d draws are exactly 1/2 (probability 2^-24d); Warp then gives 0
    norm = ctx.op("sqrt", _sum(ctx, [ctx.op("mul", c, c) for c in comps]))
    return [ctx.op("div", c, norm) for c in comps]


def _fade(ctx: Ctx, f: Var) -> Var:
    """S(f) = f^3 (f (6 f - 15) + 10)."""
    t = f.type
    inner = ctx.op("sub", ctx.op("mul", f, ctx.const(6.0, t)), ctx.const(15.0, t))
    poly = ctx.op("add", ctx.op("mul", f, inner), ctx.const(10.0, t))
    return ctx.op("mul", ctx.op("mul", ctx.op("mul", f, f), f), poly)


def _fade_slope(ctx: Ctx, f: Var) -> Var:
    """S'(f) = 30 f^2 (f (f - 2) + 1)."""
    t = f.type
    poly = ctx.op("add", ctx.op("mul", f, ctx.op("sub", f, ctx.const(2.0, t))), ctx.const(1.0, t))
    return ctx.op("mul", ctx.op("mul", ctx.op("mul", ctx.const(30.0, t), f), f), poly)


def _leaves(ctx: Ctx, cell: Cell, state: Var) -> list[tuple[Var, list[Var]]]:
    """Per corner: g . (p - corner) and g."""
    d, t = len(cell.frac), cell.frac[0].type
    out = []
    for c, h in enumerate(_corner_hashes(ctx, state, cell.terms)):
        g = _corner_gradient(ctx, h, d, t)
        rel = [cell.frac1[k] if (c >> k) & 1 else cell.frac[k] for k in range(d)]
        out.append((_sum(ctx, [ctx.op("mul", rel[k], g[k]) for k in range(d)]), g))
    return out


def _lerp(ctx: Ctx, lo: Var, hi: Var, s: Var) -> Var:
    return ctx.op("add", ctx.op("mul", ctx.op("sub", hi, lo), s), lo)


def noise_value(ctx: Ctx, cell: Cell, state: Var) -> Var:
    """The noise value in a cell: the corners blended axis by axis."""
    level = [v for v, _ in _leaves(ctx, cell, state)]
    for f in cell.frac:
        s = _fade(ctx, f)
        level = [_lerp(ctx, level[j], level[j + 1], s) for j in range(0, len(level), 2)]
    return level[0]


def noise_gradient(ctx: Ctx, cell: Cell, state: Var, wanted: tuple[int, ...]) -> list[Var]:
    """The components `wanted` of the noise gradient w.r.t. the point, blended level by level
    with the values (each component only needs its own corner components)."""
    level: list[tuple[Var, dict[int, Var]]] = [
        (v, {j: g[j] for j in wanted}) for v, g in _leaves(ctx, cell, state)]
    last = len(cell.frac) - 1
    for k, f in enumerate(cell.frac):
        s = _fade(ctx, f)
        s1 = _fade_slope(ctx, f) if k in wanted else None
        nxt = []
        for (v0, g0), (v1, g1) in zip(level[0::2], level[1::2], strict=True):
            dv = ctx.op("sub", v1, v0)
            g = {j: _lerp(ctx, g0[j], g1[j], s) for j in wanted if j != k}
            if s1 is not None:
                gk = ctx.op("add", ctx.op("mul", ctx.op("sub", g1[k], g0[k]), s),
                            ctx.op("mul", dv, s1))
                g[k] = ctx.op("add", gk, g0[k])
            v = dv if k == last else ctx.op("add", ctx.op("mul", dv, s), v0)  # last: unused
            nxt.append((v, g))
        level = nxt
    return [level[0][1][j] for j in wanted]


def _sum(ctx: Ctx, xs: list[Var]) -> Var:
    acc = xs[0]
    for x in xs[1:]:
        acc = ctx.op("add", acc, x)
    return acc


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
    return noise_value(ctx, _cell(ctx, p), as_u32(ctx, "noise", state))


@builtin("pnoise", "Perlin noise repeating with integer periods (one per dimension)",
         group=_GROUP, signatures=_PNOISE_SIGS)
def pnoise(ctx: Ctx, state: Value, xyz: Value, *periods: Value) -> Value:
    p, _ = _position(ctx, "pnoise", xyz)
    if len(periods) != len(p):
        raise ctx.error(f"wp.pnoise() at a {len(p)}-D position needs {len(p)} periods, "
                        f"got {len(periods)}")
    per = [_period(ctx, "pnoise", v) for v in periods]
    return noise_value(ctx, _cell(ctx, p, per), as_u32(ctx, "pnoise", state))


#: the gradient components of each field that the curl uses: 2-D (-g_y, g_x); 3-D/4-D
#: (g3_y - g2_z, g1_z - g3_x, g2_x - g1_y)
_CURL_USES = {1: ((0, 1),), 3: ((1, 2), (0, 2), (0, 1))}


def _curl_octave(ctx: Ctx, state: Var, p: list[Var], freq: Var, amp: Var,
                 sums: list[list[Var]]) -> tuple[Var, list[list[Var]]]:
    """Add one octave's weighted noise gradients to the running sums (per field, the
    components the curl uses); the state after it (advanced between the 3-D/4-D fields)."""
    cell = _cell(ctx, [ctx.op("mul", freq, x) for x in p])
    out = []
    for j, (acc, wanted) in enumerate(zip(sums, _CURL_USES[len(sums)], strict=True)):
        if j > 0:
            state = pcg_hash(ctx, ctx.op("add", state, u32(ctx, _pcg(_CURL_OFFSETS[j - 1]))))
        g = noise_gradient(ctx, cell, state, wanted)
        out.append([ctx.op("add", a, ctx.op("mul", amp, gk)) for a, gk in zip(acc, g)])
    return state, out


def _curl_sums(ctx: Ctx, state: Var, p: list[Var], fields: int, octaves: Value, lac: Var,
               gain: Var) -> list[list[Var]]:
    """The octave sums of each field's gradient: unrolled for a literal count, else a loop."""
    t, d = p[0].type, 2  # two gradient components per field (_CURL_USES)
    one, zero = ctx.const(1.0, t), ctx.const(0.0, t)
    sums = [[zero] * d for _ in range(fields)]
    if isinstance(octaves, Literal):
        freq, amp = one, one
        for _ in range(int(octaves.value)):
            state, sums = _curl_octave(ctx, state, p, freq, amp, sums)
            freq, amp = ctx.op("mul", freq, lac), ctx.op("mul", amp, gain)
        return sums
    count = as_u32(ctx, "curlnoise", octaves, "octave count")

    def body(c: list[Var]) -> list[Var]:
        flat = c[4:]
        acc = [flat[j * d:(j + 1) * d] for j in range(fields)]
        s, acc = _curl_octave(ctx, c[3], p, c[1], c[2], acc)
        return [ctx.op("add", c[0], u32(ctx, 1)), ctx.op("mul", c[1], lac),
                ctx.op("mul", c[2], gain), s, *(x for a in acc for x in a)]

    out = while_loop(ctx, [u32(ctx, 0), one, one, state, *(x for a in sums for x in a)],
                     lambda c: ctx.op("lt", c[0], count), body)
    flat = out[4:]
    return [flat[j * d:(j + 1) * d] for j in range(fields)]


@builtin("curlnoise", "a divergence-free field: the curl of Perlin noise potentials, in octaves",
         group=_GROUP, signatures=_CURL_SIGS)
def curlnoise(ctx: Ctx, state: Value, xyz: Value, octaves: Value = _OCTAVES,
              lacunarity: Value = _LACUNARITY, gain: Value = _GAIN) -> Value:
    p, t = _position(ctx, "curlnoise", xyz)
    if len(p) == 1:
        raise ctx.error("wp.curlnoise() needs a vec2, vec3 or vec4 position, got a scalar")
    lac, gn = (scalar(ctx, Literal(float(v.value)) if isinstance(v, Literal) else v, t)
               for v in (lacunarity, gain))
    if lac.type != t or gn.type != t:
        raise ctx.error(f"wp.curlnoise() lacunarity and gain must be {t} like the position, "
                        f"got {lac.type} and {gn.type}")
    s = as_u32(ctx, "curlnoise", state)
    if len(p) == 2:
        ((gx, gy),) = _curl_sums(ctx, s, p, 1, octaves, lac, gn)
        comps = [ctx.op("neg", gy), gx]
    else:  # the components of _CURL_USES[3]
        (g1y, g1z), (g2x, g2z), (g3x, g3y) = _curl_sums(ctx, s, p, 3, octaves, lac, gn)
        comps = [ctx.op("sub", g3y, g2z), ctx.op("sub", g1z, g3x), ctx.op("sub", g2x, g1y)]
    return Composite(VectorType(len(comps), t), tuple(comps))
