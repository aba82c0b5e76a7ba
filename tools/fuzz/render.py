"""Python source for a case: funcs, kernels and a ``program(a)`` that launches them.

The same text runs on gradloom and on warp-lang (only the import differs). A *traced* rendering
adds an int32 array ``_tr`` to every kernel and func: each branch condition, kink (min, max, abs)
and int cast adds to its own slot of ``_tr``, so two runs can be compared for "did a branch, a
kink or a cast flip" without touching the values computed.
"""

from __future__ import annotations

from .model import (
    Assign,
    Atomic,
    Aug,
    Break,
    Case,
    Clone,
    CompSet,
    Continue,
    Copy,
    Expr,
    For,
    FuncDef,
    If,
    IntAtomic,
    KernelDef,
    Launch,
    Return,
    Store,
    While,
    stmt_exprs,
    walk_exprs,
    walk_stmts,
)
from .ops import OPS, TYPE_NAMES

TRACE_SIZE = 4096
IND = "    "

TRACE_HELPERS = '''
@wp.func
def _tb(tr: wp.array(dtype=wp.int32), site: int, c: bool) -> bool:
    if c:
        wp.atomic_add(tr, site, 1)
    else:
        wp.atomic_add(tr, site, 65536)
    return c


@wp.func
def _ti(tr: wp.array(dtype=wp.int32), site: int, v: int) -> int:
    wp.atomic_add(tr, site, v + 1)
    return v
'''

KINK_HELPER = '''

@wp.func
def _t{name}_{bits}(tr: wp.array(dtype=wp.int32), site: int{params}) -> wp.float{bits}:
    _tb(tr, site, {cond})
    return wp.{name}({args})
'''


BIG_HELPER = '''

@wp.func
def _big_{ty}{bits}(tr: wp.array(dtype=wp.int32), x: {tyname}):
    if not ({norm2} < wp.float{bits}(1.0e12)):
        wp.atomic_add(tr, 0, 1)
'''
BIG_NORM2 = {"F": "x * x", "V": "wp.dot(x, x)", "M": "wp.ddot(x, x)", "Q": "wp.dot(x, x)"}
BIG_SLOT = 0  # trace slot counting values with |x| > 1e6 or not finite (sites start at 1)


def trace_helpers() -> str:
    out = [TRACE_HELPERS]
    for dtype, names in TYPE_NAMES.items():
        for ty, norm2 in BIG_NORM2.items():
            out.append(BIG_HELPER.format(ty=ty, bits=dtype[-2:], tyname=names[ty], norm2=norm2))
    for bits in (64, 32):
        ab = f", a: wp.float{bits}, b: wp.float{bits}"
        out.append(KINK_HELPER.format(name="min", bits=bits, params=ab, cond="a < b", args="a, b"))
        out.append(KINK_HELPER.format(name="max", bits=bits, params=ab, cond="a < b", args="a, b"))
        out.append(KINK_HELPER.format(name="abs", bits=bits, params=f", a: wp.float{bits}",
                                      cond=f"a < wp.float{bits}(0.0)", args="a"))
    return "".join(out)


def kernel_params(case: Case, k: KernelDef) -> tuple[list[str], list[str]]:
    """(array parameters, int parameters) a kernel uses, in a fixed order."""
    arrays: set[str] = set()
    ints: set[str] = set()
    for s in walk_stmts(k.body):
        if isinstance(s, (Store, Atomic, IntAtomic)):
            arrays.add(s.arr)
        for e in stmt_exprs(s):
            for sub in walk_exprs(e):
                if sub.kind == "load":
                    arrays.add(sub.data)
                elif sub.kind == "var" and sub.data in case.ints:
                    ints.add(sub.data)
                elif sub.kind == "op" and sub.data == "mod":
                    ints.add("nt")
    return ([a.name for a in case.arrays if a.name in arrays],
            [n for n in case.ints if n in ints])


def local_types(case: Case) -> dict[str, str]:
    """Type of every local and parameter (names are unique within a case)."""
    out: dict[str, str] = {}
    for f in case.funcs:
        out.update(dict(f.params))
    for body in [f.body for f in case.funcs] + [k.body for k in case.kernels]:
        for s in walk_stmts(body):
            if isinstance(s, Assign):
                out[s.name] = s.ty
            elif isinstance(s, IntAtomic):
                out[s.name] = "I"
    return out


