"""LLVM IR of `lgemm` (c = alpha * a @ b (+ beta * c) on tile buffers): a register-blocked,
vectorised micro-kernel on the CPU, plain register-blocked loops where vectors do not fit.

The product is a function of its own in the module (one per shape and view), called where the
op stands. On the CPU a block of MR rows by NV vectors of C stays in vector registers through
the k loop (unrolled U times): each step loads NV vectors of a row of B, broadcasts MR elements
of A and issues MR x NV fused multiply-adds. Where a row of B or C is not contiguous, or the
target has no vectors to use (NVPTX: `tile_vectors` False on its emitter), the same blocking
runs on scalars. The tile's adjoint never reaches here: autodiff differentiates the scalar IR
loops builtins/tile_math.py emits when lowering for it.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from ..ir.nodes import Op
from .llvm_types import reg_type


class Gemm(NamedTuple):
    """lgemm's attr: shapes (m x k) @ (k x n), then each tile's element offset, row and column
    strides (in elements) in its buffer, and whether c's old values are read (beta given)."""

    m: int
    n: int
    k: int
    a_off: int
    a_rs: int
    a_cs: int
    b_off: int
    b_rs: int
    b_cs: int
    c_off: int
    c_rs: int
    c_cs: int
    read_c: bool


class Plan(NamedTuple):
    """How the loops are blocked: vector width (1: scalars), rows and vectors per block, k unroll."""

    vw: int
    mr: int
    nv: int
    u: int


@functools.cache
def host_vector_bytes() -> int:
    """The widest vector registers of the host CPU in bytes (16: SSE only)."""
    import llvmlite.binding as llvm

    features = set(llvm.get_host_cpu_features().flatten().split(","))
    if "+avx512f" in features:
        return 64
    return 32 if "+avx" in features else 16


