"""Lane-wise rules of the pure primitives in the SIMD thread loop: the scalar rule's instruction
on vectors (codegen/llvm_ops.py holds the scalar rules), affine index values kept scalar, and C
library calls made lane by lane. Each lane computes what the scalar loop computes for its
thread, with the same instructions: results are bit for bit the scalar loop's."""

from __future__ import annotations

from collections.abc import Callable

from ..ir.nodes import Op
from ..types import ScalarType, float32
from . import float32_math
from .lane_values import TID_OFFSET_MAX, Affine, LaneValues, int_literal
from .llvm_ops import _FBIN, _FCMP, _IBIN, _ICMP, _UCMP, MathCall, _cast_kind, _float_suffix
from .llvm_types import literal, reg_type
from .tid_split import split_index


class LaneOps(LaneValues):
    """The pure primitives' lane rules (a mixin of the CPU kernel emitter)."""

    math: dict[str, MathCall]
    mask: str | None
    #: the SIMD loop's thread number of lane 0 (i64) and whether threads run last first
    lane_t0: str
    reverse: bool
    launch_ndim: int
    #: emits `%fresh = text`, returns %fresh (codegen/llvm_ops.py)
    emit_fresh: Callable[[str], str]

    def lane_tid(self, s: Op) -> None:
        k, n = s.attr
        if n == 1:
            assert s.result is not None
            lane0 = self.f.fresh("%ltid")
            self.f.emit(f"{lane0} = trunc i64 {self.tid0()} to i32")
            self.affine[s.result.id] = Affine(lane0, -1 if self.reverse else 1, tid_offset=0)
            return
        t = self.affine_vector(Affine(self.tid0(), -1 if self.reverse else 1), "i64")
        dims = [self.splat(f"%dim{d}", "i64") for d in range(n)]
        value = split_index(self.emit_fresh, t, dims, k, self.vty("i64"), self.vty("double"),
                            "splat (double 5.000000e-01)", "splat (double 1.000000e+00)")
        self.f.emit(f"{self.vres(s)} = trunc {self.vty('i64')} {value} to {self.vty('i32')}")

    def tid0(self) -> str:
        """The thread index of lane 0 (i64)."""
        return f"%{self.prefix}tid"

    # -- affine integer arithmetic ----------------------------------------------------------

    def try_affine(self, s: Op) -> bool:
        """Keep an integer add/sub/mul/shl/neg/cast of an affine value affine (scalar lane 0
        arithmetic); False when the op needs vectors."""
        if s.result is None or not s.result.type.is_int or s.result.type.kind == "b":
            return False
        out = _AFFINE.get(s.prim, _no_affine)(self, s)
        if out is None:
            return False
        self.affine[s.result.id] = out
        return True

    def operand(self, s: Op, i: int) -> tuple[Affine | None, str | None]:
        """(affine, None) for an affine operand, (None, scalar name) for a thread-invariant
        one, (None, None) for a vector."""
        v = s.args[i]
        if v.id in self.affine:
            return self.affine[v.id], None
        if v.id in self.varying:
            return None, None
        return None, self.names[v.id]

    def scalar_op(self, instr: str, t: ScalarType, x: str, y: str) -> str:
        out = self.f.fresh("%laf")
        self.f.emit(f"{out} = {instr} {reg_type(t)} {x}, {y}")
        return out

    def affine_add(self, s: Op) -> Affine | None:
        (a, x), (b, y) = self.operand(s, 0), self.operand(s, 1)
        t, sub = s.args[0].type, s.prim == "sub"
        instr = "sub" if sub else "add"
        if a is not None and b is None and y is not None:
            c = int_literal(y)
            offset = None
            if a.tid_offset is not None and c is not None:
                offset = a.tid_offset - c if sub else a.tid_offset + c
                offset = offset if abs(offset) <= TID_OFFSET_MAX else None
            const = a.const_off + ((-c if sub else c) if c is not None else 0)
            return Affine(self.scalar_op(instr, t, a.lane0, y), a.stride, offset, a.scaled,
                          const)
        if a is None and x is not None and b is not None:
            if sub:
                return Affine(self.scalar_op("sub", t, x, b.lane0), -b.stride)
            c = int_literal(x)
            offset = None
            if b.tid_offset is not None and c is not None and abs(b.tid_offset + c) <= TID_OFFSET_MAX:
                offset = b.tid_offset + c
            return Affine(self.scalar_op("add", t, x, b.lane0), b.stride, offset, b.scaled,
                          b.const_off + (c or 0))
        if a is not None and b is not None:
            stride = a.stride - b.stride if sub else a.stride + b.stride
            return Affine(self.scalar_op(instr, t, a.lane0, b.lane0), stride)
        return None

    def affine_mul(self, s: Op) -> Affine | None:
        (a, x), (b, y) = self.operand(s, 0), self.operand(s, 1)
        if a is None and b is not None:
            a, x, y = b, y, x
        k = int_literal(y) if a is not None and y is not None else None
        if a is None or k is None:
            return None
        t = s.args[0].type
        lane0 = self.scalar_op("mul", t, a.lane0, y)  # type: ignore[arg-type]
        scaled = a.tid_offset is not None and a.stride in (1, -1)
        return Affine(lane0, a.stride * k, None, scaled, 0)

    def affine_shl(self, s: Op) -> Affine | None:
        (a, _), (b, y) = self.operand(s, 0), self.operand(s, 1)
        k = int_literal(y) if y is not None else None
        if a is None or b is not None or k is None or not 0 <= k < s.args[0].type.bits:
            return None
        return Affine(self.scalar_op("shl", s.args[0].type, a.lane0, str(k)), a.stride << k)

    def affine_neg(self, s: Op) -> Affine | None:
        a, _ = self.operand(s, 0)
        if a is None:
            return None
        return Affine(self.scalar_op("sub", s.args[0].type, "0", a.lane0), -a.stride)

    def affine_cast(self, s: Op) -> Affine | None:
        a, _ = self.operand(s, 0)
        src, dst = s.args[0].type, s.result.type  # type: ignore[union-attr]
        if a is None or not src.is_int or src.kind == "b":
            return None
        if dst.bits == src.bits:
            return a
        if dst.bits < src.bits:
            lane0 = self.f.fresh("%laf")
            self.f.emit(f"{lane0} = trunc {reg_type(src)} {a.lane0} to {reg_type(dst)}")
            return Affine(lane0, a.stride, a.tid_offset)
        # widening is exact lane by lane only where no lane wraps around (tid + small c)
        if a.tid_offset is None or (src.kind == "u" and a.tid_offset < 0):
            return None
        lane0 = self.f.fresh("%laf")
        kind = "zext" if src.kind == "u" else "sext"
        self.f.emit(f"{lane0} = {kind} {reg_type(src)} {a.lane0} to {reg_type(dst)}")
        return Affine(lane0, a.stride, a.tid_offset)

    # -- vector rules -----------------------------------------------------------------------

    def lane_binary(self, s: Op) -> None:
        t = s.args[0].type
        vt = self.vty(t)
        x, y = self.va(s, 0), self.va(s, 1)
        if t.is_float:
            self.f.emit(f"{self.vres(s)} = {_FBIN[s.prim]} {vt} {x}, {y}")
        elif s.prim in ("div", "mod"):
            f = self.f
            is_zero, safe, q = f.fresh("%ldivz"), f.fresh("%ldivs"), f.fresh("%ldivq")
            f.emit(f"{is_zero} = icmp eq {vt} {y}, zeroinitializer")
            # lanes that are off divide by 1: what they hold need not be a valid division
            unsafe = is_zero if self.mask is None else self.mask_or_off(is_zero)
            f.emit(f"{safe} = select {self.vty('i1')} {unsafe}, {vt} splat ({reg_type(t)} 1), "
                   f"{vt} {y}")
            if t.bits <= 32:
                q = self.divide_in_double(t, x, safe, s.prim == "div")
            else:
                kind = ("u" if t.kind == "u" else "s") + ("div" if s.prim == "div" else "rem")
                f.emit(f"{q} = {kind} {vt} {x}, {safe}")
            f.emit(f"{self.vres(s)} = select {self.vty('i1')} {is_zero}, {vt} zeroinitializer, "
                   f"{vt} {q}")
        else:
            self.f.emit(f"{self.vres(s)} = {_IBIN[s.prim]} {vt} {x}, {y}")

    def divide_in_double(self, t: ScalarType, x: str, y: str, quotient: bool) -> str:
        """x / y (or x % y) of 32-bit or narrower integer lanes, y != 0, as C computes them
        (truncating): there is no SIMD integer division, and dividing lane by lane costs
        16 hardware divisions per vector. The double quotient is exact: |x| < 2⁵³, and a
        correctly rounded x/y is off by less than |x/y|·2⁻⁵³ < 1/|y|, the least distance of a
        non-integer x/y from an integer, so truncating it gives C's quotient."""
        f, vt = self.f, self.vty(t)
        dt = self.vty("double")
        to, back = ("uitofp", "fptoui") if t.kind == "u" else ("sitofp", "fptosi")
        xd, yd, qd, q = (f.fresh("%ldd") for _ in range(4))
        f.emit(f"{xd} = {to} {vt} {x} to {dt}")
        f.emit(f"{yd} = {to} {vt} {y} to {dt}")
        f.emit(f"{qd} = fdiv {dt} {xd}, {yd}")
        f.emit(f"{q} = {back} {dt} {qd} to {vt}")
        if quotient:
            return q
        qy, r = f.fresh("%ldd"), f.fresh("%ldd")
        f.emit(f"{qy} = mul {vt} {q}, {y}")
        f.emit(f"{r} = sub {vt} {x}, {qy}")
        return r

    def mask_or_off(self, cond: str) -> str:
        """cond, or true where the lane is off."""
        out = self.f.fresh("%loff")
        m = self.vty("i1")
        self.f.emit(f"{out} = select {m} {self.mask}, {m} {cond}, {m} splat (i1 true)")
        return out

    def lane_shr(self, s: Op) -> None:
        t = s.args[0].type
        kind = "lshr" if t.kind == "u" else "ashr"
        self.f.emit(f"{self.vres(s)} = {kind} {self.vty(t)} {self.va(s, 0)}, {self.va(s, 1)}")

    def lane_neg(self, s: Op) -> None:
        t = s.args[0].type
        if t.is_float:
            self.f.emit(f"{self.vres(s)} = fneg {self.vty(t)} {self.va(s, 0)}")
        else:
            self.f.emit(f"{self.vres(s)} = sub {self.vty(t)} zeroinitializer, {self.va(s, 0)}")

    def lane_not(self, s: Op) -> None:
        t = s.args[0].type
        ones = "true" if t.kind == "b" else "-1"
        self.f.emit(f"{self.vres(s)} = xor {self.vty(t)} {self.va(s, 0)}, "
                    f"splat ({reg_type(t)} {ones})")

    def lane_intrinsic(self, s: Op, base: str, nargs: int, extra: str = "") -> None:
        t = s.args[0].type
        ty = reg_type(t)
        suffix = _float_suffix(t) if t.is_float else ty
        fn = f"llvm.{base}.v{self.width}{suffix}"
        vt = self.vty(t)
        params = ", ".join([vt] * nargs) + (", i1" if extra else "")
        self.declares.add(f"declare {vt} @{fn}({params})")
        args = ", ".join(f"{vt} {self.va(s, i)}" for i in range(nargs)) + extra
        self.f.emit(f"{self.vres(s)} = call {vt} @{fn}({args})")

    def lane_math(self, s: Op) -> None:
        nargs = len(s.args)
        kind, base = self.math[s.prim]
        if kind == "own" and float32_math.covers(s.args[0].type):  # float32: no 16-bit lanes
            fn = float32_math.function_name(base, self.width)
            self.declares.update(float32_math.declarations(base, self.width))
            vt = self.vty(float32)
            self.f.emit(f"{self.vres(s)} = call {vt} @{fn}({vt} {self.va(s, 0)})")
            return
        if kind in ("intrinsic", "own"):
            self.lane_intrinsic(s, base, nargs)
            return
        t = s.args[0].type
        ty = reg_type(t)
        fn = base if t.bits == 64 else base + "f"
        self.declares.add(f"declare {ty} @{fn}({', '.join([ty] * nargs)})")
        args = [self.va(s, i) for i in range(nargs)]
        out = "poison"
        for lane in range(self.width):
            xs = ", ".join(f"{ty} {self.extract(a, ty, lane)}" for a in args)
            r = self.f.fresh("%lcall")
            self.f.emit(f"{r} = call {ty} @{fn}({xs})")
            out = self.insert(out, ty, r, lane)
        self.vnames[s.result.id] = out  # type: ignore[union-attr]

    def lane_abs(self, s: Op) -> None:
        t = s.args[0].type
        if t.is_float:
            self.lane_intrinsic(s, "fabs", 1)
        elif t.kind == "u":
            self.vnames[s.result.id] = self.va(s, 0)  # type: ignore[union-attr]
        else:
            self.lane_intrinsic(s, "abs", 1, ", i1 false")

    def lane_minmax(self, s: Op) -> None:
        t = s.args[0].type
        if t.is_float:
            self.lane_intrinsic(s, "minnum" if s.prim == "min" else "maxnum", 2)
        else:
            self.lane_intrinsic(s, ("u" if t.kind in "ub" else "s") + s.prim, 2)

    def lane_compare(self, s: Op) -> None:
        t = s.args[0].type
        if t.is_float:
            cmp = f"fcmp {_FCMP[s.prim]}"
        else:
            cmp = f"icmp {(_UCMP if t.kind in 'ub' else _ICMP)[s.prim]}"
        self.f.emit(f"{self.vres(s)} = {cmp} {self.vty(t)} {self.va(s, 0)}, {self.va(s, 1)}")

    def lane_isnan(self, s: Op) -> None:
        vt, x = self.vty(s.args[0].type), self.va(s, 0)
        self.f.emit(f"{self.vres(s)} = fcmp uno {vt} {x}, {x}")

    def lane_isinf(self, s: Op) -> None:
        t = s.args[0].type
        vt = self.vty(t)
        fn = f"llvm.fabs.v{self.width}{_float_suffix(t)}"
        self.declares.add(f"declare {vt} @{fn}({vt})")
        mag = self.f.fresh("%lmag")
        self.f.emit(f"{mag} = call {vt} @{fn}({vt} {self.va(s, 0)})")
        inf = literal(float("inf"), t)
        self.f.emit(f"{self.vres(s)} = fcmp oeq {vt} {mag}, splat ({reg_type(t)} {inf})")

    def lane_select(self, s: Op) -> None:
        vt = self.vty(s.args[1].type)
        c = s.args[0]
        cond = (f"{self.vty('i1')} {self.vec(c)}" if self.is_varying(c)
                else f"i1 {self.names[c.id]}")
        self.f.emit(f"{self.vres(s)} = select {cond}, {vt} {self.va(s, 1)}, {vt} {self.va(s, 2)}")

    def lane_cast(self, s: Op) -> None:
        src, dst = s.args[0].type, s.result.type  # type: ignore[union-attr]
        x = self.va(s, 0)
        if src == dst or (src.is_int and dst.is_int and src.bits == dst.bits):
            self.vnames[s.result.id] = x  # type: ignore[union-attr]
            return
        self.f.emit(f"{self.vres(s)} = {_cast_kind(src, dst)} {self.vty(src)} {x} to "
                    f"{self.vty(dst)}")

    def lane_bitcast(self, s: Op) -> None:
        src, dst = s.args[0].type, s.result.type  # type: ignore[union-attr]
        if reg_type(src) == reg_type(dst):
            self.vnames[s.result.id] = self.va(s, 0)  # type: ignore[union-attr]
            return
        self.f.emit(f"{self.vres(s)} = bitcast {self.vty(src)} {self.va(s, 0)} to "
                    f"{self.vty(dst)}")

    def lane_ptr_add(self, s: Op) -> None:
        base = s.args[0]
        p = f"{self.vty('ptr')} {self.vec(base)}" if self.is_varying(base) else \
            f"ptr {self.names[base.id]}"
        self.f.emit(f"{self.vres(s)} = getelementptr i8, {p}, {self.vty('i64')} {self.va(s, 1)}")


