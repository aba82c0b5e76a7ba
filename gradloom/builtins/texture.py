"""`texture_sample` in kernels: filtered, addressed reads of a texture (runtime/geometry/texture.py).

The texture arrives as a struct value (types/texture.py). Per axis the coordinate becomes texel
space (times the level's size when normalised), a linear filter reads the two texels around
`x - 0.5` weighted by its fraction, a closest one the texel under `x`; the address mode maps a
texel index outside the level (wrap: modulo; clamp: to the edge; mirror: reflected with period
2n; border: reads 0). Mip levels are chosen by `lod` (clamped to the chain; closest: the nearest
level, linear: a blend of the two around it). Texels are read as integer bits and reinterpreted,
so no gradient flows into texture data (as in Warp); gradients flow into the coordinates and
`lod` through the weights, and a closest filter's are zero.
"""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import (
    TEXTURE_FIELDS,
    ScalarType,
    TextureAddressMode,
    TextureFilterMode,
    VectorType,
    float32,
    float64,
    int32,
    int64,
    ptr,
    resolve_annotation,
    texture_ndim,
)
from .registry import builtin
from .values import Composite, Ctx, StructVal, Value, describe, if_values, scalar

_CHANNELS = {"float32": 1, "vec2f": 2, "vec4f": 4}
_NAMES = [n for n, _ in TEXTURE_FIELDS]


class _Tex:
    """A texture value's fields, read by name."""

    def __init__(self, ctx: Ctx, value: StructVal) -> None:
        self.ctx, self.value = ctx, value

    def __getitem__(self, name: str) -> Var:
        v = self.value.fields[_NAMES.index(name)]
        assert isinstance(v, Var)
        return v

    def pointer(self, name: str) -> Var:
        return self.ctx.op("cast", self[name], type=ptr)


def _i(ctx: Ctx, v: int) -> Var:
    return ctx.const(v, int32)


def _f(ctx: Ctx, v: float) -> Var:
    return ctx.const(v, float32)


def _address(ctx: Ctx, i: Var, n: Var, mode: Var) -> tuple[Var, Var]:
    """(index inside [0, n), whether it reads the texture) for texel index i under a mode."""
    zero, one = _i(ctx, 0), _i(ctx, 1)
    clamped = ctx.op("max", zero, ctx.op("min", i, ctx.op("sub", n, one)))
    r = ctx.op("mod", i, n)
    wrapped = ctx.op("select", ctx.op("lt", r, zero), ctx.op("add", r, n), r)
    period = ctx.op("add", n, n)
    m = ctx.op("mod", i, period)
    m = ctx.op("select", ctx.op("lt", m, zero), ctx.op("add", m, period), m)
    mirrored = ctx.op("select", ctx.op("ge", m, n), ctx.op("sub", ctx.op("sub", period, one), m), m)
    is_mode = [ctx.op("eq", mode, _i(ctx, int(k))) for k in TextureAddressMode]
    idx = ctx.op("select", is_mode[TextureAddressMode.WRAP], wrapped,
                 ctx.op("select", is_mode[TextureAddressMode.MIRROR], mirrored, clamped))
    inside = ctx.op("and", ctx.op("ge", i, zero), ctx.op("lt", i, n))
    reads = ctx.op("or", ctx.op("not", is_mode[TextureAddressMode.BORDER]), inside)
    return idx, reads


def _period(ctx: Ctx, tex: _Tex, mode: Var, n0: Var, t: ScalarType) -> tuple[Var, Var]:
    """(whether the mode is periodic, its period in coordinate units): WRAP one, MIRROR two
    widths of the base level (1 when normalised, its texel count otherwise)."""
    wrap = ctx.op("eq", mode, _i(ctx, int(TextureAddressMode.WRAP)))
    mirror = ctx.op("eq", mode, _i(ctx, int(TextureAddressMode.MIRROR)))
    width = ctx.op("select", _normalized(ctx, tex), ctx.const(1.0, t), ctx.op("cast", n0, type=t))
    period = ctx.op("mul", width, ctx.op("select", mirror, ctx.const(2.0, t), ctx.const(1.0, t)))
    return ctx.op("or", wrap, mirror), period


