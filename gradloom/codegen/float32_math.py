"""LLVM IR of gradloom's own float32 `exp`, `log`, `sin` and `cos` (ir/float32_math.py: the
algorithms, constants and table), for one value or a vector of W lanes, so the SIMD thread loop
computes W lanes at once instead of calling the C library lane by lane; the scalar loop and
Python-scope calls (host_module) run the same operations, fused multiply-adds included, so all
three give the same bits. A branch skips the handling of special inputs (zero, subnormal,
negative, inf, NaN, |x| past the reductions' range) when no lane has one."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..ir import float32_math as m
from ..types import ScalarType, float32, float64
from .llvm_types import literal

#: the primitives this module implements
OWN_FLOAT32 = ("exp", "log", "sin", "cos")
_SHIFT = float.fromhex("0x1.8p52")  # adding it rounds to an integer, read from the low bits
_TABLES = {"exp": ("gl_exp_tbl", m.EXP_TABLE)}


def covers(t: ScalarType) -> bool:
    """Whether these functions compute a value of type t: float32, and the 16-bit floats
    through float32; float64 keeps LLVM's intrinsic (the C library)."""
    return t.is_float and t.bits <= 32


def function_name(base: str, width: int) -> str:
    """The LLVM function computing `base` on float32 (width 0) or <width x float>."""
    return f"gl_{base}f" if not width else f"gl_{base}f_v{width}"


def host_module(triple: str, datalayout: str) -> str:
    """A module exporting the scalar functions as `gl_host_<name>f(float) -> float`, for
    Python-scope calls (native.py): the code kernels inline, so the same bits."""
    lines = {f'target triple = "{triple}"', f'target datalayout = "{datalayout}"'}
    wrappers = []
    for base in OWN_FLOAT32:
        lines.update(declarations(base, 0))
        wrappers.append(f"define float @gl_host_{base}f(float %x) nounwind {{\n"
                        f"  %r = call float @{function_name(base, 0)}(float %x)\n"
                        f"  ret float %r\n}}")
    head = sorted(line for line in lines if line.startswith("target"))
    return "\n".join([*head, *sorted(lines - set(head)), *wrappers, ""])


def declarations(base: str, width: int) -> list[str]:
    """Module lines function_name(base, width) needs: its definition, the tables, intrinsics
    and C functions it uses."""
    t = _Types(width)
    body = {"exp": _exp_body, "log": _log_body, "sin": _sin_body, "cos": _cos_body}[base](t)
    lines = [f"define internal {t.f} @{function_name(base, width)}({t.f} %x) "
             f"nounwind willreturn inlinehint {{\nentry:\n{body}}}"]
    for table in {"exp": ("exp",)}.get(base, ()):
        name, values = _TABLES[table]
        items = ", ".join(f"double {literal(float.fromhex(v), float64)}" for v in values)
        lines.append(f"@{name} = internal unnamed_addr constant [{len(values)} x double] "
                     f"[{items}]")
    if width and base == "exp":
        lines.append(f"declare {t.d} @{_gather(width)}(<{width} x ptr>, i32, {t.b}, {t.d})")
    if base in ("sin", "cos"):
        lines.append(f"declare {t.d} @{_intrinsic('rint', width)}({t.d})")
    lines.append(f"declare {t.d} @{_intrinsic('fma', width)}({t.d}, {t.d}, {t.d})")
    if base == "exp":
        lines.append(f"declare {t.f} @{_fabs32(width)}({t.f})")
    if base in ("sin", "cos"):
        lines += [f"declare {t.d} @{_intrinsic('fabs', width)}({t.d})",
                  f"declare float @{base}f(float)"]
    return lines


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


def _fma(t: _Types, out: str, a: str, b: str, c: str) -> str:
    return f"%{out} = call {t.d} @{_intrinsic('fma', t.width)}({t.d} {a}, {t.d} {b}, {t.d} {c})"


def _intrinsic(name: str, width: int) -> str:
    return f"llvm.{name}.v{width}f64" if width else f"llvm.{name}.f64"


def _gather(width: int) -> str:
    return f"llvm.masked.gather.v{width}f64.v{width}p0"


