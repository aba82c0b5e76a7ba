"""Random statements and expressions for one func or kernel body (the generator's inner part).

``Body`` tracks the names visible at each point (block scoping, see validate.py), which are
loop counters (read-only), the kernel's array roles, and whether a loop encloses the current
point. Recently declared names are preferred, so a copy ``s = t`` is likely to be mutated next
(in a loop, often): the aliasing patterns the fuzzer is after.
"""

from __future__ import annotations

import random
from typing import Any

from .model import (
    Assign,
    Atomic,
    Aug,
    Break,
    CompSet,
    Continue,
    Expr,
    For,
    FuncDef,
    If,
    IntAtomic,
    Return,
    Store,
    While,
)
from .ops import BY_TYPE, OPS

F_CONSTS = (0.5, 1.5, -0.75, 2.0, 0.25, 1.1, -1.25, 0.9)
LOCAL_PREFIX = {"F": "f", "V": "v", "M": "m", "Q": "q", "I": "i"}
COMPS: dict[str, list[tuple[int, ...]]] = {
    "V": [(0,), (1,), (2,)], "Q": [(0,), (1,), (2,), (3,)],
    "M": [(i, j) for i in range(3) for j in range(3)]}
# ops whose first argument has the result's type (to put a given value at the root)
WRAP = {"F": ["mul", "add", "sin", "sub", "div", "tanh"], "V": ["add", "scale", "sub"],
        "M": ["matmul", "add", "scale"], "Q": ["mul", "add", "scale"]}

STMT_WEIGHTS = {
    "decl": 16, "alias": 10, "reassign": 12, "aug": 8, "comp": 8, "store": 6, "inplace": 6,
    "atomic": 6, "intatomic": 3, "if": 9, "for": 9, "while": 4, "jump": 6, "ret": 3,
}


def var(name: str, ty: str) -> Expr:
    return Expr("var", ty, data=name)


def op(ty: str, name: str, *args: Expr) -> Expr:
    return Expr("op", ty, tuple(args), name)


def mod_nt(e: Expr) -> Expr:
    return Expr("op", "I", (e,), "mod")


TID = Expr("tid", "I")


