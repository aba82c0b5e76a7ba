"""Volume builtins: `volume_lookup/sample/sample_grad/store` (typed `_f/_v/_i` and `dtype=` forms)
and the index↔world transforms, on the NanoVDB buffer a volume id names (builtins/volume_walk.py).

Values are read as integer bits and reinterpreted, so no gradient reaches volume data (Warp's
rule); sampling is differentiable in the coordinates: closest (`Volume.CLOSEST`, the voxel
`floor(uvw + 0.5)`, gradient zero) or trilinear (`Volume.LINEAR` over `floor(uvw)` and its +1
neighbours). The transforms use the grid's float32 map (index -> world: `M·uvw + t`).
"""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Var
from ..types import (
    MatrixType,
    VectorType,
    float32,
    float64,
    int32,
    int64,
    resolve_annotation,
    uint32,
    vec3f,
)
from ..types import volume as L
from . import memory
from .registry import builtin
from .values import Composite, Ctx, Literal, OutArgs, Value, describe, if_values, scalar
from .volume_walk import i64, value_offset

_GROUP = "Geometry"
_CLOSEST, _LINEAR = 0, 1
#: kernel value type name -> NanoVDB grid type
_GRID_TYPE = {"float32": 1, "float64": 2, "int32": 4, "int64": 5, "vec3f": 6, "vec3d": 7,
              "uint32": 10, "vec4f": 17, "vec4d": 18}  # fmt: skip
_COMPONENT = {"f4": (int32, float32), "f8": (int64, float64), "i4": (int32, None),
              "i8": (int64, None), "u4": (uint32, None)}  # fmt: skip


def _layout(ctx: Ctx, name: str, dtype: Any) -> tuple[L.ValueLayout, Any]:
    t = resolve_annotation(dtype)
    grid_type = _GRID_TYPE.get(repr(t))
    if grid_type is None:
        raise ctx.error(f"wp.{name}(): volumes hold float32, float64, int32, int64, uint32, vec3f, "
                        f"vec3d, vec4f or vec4d values, not {dtype!r}")  # fmt: skip
    return L.LAYOUTS[grid_type], t


def volume_pointer(ctx: Ctx, name: str, vid: Value) -> Var:
    return memory.handle_pointer(ctx, name, vid, "a volume id (a Volume's .id)")


def index_coords(ctx: Ctx, name: str, v: Value) -> list[Var]:
    if not isinstance(v, Composite) or not isinstance(v.type, VectorType) or v.type.length != 3:
        raise ctx.error(f"wp.{name}() takes a vec3 coordinate, got {describe(v)}")
    return [c if c.type == float32 else ctx.op("cast", c, type=float32) for c in v.comps]


def int_arg(ctx: Ctx, v: Value) -> Var:
    s = scalar(ctx, v, int32)
    return s if s.type == int32 else ctx.op("cast", s, type=int32)


def read_value(ctx: Ctx, p: Var, lay: L.ValueLayout, offset: Var) -> list[Var]:
    """The components of the value at a byte offset (bits reinterpreted: no gradient)."""
    bits_type, float_type = _COMPONENT[lay.scalar]
    out = []
    for c in range(lay.channels):
        at = ctx.op("add", offset, i64(ctx, c * bits_type.size))
        bits = ctx.op("load", p, at, type=bits_type)
        out.append(bits if float_type is None else ctx.op("bitcast", bits, type=float_type))
    return out


def _is_type(ctx: Ctx, p: Var, lay: L.ValueLayout) -> Var:
    """Whether the grid holds the kernel's value type: reading it with another type's layout
    would follow garbage offsets, so a mismatch reads zeros and stores nothing."""
    grid_type = ctx.op("load", p, i64(ctx, L.GRID_OFF["grid_type"]), type=int32)
    return ctx.op("eq", grid_type, ctx.const(lay.grid_type, int32))


def lookup(ctx: Ctx, p: Var, lay: L.ValueLayout, ijk: list[Var]) -> list[Var]:
    def found() -> list[Var]:
        offset, _ = value_offset(ctx, p, lay, ijk)
        return read_value(ctx, p, lay, offset)

    bits_type, float_type = _COMPONENT[lay.scalar]
    zero = ctx.const(0, float_type or bits_type)
    return if_values(ctx, _is_type(ctx, p, lay), found, lambda: [zero] * lay.channels)


def sampling_mode(ctx: Ctx, name: str, mode: Value) -> int:
    if isinstance(mode, Literal) and mode.value in (_CLOSEST, _LINEAR):
        return int(mode.value)
    raise ctx.error(f"wp.{name}(): sampling_mode is wp.Volume.CLOSEST or wp.Volume.LINEAR (a "
                    f"constant), got {describe(mode)}")  # fmt: skip


