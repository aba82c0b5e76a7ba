"""Euler-angle builtins (`quat_from_euler`, `quat_to_euler`) for any axis sequence.

Axis indices are usually constants (one formula is emitted); as in Warp they may also be run-time
integers, and then the formula picks its components with selects (still only scalar primitives,
so gradients come from autodiff).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir.nodes import Var
from ..types import ScalarType, int32
from .quat import GROUP, Emit, as_quat, as_vec, dense, euler_to_quat, qmul, quat_type, vec3_type
from .registry import builtin
from .values import Composite, Ctx, Literal, Value, describe, scalar

#: an axis index: a constant, or a run-time int32
Axis = int | Var


def const_axis(ctx: Ctx, name: str, v: Any, what: str) -> int | None:
    """A constant Euler axis index in {0, 1, 2}; None for a run-time integer."""
    if isinstance(v, Var) and v.type.is_int:
        return None
    value = v.value if isinstance(v, Literal) else v
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2:
        raise ctx.error(f"wp.{name}(): axis index {what} must be 0, 1 or 2 (an integer), "
                        f"got {describe(v)}")
    return value


def euler_axes(ctx: Ctx, name: str, i: Any, j: Any, k: Any) -> tuple[Axis, Axis, Axis]:
    """The three axis indices: constants (checked: consecutive ones differ) or, where any is
    given at run time, all three as int32 values."""
    consts = [const_axis(ctx, name, v, w) for v, w in ((i, "i"), (j, "j"), (k, "k"))]
    if None not in consts:
        ai, aj, ak = consts
        if ai == aj or aj == ak:
            raise ctx.error(f"wp.{name}(): consecutive axes must differ, got ({ai}, {aj}, {ak})")
        return ai, aj, ak  # type: ignore[return-value]
    return tuple(ctx.const(c, int32) if c is not None else  # type: ignore[return-value]
                 _int32(ctx, v) for c, v in zip(consts, (i, j, k), strict=True))


def _int32(ctx: Ctx, v: Value) -> Var:
    x = scalar(ctx, v)
    return x if x.type == int32 else ctx.op("cast", x, type=int32)


def _pick(e: Emit, items: tuple[Var, ...], index: Axis) -> Var:
    """items[index], index a constant or a run-time int32 (a select chain)."""
    if isinstance(index, int):
        return items[index]
    out = items[0]
    for n in range(1, len(items)):
        out = e.select(e.op("eq", index, e.ctx.const(n, int32)), items[n], out)
    return out


def _axis_quat(e: Emit, axis: Var, angle: Var) -> tuple[Var, ...]:
    """The rotation of angle about the run-time axis (0, 1 or 2)."""
    half = e.mul(angle, e.c(0.5))
    s, zero = e.op("sin", half), e.c(0.0)
    return (*(e.select(e.op("eq", axis, e.ctx.const(n, int32)), s, zero) for n in range(3)),
            e.op("cos", half))


def euler_to_quat_any(e: Emit, ang: tuple[Var, ...], i: Axis, j: Axis, k: Axis
                      ) -> tuple[Var, ...]:
    """qk * qj * qi for constant or run-time axes."""
    if isinstance(i, int) and isinstance(j, int) and isinstance(k, int):
        return euler_to_quat(e, ang, i, j, k)
    qi, qj, qk = (_axis_quat(e, a, _pick(e, ang, a)) for a in (i, j, k))  # type: ignore[arg-type]
    return dense(e, qmul(e, qk, qmul(e, qj, qi)))


def quat_to_euler_comps(e: Emit, q: tuple[Var, ...], i: Axis, j: Axis, k: Axis
                        ) -> tuple[Var, ...]:
    """Bernardes & Viollet's direct method (as scipy's as_euler for extrinsic sequences), without
    wrapping the first and third angles, so they lie in [-2pi, 2pi] as Warp documents."""
    if isinstance(i, int) and isinstance(j, int) and isinstance(k, int):
        proper: Any = i == k
        k = 3 - i - j if proper else k
        sign: Any = e.c(float((i - j) * (j - k) * (k - i) // 2))
    else:
        ctx = e.ctx
        assert isinstance(i, Var) and isinstance(j, Var) and isinstance(k, Var)  # euler_axes
        proper = e.op("eq", i, k)
        k = e.select(proper, e.op("sub", e.op("sub", ctx.const(3, int32), i), j), k)
        prod = e.op("mul", e.op("mul", e.op("sub", i, j), e.op("sub", j, k)), e.op("sub", k, i))
        sign = ctx.op("cast", e.op("div", prod, ctx.const(2, int32)), type=e.dt)
    w, qk = q[3], e.mul(_pick(e, q[:3], k), sign)
    qi, qj = _pick(e, q[:3], i), _pick(e, q[:3], j)
    a, b, c, d = _choose(e, proper, lambda: (w, qi, qj, qk),
                         lambda: (e.sub(w, qj), e.add(qi, qk), e.add(qj, w), e.sub(qk, qi)))
    hyp_cd = e.safe_sqrt(e.add(e.mul(c, c), e.mul(d, d)))
    hyp_ab = e.safe_sqrt(e.add(e.mul(a, a), e.mul(b, b)))
    second = e.mul(e.c(2.0), e.op("atan2", hyp_cd, hyp_ab))
    half_sum, half_diff = e.op("atan2", b, a), e.op("atan2", d, c)
    first, third = e.sub(half_sum, half_diff), e.add(half_sum, half_diff)
    second, third = _choose(e, proper, lambda: (second, third),
                            lambda: (e.sub(second, e.c(1.5707963267948966)), e.mul(third, sign)))
    return _place(e, (first, second, third), (i, j, k))


def _choose(e: Emit, proper: Any, if_proper: Callable[[], tuple[Var, ...]],
            otherwise: Callable[[], tuple[Var, ...]]) -> tuple[Var, ...]:
    """One of two tuples: by a constant bool (only that one is built), or per component by a
    run-time one."""
    if isinstance(proper, bool):
        return if_proper() if proper else otherwise()
    return tuple(e.select(proper, a, b) for a, b in zip(if_proper(), otherwise(), strict=True))


def _place(e: Emit, values: tuple[Var, Var, Var], axes: tuple[Axis, Axis, Axis]
           ) -> tuple[Var, ...]:
    """The vector with values[n] at component axes[n] (the axes a permutation of 0, 1, 2)."""
    if all(isinstance(a, int) for a in axes):
        out = [values[0]] * 3
        for v, a in zip(values, axes, strict=True):
            out[a] = v  # type: ignore[index]
        return tuple(out)
    comps = []
    for n in range(3):
        c = e.ctx.const(n, int32)
        comps.append(e.select(e.op("eq", axes[0], c), values[0],  # type: ignore[arg-type]
                              e.select(e.op("eq", axes[1], c), values[1], values[2])))  # type: ignore[arg-type]
    return tuple(comps)


@builtin("quat_from_euler", "the rotation of Euler angles e (indexed by axis) about the fixed "
         "axes i, j, k in that order (qk * qj * qi); i == k uses e[i] twice",
         signatures="(e: Vector3, i: Int, j: Int, k: Int) -> Quat", group=GROUP)
def quat_from_euler(ctx: Ctx, e: Value, i: Any, j: Any, k: Any) -> Value:
    v = as_vec(ctx, "quat_from_euler", e)
    axes = euler_axes(ctx, "quat_from_euler", i, j, k)
    dt: ScalarType = v.type.dtype
    return Composite(quat_type(dt), euler_to_quat_any(Emit(ctx, dt), v.comps, *axes))


@builtin("quat_to_euler", "Euler angles of q about the fixed axes i, j, k (the convention of "
         "quat_from_euler); first and third angles in [-2pi, 2pi]",
         signatures="(q: Quat, i: Int, j: Int, k: Int) -> Vector3", group=GROUP)
def quat_to_euler(ctx: Ctx, q: Value, i: Any, j: Any, k: Any) -> Value:
    qq = as_quat(ctx, "quat_to_euler", q)
    axes = euler_axes(ctx, "quat_to_euler", i, j, k)
    e = Emit(ctx, qq.type.dtype)
    return Composite(vec3_type(e.dt), quat_to_euler_comps(e, qq.comps, *axes))
