"""Per-primitive LLVM emission rules, in one table keyed by primitive name."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from ..ir.nodes import Op, Var
from ..types import ScalarType, float16, float32
from . import float32_math
from .function_text import FunctionText
from .llvm_adjoint import AdjointEmitter
from .llvm_bf16 import ROUNDED, is_bf16
from .llvm_tiles import RULES as TILE_RULES
from .llvm_types import literal, mem_type, reg_type
from .tid_split import split_index

#: How a target computes a float math primitive: ("intrinsic", "sin") calls llvm.sin.f32;
#: ("libm", "cbrt") the C library's cbrtf/cbrt; ("libdevice", "sin") CUDA's __nv_sinf/__nv_sin;
#: ("own", "exp") gradloom's own float32 function (codegen/float32_math.py), the intrinsic for
#: float64.
#: Each target's emitter holds one table covering every float math primitive (entry_*.py).
MathCall = tuple[str, str]
# No `contract` flag: every float operation rounds on its own, as in Warp's CPU build and the
# host evaluator (ir/hostops.py), so kernels, Python-scope calls and Warp agree bit for bit.
_FBIN = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv",
         "mod": "frem"}
_IBIN = {"add": "add", "sub": "sub", "mul": "mul", "and": "and", "or": "or", "xor": "xor",
         "shl": "shl"}
_FCMP = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_ICMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_UCMP = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def _float_suffix(t: ScalarType) -> str:
    return {"half": "f16", "float": "f32", "double": "f64"}[reg_type(t)]


class OpEmitter(AdjointEmitter):
    """Emission of single ops; KernelEmitter supplies names, declarations and the text buffer."""

    f: FunctionText
    names: dict[int, str]
    declares: set[str]
    prefix: str
    grads_known: bool
    private_adds: frozenset[int]
    #: the target's math table (see MathCall)
    math: dict[str, MathCall]

    def name(self, v: Var) -> str:
        raise NotImplementedError

    def root_offset(self, p: Var) -> int | None:
        raise NotImplementedError

    def define(self, v: Var) -> str:
        raise NotImplementedError

    def op(self, s: Op) -> None:
        RULES[s.prim](self, s)
        if s.result is not None and s.prim in ROUNDED and is_bf16(s.result.type):
            self.bf16_round_result(s)

    def res(self, s: Op) -> str:
        assert s.result is not None
        return self.define(s.result)

    def a(self, s: Op, i: int) -> str:
        return self.name(s.args[i])

    # -- constants and values ---------------------------------------------------------------

    def const(self, s: Op) -> None:
        assert s.result is not None
        self.names[s.result.id] = literal(s.attr, s.result.type)

    def tid(self, s: Op) -> None:
        k, n = s.attr
        value = f"%{self.prefix}tid"
        if n > 1:
            dims = [f"%dim{d}" for d in range(n)]
            value = split_index(self.emit_fresh, value, dims, k, "i64", "double",
                                "5.000000e-01", "1.000000e+00")
        self.f.emit(f"{self.res(s)} = trunc i64 {value} to i32")

    def emit_fresh(self, text: str) -> str:
        """Emit `%name = text` under a fresh name; the name."""
        out = self.f.fresh("%ix")
        self.f.emit(f"{out} = {text}")
        return out

    def arg(self, s: Op) -> None:
        raise AssertionError("arg ops are hoisted by the kernel emitter")

    # -- arithmetic ---------------------------------------------------------------------------

    def binary(self, s: Op) -> None:
        t = s.args[0].type
        ty = reg_type(t)
        x, y = self.a(s, 0), self.a(s, 1)
        if t.is_float:
            self.f.emit(f"{self.res(s)} = {_FBIN[s.prim]} {ty} {x}, {y}")
        elif s.prim in ("div", "mod"):
            self.int_divide(s, t, x, y)
        else:
            self.f.emit(f"{self.res(s)} = {_IBIN[s.prim]} {ty} {x}, {y}")

    def int_divide(self, s: Op, t: ScalarType, x: str, y: str) -> None:
        """Integer / and %: a zero divisor gives 0 instead of a hardware trap."""
        ty, f = reg_type(t), self.f
        is_zero, safe, q = f.fresh("%divz"), f.fresh("%divs"), f.fresh("%divq")
        f.emit(f"{is_zero} = icmp eq {ty} {y}, 0")
        f.emit(f"{safe} = select i1 {is_zero}, {ty} 1, {ty} {y}")
        kind = ("u" if t.kind == "u" else "s") + ("div" if s.prim == "div" else "rem")
        f.emit(f"{q} = {kind} {ty} {x}, {safe}")
        f.emit(f"{self.res(s)} = select i1 {is_zero}, {ty} 0, {ty} {q}")

    def shr(self, s: Op) -> None:
        t = s.args[0].type
        kind = "lshr" if t.kind == "u" else "ashr"
        self.f.emit(f"{self.res(s)} = {kind} {reg_type(t)} {self.a(s, 0)}, {self.a(s, 1)}")

    def neg(self, s: Op) -> None:
        t = s.args[0].type
        if t.is_float:
            self.f.emit(f"{self.res(s)} = fneg {reg_type(t)} {self.a(s, 0)}")
        else:
            self.f.emit(f"{self.res(s)} = sub {reg_type(t)} 0, {self.a(s, 0)}")

    def not_(self, s: Op) -> None:
        t = s.args[0].type
        ones = "true" if t.kind == "b" else "-1"
        self.f.emit(f"{self.res(s)} = xor {reg_type(t)} {self.a(s, 0)}, {ones}")

    def call_intrinsic(self, s: Op, base: str, nargs: int) -> None:
        t = s.args[0].type
        ty = reg_type(t)
        fn = f"llvm.{base}.{_float_suffix(t)}" if t.is_float else f"llvm.{base}.{ty}"
        params = ", ".join([ty] * nargs)
        self.declares.add(f"declare {ty} @{fn}({params})")
        args = ", ".join(f"{ty} {self.a(s, i)}" for i in range(nargs))
        self.f.emit(f"{self.res(s)} = call {ty} @{fn}({args})")

    def unary_float(self, s: Op) -> None:
        self.call_math(s, len(s.args))

    def call_math(self, s: Op, nargs: int) -> None:
        """A float math primitive, as the target's table says."""
        kind, base = self.math[s.prim]
        if kind == "own" and not float32_math.covers(s.args[0].type):
            kind = "intrinsic"
        if kind == "intrinsic":
            self.call_intrinsic(s, base, nargs)
        elif kind == "own":
            self.call_own(s, base)
        else:
            self.call_libm(s, base, nargs, "__nv_" if kind == "libdevice" else "")

    def call_own(self, s: Op, base: str) -> None:
        """gradloom's own float32 function (codegen/float32_math.py); half values go through
        float."""
        t, f = s.args[0].type, self.f
        self.declares.update(float32_math.declarations(base, 0))
        x, fn = self.a(s, 0), float32_math.function_name(base, 0)
        if reg_type(t) == "float":
            f.emit(f"{self.res(s)} = call float @{fn}(float {x})")
            return
        ext, tmp = f.fresh("%hext"), f.fresh("%hres")
        f.emit(f"{ext} = fpext {reg_type(t)} {x} to float")
        f.emit(f"{tmp} = call float @{fn}(float {ext})")
        f.emit(f"{self.res(s)} = fptrunc float {tmp} to {reg_type(t)}")

    def call_libm(self, s: Op, base: str, nargs: int, prefix: str = "") -> None:
        """A math library call (C's, or libdevice's with prefix __nv_); half values go
        through float."""
        t = s.args[0].type
        f = self.f
        work = "double" if t.bits == 64 else "float"
        fn = prefix + (base if t.bits == 64 else base + "f")
        self.declares.add(f"declare {work} @{fn}({', '.join([work] * nargs)})")
        args = []
        half = reg_type(t) == "half"
        for i in range(nargs):
            x = self.a(s, i)
            if half:
                ext = f.fresh("%hext")
                f.emit(f"{ext} = fpext half {x} to float")
                x = ext
            args.append(f"{work} {x}")
        if half:
            tmp = f.fresh("%hres")
            f.emit(f"{tmp} = call float @{fn}({', '.join(args)})")
            f.emit(f"{self.res(s)} = fptrunc float {tmp} to half")
        else:
            f.emit(f"{self.res(s)} = call {work} @{fn}({', '.join(args)})")

    def abs_(self, s: Op) -> None:
        t = s.args[0].type
        if t.is_float:
            self.call_intrinsic(s, "fabs", 1)
        elif t.kind == "u":
            self.names[s.result.id] = self.a(s, 0)  # type: ignore[union-attr]
        else:
            ty = reg_type(t)
            fn = f"llvm.abs.{ty}"
            self.declares.add(f"declare {ty} @{fn}({ty}, i1)")
            self.f.emit(f"{self.res(s)} = call {ty} @{fn}({ty} {self.a(s, 0)}, i1 false)")

    def minmax(self, s: Op) -> None:
        t = s.args[0].type
        if t.is_float:
            self.call_intrinsic(s, "minnum" if s.prim == "min" else "maxnum", 2)
        else:
            prefix = "u" if t.kind in "ub" else "s"
            self.call_intrinsic(s, prefix + s.prim, 2)

    def pow_(self, s: Op) -> None:
        self.call_math(s, 2)

    def atan2(self, s: Op) -> None:
        self.call_math(s, 2)

    def copysign(self, s: Op) -> None:
        self.call_intrinsic(s, "copysign", 2)

    def popcount(self, s: Op) -> None:
        self.call_intrinsic(s, "ctpop", 1)

    def compare(self, s: Op) -> None:
        t = s.args[0].type
        ty = reg_type(t)
        if t.is_float:
            cmp = f"fcmp {_FCMP[s.prim]}"
        else:
            cmp = f"icmp {(_UCMP if t.kind in 'ub' else _ICMP)[s.prim]}"
        self.f.emit(f"{self.res(s)} = {cmp} {ty} {self.a(s, 0)}, {self.a(s, 1)}")

    def isnan(self, s: Op) -> None:
        ty = reg_type(s.args[0].type)
        self.f.emit(f"{self.res(s)} = fcmp uno {ty} {self.a(s, 0)}, {self.a(s, 0)}")

    def isinf(self, s: Op) -> None:
        t = s.args[0].type
        ty, f = reg_type(t), self.f
        fn = f"llvm.fabs.{_float_suffix(t)}"
        self.declares.add(f"declare {ty} @{fn}({ty})")
        mag = f.fresh("%mag")
        f.emit(f"{mag} = call {ty} @{fn}({ty} {self.a(s, 0)})")
        f.emit(f"{self.res(s)} = fcmp oeq {ty} {mag}, {literal(float('inf'), t)}")

    def select(self, s: Op) -> None:
        ty = reg_type(s.args[1].type)
        self.f.emit(f"{self.res(s)} = select i1 {self.a(s, 0)}, {ty} {self.a(s, 1)}, "
                    f"{ty} {self.a(s, 2)}")

    def cast(self, s: Op) -> None:
        src, dst = s.args[0].type, s.result.type  # type: ignore[union-attr]
        x = self.a(s, 0)
        # a bfloat16 register is a float (the rounding to bfloat16 follows: see `op`)
        src, dst = (float32 if is_bf16(t) else t for t in (src, dst))
        if src == dst or (src.is_int and dst.is_int and src.bits == dst.bits):
            # same register type (int32 <-> uint32): a reinterpretation, no instruction
            self.names[s.result.id] = x  # type: ignore[union-attr]
            return
        if float16 in (src, dst) and float32 not in (src, dst):
            # half <-> anything but float goes through float: LLVM would call compiler-rt
            # helpers (__truncdfhf2, ...) that an in-process JIT cannot resolve (the process
            # aborts); float -> half then rounds once more (documented in docs/differences.md)
            wide = self.f.fresh("%viaf")
            self.f.emit(f"{wide} = {_cast_kind(src, float32)} {reg_type(src)} {x} to float")
            src, x = float32, wide
        self.f.emit(f"{self.res(s)} = {_cast_kind(src, dst)} {reg_type(src)} {x} to "
                    f"{reg_type(dst)}")

    # -- memory -------------------------------------------------------------------------------

    def address(self, s: Op) -> str:
        f = self.f
        p = f.fresh("%addr")
        f.emit(f"{p} = getelementptr i8, ptr {self.a(s, 0)}, i64 {self.a(s, 1)}")
        if s.attr:
            q = f.fresh("%addr")
            f.emit(f"{q} = getelementptr i8, ptr {p}, i64 {int(s.attr)}")
            return q
        return p

    def ptr_add(self, s: Op) -> None:
        self.f.emit(f"{self.res(s)} = getelementptr i8, ptr {self.a(s, 0)}, i64 {self.a(s, 1)}")

    def permutation(self, s: Op) -> tuple[str, str]:
        """(an i1: the permutation exists, its table) of a `permute` op's descriptor; the
        descriptor is the same for every lane where the SIMD loop calls this."""
        table, _, ready = s.attr
        desc = self.name(s.args[0])
        flag = self.emit_fresh(f"getelementptr i8, ptr {desc}, i64 {int(ready)}")
        ok = self.emit_fresh(f"load i32, ptr {flag}, align 4")
        ok = self.emit_fresh(f"icmp ne i32 {ok}, 0")
        at = self.emit_fresh(f"getelementptr i8, ptr {desc}, i64 {int(table)}")
        return ok, self.emit_fresh(f"load ptr, ptr {at}, align 8")

    def permute(self, s: Op) -> None:
        ok, table = self.permutation(s)
        index = self.emit_fresh(f"select i1 {ok}, i64 {self.a(s, 1)}, i64 0")
        p = self.emit_fresh(f"getelementptr i32, ptr {table}, i64 {index}")
        value = self.emit_fresh(f"load i32, ptr {p}, align 4")
        self.f.emit(f"{self.res(s)} = select i1 {ok}, i32 {value}, i32 -1")

    def load_value(self, dest: str, t: ScalarType, p: str, align: int) -> None:
        """dest = the value of type t at p (bools are stored as one byte)."""
        if t.kind == "b":
            raw = self.f.fresh("%ldb")
            self.f.emit(f"{raw} = load i8, ptr {p}, align 1")
            self.f.emit(f"{dest} = icmp ne i8 {raw}, 0")
        elif is_bf16(t):
            raw = self.f.fresh("%ldbf")
            self.f.emit(f"{raw} = load i16, ptr {p}, align {min(align, 2)}")
            self.bf16_value(raw, dest)
        else:
            self.f.emit(f"{dest} = load {mem_type(t)}, ptr {p}, align {align}")

    def load(self, s: Op) -> None:
        t = s.result.type  # type: ignore[union-attr]
        self.load_value(self.res(s), t, self.address(s), t.size)

    def store(self, s: Op) -> None:
        t = s.args[2].type
        p = self.address(s)
        v = self.a(s, 2)
        self.store_value(v, t, p, t.size)

    def store_value(self, v: str, t: ScalarType, p: str, align: int) -> None:
        """Store value v of type t at p (bools as one byte, bfloat16 as its bits)."""
        if t.kind == "b":
            wide = self.f.fresh("%stb")
            self.f.emit(f"{wide} = zext i1 {v} to i8")
            v = wide
        elif is_bf16(t):
            v = self.bf16_bits(v)
        self.f.emit(f"store {mem_type(t)} {v}, ptr {p}, align {align}")

    def atomic(self, s: Op) -> None:
        t = s.args[2].type
        base = s.prim.removeprefix("atomic_")
        if base == "exch":
            self.exchange(s)
            return
        if base == "add" and self.root_offset(s.args[0]) in self.private_adds:
            self.private_add(s)
            return
        if is_bf16(t):
            op = {"add": "fadd", "min": "llvm.minnum.f32", "max": "llvm.maxnum.f32"}[base]
            old = self.bf16_rmw(self.address(s), op, self.a(s, 2), atomic=True)
            if s.result is not None:
                self.names[s.result.id] = old
            return
        if t.is_float:
            kind = {"add": "fadd", "min": "fmin", "max": "fmax"}[base]
        elif t.kind == "u":
            kind = {"add": "add", "min": "umin", "max": "umax"}.get(base, base)
        else:
            kind = {"add": "add", "min": "min", "max": "max"}.get(base, base)
        p = self.address(s)
        self.f.emit(f"{self.res(s)} = atomicrmw {kind} ptr {p}, {mem_type(t)} {self.a(s, 2)} "
                    f"monotonic, align {t.size}")

    def private_add(self, s: Op) -> None:
        """atomic_add into memory only this thread's worker adds into: a plain read-add-write
        (vectorisable, and no locked instruction)."""
        t, f = s.args[2].type, self.f
        if is_bf16(t):
            old = self.bf16_rmw(self.address(s), "fadd", self.a(s, 2), atomic=False)
            if s.result is not None:
                self.names[s.result.id] = old
            return
        mt, p, new = mem_type(t), self.address(s), f.fresh("%padd")
        old = self.res(s) if s.result is not None else f.fresh("%pold")
        f.emit(f"{old} = load {mt}, ptr {p}, align {t.size}")
        f.emit(f"{new} = {'fadd' if t.is_float else 'add'} {mt} {old}, {self.a(s, 2)}")
        f.emit(f"store {mt} {new}, ptr {p}, align {t.size}")

    def as_bits(self, t: ScalarType, x: str) -> tuple[str, str]:
        """x as an integer of its width (cmpxchg and xchg on every target need integers)."""
        it = f"i{t.bits}"
        if not t.is_float:
            return it, x
        if is_bf16(t):
            return it, self.bf16_bits(x)
        bits = self.f.fresh("%bits")
        self.f.emit(f"{bits} = bitcast {reg_type(t)} {x} to {it}")
        return it, bits

    def from_bits(self, s: Op, t: ScalarType, raw: str) -> None:
        if is_bf16(t):
            self.names[s.result.id] = self.bf16_value(raw)  # type: ignore[union-attr]
        elif t.is_float:
            self.f.emit(f"{self.res(s)} = bitcast i{t.bits} {raw} to {reg_type(t)}")
        else:
            self.names[s.result.id] = raw  # type: ignore[union-attr]

    def exchange(self, s: Op) -> None:
        t = s.args[2].type
        it, v = self.as_bits(t, self.a(s, 2))
        old = self.f.fresh("%xchg")
        self.f.emit(f"{old} = atomicrmw xchg ptr {self.address(s)}, {it} {v} monotonic, "
                    f"align {t.size}")
        self.from_bits(s, t, old)

    def compare_exchange(self, s: Op) -> None:
        """atomic_cas: compares bit patterns (floats too), returns the old value."""
        t, f = s.args[2].type, self.f
        it, cmp = self.as_bits(t, self.a(s, 2))
        _, v = self.as_bits(t, self.a(s, 3))
        pair, old = f.fresh("%cas"), f.fresh("%casold")
        f.emit(f"{pair} = cmpxchg ptr {self.address(s)}, {it} {cmp}, {it} {v} monotonic "
               f"monotonic, align {t.size}")
        f.emit(f"{old} = extractvalue {{ {it}, i1 }} {pair}, 0")
        self.from_bits(s, t, old)

    def bitcast(self, s: Op) -> None:
        src, dst = s.args[0].type, s.result.type  # type: ignore[union-attr]
        if is_bf16(src) or is_bf16(dst):  # bfloat16 <-> its bits as a 16-bit integer
            conv = self.bf16_bits if is_bf16(src) else self.bf16_value
            self.names[s.result.id] = conv(self.a(s, 0))  # type: ignore[union-attr]
            return
        if reg_type(src) == reg_type(dst):
            self.names[s.result.id] = self.a(s, 0)  # type: ignore[union-attr]
            return
        self.f.emit(f"{self.res(s)} = bitcast {reg_type(src)} {self.a(s, 0)} to {reg_type(dst)}")

    def print_(self, s: Op) -> None:
        self.emit_print(s)

    def emit_print(self, s: Op) -> None:
        """print(cond, values...): each target prints its own way (entry_*.py)."""
        raise NotImplementedError

    def vararg(self, v: Var) -> str:
        """A value as C passes it to a variadic function (float -> double, small ints -> int);
        bools become the strings True / False, as Warp prints them."""
        t, x, f = v.type, self.name(v), self.f
        if t.kind == "b":
            out = f.fresh("%pbool")
            yes = string_global(self.declares, "True")
            no = string_global(self.declares, "False")
            f.emit(f"{out} = select i1 {x}, ptr {yes}, ptr {no}")
            return f"ptr {out}"
        if t.is_float and t.bits < 64:
            out = f.fresh("%pfp")
            f.emit(f"{out} = fpext {reg_type(t)} {x} to double")
            return f"double {out}"
        if t.is_int and t.bits < 32:
            out = f.fresh("%pint")
            f.emit(f"{out} = {'zext' if t.kind == 'u' else 'sext'} {reg_type(t)} {x} to i32")
            return f"i32 {out}"
        return f"{reg_type(t)} {x}"