def sample(ctx: Ctx, p: Var, lay: L.ValueLayout, uvw: list[Var], mode: int,
           want_grad: bool = False) -> tuple[list[Var], list[list[Var]]]:  # fmt: skip
    """(value components, d value / d uvw per axis) at index-space uvw."""
    zero = ctx.const(0.0, float32)
    if mode == _CLOSEST:
        ijk = [ctx.op("cast", ctx.op("floor", ctx.op("add", c, ctx.const(0.5, float32))), type=int32)
               for c in uvw]  # fmt: skip
        values = [_to_f32(ctx, v) for v in lookup(ctx, p, lay, ijk)]
        return values, [[zero] * lay.channels for _ in range(3)]
    base = [ctx.op("floor", c) for c in uvw]
    frac = [ctx.op("sub", c, b) for c, b in zip(uvw, base, strict=True)]
    i0 = [ctx.op("cast", b, type=int32) for b in base]
    one = ctx.const(1.0, float32)
    corners = {}
    for corner in range(8):
        ijk = [ctx.op("add", i0[a], ctx.const((corner >> (2 - a)) & 1, int32)) for a in range(3)]
        corners[corner] = [_to_f32(ctx, v) for v in lookup(ctx, p, lay, ijk)]
    weights = [(ctx.op("sub", one, f), f) for f in frac]
    total = [zero] * lay.channels
    grads = [[zero] * lay.channels for _ in range(3)]
    for corner, vals in corners.items():
        bit = [(corner >> (2 - a)) & 1 for a in range(3)]
        w = ctx.op("mul", ctx.op("mul", weights[0][bit[0]], weights[1][bit[1]]), weights[2][bit[2]])
        total = [ctx.op("add", t, ctx.op("mul", w, v)) for t, v in zip(total, vals, strict=True)]
        if want_grad:
            for a in range(3):
                others = [weights[b][bit[b]] for b in range(3) if b != a]
                dw = ctx.op("mul", others[0], others[1])
                dw = dw if bit[a] else ctx.op("neg", dw)
                grads[a] = [ctx.op("add", g, ctx.op("mul", dw, v)) for g, v in zip(grads[a], vals, strict=True)]
    return total, grads


def _to_f32(ctx: Ctx, v: Var) -> Var:
    return v if v.type == float32 else ctx.op("cast", v, type=float32)


def _result(t: Any, comps: list[Var]) -> Value:
    return comps[0] if len(comps) == 1 else Composite(t, tuple(comps))


def _cast_all(ctx: Ctx, comps: list[Var], t: Any) -> list[Var]:
    scalar_t = t.dtype if isinstance(t, VectorType) else t
    return [c if c.type == scalar_t else ctx.op("cast", c, type=scalar_t) for c in comps]


_TYPED = {"f": float32, "v": vec3f, "i": int32}


def _lookup(ctx: Ctx, name: str, vid: Value, i: Value, j: Value, k: Value, dtype: Any) -> Value:
    lay, t = _layout(ctx, name, dtype)
    p = volume_pointer(ctx, name, vid)
    return _result(t, lookup(ctx, p, lay, [int_arg(ctx, c) for c in (i, j, k)]))


def _sample(ctx: Ctx, name: str, vid: Value, uvw: Value, mode: Value, dtype: Any) -> Value:
    lay, t = _layout(ctx, name, dtype)
    m = sampling_mode(ctx, name, mode)
    if lay.scalar[0] in "iu" and m != _CLOSEST:
        raise ctx.error(f"wp.{name}(): integer volumes are sampled with wp.Volume.CLOSEST")
    values, _ = sample(ctx, volume_pointer(ctx, name, vid), lay, index_coords(ctx, name, uvw), m)
    return _result(t, _cast_all(ctx, values, t))


def _sample_grad(ctx: Ctx, name: str, vid: Value, uvw: Value, mode: Value, grad: Value,
                 dtype: Any) -> OutArgs:  # fmt: skip
    lay, t = _layout(ctx, name, dtype)
    if lay.scalar[0] != "f":
        raise ctx.error(f"wp.{name}(): gradients of volumes of floats only, got {dtype!r}")
    values, grads = sample(ctx, volume_pointer(ctx, name, vid), lay, index_coords(ctx, name, uvw),
                           sampling_mode(ctx, name, mode), want_grad=True)  # fmt: skip
    scalar_t = t.dtype if isinstance(t, VectorType) else t
    if lay.channels == 1:
        gt: Any = VectorType(3, scalar_t)
        comps = _cast_all(ctx, [g[0] for g in grads], scalar_t)
    else:  # one row per value component: d value[c] / d uvw
        gt = MatrixType(lay.channels, 3, scalar_t)
        comps = _cast_all(ctx, [grads[a][c] for c in range(lay.channels) for a in range(3)], scalar_t)
    given = getattr(grad, "type", None)
    if given != gt:
        raise ctx.error(f"Incompatible gradient type, expected {gt!r}, got "
                        f"{given if given is not None else describe(grad)!r}")  # fmt: skip
    return OutArgs(_result(t, _cast_all(ctx, values, t)), ((3, Composite(gt, tuple(comps))),))