def _normalized(ctx: Ctx, tex: _Tex) -> Var:
    return ctx.op("ne", tex["_normalized"], _i(ctx, 0))


def _periodic(ctx: Ctx, tex: _Tex, coord: Var, mode: Var, n0: Var) -> Var:
    """A coordinate brought into its first period (WRAP: [0, 1), MIRROR: [0, 2) widths)
    before it is scaled, by an exact remainder, so far coordinates keep their position within
    a texel in float32; the shift is a whole number of periods: the derivative is unchanged."""
    periodic, period = _period(ctx, tex, mode, n0, float32)
    r = ctx.op("mod", coord, period)
    r = ctx.op("select", ctx.op("lt", r, _f(ctx, 0.0)), ctx.op("add", r, period), r)
    return ctx.op("select", periodic, r, coord)


def _nearest(ctx: Ctx, tex: _Tex, coord: Var, n: Var, n0: Var, mode: Var) -> Var:
    """A closest filter's texel index, in float64 as Warp's CPU sampler computes it: the
    remainder keeps its sign (adding a period could round a tiny negative one up to the
    period's end), non-periodic modes stop one texel outside the level."""
    periodic, period = _period(ctx, tex, mode, n0, float64)
    c = ctx.op("cast", coord, type=float64)
    c = ctx.op("select", periodic, ctx.op("mod", c, period), c)
    level = ctx.op("cast", n, type=float64)
    texel = ctx.op("select", _normalized(ctx, tex), ctx.op("mul", c, level),
                   ctx.op("div", ctx.op("mul", c, level), ctx.op("cast", n0, type=float64)))
    bounded = ctx.op("max", ctx.const(-1.0, float64), ctx.op("min", texel, level))
    texel = ctx.op("select", periodic, texel, bounded)
    return ctx.op("cast", ctx.op("floor", texel), type=int32)


def _axis(ctx: Ctx, tex: _Tex, coord: Var, n: Var, n0: Var,
          mode: Var) -> list[tuple[Var, Var, Var]]:
    """The two texels an axis reads: (index, reads, weight) each. The coordinate is normalised
    (divided by the base level's size when it is in texels) and scaled by this level's."""
    linear = ctx.op("eq", tex["_filter"], _i(ctx, int(TextureFilterMode.LINEAR)))
    reduced = _periodic(ctx, tex, coord, mode, n0)
    unit = ctx.op("select", _normalized(ctx, tex), reduced,
                  ctx.op("div", reduced, ctx.op("cast", n0, type=float32)))
    x = ctx.op("sub", ctx.op("mul", unit, ctx.op("cast", n, type=float32)), _f(ctx, 0.5))
    x = ctx.op("max", _f(ctx, -(2.0**30)), ctx.op("min", x, _f(ctx, 2.0**30)))
    base = ctx.op("floor", x)
    frac = ctx.op("select", linear, ctx.op("sub", x, base), _f(ctx, 0.0))
    i0 = ctx.op("select", linear, ctx.op("cast", base, type=int32),
                _nearest(ctx, tex, coord, n, n0, mode))
    out = []
    for i, w in ((i0, ctx.op("sub", _f(ctx, 1.0), frac)), (ctx.op("add", i0, _i(ctx, 1)), frac)):
        idx, reads = _address(ctx, i, n, mode)
        out.append((idx, reads, w))
    return out


def _texel(ctx: Ctx, tex: _Tex, offset: Var, index: Var, channels: int) -> list[Var]:
    """The first `channels` channels of texel `index` (zeros past the texture's channels)."""
    have = tex["_channels"]
    base = ctx.op("add", offset, ctx.op("mul", index, have))
    data = tex.pointer("_data")
    out = []
    for c in range(channels):
        exists = ctx.op("lt", _i(ctx, c), have)
        lane = ctx.op("min", _i(ctx, c), ctx.op("sub", have, _i(ctx, 1)))
        element = ctx.op("cast", ctx.op("add", base, lane), type=int64)
        bits = ctx.op("load", data, ctx.op("mul", element, ctx.const(4, int64)), type=int32)
        value = ctx.op("bitcast", bits, type=float32)  # no gradient into texture data
        out.append(ctx.op("select", exists, value, _f(ctx, 0.0)))
    return out


