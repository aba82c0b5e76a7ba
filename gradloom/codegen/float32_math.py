"""LLVM IR of gradloom's own float32 `log` and `exp` (ir/float32_math.py: the algorithm, and
the numpy evaluation this follows operation for operation), for one value or a vector of W
lanes: straight-line code that LLVM vectorises, so the SIMD thread loop computes W lanes at
once instead of calling the C library lane by lane."""

from __future__ import annotations

from collections.abc import Callable

from ..ir.float32_math import (
    EXP_CLAMP,
    EXP_COEFFS,
    INV_LN2,
    LN2,
    LOG_COEFFS,
    ONE_BITS,
    SQRT2_BITS,
    TWO_23,
)
from ..types import float32, float64
from .llvm_types import literal

#: the primitives this module implements
OWN_FLOAT32 = ("log", "exp")


def function_name(base: str, width: int) -> str:
    """The LLVM function computing `base` on float32 (width 0) or <width x float>."""
    return f"gl_{base}f" if not width else f"gl_{base}f_v{width}"


def definition(base: str, width: int) -> str:
    """The definition of function_name(base, width)."""
    body = {"log": _log_body, "exp": _exp_body}[base](_Types(width))
    t = _Types(width)
    return (f"define internal {t.f} @{function_name(base, width)}({t.f} %x) "
            f"nounwind readnone willreturn inlinehint {{\n{body}}}")


class _Types:
    """The type names and constants of one width (0: scalars)."""

    def __init__(self, width: int) -> None:
        self.width = width
        vec: Callable[[str], str] = (lambda s: f"<{width} x {s}>") if width else (lambda s: s)
        self.f, self.d, self.i, self.q, self.b = (vec(s) for s in
                                                  ("float", "double", "i32", "i64", "i1"))

    def const(self, scalar: str, text: str) -> str:
        return f"splat ({scalar} {text})" if self.width else text

    def dbl(self, v: float) -> str:
        return self.const("double", literal(v, float64))

    def flt(self, v: float) -> str:
        return self.const("float", literal(v, float32))

    def int(self, v: int, scalar: str = "i32") -> str:
        return self.const(scalar, str(v))


def _horner(t: _Types, out: str, coeffs: tuple[float, ...], var: str) -> list[str]:
    """%out = ((c0·var + c1)·var + …)·var + 1.0, in double."""
    lines, acc = [], t.dbl(coeffs[0])
    steps = (*coeffs[1:], 1.0)
    for k, c in enumerate(steps):
        name = f"%{out}" if k == len(steps) - 1 else f"%{out}.a{k}"
        lines += [f"%{out}.m{k} = fmul {t.d} {acc}, {var}",
                  f"{name} = fadd {t.d} %{out}.m{k}, {t.dbl(c)}"]
        acc = name
    return lines


def _log_body(t: _Types) -> str:
    f, d, i, b = t.f, t.d, t.i, t.b
    lines = [
        f"%bits0 = bitcast {f} %x to {i}",
        f"%sub = icmp ult {i} %bits0, {t.int(0x00800000)}",
        f"%xs = fmul {f} %x, {t.flt(TWO_23)}",
        f"%x1 = select {b} %sub, {f} %xs, {f} %x",
        f"%bits = bitcast {f} %x1 to {i}",
        f"%eraw = lshr {i} %bits, {t.int(23)}",
        f"%bias = select {b} %sub, {i} {t.int(150)}, {i} {t.int(127)}",
        f"%e0 = sub {i} %eraw, %bias",
        f"%mlow = and {i} %bits, {t.int(0x007FFFFF)}",
        f"%mb0 = or {i} %mlow, {t.int(ONE_BITS)}",
        f"%big = icmp ugt {i} %mb0, {t.int(SQRT2_BITS)}",
        f"%mb1 = sub {i} %mb0, {t.int(0x00800000)}",
        f"%mb = select {b} %big, {i} %mb1, {i} %mb0",
        f"%bigi = zext {b} %big to {i}",
        f"%e = add {i} %e0, %bigi",
        f"%mf = bitcast {i} %mb to {f}",
        f"%m = fpext {f} %mf to {d}",
        f"%num = fsub {d} %m, {t.dbl(1.0)}",
        f"%den = fadd {d} %m, {t.dbl(1.0)}",
        f"%s = fdiv {d} %num, %den",
        f"%s2 = fmul {d} %s, %s",
        *_horner(t, "q", LOG_COEFFS, "%s2"),
        f"%ss = fadd {d} %s, %s",
        f"%lm = fmul {d} %ss, %q",
        f"%ed = sitofp {i} %e to {d}",
        f"%el = fmul {d} %ed, {t.dbl(LN2)}",
        f"%r = fadd {d} %el, %lm",
        f"%rf = fptrunc {d} %r to {f}",
        f"%isinf = fcmp oeq {f} %x, {t.flt(float('inf'))}",
        f"%o1 = select {b} %isinf, {f} %x, {f} %rf",
        f"%iszero = fcmp oeq {f} %x, {t.flt(0.0)}",
        f"%o2 = select {b} %iszero, {f} {t.flt(float('-inf'))}, {f} %o1",
        f"%neg = fcmp olt {f} %x, {t.flt(0.0)}",
        f"%o3 = select {b} %neg, {f} {t.flt(float('nan'))}, {f} %o2",
        f"%nan = fcmp uno {f} %x, %x",
        f"%o4 = select {b} %nan, {f} %x, {f} %o3",
        f"ret {f} %o4",
    ]
    return "".join(f"  {line}\n" for line in lines)


def _exp_body(t: _Types) -> str:
    f, d, b, q = t.f, t.d, t.b, t.q
    rint = _rint(t.width)
    lines = [
        f"%xd = fpext {f} %x to {d}",
        f"%hi = fcmp ogt {d} %xd, {t.dbl(EXP_CLAMP)}",
        f"%x1 = select {b} %hi, {d} {t.dbl(EXP_CLAMP)}, {d} %xd",
        f"%lo = fcmp olt {d} %x1, {t.dbl(-EXP_CLAMP)}",
        f"%x2 = select {b} %lo, {d} {t.dbl(-EXP_CLAMP)}, {d} %x1",
        f"%nan = fcmp uno {f} %x, %x",
        f"%x3 = select {b} %nan, {d} {t.dbl(0.0)}, {d} %x2",
        f"%kx = fmul {d} %x3, {t.dbl(INV_LN2)}",
        f"%k = call {d} @{rint}({d} %kx)",
        f"%kl = fmul {d} %k, {t.dbl(LN2)}",
        f"%r = fsub {d} %x3, %kl",
        *_horner(t, "p", EXP_COEFFS, "%r"),
        f"%ki = fptosi {d} %k to {q}",
        f"%kb = add {q} %ki, {t.int(1023, 'i64')}",
        f"%ks = shl {q} %kb, {t.int(52, 'i64')}",
        f"%scale = bitcast {q} %ks to {d}",
        f"%y = fmul {d} %p, %scale",
        f"%yf = fptrunc {d} %y to {f}",
        f"%o = select {b} %nan, {f} %x, {f} %yf",
        f"ret {f} %o",
    ]
    return "".join(f"  {line}\n" for line in lines)


def declarations(base: str, width: int) -> list[str]:
    """Module lines function_name(base, width) needs: its definition, and the intrinsics it
    calls."""
    lines = [definition(base, width)]
    if base == "exp":
        dt = _Types(width).d
        lines.append(f"declare {dt} @{_rint(width)}({dt})")
    return lines


def _rint(width: int) -> str:
    return f"llvm.rint.v{width}f64" if width else "llvm.rint.f64"