def _store(ctx: Ctx, name: str, vid: Value, i: Value, j: Value, k: Value, value: Value,
           dtype: Any) -> None:  # fmt: skip
    lay, t = _layout(ctx, name, dtype)
    p = volume_pointer(ctx, name, vid)
    ijk = [int_arg(ctx, c) for c in (i, j, k)]
    offset, is_leaf = if_values(ctx, _is_type(ctx, p, lay), lambda: list(value_offset(ctx, p, lay, ijk)),
                                lambda: [i64(ctx, -1), ctx.const(0, int32)])  # fmt: skip
    comps = list(value.comps) if isinstance(value, Composite) else [scalar(ctx, value, t)]
    if len(comps) != lay.channels:
        raise ctx.error(f"wp.{name}(): a {t!r} volume stores {t!r} values, got {describe(value)}")
    bits_type, float_type = _COMPONENT[lay.scalar]
    target = float_type or bits_type
    words = [ctx.op("bitcast", c, type=bits_type) if float_type is not None else c
             for c in _cast_all(ctx, comps, target)]  # fmt: skip
    # only voxels of existing leaves are stored (tiles and the background are shared values)
    at = ctx.op("select", ctx.op("ne", is_leaf, ctx.const(0, int32)), offset, i64(ctx, -1))
    def write() -> list[Var]:
        for c, word in enumerate(words):
            ctx.b.effect("store", (p, ctx.op("add", at, i64(ctx, c * bits_type.size)), word), ctx.loc)
        return []

    if_values(ctx, ctx.op("ge", at, i64(ctx, 0)), write, lambda: [])


# -- registrations: Warp's names and signatures ------------------------------------------------

_ANY_SIG = "dtype: Any"


def _register_typed() -> None:
    for suffix, t in _TYPED.items():
        tn = repr(t)

        @builtin(f"volume_lookup_{suffix}", f"the {tn} value of voxel (i, j, k) of a {tn} volume "
                 "(the background where no tile or leaf holds it)", differentiable=False,
                 signatures=f"(id: uint64, i: Int, j: Int, k: Int) -> {tn}", group=_GROUP)
        def lookup_typed(ctx: Ctx, vid: Value, i: Value, j: Value, k: Value, _t: Any = t,
                         _n: str = f"volume_lookup_{suffix}") -> Value:  # fmt: skip
            return _lookup(ctx, _n, vid, i, j, k, _t)

        @builtin(f"volume_store_{suffix}", f"store a {tn} value at voxel (i, j, k) of a {tn} "
                 "volume (voxels of allocated leaves only; others are left as they are)",
                 differentiable=False, signatures=f"(id: uint64, i: Int, j: Int, k: Int, "
                 f"value: {tn}) -> None", group=_GROUP)  # fmt: skip
        def store_typed(ctx: Ctx, vid: Value, i: Value, j: Value, k: Value, value: Value,
                        _t: Any = t, _n: str = f"volume_store_{suffix}") -> None:  # fmt: skip
            _store(ctx, _n, vid, i, j, k, value, _t)

    for suffix, t in (("f", float32), ("v", vec3f)):
        tn = repr(t)

        @builtin(f"volume_sample_{suffix}", f"a {tn} volume sampled at index-space uvw "
                 "(wp.Volume.CLOSEST or LINEAR); differentiable in uvw",
                 signatures=f"(id: uint64, uvw: vec3f, sampling_mode: Int) -> {tn}", group=_GROUP)
        def sample_typed(ctx: Ctx, vid: Value, uvw: Value, sampling_mode: Value, _t: Any = t,
                         _n: str = f"volume_sample_{suffix}") -> Value:  # fmt: skip
            return _sample(ctx, _n, vid, uvw, sampling_mode, _t)


_register_typed()


@builtin("volume_sample_i", "an int32 volume's value at the voxel nearest index-space uvw",
         differentiable=False, signatures="(id: uint64, uvw: vec3f) -> int32", group=_GROUP)
def volume_sample_i(ctx: Ctx, vid: Value, uvw: Value) -> Value:
    return _sample(ctx, "volume_sample_i", vid, uvw, Literal(_CLOSEST), int32)


