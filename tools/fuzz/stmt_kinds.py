"""One generator function per statement kind (decl, alias, loops, stores, atomics, jumps...).

Each takes the ``Body`` being generated, the remaining statement budget and the nesting depth
left, and returns the statements it made. ``available`` says whether a kind can be drawn here.
"""

from __future__ import annotations

from collections.abc import Callable

from .model import (
    Assign,
    Atomic,
    Aug,
    Break,
    CompSet,
    Continue,
    Expr,
    For,
    If,
    IntAtomic,
    Return,
    Store,
    While,
)
from .stmts import COMPS, LOCAL_PREFIX, TID, Body, mod_nt, var


def _decl(b: Body, budget: int, depth: int) -> list:
    ty = b.rng.choices("FVMQI", weights=(6, 3, 1.2, 1.2, 0.6))[0]
    e = b.expr(ty, b.expr_depth())
    name = b.names.new(LOCAL_PREFIX[ty])
    b.declare(name, ty)
    return [Assign(name, ty, e, True)]


def _alias(b: Body, budget: int, depth: int) -> list:
    """``s = t`` (a plain copy), often followed by a loop that updates ``s`` from ``t``."""
    src, ty = b.pick_recent([nt for nt in b.visible() if nt[1] != "I"])
    name = b.names.new(LOCAL_PREFIX[ty])
    b.declare(name, ty)
    out: list = [Assign(name, ty, var(src, ty), True)]
    if depth > 0 and budget > 1 and b.rng.random() < 0.5:
        update = _self_update(b, name, ty, hint=var(src, ty))
        loop = _loop_shell(b, depth)
        b.nest.append("cfor" if isinstance(loop, For) and loop.stop.kind == "const" else "loop")
        loop.body = [update, *b.block(b.rng.randint(0, 1), depth - 1)]
        b.nest.pop()
        b.loops -= 1
        b.scopes.pop()
        out.append(loop)
    return out


def _self_update(b: Body, name: str, ty: str, hint: Expr | None = None) -> object:
    """``name = f(name, ...)``, ``name op= ...`` or ``name[c] op= ...``."""
    r = b.rng.random()
    if ty in "VMQ" and r < 0.3:
        return CompSet(name, b.comp_index(ty), b.rng.choice(["=", "+=", "*=", "-="]),
                       b.expr("F", b.expr_depth(), hint))
    if r < 0.6:
        e = b.wrap_hint(var(name, ty), b.expr_depth())
        if hint is not None:
            e = b.wrap_hint(e, 1) if b.rng.random() < 0.3 else _with_hint(b, e, hint)
        return Assign(name, ty, e, False)
    opname = b.rng.choice(["+", "*", "-"])
    # vector/matrix/quat `*=` scales by a scalar
    rhs_ty = "F" if opname == "*" else ty
    return Aug(name, ty, opname, b.expr(rhs_ty, b.expr_depth(), hint))


def _with_hint(b: Body, e: Expr, hint: Expr) -> Expr:
    if hint.ty == e.ty:
        return Expr("op", e.ty, (e, hint), "mul" if e.ty in "FQ" else ("matmul" if e.ty == "M"
                                                                           else "add"))
    return e


def _reassign(b: Body, budget: int, depth: int) -> list:
    name, ty = b.pick_recent(b.visible(mutable=True))
    if ty == "I":
        return [Assign(name, ty, b.expr("I", 1), False)]
    return [_self_update(b, name, ty)]


def _aug(b: Body, budget: int, depth: int) -> list:
    name, ty = b.pick_recent([nt for nt in b.visible(mutable=True) if nt[1] != "I"])
    opname = b.rng.choice(["+", "-", "*"])
    rhs_ty = "F" if opname == "*" else ty
    return [Aug(name, ty, opname, b.expr(rhs_ty, b.expr_depth()))]


def _comp(b: Body, budget: int, depth: int) -> list:
    name, ty = b.pick_recent([nt for nt in b.visible(mutable=True) if nt[1] in "VMQ"])
    op = b.rng.choice(["=", "+=", "-=", "*="])
    return [CompSet(name, b.comp_index(ty), op, b.expr("F", b.expr_depth()))]


def _store(b: Body, budget: int, depth: int) -> list:
    arr: str = b.rng.choice(b.arrays_with("out", "inout"))
    ty = b.arrays[arr]
    idx = TID if b.rng.random() < 0.75 else b.index(arr)
    if ty in "VMQ" and b.rng.random() < 0.3:
        return [Store(arr, idx, "=", b.expr("F", b.expr_depth()), b.rng.choice(COMPS[ty]))]
    return [Store(arr, idx, "=", b.expr(ty, b.expr_depth()))]


def _inplace(b: Body, budget: int, depth: int) -> list:
    """``y[tid] = f(y[tid])``: read an element, then overwrite it."""
    arr = b.rng.choice(b.arrays_with("inout"))
    ty = b.arrays[arr]
    here = Expr("load", ty, (TID,), arr)
    return [Store(arr, TID, "=", b.wrap_hint(here, b.expr_depth()))]


