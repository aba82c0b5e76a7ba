"""`wp.tile_fft` / `wp.tile_ifft`: in-place complex DFTs along a tile's last axis (Warp's: no
normalisation either way; elements are wp.vec2f / wp.vec2d as (real, imaginary)).

A power-of-two length runs the iterative radix-2 transform (bit-reversal permutation, then
log2(n) butterfly stages, twiddles computed in float64); other lengths the direct sum into a
scratch row, as Warp's CPU fallback. Both are IR loops over the tile's buffer (tile_loops.py).

The transform is linear, so its adjoint is the conjugate transform: `tile_fft`'s adjoint is an
unnormalised inverse transform of the buffer's adjoint half, `tile_ifft`'s a forward one. Each
call is a `Custom` region (ir/nodes.py) whose reverse rule is that transform, so the adjoint
pushes nothing on the stack and is exact.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..ir.nodes import Var
from ..types import ScalarType, TileType, VectorType, float64, int32, int64
from .registry import builtin
from .tile_loops import count_loop, each, get, new_tile, write
from .tiles import _T, tile_arg
from .values import Composite, Ctx, TileVal

Complex = tuple[Var, Var]


def _check(ctx: Ctx, t: TileVal, name: str) -> None:
    d = t.type.dtype
    if not (isinstance(d, VectorType) and d.length == 2 and d.dtype.is_float):
        raise ctx.error(f"wp.{name}() needs a tile of wp.vec2f or wp.vec2d elements (real, "
                        f"imaginary), got {t.type!r}")
    if t.dyn is not None:
        raise ctx.error(f"wp.{name}() transforms a tile in place; a view at a run-time offset "
                        "cannot be transformed (copy it into a tile first)")


def _load(ctx: Ctx, row: TileVal, k: Var | int) -> Complex:
    v = get(ctx, row, [k])
    assert isinstance(v, Composite)
    return v.comps[0], v.comps[1]


def _store(ctx: Ctx, row: TileVal, k: Var | int, c: Complex) -> None:
    write(ctx, row, [k], Composite(row.type.dtype, c))


def _twiddle(ctx: Ctx, num: Var, scale: float, t: ScalarType) -> Complex:
    """(cos, sin) of num * scale, computed in float64 and rounded to the element type."""
    ang = ctx.op("mul", ctx.op("cast", num, type=float64), ctx.const(scale, float64))
    c, s = ctx.op("cos", ang), ctx.op("sin", ang)
    if t == float64:
        return c, s
    return ctx.op("cast", c, type=t), ctx.op("cast", s, type=t)


def _cmul(ctx: Ctx, a: Complex, b: Complex) -> Complex:
    re = ctx.op("sub", ctx.op("mul", a[0], b[0]), ctx.op("mul", a[1], b[1]))
    im = ctx.op("add", ctx.op("mul", a[0], b[1]), ctx.op("mul", a[1], b[0]))
    return re, im


def _bit_reverse(ctx: Ctx, row: TileVal, n: int) -> None:
    bits = n.bit_length() - 1
    one = ctx.const(1, int32)

    def body(i: Var, _: list[Var]) -> list[Var]:
        j = ctx.const(0, int32)
        for b in range(bits):
            bit = ctx.op("and", ctx.op("shr", i, ctx.const(b, int32)), one)
            j = ctx.op("or", j, ctx.op("shl", bit, ctx.const(bits - 1 - b, int32)))
        a, c = _load(ctx, row, i), _load(ctx, row, j)
        swap = ctx.op("lt", i, j)
        _store(ctx, row, i, (ctx.op("select", swap, c[0], a[0]), ctx.op("select", swap, c[1], a[1])))
        _store(ctx, row, j, (ctx.op("select", swap, a[0], c[0]), ctx.op("select", swap, a[1], c[1])))
        return []
    count_loop(ctx, n, [], body)


def _radix2(ctx: Ctx, row: TileVal, n: int, sign: float) -> None:
    _bit_reverse(ctx, row, n)
    t = row.type.dtype.dtype
    m = 2
    while m <= n:
        half = m // 2

        def per_k(k: Var, _: list[Var], m: int = m, half: int = half) -> list[Var]:
            w = _twiddle(ctx, k, sign * 2.0 * math.pi / m, t)

            def per_group(g: Var, _: list[Var]) -> list[Var]:
                i0 = ctx.op("add", ctx.op("mul", g, ctx.const(m, int32)), k)
                i1 = ctx.op("add", i0, ctx.const(half, int32))
                u, v = _load(ctx, row, i0), _cmul(ctx, _load(ctx, row, i1), w)
                _store(ctx, row, i0, (ctx.op("add", u[0], v[0]), ctx.op("add", u[1], v[1])))
                _store(ctx, row, i1, (ctx.op("sub", u[0], v[0]), ctx.op("sub", u[1], v[1])))
                return []
            count_loop(ctx, n // m, [], per_group)
            return []
        count_loop(ctx, half, [], per_k)
        m *= 2


def _direct(ctx: Ctx, row: TileVal, n: int, sign: float) -> None:
    """out[k] = sum_j x[j] exp(sign 2 pi i jk / n), through a scratch row."""
    scratch = new_tile(ctx, TileType(row.type.dtype, (n,)))
    t = row.type.dtype.dtype
    nn = ctx.const(n, int32)

    def per_k(k: Var, _: list[Var]) -> list[Var]:
        def add(j: Var, acc: list[Var]) -> list[Var]:
            jk = ctx.op("mod", ctx.op("mul", j, k), nn)
            p = _cmul(ctx, _load(ctx, row, j), _twiddle(ctx, jk, sign * 2.0 * math.pi / n, t))
            return [ctx.op("add", acc[0], p[0]), ctx.op("add", acc[1], p[1])]
        zero = ctx.const(0.0, t)
        re, im = count_loop(ctx, n, [zero, zero], add)
        _store(ctx, scratch, k, (re, im))
        return []
    count_loop(ctx, n, [], per_k)
    each(ctx, (n,), lambda i: _store(ctx, row, i[0], _load(ctx, scratch, i[0])))


def _transform(ctx: Ctx, t: TileVal, sign: float) -> None:
    """The DFT with exponent sign `sign` along t's last axis, in place, row by row."""
    n = t.type.shape[-1]
    lead = t.type.shape[:-1]

    def one(idx: list[Var]) -> None:
        dyn: Var | None = None
        for i, s in zip(idx, t.strides[:-1], strict=True):
            term = ctx.op("mul", ctx.op("cast", i, type=int64), ctx.const(s, int64))
            dyn = term if dyn is None else ctx.op("add", dyn, term)
        row = TileVal(TileType(t.type.dtype, (n,)), t.base, t.span, t.offset, t.strides[-1:], dyn)
        if n & (n - 1) == 0:
            _radix2(ctx, row, n, sign)
        else:
            _direct(ctx, row, n, sign)
    if lead:
        each(ctx, lead, one)
    else:
        one([])