def _no_affine(em: LaneOps, s: Op) -> Affine | None:
    return None


_AFFINE: dict[str, Callable[[LaneOps, Op], Affine | None]] = {
    "add": LaneOps.affine_add, "sub": LaneOps.affine_add, "mul": LaneOps.affine_mul,
    "shl": LaneOps.affine_shl, "neg": LaneOps.affine_neg, "cast": LaneOps.affine_cast,
}


def _pure_rules() -> dict[str, Callable[[LaneOps, Op], None]]:
    from ..ir.prims import COMPARE_PRIMS, UNARY_FLOAT_PRIMS

    e = LaneOps
    table: dict[str, Callable[[LaneOps, Op], None]] = {
        "tid": e.lane_tid, "neg": e.lane_neg, "abs": e.lane_abs, "min": e.lane_minmax,
        "max": e.lane_minmax, "pow": e.lane_math, "atan2": e.lane_math,
        "copysign": lambda em, s: em.lane_intrinsic(s, "copysign", 2),
        "popcount": lambda em, s: em.lane_intrinsic(s, "ctpop", 1), "not": e.lane_not,
        "shr": e.lane_shr, "isnan": e.lane_isnan, "isinf": e.lane_isinf,
        "select": e.lane_select, "cast": e.lane_cast, "bitcast": e.lane_bitcast,
        "ptr_add": e.lane_ptr_add,
    }
    for p in ("add", "sub", "mul", "div", "mod", "and", "or", "xor", "shl"):
        table[p] = e.lane_binary
    table.update({p: e.lane_compare for p in COMPARE_PRIMS})
    table.update({p: e.lane_math for p in UNARY_FLOAT_PRIMS})
    return table


PURE_RULES = _pure_rules()