def _level(ctx: Ctx, tex: _Tex, level: Var, coords: list[Var], channels: int) -> list[Var]:
    """A filtered sample of one mip level."""
    row = ctx.op("mul", ctx.op("cast", level, type=int64), ctx.const(16, int64))
    table = tex.pointer("_levels")
    offset, *sizes = (ctx.op("load", table, row, attr=4 * k, type=int32) for k in range(4))
    zero = ctx.const(0, int64)
    base_sizes = [ctx.op("load", table, zero, attr=4 * k, type=int32) for k in range(1, 4)]
    modes = (tex["_address_u"], tex["_address_v"], tex["_address_w"])
    axes = [_axis(ctx, tex, c, sizes[a], base_sizes[a], modes[a]) for a, c in enumerate(coords)]
    corners = []
    for corner in range(1 << len(axes)):
        picks = [axes[a][(corner >> a) & 1] for a in range(len(axes))]
        index, stride = _i(ctx, 0), _i(ctx, 1)
        ok: Var | None = None
        for a, (idx, r, _) in enumerate(picks):
            index = ctx.op("add", index, ctx.op("mul", idx, stride))
            stride = ctx.op("mul", stride, sizes[a])
            ok = r if ok is None else ctx.op("and", ok, r)
        assert ok is not None
        zero = _f(ctx, 0.0)  # a border read outside the level is 0
        corners.append([ctx.op("select", ok, v, zero)
                        for v in _texel(ctx, tex, offset, index, channels)])
    return _interpolate(ctx, corners, [axes[a][1][2] for a in range(len(axes))])


def _interpolate(ctx: Ctx, corners: list[list[Var]], fracs: list[Var]) -> list[Var]:
    """The first corner plus nested lerps (axis by axis) of the others' differences from it:
    a slope is then a difference of nearby texels, exact even when the texels share a large
    offset (as Warp's CPU gradients; a sum of weighted texels would cancel it away). In double
    precision, rounded once: a difference of float32 texels never overflows, so a channel
    whose result has a zero adjoint passes no NaN (0 * inf) to the coordinates."""
    def wide(v: Var) -> Var:
        return ctx.op("cast", v, type=float64)

    first = [wide(v) for v in corners[0]]
    deltas = [[ctx.op("sub", wide(v), f) for v, f in zip(c, first, strict=True)]
              for c in corners]
    for frac in map(wide, fracs):
        deltas = [[ctx.op("add", a, ctx.op("mul", frac, ctx.op("sub", b, a)))
                   for a, b in zip(deltas[k], deltas[k + 1], strict=True)]
                  for k in range(0, len(deltas), 2)]
    return [ctx.op("cast", ctx.op("add", f, d), type=float32)
            for f, d in zip(first, deltas[0], strict=True)]