def _lookup(t: _Types, out: str, table: str, index: str) -> list[str]:
    """%out = the table's element `index` (i64, or a vector of them)."""
    name = _TABLES[table][0]
    if not t.width:
        return [f"%{out}.p = getelementptr inbounds [64 x double], ptr @{name}, i64 0, "
                f"i64 {index}", f"%{out} = load double, ptr %{out}.p, align 8"]
    return [f"%{out}.p = getelementptr inbounds double, ptr @{name}, {t.q} {index}",
            f"%{out} = call {t.d} @{_gather(t.width)}(<{t.width} x ptr> %{out}.p, i32 8, "
            f"{t.b} splat (i1 true), {t.d} poison)"]


def _renamed(lines: list[str], prefix: str) -> list[str]:
    """The lines with every value but %x named prefix + name (two copies of one computation)."""
    return [re.sub(r"%(?!x\b)([A-Za-z_][\w.]*)", rf"%{prefix}\1", line) for line in lines]


def _fast_slow(t: _Types, check: list[str], fast: list[str], slow: list[str]) -> list[str]:
    """Branch on %ord (which `check` defines: an i1, or one per lane): when it holds (for every
    lane), the lines of `fast`, which skip the checks of special inputs; otherwise those of
    `slow`. Both end in `ret`, and give the same bits where the input is ordinary."""
    check = list(check)
    if t.width:
        check += [f"%ordbits = bitcast {t.b} %ord to i{t.width}",
                  f"%allord = icmp eq i{t.width} %ordbits, -1"]
    flag = "%allord" if t.width else "%ord"
    return [*check, f"br i1 {flag}, label %fast, label %slow", "fast:",
            *_renamed(fast, "f."), "slow:", *_renamed(slow, "s.")]


def _lines(lines: list[str]) -> str:
    return "".join(line + "\n" if line.endswith(":") else f"  {line}\n" for line in lines)


def _exp_body(t: _Types) -> str:
    f, d, b = t.f, t.d, t.b
    clamp = [
        f"%xd0 = fpext {f} %x to {d}",
        f"%hi = fcmp ogt {d} %xd0, {t.dbl(m.EXP_CLAMP)}",
        f"%x1 = select {b} %hi, {d} {t.dbl(m.EXP_CLAMP)}, {d} %xd0",
        f"%lo = fcmp olt {d} %x1, {t.dbl(-m.EXP_CLAMP)}",
        f"%x2 = select {b} %lo, {d} {t.dbl(-m.EXP_CLAMP)}, {d} %x1",
        f"%nan = fcmp uno {f} %x, %x",
        f"%xd = select {b} %nan, {d} {t.dbl(0.0)}, {d} %x2",
    ]
    slow = [*clamp, *_exp_core(t), f"%o = select {b} %nan, {f} %x, {f} %yf", f"ret {f} %o"]
    if not t.width:  # no branch: LLVM can still vectorise a scalar loop of exp calls
        return _lines(slow)
    fast = [f"%xd = fpext {f} %x to {d}", *_exp_core(t), f"ret {f} %yf"]
    check = [f"%ax = call {f} @{_fabs32(t.width)}({f} %x)",
             f"%ord = fcmp olt {f} %ax, {t.flt(m.EXP_CLAMP)}"]
    return _lines(_fast_slow(t, check, fast, slow))


def _exp_core(t: _Types) -> list[str]:
    """exp of the double %xd (|%xd| <= EXP_CLAMP) to the float %yf."""
    f, d, q = t.f, t.d, t.q
    return [
        _fma(t, "kd", "%xd", t.dbl(m.EXP_N_OVER_LN2), t.dbl(_SHIFT)),
        f"%k = fsub {d} %kd, {t.dbl(_SHIFT)}",
        _fma(t, "r", "%k", t.dbl(-m.EXP_LN2_OVER_N), "%xd"),
        f"%r2 = fmul {d} %r, %r",
        _fma(t, "a", "%r", t.dbl(m.EXP_C3), t.dbl(m.EXP_C2)),
        _fma(t, "c", "%r2", t.dbl(m.EXP_C4), "%a"),
        f"%one = fadd {d} %r, {t.dbl(1.0)}",
        _fma(t, "p", "%r2", "%c", "%one"),
        f"%ki = bitcast {d} %kd to {q}",
        f"%j = and {q} %ki, {t.int(63, 'i64')}",
        *_lookup(t, "tj", "exp", "%j"),
        f"%tb = bitcast {d} %tj to {q}",
        f"%e = lshr {q} %ki, {t.int(6, 'i64')}",
        f"%eb = shl {q} %e, {t.int(52, 'i64')}",
        f"%sb = add {q} %tb, %eb",
        f"%scale = bitcast {q} %sb to {d}",
        f"%y = fmul {d} %p, %scale",
        f"%yf = fptrunc {d} %y to {f}",
    ]