def _call(ctx: Ctx, inout: object, sign: float, name: str) -> None:
    t = tile_arg(ctx, inout, "inout")
    _check(ctx, t, name)
    ctx.b.open_block()
    _transform(ctx, t, sign)
    body = ctx.b.close_block()
    size = t.type.dtype.size
    adj = replace(t, offset=t.offset + t.span // size)  # the buffer's adjoint half
    ctx.b.open_block()
    _transform(ctx, adj, -sign)
    adjoint = ctx.b.close_block()
    ctx.b.emit_custom((), body, (), adjoint, ctx.loc)


@builtin("tile_fft", "the forward DFT along the last axis of a tile of vec2 (real, imaginary) "
         "elements, in place and unnormalised; its adjoint is the unnormalised inverse DFT",
         group=_T, signatures="(inout: Tile) -> None")
def tile_fft(ctx: Ctx, inout: object) -> None:
    _call(ctx, inout, -1.0, "tile_fft")


@builtin("tile_ifft", "the inverse DFT along the last axis of a tile of vec2 (real, imaginary) "
         "elements, in place and unnormalised (numpy's ifft times n); its adjoint is the "
         "forward DFT", group=_T, signatures="(inout: Tile) -> None")
def tile_ifft(ctx: Ctx, inout: object) -> None:
    _call(ctx, inout, 1.0, "tile_ifft")