def plan(g: Gemm, size: int, vector_bytes: int) -> Plan:
    """The blocking for one product: the widest vector dividing n whose rows are contiguous,
    then as many rows and vectors per block as 16 accumulators allow."""
    vw = 1
    if g.b_cs == 1 and g.c_cs == 1:
        for w in (vector_bytes // size, vector_bytes // size // 2, vector_bytes // size // 4):
            if w >= 2 and g.n % w == 0:
                vw = w
                break
    cols = g.n // vw
    nv = next(v for v in (4, 2, 1) if cols % v == 0)
    rows = (8, 6, 4, 3, 2, 1) if vw > 1 else (4, 2, 1)
    mr = next(r for r in rows if g.m % r == 0 and r * nv <= 16)
    u = next(x for x in (8, 4, 2, 1) if g.k % x == 0)
    return Plan(vw, mr, nv, u)


def lgemm(e: Any, s: Op) -> None:
    """The call of the product's function (added to the module once per shape and view)."""
    g = Gemm(*s.attr)
    t = s.args[3].type
    vectors = host_vector_bytes() if getattr(e, "tile_vectors", True) else 0
    p = plan(g, t.size, vectors)
    name = "gl_lgemm_" + "_".join(str(int(x)).replace("-", "m") for x in (*s.attr, t.size, *p))
    ty = reg_type(t)
    vt = f"<{p.vw} x {ty}>" if p.vw > 1 else ty
    e.declares.add(f"declare {vt} @{_fma(p.vw, t.size)}({vt}, {vt}, {vt})")
    e.declares.add(function_text(name, g, ty, t.size, p, cpu=vectors > 0))
    e.f.emit(f"call void @{name}(ptr {e.a(s, 0)}, ptr {e.a(s, 1)}, ptr {e.a(s, 2)}, "
             f"{ty} {e.a(s, 3)}, {ty} {e.a(s, 4)})")


class _Text:
    """Lines and fresh names of the product's function."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n = 0

    def fresh(self, p: str) -> str:
        self.n += 1
        return f"%{p}{self.n}"

    def emit(self, line: str) -> None:
        self.lines.append("  " + line)

    def index(self, const: int, terms: list[tuple[str, int]]) -> str:
        """The i64 value const + sum(name * factor)."""
        out = str(const)
        for v, f in terms:
            if f == 0:
                continue
            term = v
            if f != 1:
                term = self.fresh("m")
                self.emit(f"{term} = mul i64 {v}, {f}")
            nxt = self.fresh("x")
            self.emit(f"{nxt} = add i64 {out}, {term}")
            out = nxt
        return out

    def gep(self, ty: str, base: str, idx: str) -> str:
        p = self.fresh("p")
        self.emit(f"{p} = getelementptr {ty}, ptr {base}, i64 {idx}")
        return p


def function_text(name: str, g: Gemm, ty: str, size: int, p: Plan, cpu: bool) -> str:
    """The product's LLVM function: loops over row blocks (i), column blocks (j) and k."""
    vt = f"<{p.vw} x {ty}>" if p.vw > 1 else ty
    w = _Text()
    al, be = _prologue(w, name, g, ty, size, p, cpu)
    w.emit("br label %iloop")
    w.lines.append("iloop:")
    w.emit("%i = phi i64 [0, %entry], [%inext, %iend]")
    w.emit("br label %jloop")
    w.lines.append("jloop:")
    w.emit("%j = phi i64 [0, %iloop], [%jnext, %jend]")
    w.emit("br label %kloop")
    w.lines.append("kloop:")
    w.emit("%k = phi i64 [0, %jloop], [%knext, %kloop]")
    acc = _k_steps(w, g, ty, vt, size, p)
    w.emit(f"%knext = add i64 %k, {p.u}")
    w.emit(f"%kdone = icmp eq i64 %knext, {g.k}")
    w.emit("br i1 %kdone, label %jend, label %kloop")
    w.lines.append("jend:")
    zero = w.fresh("bz")
    w.emit(f"{zero} = fcmp oeq {ty} %beta, 0.0")
    for (r, v), value in acc.items():
        ci = w.index(g.c_off + r * g.c_rs + v * p.vw * g.c_cs, [("%i", g.c_rs), ("%j", g.c_cs)])
        _store_c(w, vt, ty, ci, size, value, al, be, zero, g.read_c)
    w.emit(f"%jnext = add i64 %j, {p.vw * p.nv}")
    w.emit(f"%jdone = icmp eq i64 %jnext, {g.n}")
    w.emit("br i1 %jdone, label %iend, label %jloop")
    w.lines.append("iend:")
    w.emit(f"%inext = add i64 %i, {p.mr}")
    w.emit(f"%idone = icmp eq i64 %inext, {g.m}")
    w.emit("br i1 %idone, label %exit, label %iloop")
    w.lines.append("exit:")
    w.emit("ret void")
    w.lines.append("}")
    return "\n".join(w.lines)


def _prologue(w: _Text, name: str, g: Gemm, ty: str, size: int, p: Plan,
              cpu: bool) -> tuple[str, str]:
    """The function's signature and entry block; alpha and beta splat to vectors, returned.
    On the CPU, large products stay out of line (a kernel may hold several)."""
    attrs = "nounwind"
    if cpu:
        attrs += f' "min-legal-vector-width"="{p.vw * size * 8}"'
        if g.m * g.n * g.k >= 512:
            attrs += " noinline"
    ptrs = ", ".join(f"ptr noalias nocapture {r}%{p}" for p, r in
                     (("a", "readonly "), ("b", "readonly "), ("c", "")))
    w.lines.append(f"define internal void @{name}({ptrs}, {ty} %alpha, {ty} %beta) {attrs} {{")
    w.lines.append("entry:")
    return _splat(w, "%alpha", ty, p.vw), _splat(w, "%beta", ty, p.vw)


def _k_steps(w: _Text, g: Gemm, ty: str, vt: str, size: int,
             p: Plan) -> dict[tuple[int, int], str]:
    """The k loop's body: `p.u` unrolled steps of MR x NV fused multiply-adds (A broadcast,
    rows of B as vectors), the accumulators' phis placed at the loop's head; each block's
    accumulator after the last step, by (row, vector)."""
    fma = _fma(p.vw, size)
    blocks = [(r, v) for r in range(p.mr) for v in range(p.nv)]
    acc = {rv: f"%acc{rv[0]}_{rv[1]}" for rv in blocks}
    head = len(w.lines)
    for u in range(p.u):
        ku = w.index(0, [("%k", 1)]) if u == 0 else w.index(u, [("%k", 1)])
        bv = [_load(w, vt, ty, "%b", w.index(g.b_off + v * p.vw * g.b_cs,
                                             [(ku, g.b_rs), ("%j", g.b_cs)]), size)
              for v in range(p.nv)]
        for r in range(p.mr):
            ai = w.index(g.a_off + r * g.a_rs, [("%i", g.a_rs), (ku, g.a_cs)])
            a = _splat(w, _load(w, ty, ty, "%a", ai, size), ty, p.vw)
            for v in range(p.nv):
                nxt = w.fresh("acc")
                w.emit(f"{nxt} = call {vt} @{fma}({vt} {a}, {vt} {bv[v]}, {vt} {acc[r, v]})")
                acc[r, v] = nxt
    phis = [f"  %acc{r}_{v} = phi {vt} [zeroinitializer, %jloop], [{acc[r, v]}, %kloop]"
            for r, v in blocks]
    w.lines[head:head] = phis
    return acc


def _fma(vw: int, size: int) -> str:
    return f"llvm.fma.v{vw}f{size * 8}" if vw > 1 else f"llvm.fma.f{size * 8}"


def _splat(w: _Text, x: str, ty: str, vw: int) -> str:
    if vw == 1:
        return x
    one = w.fresh("ins")
    w.emit(f"{one} = insertelement <{vw} x {ty}> poison, {ty} {x}, i64 0")
    out = w.fresh("splat")
    w.emit(f"{out} = shufflevector <{vw} x {ty}> {one}, <{vw} x {ty}> poison, "
           f"<{vw} x i32> zeroinitializer")
    return out


def _load(w: _Text, vt: str, ty: str, base: str, idx: str, size: int) -> str:
    p = w.gep(ty, base, idx)
    out = w.fresh("ld")
    w.emit(f"{out} = load {vt}, ptr {p}, align {size}")
    return out


def _store_c(w: _Text, vt: str, ty: str, idx: str, size: int, acc: str, al: str, be: str,
             zero: str, read_c: bool) -> None:
    """c[idx] = alpha * acc (+ beta * c[idx], where beta is not 0: with beta 0 c is not read
    into the result, so NaN or inf there stays out, as Warp)."""
    p = w.gep(ty, "%c", idx)
    res = w.fresh("r")
    w.emit(f"{res} = fmul {vt} {al}, {acc}")
    if read_c:
        old, kept, pick, out = w.fresh("old"), w.fresh("kept"), w.fresh("pick"), w.fresh("r")
        w.emit(f"{old} = load {vt}, ptr {p}, align {size}")
        w.emit(f"{kept} = fmul {vt} {be}, {old}")
        w.emit(f"{pick} = select i1 {zero}, {vt} zeroinitializer, {vt} {kept}")
        w.emit(f"{out} = fadd {vt} {res}, {pick}")
        res = out
    w.emit(f"store {vt} {res}, ptr {p}, align {size}")