def _fabs32(width: int) -> str:
    return f"llvm.fabs.v{width}f32" if width else "llvm.fabs.f32"


def _log_body(t: _Types) -> str:
    f, i, b = t.f, t.i, t.b
    check = [f"%bits = bitcast {f} %x to {i}",  # positive, normal and finite: ordinary
             f"%u = sub {i} %bits, {t.int(0x00800000)}",
             f"%ord = icmp ult {i} %u, {t.int(0x7F000000)}"]
    fast = [f"%ix = bitcast {f} %x to {i}", *_log_core(t, None), f"ret {f} %rf"]
    slow = [f"%bits0 = bitcast {f} %x to {i}",
            f"%sub = icmp ult {i} %bits0, {t.int(0x00800000)}",  # +0, positive subnormals
            f"%xs = fmul {f} %x, {t.flt(m.TWO_23)}",
            f"%x1 = select {b} %sub, {f} %xs, {f} %x",
            f"%ix = bitcast {f} %x1 to {i}",
            *_log_core(t, "%sub"),
            f"%isinf = fcmp oeq {f} %x, {t.flt(float('inf'))}",
            f"%o1 = select {b} %isinf, {f} %x, {f} %rf",
            f"%iszero = fcmp oeq {f} %x, {t.flt(0.0)}",
            f"%o2 = select {b} %iszero, {f} {t.flt(float('-inf'))}, {f} %o1",
            f"%neg = fcmp olt {f} %x, {t.flt(0.0)}",
            f"%o3 = select {b} %neg, {f} {t.flt(float('nan'))}, {f} %o2",
            f"%isnan = fcmp uno {f} %x, %x",
            f"%o4 = select {b} %isnan, {f} %x, {f} %o3",
            f"ret {f} %o4"]
    return _lines(_fast_slow(t, check, fast, slow))


def _log_core(t: _Types, scaled: str | None) -> list[str]:
    """%rf = log of the positive normal float whose bits are %ix (divided by 2^23 where
    `scaled`, an i1, holds)."""
    f, d, i, b = t.f, t.d, t.i, t.b
    c = m.LOG_C
    lines = [
        f"%tmp = sub {i} %ix, {t.int(m.LOG_OFF)}",
        f"%e0 = ashr {i} %tmp, {t.int(23)}",
        f"%top = and {i} %tmp, {t.int(-0x00800000)}",
        f"%mb = sub {i} %ix, %top",
        f"%mf = bitcast {i} %mb to {f}",
        f"%md = fpext {f} %mf to {d}",
        f"%num = fsub {d} %md, {t.dbl(1.0)}",
        f"%den = fadd {d} %md, {t.dbl(1.0)}",
        f"%s = fdiv {d} %num, %den",
        f"%z = fmul {d} %s, %s",
        f"%z2 = fmul {d} %z, %z",
        _fma(t, "pa", t.dbl(c[1]), "%z", t.dbl(c[0])),
        _fma(t, "pb", t.dbl(c[3]), "%z", t.dbl(c[2])),
        _fma(t, "pc", t.dbl(c[5]), "%z", t.dbl(c[4])),
        _fma(t, "pd", "%z2", t.dbl(c[6]), "%pc"),
        _fma(t, "pe", "%z2", "%pd", "%pb"),
        _fma(t, "p", "%z2", "%pe", "%pa"),
        f"%tw = fadd {d} %s, %s",
        f"%twz = fmul {d} %tw, %z",
        _fma(t, "lm", "%twz", "%p", "%tw"),
    ]
    if scaled is None:
        lines.append(f"%e = add {i} %e0, {t.int(0)}")
    else:
        lines += [f"%eadj = select {b} {scaled}, {i} {t.int(23)}, {i} {t.int(0)}",
                  f"%e = sub {i} %e0, %eadj"]
    lines += [f"%ed = sitofp {i} %e to {d}", _fma(t, "r", "%ed", t.dbl(m.LN2), "%lm"),
              f"%rf = fptrunc {d} %r to {f}"]
    return lines


def _sin_body(t: _Types) -> str:
    return _sincos_body(t, True)


def _cos_body(t: _Types) -> str:
    return _sincos_body(t, False)