def string_global(declares: set[str], text: str) -> str:
    """The name of a module constant holding text as a C string (added to declares)."""
    data = text.encode() + b"\0"
    name = "@.str." + hashlib.sha1(data).hexdigest()[:16]
    body = "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:02X}" for c in data)
    declares.add(f'{name} = private unnamed_addr constant [{len(data)} x i8] c"{body}", align 1')
    return name


def _cast_kind(src: ScalarType, dst: ScalarType) -> str:
    if dst.kind == "p" or src.kind == "p":  # a uint64 handle's address (builtins/hash_grid.py)
        return "inttoptr" if dst.kind == "p" else "ptrtoint"
    if src.is_float and dst.is_float:
        return "fpext" if dst.bits > src.bits else "fptrunc"
    if src.is_float:
        return "fptoui" if dst.kind in "ub" else "fptosi"
    if dst.is_float:
        return "uitofp" if src.kind in "ub" else "sitofp"
    src_bits = 1 if src.kind == "b" else src.bits
    if dst.bits > src_bits:
        return "zext" if src.kind in "ub" else "sext"
    return "trunc"


def _rules() -> dict[str, Callable[[OpEmitter, Op], None]]:
    from ..ir.prims import COMPARE_PRIMS, UNARY_FLOAT_PRIMS

    e = OpEmitter
    table: dict[str, Callable[[OpEmitter, Op], None]] = {
        "const": e.const, "arg": e.arg, "tid": e.tid, "neg": e.neg, "abs": e.abs_,
        "min": e.minmax, "max": e.minmax, "pow": e.pow_, "atan2": e.atan2, "copysign": e.copysign,
        "popcount": e.popcount, "not": e.not_,
        "shr": e.shr, "isnan": e.isnan, "isinf": e.isinf, "select": e.select, "cast": e.cast,
        "ptr_add": e.ptr_add, "permute": e.permute, "load": e.load, "store": e.store,
        "atomic_add": e.atomic,
        "atomic_min": e.atomic, "atomic_max": e.atomic, "check_bounds": e.check_bounds,
        "atomic_and": e.atomic, "atomic_or": e.atomic, "atomic_xor": e.atomic,
        "atomic_exch": e.atomic, "atomic_cas": e.compare_exchange, "bitcast": e.bitcast,
        "print": e.print_,
        "push": e.push, "pop": e.pop, "adj_add": e.adj_add, "adj_read": e.adj_read,
        "adj_take": e.adj_read,
    }
    for p in ("add", "sub", "mul", "div", "mod", "and", "or", "xor", "shl"):
        table[p] = e.binary
    table.update({p: e.compare for p in COMPARE_PRIMS})
    table.update({p: e.unary_float for p in UNARY_FLOAT_PRIMS})
    table.update(TILE_RULES)  # thread-local memory: codegen/llvm_tiles.py
    return table


RULES = _rules()
