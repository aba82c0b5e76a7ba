"""The closed set of scalar primitives, each with its type rule and its derivative rules (the
entry's form: ir/prim_entry.py)."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..types import FLOAT_TYPES, ScalarType, bool_, int32, int64, ptr
from . import hostops
from .nodes import Op, Var
from .prim_entry import (
    VJP,
    Effect,
    Emit,
    MemoryRule,
    Prim,
)
from .thread_rules import RULES as _THREADS


def _same(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    if any(t != ts[0] for t in ts):
        raise TypeError(f"operand types differ: {', '.join(map(str, ts))}")
    return ts[0]


def _float_same(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    t = _same(ts, r)
    if t not in FLOAT_TYPES:
        raise TypeError(f"needs a float operand, got {t}")
    return t


def _num_same(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    t = _same(ts, r)
    if t.kind not in "fiu":
        raise TypeError(f"needs a numeric operand, got {t}")
    return t


def _int_same(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    t = _same(ts, r)
    if t.kind not in "iub":
        raise TypeError(f"needs an integer operand, got {t}")
    return t


def _count_bits(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    t = _same(ts, r)
    if t.kind not in "iu":
        raise TypeError(f"needs an integer operand, got {t}")
    return t


def _compare(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    _same(ts, r)
    return bool_


def _select(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    if ts[0] != bool_:
        raise TypeError(f"select condition must be bool, got {ts[0]}")
    return _same(ts[1:], r)


def _given(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    if r is None:
        raise TypeError("result type required")
    return r


def _load(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    if ts != (ptr, int64):
        raise TypeError(f"load takes (ptr, int64), got {ts}")
    return _given(ts, r)


def _store(ts: tuple[ScalarType, ...], _: ScalarType | None) -> None:
    if ts[:2] != (ptr, int64):
        raise TypeError(f"store takes (ptr, int64, value), got {ts}")
    return None


def _atomic(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    if ts[:2] != (ptr, int64):
        raise TypeError(f"atomic takes (ptr, int64, value), got {ts}")
    return ts[2]


def _atomic_int(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    t = _atomic(ts, r)
    if t.kind not in "iu":
        raise TypeError(f"bitwise atomics need an integer value, got {t}")
    return t


def _cas(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    if ts[:2] != (ptr, int64) or ts[2] != ts[3]:
        raise TypeError(f"atomic_cas takes (ptr, int64, compare, value), got {ts}")
    return ts[2]


def _bitcast(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    t = _given(ts, r)
    if t.kind not in "fiu" or ts[0].kind not in "fiu" or t.bits != ts[0].bits:
        raise TypeError(f"bitcast needs numeric types of one size, got {ts[0]} to {t}")
    return t


class PrintFormat(str):
    """A print op's attr: its C format, and the format of the line the adjoint of an explicit
    adjoint launch prints of the printed values' adjoints, in the same order (as Warp's
    adjoint of wp.print; pipeline.printing_kernel); None where nothing is printed there
    (wp.printf, expect_*)."""

    adjoint: str | None

    def __new__(cls, text: str, adjoint: str | None = None) -> PrintFormat:
        self = super().__new__(cls, text)
        self.adjoint = adjoint
        return self


def _print(ts: tuple[ScalarType, ...], _: ScalarType | None) -> None:
    if not ts or ts[0] != bool_ or any(t.kind == "p" for t in ts[1:]):
        raise TypeError(f"print takes (bool condition, values...), got {ts}")
    return None


def _gep(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    if ts != (ptr, int64):
        raise TypeError(f"ptr_add takes (ptr, int64), got {ts}")
    return ptr


def _check(ts: tuple[ScalarType, ...], _: ScalarType | None) -> None:
    if ts != (int64, int64):
        raise TypeError(f"check_bounds takes (int64, int64), got {ts}")
    return None


def _local(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    if ts:
        raise TypeError(f"local takes no operands, got {ts}")
    return ptr


def _tid(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    return int32


def _permute(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    if ts[0] != ptr or ts[1] != int64:
        raise TypeError(f"permute takes (ptr, int64), got {ts}")
    return int32


_UNARY_FLOAT = (
    "sqrt", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "exp", "exp2", "log", "log2", "log10", "floor", "ceil", "round", "rint", "trunc", "erf",
    "erfc",
)

# -- reverse-mode rules ----------------------------------------------------------------------
# x, y: the primal operands; r: the primal result; g: the adjoint of the result.


def _xyr(e: Emit, op: Op) -> tuple[Var, Var | None, Var]:
    assert op.result is not None
    y = e.primal(op.args[1]) if len(op.args) > 1 else None
    return e.primal(op.args[0]), y, e.primal(op.result)


def _c(e: Emit, v: float, like: Var) -> Var:
    return e.const(v, like.type)


def _scaled(factor: Callable[[Emit, Var, Var], Var]) -> VJP:
    """A unary rule g * f'(x), with f'(x) computed from the primal operand x and result r."""
    def rule(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
        x, _, r = _xyr(e, op)
        return (e.op("mul", g, factor(e, x, r)),)
    return rule


def _inv_scaled(denominator: Callable[[Emit, Var, Var], Var]) -> VJP:
    """A unary rule g / d(x, r)."""
    def rule(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
        x, _, r = _xyr(e, op)
        return (e.op("div", g, denominator(e, x, r)),)
    return rule


def _one_minus_sq(e: Emit, v: Var) -> Var:
    return e.op("sub", _c(e, 1.0, v), e.op("mul", v, v))


def _zero_where(cond: Callable[[Emit, Var, Var, Var], Var], rule: VJP) -> VJP:
    """rule, except a zero gradient where cond(x, r, g) holds: the convention at a special
    point (docs/gradient-conventions.md). A select, so the discarded inf/NaN never leaks."""
    def guarded(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
        x, _, r = _xyr(e, op)
        (gx,) = rule(e, op, g)
        assert gx is not None
        return (e.op("select", cond(e, x, r, g), _c(e, 0.0, gx), gx),)
    return guarded


def _not_positive(v: Var, e: Emit) -> Var:
    """v <= 0 or NaN (an unordered compare would be shorter, but the IR has ordered ones)."""
    return e.op("not", e.op("gt", v, _c(e, 0.0, v)))


def _zero_adjoint(e: Emit, x: Var, r: Var, g: Var) -> Var:
    return e.op("eq", g, _c(e, 0.0, g))


def _zero_grad(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    """Piecewise-constant functions (floor, round, ...): derivative zero almost everywhere."""
    return (None,)


_UNARY_VJP: dict[str, VJP] = {
    # sqrt: 0 where the result is 0 (or NaN), so |0| and normalize(0) have finite gradients
    "sqrt": _zero_where(lambda e, x, r, g: _not_positive(r, e),
                        _inv_scaled(lambda e, x, r: e.op("add", r, r))),
    "cbrt": _zero_where(lambda e, x, r, g: e.op("eq", r, _c(e, 0.0, r)),
                        _inv_scaled(lambda e, x, r: e.op("mul", _c(e, 3.0, r), e.op("mul", r, r)))),
    "sin": _scaled(lambda e, x, r: e.op("cos", x)),
    "cos": _scaled(lambda e, x, r: e.op("neg", e.op("sin", x))),
    "tan": _scaled(lambda e, x, r: e.op("add", _c(e, 1.0, r), e.op("mul", r, r))),
    # asin/acos: 0 at |x| >= 1, where the slope is infinite (the builtins clamp x to [-1, 1])
    "asin": _zero_where(lambda e, x, r, g: _not_positive(_one_minus_sq(e, x), e),
                        _inv_scaled(lambda e, x, r: e.op("sqrt", _one_minus_sq(e, x)))),
    "acos": _zero_where(lambda e, x, r, g: _not_positive(_one_minus_sq(e, x), e),
                        _inv_scaled(lambda e, x, r: e.op("neg", e.op("sqrt", _one_minus_sq(e, x))))),
    "atan": _inv_scaled(lambda e, x, r: e.op("add", _c(e, 1.0, x), e.op("mul", x, x))),
    "sinh": _scaled(lambda e, x, r: e.op("cosh", x)),
    "cosh": _scaled(lambda e, x, r: e.op("sinh", x)),
    "tanh": _scaled(lambda e, x, r: _one_minus_sq(e, r)),
    "exp": _scaled(lambda e, x, r: r),
    "exp2": _scaled(lambda e, x, r: e.op("mul", r, _c(e, math.log(2.0), r))),
    # logs: a pole at 0 like 1/x, but a zero adjoint gives 0, not 0/0 (where(x > 0, log(x), 0))
    "log": _zero_where(_zero_adjoint, _inv_scaled(lambda e, x, r: x)),
    "log2": _zero_where(_zero_adjoint,
                        _inv_scaled(lambda e, x, r: e.op("mul", x, _c(e, math.log(2.0), x)))),
    "log10": _zero_where(_zero_adjoint,
                         _inv_scaled(lambda e, x, r: e.op("mul", x, _c(e, math.log(10.0), x)))),
    "erf": _scaled(lambda e, x, r: e.op("mul", _c(e, 2.0 / math.sqrt(math.pi), x),
                                        e.op("exp", e.op("neg", e.op("mul", x, x))))),
    "erfc": _scaled(lambda e, x, r: e.op("mul", _c(e, -2.0 / math.sqrt(math.pi), x),
                                         e.op("exp", e.op("neg", e.op("mul", x, x))))),
    **{n: _zero_grad for n in ("floor", "ceil", "round", "rint", "trunc")},
}


def _neg_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    return (e.op("neg", g),)


def _abs_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    x = e.primal(op.args[0])
    return (e.op("select", e.op("lt", x, _c(e, 0.0, x)), e.op("neg", g), g),)


def _add_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    return (g, g)


def _sub_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    return (g, e.op("neg", g))


def _mul_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    x, y, _ = _xyr(e, op)
    assert y is not None
    return (e.op("mul", g, y), e.op("mul", g, x))


def _div_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    _, y, r = _xyr(e, op)
    assert y is not None
    gx = e.op("div", g, y)
    return (gx, e.op("neg", e.op("mul", gx, r)))


def _mod_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    """fmod(x, y) = x - trunc(x / y) * y."""
    x, y, _ = _xyr(e, op)
    assert y is not None
    return (g, e.op("neg", e.op("mul", g, e.op("trunc", e.op("div", x, y)))))


def _pick(compare: str) -> VJP:
    """min/max: the gradient goes to the operand that was chosen (the first one on ties; the
    other one where one is NaN, as minnum/maxnum then give the other)."""
    def rule(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
        x, y, _ = _xyr(e, op)
        assert y is not None
        first = e.op(compare, x, y)
        if x.type.is_float:
            first = e.op("or", first, e.op("isnan", y))
        zero = _c(e, 0.0, g)
        return (e.op("select", first, g, zero), e.op("select", first, zero, g))
    return rule


def _pow_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    """d/dx = y x^(y-1), taken as 0 at x = 0 for 0 <= y < 1 (the slope there is +inf, or
    0 * inf), where it is NaN (negative x, fractional y) and for a zero adjoint; d/dy = x^y log x,
    taken as 0 where x <= 0 (log undefined). See docs/gradient-conventions.md."""
    x, y, r = _xyr(e, op)
    assert y is not None
    one, zero = _c(e, 1.0, x), _c(e, 0.0, x)
    dx = e.op("mul", y, e.op("pow", x, e.op("sub", y, one)))
    flat = e.op("and", e.op("eq", x, zero), e.op("and", e.op("ge", y, zero), e.op("lt", y, one)))
    skip = e.op("or", e.op("or", flat, e.op("isnan", dx)), e.op("eq", g, zero))
    gx = e.op("select", skip, zero, e.op("mul", g, dx))
    positive = e.op("gt", x, zero)
    safe_x = e.op("select", positive, x, one)
    gy = e.op("select", positive, e.op("mul", g, e.op("mul", r, e.op("log", safe_x))), zero)
    return (gx, gy)


def _atan2_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    """atan2(y, x): d/dy = x / (x² + y²), d/dx = -y / (x² + y²); 0 at the origin."""
    y, x, _ = _xyr(e, op)
    assert x is not None
    d = e.op("add", e.op("mul", x, x), e.op("mul", y, y))
    zero = _c(e, 0.0, x)
    at_origin = e.op("eq", d, zero)
    scale = e.op("select", at_origin, zero, e.op("div", g, e.op("select", at_origin,
                                                                 _c(e, 1.0, x), d)))
    return (e.op("mul", scale, x), e.op("neg", e.op("mul", scale, y)))


def _copysign_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    """copysign(x, y) = ±x: d/dx is +1 where x and y carry the same sign bit, else -1."""
    x, y, _ = _xyr(e, op)
    assert y is not None
    one = _c(e, 1.0, x)
    flip = e.op("mul", e.op("copysign", one, x), e.op("copysign", one, y))
    return (e.op("mul", g, flip), None)


def _select_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    c = e.primal(op.args[0])
    zero = _c(e, 0.0, g)
    return (None, e.op("select", c, g, zero), e.op("select", c, zero, g))


#: attr of a `cast` to ptr whose memory has no gradient: reverse mode reads and adds nothing there
NO_GRADIENT = "no_gradient"
#: attr of a `cast` to ptr that addresses a host object's own memory (a hash grid's descriptor
#: and the arrays it points at): kernels only read it, and no array argument shares it
PRIVATE = "private"


def _cast_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    """Float-to-float casts pass the gradient back in the source precision; ints carry none."""
    src = op.args[0].type
    return (e.op("cast", g, type=src) if src.is_float else None,)


def _select_jvp(e: Emit, op: Op, ts: tuple[Var | None, ...]) -> Var | None:
    _, t, f = ts
    if t is None and f is None:
        return None
    assert op.result is not None
    zero = e.const(0.0, op.result.type)
    return e.op("select", e.primal(op.args[0]), t or zero, f or zero)


def _cast_jvp(e: Emit, op: Op, ts: tuple[Var | None, ...]) -> Var | None:
    """The tangent converted like the value (an integer source carries none)."""
    assert op.result is not None
    t = ts[0]
    return e.op("cast", t, type=op.result.type) if t is not None and t.type.is_float else None


# Thread-local memory (tiles, docs/design.md "Tiles"): a `local` buffer holds the data in its
# first half and the data's adjoint in its second; lload/lstore carry the half's size in
# `attr`, so their rules find the adjoint slot at offset + attr with no table of buffers.


def _shadow(e: Emit, op: Op) -> Var:
    return e.op("ptr_add", e.primal(op.args[0]), e.const(int(op.attr), int64))


def _lload_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    """A read passes its adjoint into the adjoint slot (as a load adds into a gradient)."""
    e.op("ladd", _shadow(e, op), e.primal(op.args[1]), g)
    return (None, None)


def _lstore_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    """A write takes (reads and zeroes) the slot's adjoint: the value written before passes no
    gradient through this element. g is unused (lstore has no result)."""
    t = op.args[2].type
    return (None, None, e.op("ltake", _shadow(e, op), e.primal(op.args[1]), type=t))


def _bxchg_vjp(e: Emit, op: Op, g: Var) -> tuple[Var | None, ...]:
    """The records' adjoints go back to the lanes that sent them (summed over the block's
    threads); the operands carry none."""
    e.effect("bxsum", *(e.primal(a) for a in op.args), attr=op.attr)
    return (None,) * 5


def _local_jvp(e: Emit, op: Op, ts: tuple[Var | None, ...]) -> Var | None:
    raise TypeError("forward-mode differentiation through tiles (thread-local memory) is not "
                    "supported; use reverse mode (wp.Tape)")


def _lstore_type(ts: tuple[ScalarType, ...], _: ScalarType | None) -> None:
    if ts[:2] != (ptr, int64):
        raise TypeError(f"lstore takes (ptr, int64, value), got {ts}")
    return None


def _ladd_type(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    if ts[:2] != (ptr, int64):
        raise TypeError(f"ladd takes (ptr, int64, value), got {ts}")
    return ts[2]


_LOCAL_UNAVAILABLE = hostops.Unavailable("reads or writes a kernel thread's tile memory")


def _bxchg_type(ts: tuple[ScalarType, ...], _: ScalarType | None) -> None:
    if ts != (ptr, int64, ptr, int64, int32):
        raise TypeError(f"bxchg takes (ptr, int64, ptr, int64, int32), got {ts}")
    return None


def _lgemm_type(ts: tuple[ScalarType, ...], _: ScalarType | None) -> None:
    if ts[:3] != (ptr, ptr, ptr) or ts[3] != ts[4] or ts[3] not in FLOAT_TYPES:
        raise TypeError(f"lgemm takes (ptr, ptr, ptr, alpha, beta) of one float type, got {ts}")
    return None

_N = Effect.NONE
_RMW = Effect.READ | Effect.WRITE | Effect.ATOMIC
_M = MemoryRule

_TABLE: list[Prim] = [
    Prim("const", 0, _given, _N, host=hostops.CONST,
         host_threads=_THREADS["const"], doc="a constant; attr is its Python value"),
    Prim("arg", 0, _given, Effect.PARAM, host=hostops.THREAD,
         doc="a kernel parameter leaf; attr is its byte offset in the args"),
    Prim("tid", 0, _tid, Effect.THREAD, host=hostops.THREAD,
         doc="this thread's index along launch dimension attr"),
    Prim("neg", 1, _num_same, _N, vjp=_neg_vjp, host=hostops.NEG, host_threads=_THREADS["neg"]),
    Prim("abs", 1, _num_same, _N, vjp=_abs_vjp, host=hostops.ABS, host_threads=_THREADS["abs"]),
    *(Prim(n, 1, _float_same, _N, vjp=_UNARY_VJP[n], host=hostops.UNARY_FLOAT[n])
      for n in _UNARY_FLOAT),
    Prim("add", 2, _num_same, _N, vjp=_add_vjp, host=hostops.ARITH["add"],
         host_threads=_THREADS["add"]),
    Prim("sub", 2, _num_same, _N, vjp=_sub_vjp, host=hostops.ARITH["sub"],
         host_threads=_THREADS["sub"]),
    Prim("mul", 2, _num_same, _N, vjp=_mul_vjp, host=hostops.ARITH["mul"],
         host_threads=_THREADS["mul"]),
    Prim("div", 2, _num_same, _N, vjp=_div_vjp, host=hostops.ARITH["div"],
         host_threads=_THREADS["div"],
         doc="float division, or C-style truncating integer division"),
    Prim("mod", 2, _num_same, _N, vjp=_mod_vjp, host=hostops.ARITH["mod"],
         host_threads=_THREADS["mod"],
         doc="C-style remainder (sign of the dividend)"),
    Prim("min", 2, _num_same, _N, vjp=_pick("le"), host=hostops.ARITH["min"],
         host_threads=_THREADS["min"]),
    Prim("max", 2, _num_same, _N, vjp=_pick("ge"), host=hostops.ARITH["max"],
         host_threads=_THREADS["max"]),
    Prim("pow", 2, _float_same, _N, vjp=_pow_vjp, host=hostops.ARITH["pow"]),
    Prim("atan2", 2, _float_same, _N, vjp=_atan2_vjp, host=hostops.ARITH["atan2"]),
    Prim("copysign", 2, _float_same, _N, vjp=_copysign_vjp, host=hostops.ARITH["copysign"],
         doc="the magnitude of the first operand with the sign bit of the second"),
    Prim("popcount", 1, _count_bits, _N, host=hostops.POPCOUNT,
         host_threads=_THREADS["popcount"],
         doc="the number of set bits (same integer type)"),
    *(Prim(n, 2, _compare, _N, host=hostops.COMPARE[n], host_threads=_THREADS[n])
      for n in ("eq", "ne", "lt", "le", "gt", "ge")),
    *(Prim(n, 2, _int_same, _N, host=hostops.BITWISE[n],
          host_threads=_THREADS[n]) for n in ("and", "or", "xor")),
    Prim("not", 1, _int_same, _N, host=hostops.NOT, host_threads=_THREADS["not"],
         doc="logical not for bool, bitwise not for integers"),
    Prim("shl", 2, _int_same, _N, host=hostops.SHL, host_threads=_THREADS["shl"]),
    Prim("shr", 2, _int_same, _N, host=hostops.SHR, host_threads=_THREADS["shr"]),
    Prim("isnan", 1, lambda ts, r: bool_, _N, host=hostops.ISNAN,
         host_threads=_THREADS["isnan"]),
    Prim("isinf", 1, lambda ts, r: bool_, _N, host=hostops.ISINF,
         host_threads=_THREADS["isinf"]),
    Prim("select", 3, _select, _N, vjp=_select_vjp, jvp=_select_jvp, host=hostops.SELECT,
         host_threads=_THREADS["select"],
         doc="select(cond, if_true, if_false)"),
    Prim("cast", 1, _given, _N, vjp=_cast_vjp, jvp=_cast_jvp, host=hostops.CAST,
         host_threads=_THREADS["cast"],
         doc="numeric conversion to the result type; an integer-to-pointer cast with attr "
             "NO_GRADIENT addresses memory that has no gradient (Fabric arrays), one with attr "
             "PRIVATE a host object's own memory (hash grids)"),
    Prim("bitcast", 1, _bitcast, _N, host=hostops.BITCAST, host_threads=_THREADS["bitcast"],
         doc="the same bits read as the result type (no derivative)"),
    Prim("ptr_add", 2, _gep, _N, host=hostops.MEMORY, doc="pointer plus a byte offset"),
    Prim("permute", 2, _permute, _N, host=hostops.MEMORY, permutes=1,
         doc="permute(descriptor, index): entry index of the int32 permutation a host object's "
             "descriptor points at (a hash grid's sorted point ids); -1 where its flag says "
             "there is none (index unread); attr as Prim.permutes says. Pure: no kernel "
             "writes the table"),
    Prim("load", 2, _load, Effect.READ, memory_rule=_M.GATHER, host=hostops.MEMORY,
         doc="load(ptr, byte offset); attr is a constant extra offset"),
    Prim("store", 3, _store, Effect.WRITE, memory_rule=_M.OVERWRITE, host=hostops.MEMORY,
         doc="store(ptr, byte offset, value); attr offset"),
    Prim("atomic_add", 3, _atomic, _RMW | Effect.ACCUMULATE, memory_rule=_M.ACCUMULATE,
         host=hostops.MEMORY, doc="returns the old value"),
    Prim("atomic_min", 3, _atomic, _RMW, memory_rule=_M.PICK, host=hostops.MEMORY,
         replaces_when="le", doc="returns the old value"),
    Prim("atomic_max", 3, _atomic, _RMW, memory_rule=_M.PICK, host=hostops.MEMORY,
         replaces_when="ge", doc="returns the old value"),
    *(Prim(f"atomic_{n}", 3, _atomic_int, _RMW, memory_rule=_M.INTEGER, host=hostops.MEMORY,
           doc="bitwise read-modify-write of an integer; returns the old value")
      for n in ("and", "or", "xor")),
    Prim("atomic_exch", 3, _atomic, _RMW, memory_rule=_M.ORDER, host=hostops.MEMORY,
         doc="stores the value; returns the old value"),
    Prim("atomic_cas", 4, _cas, _RMW, memory_rule=_M.ORDER, host=hostops.MEMORY,
         doc="atomic_cas(ptr, offset, compare, value): stores value where the old value has "
             "compare's bits; returns the old value"),
    Prim("print", 1, _print, Effect.IO, variadic=True, host=hostops.PRINT,
         doc="print(cond, values...): C printf of format attr when cond; floats are passed as "
             "double, bools as the strings True/False; forward kernels only"),
    Prim("check_bounds", 2, _check, Effect.CHECK, host=hostops.MEMORY,
         doc="check_bounds(index, extent): debug mode; attr indexes the kernel's source locations"),
    Prim("local", 0, _local, Effect.LOCAL_WRITE, host=_LOCAL_UNAVAILABLE,
         doc="a zeroed thread-local buffer of 2 * attr bytes (data, then its adjoint), placed "
             "once per entry call; the frontend puts these ops at the top of the kernel"),
    Prim("lload", 2, _load, Effect.LOCAL, vjp=_lload_vjp, jvp=_local_jvp,
         host=_LOCAL_UNAVAILABLE,
         doc="lload(local ptr, byte offset); attr is the buffer's data size (where the "
             "adjoint half starts)"),
    Prim("lstore", 3, _lstore_type, Effect.LOCAL_WRITE, vjp=_lstore_vjp, jvp=_local_jvp,
         host=_LOCAL_UNAVAILABLE, doc="lstore(local ptr, byte offset, value); attr as lload"),
    Prim("ladd", 3, _ladd_type, Effect.LOCAL | Effect.LOCAL_WRITE, host=_LOCAL_UNAVAILABLE,
         doc="adjoint kernels: local memory += value at (ptr, offset); returns the sum"),
    Prim("ltake", 2, _load, Effect.LOCAL | Effect.LOCAL_WRITE, host=_LOCAL_UNAVAILABLE,
         doc="adjoint kernels: the local value at (ptr, offset), then zero it there"),
    Prim("lgemm", 5, _lgemm_type, Effect.LOCAL | Effect.LOCAL_WRITE, host=_LOCAL_UNAVAILABLE,
         doc="lgemm(a, b, c, alpha, beta): c = alpha * a @ b (+ beta * c) on tile buffers, "
             "shapes and views in attr (builtins/tile_gemm.py); forward kernels only: IR that "
             "autodiff sees has the scalar loops instead (ir/builder.DIFFERENTIATED)"),
    Prim("bxchg", 5, _bxchg_type, Effect.LOCAL | Effect.LOCAL_WRITE, vjp=_bxchg_vjp,
         jvp=_local_jvp, host=_LOCAL_UNAVAILABLE, moves_adjoints=True,
         doc="bxchg(send, send offset, recv, recv offset, lane): the threads of a CPU block "
             "(config.enable_cpu_blocks) exchange attr[0] bytes of their tile memory: each "
             "waits for the others and receives all block_dim (attr[1]) records, lane by lane, "
             "or (attr[2] >= 0) lane attr[2]'s only (builtins/tile_block.py); attr[3:]: the "
             "records' float leaves (offset, LLVM type) and the two buffers' adjoint offsets"),
    Prim("bxsum", 5, _bxchg_type, Effect.LOCAL | Effect.LOCAL_WRITE, host=_LOCAL_UNAVAILABLE,
         doc="adjoint kernels: bxchg's reverse (codegen/llvm_blocks.bxsum), its attr"),
    # Adjoint kernels only (made by autodiff, never by the frontend):
    Prim("push", 1, lambda ts, r: None, Effect.STACK, host=hostops.ADJOINT,
         doc="push a value on this thread's adjoint stack (a full stack stops the launch)"),
    Prim("pop", 0, _given, Effect.STACK, host=hostops.ADJOINT, doc="pop the value pushed last"),
    Prim("adj_add", 3, _store, Effect.GRAD | Effect.WRITE | Effect.ACCUMULATE,
         host=hostops.ADJOINT,
         doc="gradient array += value at (ptr, offset) + attr; nothing when ptr is null"),
    Prim("adj_read", 2, _load, Effect.GRAD | Effect.READ, host=hostops.ADJOINT,
         doc="the gradient at (ptr, offset) + attr; 0 when ptr is null"),
    Prim("adj_take", 2, _load, Effect.GRAD | Effect.READ | Effect.WRITE, host=hostops.ADJOINT,
         doc="the gradient at (ptr, offset) + attr, then zero it there; 0 when ptr is null"),
]

PRIMS: dict[str, Prim] = {p.name: p for p in _TABLE}
UNARY_FLOAT_PRIMS = frozenset(_UNARY_FLOAT)
COMPARE_PRIMS = frozenset(("eq", "ne", "lt", "le", "gt", "ge"))


def result_type(
    name: str, operand_types: tuple[ScalarType, ...], given: ScalarType | None = None
) -> ScalarType | None:
    """Apply a primitive's type rule; raises TypeError when the operands do not fit."""
    prim = PRIMS[name]
    n = len(operand_types)
    if n != prim.arity and not (prim.variadic and n > prim.arity):
        raise TypeError(f"{name} takes {prim.arity} operands, got {len(operand_types)}")
    return prim.type_rule(operand_types, given)