def _mip(ctx: Ctx, tex: _Tex, lod: Var, coords: list[Var], channels: int,
         lod_given: bool) -> list[Var]:
    """The sample at `lod`: one level, or a blend of two (linear mip filtering)."""
    top = ctx.op("cast", ctx.op("sub", tex["_num_levels"], _i(ctx, 1)), type=float32)
    # lod first: min/max give a tie's gradient to their first operand, so lod = 0 (or the top
    # level) has the one-sided slope into the chain, as Warp's
    lodc = ctx.op("max", ctx.op("min", lod, top), _f(ctx, 0.0))
    linear = ctx.op("eq", tex["_mip_filter"], _i(ctx, int(TextureFilterMode.LINEAR)))
    nearest = ctx.op("floor", ctx.op("add", lodc, _f(ctx, 0.5)))
    low = ctx.op("select", linear, ctx.op("floor", lodc), nearest)
    frac = ctx.op("select", linear, ctx.op("sub", lodc, low), _f(ctx, 0.0))
    l0 = ctx.op("cast", low, type=int32)
    first = _level(ctx, tex, l0, coords, channels)
    # a given lod on a whole level still blends (with weight 0) so its gradient is the slope
    # towards the next level; without one, level 0 alone
    blend = ctx.op("and", linear, ctx.op("lt", low, top)) if lod_given else \
        ctx.op("gt", frac, _f(ctx, 0.0))

    def second() -> list[Var]:
        l1 = ctx.op("min", ctx.op("add", l0, _i(ctx, 1)), tex["_num_levels"])
        l1 = ctx.op("min", l1, ctx.op("sub", tex["_num_levels"], _i(ctx, 1)))
        upper = _level(ctx, tex, l1, coords, channels)
        return _interpolate(ctx, [first, upper], [frac])  # the levels' difference, in double

    return if_values(ctx, blend, second, lambda: list(first))


def _coords(ctx: Ctx, ndim: int, args: tuple[Value, ...]) -> list[Var]:
    """The coordinates: a vector of ndim floats, or ndim float scalars."""
    if len(args) == 1 and ndim > 1:
        v = args[0]
        if not isinstance(v, Composite) or not isinstance(v.type, VectorType) or \
                v.type.length != ndim:
            raise ctx.error(f"wp.texture_sample() on a {ndim}-D texture takes a vec{ndim} "
                            f"coordinate (or {ndim} floats), got {describe(v)}")
        args = v.comps
    if len(args) != ndim:
        raise ctx.error(f"wp.texture_sample() on a {ndim}-D texture takes {ndim} coordinates, "
                        f"got {len(args)}")
    return [ctx.op("cast", scalar(ctx, a), type=float32) if scalar(ctx, a).type != float32
            else scalar(ctx, a) for a in args]


def _result_channels(ctx: Ctx, dtype: object) -> tuple[int, object]:
    t = resolve_annotation(dtype)
    n = _CHANNELS.get(repr(t))
    if n is None:
        raise ctx.error("wp.texture_sample(): dtype is float, wp.vec2f or wp.vec4f (one per "
                        f"channel count), got {dtype!r}")
    return n, t


@builtin("texture_sample", "a texture sampled at a coordinate (texel centres at (i + 0.5) / size "
         "when normalised, i + 0.5 otherwise), filtered and addressed as the texture was created; "
         "dtype float, vec2f or vec4f reads 1, 2 or 4 channels; lod picks or blends mip levels. "
         "Gradients flow into the coordinates and lod, not into the texture's data",
         signatures=("(tex: Texture1D, u: Float, dtype: Any, lod: Float) -> Any",
                     "(tex: Texture2D, uv: vec2f, dtype: Any, lod: Float) -> Any",
                     "(tex: Texture2D, u: Float, v: Float, dtype: Any, lod: Float) -> Any",
                     "(tex: Texture3D, uvw: vec3f, dtype: Any, lod: Float) -> Any",
                     "(tex: Texture3D, u: Float, v: Float, w: Float, dtype: Any, lod: Float) -> Any"),
         group="Geometry")
def texture_sample(ctx: Ctx, tex: Value, *coords: Value, dtype: object = float,
                   lod: Value = None) -> Value:  # type: ignore[assignment]
    ndim = texture_ndim(getattr(tex, "type", None))
    if not isinstance(tex, StructVal) or ndim is None:
        raise ctx.error(f"wp.texture_sample() samples a wp.Texture1D/2D/3D, got {describe(tex)}")
    channels, t = _result_channels(ctx, dtype)
    level = _f(ctx, 0.0) if lod is None else scalar(ctx, lod)
    if level.type != float32:
        level = ctx.op("cast", level, type=float32)
    values = _mip(ctx, _Tex(ctx, tex), level, _coords(ctx, ndim, coords), channels,
                  lod is not None)
    if channels == 1:
        return values[0]
    assert isinstance(t, VectorType)
    return Composite(t, tuple(values))