class Renderer:
    """Renders one case; ``dtype`` overrides the case's float width (for the float64 twin)."""

    def __init__(self, case: Case, *, dtype: str | None = None, traced: bool = False,
                 suffix: str = "") -> None:
        self.case, self.traced, self.suffix = case, traced, suffix
        self.dtype = dtype or case.dtype
        self.tn = TYPE_NAMES[self.dtype]
        self.bits = 64 if self.dtype == "float64" else 32
        self.site = 0
        self.types = local_types(case)

    def next_site(self) -> int:
        self.site += 1
        return self.site % TRACE_SIZE

    def tyname(self, ty: str) -> str:
        return "int" if ty == "I" else self.tn[ty]

    # ------------------------------------------------------------------ expressions

    def expr(self, e: Expr) -> str:
        if e.kind == "var":
            return str(e.data)
        if e.kind == "tid":
            return "tid"
        if e.kind == "const":
            return str(e.data) if e.ty == "I" else f"{self.tn['F']}({e.data!r})"
        if e.kind == "load":
            return f"{e.data}[{self.expr(e.args[0])}]"
        if e.kind == "comp":
            dyn = iter(e.args[1:])
            index = [str(i) if i is not None else self.expr(next(dyn)) for i in e.data]
            return f"{self.expr(e.args[0])}[{', '.join(index)}]"
        if e.kind == "call":
            args = [self.expr(a) for a in e.args]
            return f"{e.data}{self.suffix}({', '.join((['_tr'] if self.traced else []) + args)})"
        if e.kind == "ternary":
            c, a, b = e.args
            return f"({self.expr(a)} if {self.cond(c)} else {self.expr(b)})"
        return self.op(e)

    def op(self, e: Expr) -> str:
        o = OPS[(e.ty, e.data)]
        args = [self.cond(a) if a.ty == "B" and o.ty != "B" else self.expr(a) for a in e.args]
        tmpl = o.traced if self.traced and o.traced else o.tmpl
        site = self.next_site() if "{site}" in tmpl else 0
        return tmpl.format(*args, bits=self.bits, site=site, **self.tn)

    def cond(self, e: Expr) -> str:
        text = self.expr(e)
        if self.traced:
            return f"_tb(_tr, {self.next_site()}, {text})"
        return text

    # ------------------------------------------------------------------ statements

    def block(self, body: list, ind: str) -> list[str]:
        out: list[str] = []
        for s in body:
            out += self.stmt(s, ind)
        return out or [ind + "pass"]

    def stmt(self, s: object, ind: str) -> list[str]:
        lines = self.simple(s, ind)
        if self.traced and isinstance(s, (Assign, Aug, CompSet)) and self.types[s.name] != "I":
            lines.append(f"{ind}_big_{self.types[s.name]}{self.bits}(_tr, {s.name})")
        return lines

    def simple(self, s: object, ind: str) -> list[str]:
        if isinstance(s, Assign):
            if s.expr.kind == "const" and s.ty == "I":
                return [f"{ind}{s.name} = int({s.expr.data})"]
            return [f"{ind}{s.name} = {self.expr(s.expr)}"]
        if isinstance(s, Aug):
            return [f"{ind}{s.name} {s.op}= {self.expr(s.expr)}"]
        if isinstance(s, CompSet):
            index = ", ".join(self.expr(i) if isinstance(i, Expr) else str(i) for i in s.index)
            return [f"{ind}{s.name}[{index}] {s.op} {self.expr(s.expr)}"]
        if isinstance(s, Store):
            comp = f"[{', '.join(map(str, s.comp))}]" if s.comp else ""
            target = f"{s.arr}[{self.expr(s.idx)}]{comp}"
            return [f"{ind}{target} {s.op} {self.expr(s.expr)}"]
        if isinstance(s, Atomic):
            return [f"{ind}wp.atomic_{s.fn}({s.arr}, {self.expr(s.idx)}, {self.expr(s.expr)})"]
        if isinstance(s, IntAtomic):
            args = ", ".join([s.arr, self.expr(s.idx)] + [self.expr(a) for a in s.args])
            return [f"{ind}{s.name} = wp.atomic_{s.fn}({args})"]
        return self.control(s, ind)

    def control(self, s: object, ind: str) -> list[str]:
        if isinstance(s, If):
            out = [f"{ind}if {self.cond(s.cond)}:", *self.block(s.body, ind + IND)]
            if s.orelse:
                out += [f"{ind}else:", *self.block(s.orelse, ind + IND)]
            return out
        if isinstance(s, For):
            return [f"{ind}for {s.var} in range({self.expr(s.stop)}):",
                    *self.block(s.body, ind + IND)]
        if isinstance(s, While):
            cond = f"{s.var} < {self.expr(s.bound)}"
            if s.cond is not None:
                cond = f"{cond} and {self.cond(s.cond)}"
            return [f"{ind}{s.var} = int(0)", f"{ind}while {cond}:",
                    f"{ind}{IND}{s.var} = {s.var} + 1", *self.block(s.body, ind + IND)]
        if isinstance(s, Break):
            return [ind + "break"]
        if isinstance(s, Continue):
            return [ind + "continue"]
        if isinstance(s, Return):
            return [ind + "return" + (f" {self.expr(s.expr)}" if s.expr is not None else "")]
        raise TypeError(f"cannot render {s!r}")

    # ------------------------------------------------------------------ definitions

    def func(self, f: FuncDef) -> list[str]:
        params = [f"{n}: {self.tyname(t)}" for n, t in f.params]
        if self.traced:
            params.insert(0, "_tr: wp.array(dtype=wp.int32)")
        head = f"def {f.name}{self.suffix}({', '.join(params)}) -> {self.tyname(f.ret)}:"
        body = [line for s in f.body for line in self.stmt(s, IND)]
        return ["@wp.func", head, *body, f"{IND}return {self.expr(f.result)}"]

    def kernel(self, k: KernelDef) -> list[str]:
        arrays, ints = kernel_params(self.case, k)
        params = [f"{n}: wp.array(dtype={self.array_dtype(n)})" for n in arrays]
        params += [f"{n}: int" for n in ints]
        if self.traced:
            params.append("_tr: wp.array(dtype=wp.int32)")
        head = f"def {k.name}{self.suffix}({', '.join(params)}):"
        return ["@wp.kernel", head, f"{IND}tid = wp.tid()", *self.block(k.body, IND)]

    def array_dtype(self, name: str) -> str:
        ty = self.case.array(name).ty
        return "wp.int32" if ty == "I" else self.tn[ty]

    def program(self) -> list[str]:
        head = f"def program{self.suffix}(a{', tr' if self.traced else ''}):"
        out = [head]
        kernels = {k.name: k for k in self.case.kernels}
        for st in self.case.steps:
            if isinstance(st, Launch):
                arrays, ints = kernel_params(self.case, kernels[st.kernel])
                args = [f'a["{st.bind[n]}"]' for n in arrays]
                args += [str(self.case.ints[n]) for n in ints] + (["tr"] if self.traced else [])
                out.append(f"{IND}wp.launch({st.kernel}{self.suffix}, dim={self.case.nt}, "
                           f"inputs=[{', '.join(args)}], device=\"cpu\")")
            elif isinstance(st, Clone):
                out.append(f'{IND}a["{st.dst}"] = wp.clone(a["{st.src}"])')
            elif isinstance(st, Copy):
                out.append(f'{IND}wp.copy(a["{st.dst}"], a["{st.src}"])')
        return out

    def text(self) -> str:
        parts = [self.func(f) for f in self.case.funcs]
        parts += [self.kernel(k) for k in self.case.kernels]
        parts.append(self.program())
        return "\n\n\n".join("\n".join(p) for p in parts) + "\n"


def module_text(renderers: list[Renderer], lib: str, *, no_backward: bool = False) -> str:
    """A module holding the given renderings (warp-lang compiles a module as one unit)."""
    head = [f'"""Fuzz case(s) {", ".join(r.case.origin or r.case.tag for r in renderers)}: '
            f'generated by tools.fuzz."""', "", f"import {lib} as wp", ""]
    if no_backward:
        head.append('wp.set_module_options({"enable_backward": False})\n')
    if any(r.traced for r in renderers):
        head.append(trace_helpers())
    body = "\n\n".join(r.text() for r in renderers)
    return "\n".join(head) + "\n\n" + body


def case_module(case: Case, lib: str = "gradloom", *, dtype: str | None = None,
                traced: bool = False) -> str:
    return module_text([Renderer(case, dtype=dtype, traced=traced)], lib)