def _sincos_body(t: _Types, want_sin: bool) -> str:
    f, d, b, q = t.f, t.d, t.b, t.q
    lines = [
        f"%xd = fpext {f} %x to {d}",
        f"%ax = call {d} @{_intrinsic('fabs', t.width)}({d} %xd)",
        f"%near = fcmp olt {d} %ax, {t.dbl(m.SINCOS_LIMIT)}",
        f"%x0 = select {b} %near, {d} %xd, {d} {t.dbl(0.0)}",
        f"%kx = fmul {d} %x0, {t.dbl(m.TWO_OVER_PI)}",
        f"%k = call {d} @{_intrinsic('rint', t.width)}({d} %kx)",
        f"%nk = fneg {d} %k",
        _fma(t, "r1", "%nk", t.dbl(m.PIO2_1), "%x0"),
        _fma(t, "r2", "%nk", t.dbl(m.PIO2_2), "%r1"),
        _fma(t, "r", "%nk", t.dbl(m.PIO2_3), "%r2"),
        f"%z = fmul {d} %r, %r",
        f"%z2 = fmul {d} %z, %z",
        f"%ki = fptosi {d} %k to {q}",
        f"%kq = add {q} %ki, {t.int(0 if want_sin else 1, 'i64')}",
        f"%quad = and {q} %kq, {t.int(3, 'i64')}",
        f"%low = and {q} %quad, {t.int(1, 'i64')}",
        f"%odd = icmp ne {q} %low, {t.int(0, 'i64')}",
        # both polynomials, then the quadrant's: sin and cos of one x share them after
        # inlining (a tangent kernel's sin beside cos), the bits of each unchanged
        *_poly(t, "s", (*m.SIN_C, 0.0)), *_poly(t, "c", m.COS_C),
        f"%rz = fmul {d} %r, %z",
        _fma(t, "ss", "%rz", "%ps", "%r"),
        _fma(t, "cs", "%z", "%pc", t.dbl(1.0)),
        f"%sc = select {b} %odd, {d} %cs, {d} %ss",
        f"%neg = icmp uge {q} %quad, {t.int(2, 'i64')}",
        f"%nv = fneg {d} %sc",
        f"%signed = select {b} %neg, {d} %nv, {d} %sc",
        f"%own = fptrunc {d} %signed to {f}",
    ]
    if want_sin:  # sin(-0.0) is -0.0
        lines += [f"%iz = fcmp oeq {f} %x, {t.flt(0.0)}",
                  f"%own1 = select {b} %iz, {f} %x, {f} %own"]
    own = "%own1" if want_sin else "%own"
    return _lines(lines) + _far_lanes(t, own, "sinf" if want_sin else "cosf")


def _poly(t: _Types, k: str, c: tuple[float, ...]) -> list[str]:
    """%p{k}: the polynomial in %z with coefficients c (c[0] + c[1] z + ... + c[5] z^5)."""
    d = [t.dbl(v) for v in c]
    return [_fma(t, f"u{k}", d[1], "%z", d[0]), _fma(t, f"v{k}", d[3], "%z", d[2]),
            _fma(t, f"w{k}", d[5], "%z", d[4]), _fma(t, f"vw{k}", "%z2", f"%w{k}", f"%v{k}"),
            _fma(t, f"p{k}", "%z2", f"%vw{k}", f"%u{k}")]


def _far_lanes(t: _Types, own: str, libm: str) -> str:
    """Lanes whose |x| is too large (or inf, NaN) for the reduction take the C library's value,
    on a branch the usual inputs never take."""
    f, b = t.f, t.b
    if not t.width:
        return _lines(["br i1 %near, label %done, label %far", "far:",
                       f"%c = call float @{libm}(float %x)", "br label %done", "done:",
                       f"%res = phi float [{own}, %entry], [%c, %far]", "ret float %res"])
    lines = [f"%nearbits = bitcast {b} %near to i{t.width}",
             f"%allnear = icmp eq i{t.width} %nearbits, -1",
             "br i1 %allnear, label %done, label %far", "far:"]
    acc = "poison"
    for lane in range(t.width):
        lines += [f"%x.{lane} = extractelement {f} %x, i64 {lane}",
                  f"%c.{lane} = call float @{libm}(float %x.{lane})",
                  f"%v.{lane} = insertelement {f} {acc}, float %c.{lane}, i64 {lane}"]
        acc = f"%v.{lane}"
    lines += [f"%slow = select {b} %near, {f} {own}, {f} {acc}", "br label %done", "done:",
              f"%res = phi {f} [{own}, %entry], [%slow, %far]", f"ret {f} %res"]
    return _lines(lines)