def _atomic(b: Body, budget: int, depth: int) -> list:
    arr = b.rng.choice(b.arrays_with("acc"))
    ty = b.arrays[arr]
    idx = b.index() if b.rng.random() < 0.7 else Expr("const", "I", data=0)
    e = b.expr(ty, b.expr_depth())
    if b.rng.random() < 0.5:
        return [Atomic(b.rng.choice(["add", "add", "sub"]), arr, idx, e)]
    return [Store(arr, idx, b.rng.choice(["+=", "+=", "-="]), e)]


def _intatomic(b: Body, budget: int, depth: int) -> list:
    arr = b.rng.choice(b.arrays_with("slots", "slots_atomic"))
    fn = b.rng.choice(["exch", "exch", "cas", "or", "xor", "and"])
    if fn == "exch":
        args: tuple = (mod_nt(b.int_leaf()),)
    elif fn == "cas":
        args = (mod_nt(b.int_leaf()), mod_nt(b.int_leaf()))
    else:
        args = (Expr("const", "I", data=b.rng.randint(1, 3)),)
    stmt = IntAtomic(b.names.new("i"), fn, arr, b.index(), args)
    b.declare(stmt.name, "I")
    return [stmt]


def _if(b: Body, budget: int, depth: int) -> list:
    cond = b.cond(b.expr_depth())
    n = b.rng.randint(1, max(1, min(budget - 1, 4)))
    b.nest.append("if")
    body = b.block(n, depth - 1)
    orelse = b.block(b.rng.randint(1, 2), depth - 1) if b.rng.random() < 0.45 else []
    b.nest.pop()
    return [If(cond, body, orelse)]


def _loop_shell(b: Body, depth: int, kind: str | None = None) -> For | While:
    """A loop with an empty body; the caller fills it and then closes its scope."""
    rng = b.rng
    runtime = b.runtime + [n for n, _ in b.visible("I") if n.startswith("n")]
    if runtime and rng.random() < 0.55:
        stop = var(rng.choice(runtime), "I")
    else:
        stop = Expr("const", "I", data=rng.randint(1, 4))
    kind = kind or ("while" if rng.random() < 0.25 else "for")
    loop: For | While
    if kind == "for":
        loop = For(b.names.new("j"), stop, [])
    else:
        cond = b.cond(1) if rng.random() < 0.4 else None
        loop = While(b.names.new("k"), stop, cond, [])
    b.scopes.append([(loop.var, "I")])
    b.readonly.add(loop.var)
    b.loops += 1
    return loop


def _loop(b: Body, budget: int, depth: int, kind: str) -> list:
    loop = _loop_shell(b, depth, kind)
    n = b.rng.randint(1, max(1, min(budget - 1, 5)))
    b.nest.append("cfor" if isinstance(loop, For) and loop.stop.kind == "const" else "loop")
    loop.body = b.block(n, depth - 1, new_scope=False)
    b.nest.pop()
    b.loops -= 1
    b.scopes.pop()
    return [loop]


def _jump(b: Body, budget: int, depth: int) -> list:
    jump = Break() if b.rng.random() < 0.55 else Continue()
    return [If(b.cond(b.expr_depth()), [jump])]


def _ret(b: Body, budget: int, depth: int) -> list:
    value = b.expr(b.ret, b.expr_depth()) if b.ret else None
    return [If(b.cond(b.expr_depth()), [Return(value)])]


KINDS: dict[str, Callable[[Body, int, int], list]] = {
    "decl": _decl, "alias": _alias, "reassign": _reassign, "aug": _aug, "comp": _comp,
    "store": _store, "inplace": _inplace, "atomic": _atomic, "intatomic": _intatomic,
    "if": _if, "for": lambda b, n, d: _loop(b, n, d, "for"),
    "while": lambda b, n, d: _loop(b, n, d, "while"), "jump": _jump, "ret": _ret,
}


def _avoided(b: Body, kind: str) -> bool:
    """Known bugs C, D, E: array effects the generator may be told to leave out."""
    if kind == "intatomic" and "C" in b.avoid:
        return b.loops > 0
    if kind == "atomic" and "D" in b.avoid:
        return b.loops > 0
    if kind in ("store", "inplace") and "E" in b.avoid:  # a loop nested in a loop or an if
        return len(b.nest) > 1 and any(n in ("cfor", "loop") for n in b.nest[1:])
    return False


def available(b: Body, kind: str, depth: int) -> bool:
    if kind in ("if", "for", "while"):
        return depth > 0
    if kind == "alias":
        return any(t != "I" for _, t in b.visible())
    if kind == "reassign":
        return bool(b.visible(mutable=True))
    if kind == "aug":
        return any(t != "I" for _, t in b.visible(mutable=True))
    if kind == "comp":
        return any(t in "VMQ" for _, t in b.visible(mutable=True))
    if kind in ("store", "inplace", "atomic", "intatomic"):
        role = {"store": ("out", "inout"), "inplace": ("inout",), "atomic": ("acc",),
                "intatomic": ("slots", "slots_atomic")}[kind]
        return b.in_kernel and bool(b.arrays_with(*role)) and not _avoided(b, kind)
    if kind == "jump":
        return b.loops > 0
    if kind == "ret":
        return b.ret is not None or (b.in_kernel and b.rng.random() < 0.3)
    return True