@builtin("volume_lookup", "the value of voxel (i, j, k) of a volume of values of type dtype",
         differentiable=False, signatures=f"(id: uint64, i: Int, j: Int, k: Int, {_ANY_SIG}) -> Any",
         group=_GROUP)
def volume_lookup(ctx: Ctx, vid: Value, i: Value, j: Value, k: Value, dtype: Any = float32) -> Value:
    return _lookup(ctx, "volume_lookup", vid, i, j, k, dtype)


@builtin("volume_sample", "a volume of dtype values sampled at index-space uvw (CLOSEST or LINEAR)",
         signatures=f"(id: uint64, uvw: vec3f, sampling_mode: Int, {_ANY_SIG}) -> Any", group=_GROUP)
def volume_sample(ctx: Ctx, vid: Value, uvw: Value, sampling_mode: Value,
                  dtype: Any = float32) -> Value:  # fmt: skip
    return _sample(ctx, "volume_sample", vid, uvw, sampling_mode, dtype)


@builtin("volume_sample_grad_f", "a float volume sampled at index-space uvw, and its gradient "
         "with respect to uvw written to grad (zero for CLOSEST)",
         signatures="(id: uint64, uvw: vec3f, sampling_mode: Int, grad: vec3f) -> float32",
         group=_GROUP)
def volume_sample_grad_f(ctx: Ctx, vid: Value, uvw: Value, sampling_mode: Value,
                         grad: Value) -> OutArgs:  # fmt: skip
    return _sample_grad(ctx, "volume_sample_grad_f", vid, uvw, sampling_mode, grad, float32)


@builtin("volume_sample_grad", "a volume of scalar dtype values sampled at uvw, and its "
         "gradient with respect to uvw written to grad",
         signatures=f"(id: uint64, uvw: vec3f, sampling_mode: Int, grad: Any, {_ANY_SIG}) -> Any",
         group=_GROUP)
def volume_sample_grad(ctx: Ctx, vid: Value, uvw: Value, sampling_mode: Value, grad: Value,
                       dtype: Any = float32) -> OutArgs:  # fmt: skip
    return _sample_grad(ctx, "volume_sample_grad", vid, uvw, sampling_mode, grad, dtype)


@builtin("volume_store", "store value at voxel (i, j, k) of a volume of its type (allocated "
         "leaves only)", differentiable=False,
         signatures="(id: uint64, i: Int, j: Int, k: Int, value: Any) -> None", group=_GROUP)
def volume_store(ctx: Ctx, vid: Value, i: Value, j: Value, k: Value, value: Value) -> None:
    t = value.type if isinstance(value, Composite) else getattr(value, "type", float32)
    _store(ctx, "volume_store", vid, i, j, k, value, t)


def _map(ctx: Ctx, name: str, vid: Value, xyz: Value, inverse: bool, translate: bool) -> Value:
    p = volume_pointer(ctx, name, vid)
    v = index_coords(ctx, name, xyz)
    base = L.GRID_OFF["map"] + L.MAP_OFF["invmatf" if inverse else "matf"]

    def entry(at: int) -> Var:
        return ctx.op("bitcast", ctx.op("load", p, i64(ctx, at), type=int32), type=float32)

    shift = [entry(L.GRID_OFF["map"] + L.MAP_OFF["vecf"] + 4 * a) for a in range(3)]
    if inverse and translate:
        v = [ctx.op("sub", c, s) for c, s in zip(v, shift, strict=True)]
    out = []
    for r in range(3):
        acc = ctx.op("mul", entry(base + 4 * (3 * r)), v[0])
        for c in (1, 2):
            acc = ctx.op("add", acc, ctx.op("mul", entry(base + 4 * (3 * r + c)), v[c]))
        out.append(ctx.op("add", acc, shift[r]) if translate and not inverse else acc)
    return Composite(vec3f, tuple(out))


for _name, _inverse, _translate, _doc in (
    ("volume_index_to_world", False, True, "index-space uvw in world space (the grid's map)"),
    ("volume_world_to_index", True, True, "world-space xyz in index space (the inverse map)"),
    ("volume_index_to_world_dir", False, False, "an index-space direction in world space"),
    ("volume_world_to_index_dir", True, False, "a world-space direction in index space"),
):
    def _transform(ctx: Ctx, vid: Value, xyz: Value, _n: str = _name, _i: bool = _inverse,
                   _t: bool = _translate) -> Value:  # fmt: skip
        return _map(ctx, _n, vid, xyz, _i, _t)

    builtin(_name, _doc, signatures="(id: uint64, xyz: vec3f) -> vec3f", group=_GROUP)(_transform)