class Body:
    """Generates the statements of one body."""

    def __init__(self, rng: random.Random, names: Any, size: Any, *, funcs: list[FuncDef],
                 arrays: dict[str, str], roles: dict[str, str], in_kernel: bool,
                 ret: str | None, runtime: list[str] | None = None,
                 avoid: frozenset[str] = frozenset()) -> None:
        self.rng, self.names, self.size = rng, names, size
        self.funcs, self.arrays, self.roles = funcs, arrays, roles
        self.in_kernel, self.ret = in_kernel, ret
        self.runtime = [n for n in (runtime or []) if n != "nt"]
        self.scopes: list[list[tuple[str, str]]] = [[]]
        self.readonly: set[str] = set()
        self.loops = 0
        self.avoid = avoid
        self.nest: list[str] = []  # enclosing blocks: if, cfor (constant bound), loop

    # ------------------------------------------------------------------ names in scope

    def declare(self, name: str, ty: str, readonly: bool = False) -> None:
        self.scopes[-1].append((name, ty))
        if readonly:
            self.readonly.add(name)

    def visible(self, ty: str | None = None, mutable: bool = False) -> list[tuple[str, str]]:
        out = [nt for sc in self.scopes for nt in sc]
        if ty is not None:
            out = [nt for nt in out if nt[1] == ty]
        if mutable:
            out = [nt for nt in out if nt[0] not in self.readonly]
        return out

    def pick_recent(self, items: list) -> Any:
        w = [1.0 + 3.0 * i / max(1, len(items)) for i in range(len(items))]
        return self.rng.choices(items, weights=w)[0]

    def arrays_with(self, *roles: str, ty: str | None = None) -> list[str]:
        return [n for n, r in self.roles.items()
                if r in roles and (ty is None or self.arrays[n] == ty)]

    # ------------------------------------------------------------------ expressions

    def expr(self, ty: str, depth: int, hint: Expr | None = None) -> Expr:
        rng = self.rng
        if hint is not None and hint.ty == ty and rng.random() < 0.3:
            return hint
        if ty == "B":
            return self.cond(depth, hint)
        if depth <= 0 or rng.random() < 0.25:
            return self.leaf(ty, hint)
        r = rng.random()
        if ty in "FV" and r < 0.06:
            return Expr("ternary", ty, (self.cond(depth - 1, hint), self.expr(ty, depth - 1, hint),
                                        self.expr(ty, depth - 1, hint)))
        calls = [f for f in self.funcs if f.ret == ty]
        if calls and r < 0.16:
            f = rng.choice(calls)
            return Expr("call", ty, tuple(self.arg(t, depth - 1, hint) for _, t in f.params),
                        f.name)
        ops = [o for o in BY_TYPE[ty] if o.weight > 0 and (self.in_kernel or o.name != "mod")]
        o = rng.choices(ops, weights=[o.weight for o in ops])[0]
        return op(ty, o.name, *(self.expr(t, depth - 1, hint) for t in o.args))

    def arg(self, ty: str, depth: int, hint: Expr | None) -> Expr:
        if ty == "I":
            return self.int_leaf(small=True)
        return self.expr(ty, depth, hint)

    def cond(self, depth: int, hint: Expr | None = None) -> Expr:
        rng = self.rng
        if depth > 0 and rng.random() < 0.1:
            o = rng.choice(["and", "or", "not"])
            n = 1 if o == "not" else 2
            return op("B", o, *(self.cond(depth - 1, hint) for _ in range(n)))
        if rng.random() < 0.12 and self.visible("I"):
            return op("B", "ilt", self.int_leaf(), self.int_leaf())
        name = rng.choice(["lt", "gt"])
        return op("B", name, self.expr("F", max(0, depth - 1), hint), self.leaf("F", hint))

    def leaf(self, ty: str, hint: Expr | None = None) -> Expr:
        rng = self.rng
        if hint is not None and hint.ty == ty and rng.random() < 0.3:
            return hint
        if ty == "I":
            return self.int_leaf()
        if ty == "B":
            return self.cond(0, hint)
        cands: list[tuple[float, Any]] = []
        names = self.visible(ty)
        if names:
            cands.append((5.0, lambda: var(*self.pick_recent(names))))
        readable = self.arrays_with("in", "inout", ty=ty)
        if readable:
            cands.append((2.5, lambda: self.load_of(rng.choice(readable))))
        if ty == "F":
            cands.append((1.5, lambda: Expr("const", "F", data=rng.choice(F_CONSTS))))
            comps = [nt for nt in self.visible() if nt[1] in "VMQ"]
            if comps:
                cands.append((2.0, lambda: self.comp_of(var(*self.pick_recent(comps)))))
            creadable = [a for a in self.arrays_with("in", "inout") if self.arrays[a] in "VMQ"]
            if creadable:
                cands.append((1.0, lambda: self.comp_of(self.load_of(rng.choice(creadable)))))
        if not cands:
            return self.build_from_scalars(ty)
        w = [c[0] for c in cands]
        return rng.choices(cands, weights=w)[0][1]()

    def build_from_scalars(self, ty: str) -> Expr:
        f = lambda: self.leaf("F")  # noqa: E731
        if ty == "V":
            return op("V", "vec", f(), f(), f())
        if ty == "M":
            return op("M", "outer", self.leaf("V"), self.leaf("V"))
        return op("Q", "quat", f(), f(), f(), f())

    def comp_of(self, base: Expr) -> Expr:
        index = self.comp_index(base.ty)
        dyn = tuple(i for i in index if isinstance(i, Expr))
        return Expr("comp", "F", (base, *dyn), tuple(None if isinstance(i, Expr) else i
                                                     for i in index))

    def comp_index(self, ty: str) -> tuple:
        """A component index: constants, sometimes one computed at run time (``j % 3``)."""
        index: list[Any] = list(self.rng.choice(COMPS[ty]))
        ints = [v for v in self.visible("I")] or ([("tid", "I")] if self.in_kernel else [])
        if ints and self.rng.random() < 0.2:
            pos = self.rng.randrange(len(index))
            e = op("I", "add", self.int_leaf(), Expr("const", "I", data=self.rng.randint(0, 2)))
            index[pos] = op("I", "mod4" if ty == "Q" else "mod3", e)
        return tuple(index)

    def load_of(self, arr: str) -> Expr:
        return Expr("load", self.arrays[arr], (self.index(arr),), arr)

    def int_leaf(self, small: bool = False) -> Expr:
        rng = self.rng
        cands: list[Expr] = [Expr("const", "I", data=rng.randint(0, 3))]
        if self.in_kernel and not small:
            cands.append(TID)
        cands += [var(n, "I") for n, _ in self.visible("I")]
        if small:
            cands += [var(n, "I") for n in self.runtime]
        return rng.choice(cands)

    def index(self, arr: str | None = None) -> Expr:
        """A valid element index of ``arr``, in [0, nt)."""
        rng = self.rng
        r = rng.random()
        if "B" in self.avoid and arr is not None and self.roles.get(arr) == "inout":
            return TID  # known bug B: another thread reads an element this kernel overwrites
        if r < 0.55 or not self.in_kernel:
            return TID
        if r < 0.72:
            return mod_nt(op("I", "add", TID, Expr("const", "I", data=rng.randint(1, 3))))
        slots = self.arrays_with("slots", "slots_read")
        if slots and r < 0.8:
            return mod_nt(Expr("load", "I", (TID,), rng.choice(slots)))
        if r < 0.9:
            return mod_nt(op("I", "add", self.int_leaf(), TID))
        return mod_nt(op("I", "cast", self.expr("F", 1)))

    def wrap_hint(self, hint: Expr, depth: int) -> Expr:
        o = OPS[(hint.ty, self.rng.choice(WRAP[hint.ty]))]
        rest = [self.expr(t, depth - 1) for t in o.args[1:]]
        return op(hint.ty, o.name, hint, *rest)

    # ------------------------------------------------------------------ statements

    def block(self, budget: int, depth: int, new_scope: bool = True) -> list:
        if new_scope:
            self.scopes.append([])
        out: list = []
        while budget > 0:
            stmts = self.stmt(budget, depth)
            out += stmts
            budget -= max(1, sum(_count(s) for s in stmts))
        if new_scope:
            self.scopes.pop()
        return out

    def stmt(self, budget: int, depth: int) -> list:
        from .stmt_kinds import KINDS, available

        kinds = [k for k in STMT_WEIGHTS if available(self, k, depth)]
        kind = self.rng.choices(kinds, weights=[STMT_WEIGHTS[k] for k in kinds])[0]
        return KINDS[kind](self, budget, depth)

    def expr_depth(self) -> int:
        return self.rng.randint(1, self.size.expr_depth)

    # ------------------------------------------------------------------ kernel frame

    def prologue(self) -> list:
        out = []
        readable = self.arrays_with("in", "inout")
        for arr in self.rng.sample(readable, k=min(len(readable), self.rng.randint(1, 3))):
            ty = self.arrays[arr]
            name = self.names.new(LOCAL_PREFIX[ty])
            out.append(Assign(name, ty, self.load_of(arr), True))
            self.declare(name, ty)
        return out

    def epilogue(self) -> list:
        out: list = []
        for arr in self.arrays_with("out", "inout"):
            out.append(Store(arr, TID, "=", self.sink(self.arrays[arr])))
        for arr in self.arrays_with("acc"):
            if self.rng.random() < 0.6:
                out.append(Atomic("add", arr, self.index(), self.sink(self.arrays[arr])))
        return out

    def sink(self, ty: str) -> Expr:
        """An expression of type ``ty`` that combines several of the live variables."""
        live = [nt for nt in self.visible() if nt[1] != "B"]
        picks = [self.pick_recent(live) for _ in range(min(len(live), 3))]
        terms = [self.to_type(var(*p), ty) for p in dict.fromkeys(picks)]
        if not terms:
            return self.expr(ty, 2)
        acc = terms[0]
        for t in terms[1:]:
            acc = op(ty, "add", acc, t)
        return acc

    def to_type(self, e: Expr, ty: str) -> Expr:
        if e.ty == ty:
            return e
        if ty == "F":
            return op("F", "itof", e) if e.ty == "I" else self.comp_of(e)
        f = self.to_type(e, "F")
        if ty == "V":
            return op("V", "vec", f, self.leaf("F"), f)
        if ty == "M":
            return op("M", "diag", op("V", "vec", f, f, self.leaf("F")))
        return op("Q", "quat", f, self.leaf("F"), f, self.leaf("F"))


def _count(s: Any) -> int:
    n = 1
    for f in ("body", "orelse"):
        for sub in getattr(s, f, []):
            n += _count(sub)
    return n


__all__ = ["Assign", "Atomic", "Aug", "Body", "Break", "CompSet", "Continue", "For", "If",
           "IntAtomic", "Return", "Store", "While"]
