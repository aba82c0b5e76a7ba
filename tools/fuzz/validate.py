"""Is a (possibly shrunk) case well formed? Names defined before use, types agree, jumps in loops.

The scoping rule is stricter than Python's: a name declared inside a block is visible only later
in that block and in blocks nested in it. The generator follows it, and so every kernel it makes
has defined values on every path (Warp leaves a variable defined on one branch uninitialised).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    Launch,
    Return,
    Store,
    While,
    stmt_exprs,
    walk_exprs,
)


class Invalid(Exception):
    """The case is not well formed (the message says why)."""


@dataclass
class _Env:
    arrays: dict[str, str]
    funcs: dict[str, FuncDef]
    scopes: list[dict[str, str]] = field(default_factory=list)
    readonly: set[str] = field(default_factory=set)
    loops: int = 0
    ret: str | None = None
    in_kernel: bool = False

    def lookup(self, name: str) -> str | None:
        for sc in reversed(self.scopes):
            if name in sc:
                return sc[name]
        return None


def _expr(env: _Env, e: Expr) -> None:
    for sub in walk_exprs(e):
        if sub.kind == "var" and env.lookup(sub.data) != sub.ty:
            raise Invalid(f"name {sub.data!r} ({sub.ty}) not defined")
        if sub.kind == "tid" and not env.in_kernel:
            raise Invalid("tid outside a kernel")
        if sub.kind == "load" and env.arrays.get(sub.data) != sub.ty:
            raise Invalid(f"array {sub.data!r} ({sub.ty}) not available")
        if sub.kind == "call":
            f = env.funcs.get(sub.data)
            if f is None or f.ret != sub.ty or [t for _, t in f.params] != [a.ty for a in sub.args]:
                raise Invalid(f"call of {sub.data!r} does not match")
        if sub.kind == "comp" and len(sub.args) != 1 + sum(i is None for i in sub.data):
            raise Invalid("component index")
        if sub.kind == "op" and sub.data == "mod" and not env.in_kernel:
            raise Invalid("nt outside a kernel")


def _target(env: _Env, name: str, ty: str | None = None) -> None:
    have = env.lookup(name)
    if have is None or (ty is not None and have != ty) or name in env.readonly:
        raise Invalid(f"cannot assign {name!r}")


def _stmt(env: _Env, s: object) -> None:
    if isinstance(s, Assign):
        _expr(env, s.expr)
        if s.decl:
            if env.lookup(s.name) is not None:
                raise Invalid(f"{s.name!r} declared twice")
            env.scopes[-1][s.name] = s.ty
        else:
            _target(env, s.name, s.ty)
    elif isinstance(s, (Aug, CompSet)):
        for e in stmt_exprs(s):
            _expr(env, e)
        _target(env, s.name)
    elif isinstance(s, (Store, Atomic)):
        _expr(env, s.idx)
        _expr(env, s.expr)
        if s.arr not in env.arrays:
            raise Invalid(f"array {s.arr!r} not available")
    elif isinstance(s, IntAtomic):
        for e in (s.idx, *s.args):
            _expr(env, e)
        if env.lookup(s.name) is not None or env.arrays.get(s.arr) != "I":
            raise Invalid("bad int atomic")
        env.scopes[-1][s.name] = "I"
    else:
        _control(env, s)


def _control(env: _Env, s: object) -> None:
    if isinstance(s, If):
        _expr(env, s.cond)
        _block(env, s.body)
        _block(env, s.orelse)
    elif isinstance(s, (For, While)):
        _expr(env, s.stop if isinstance(s, For) else s.bound)
        env.scopes.append({s.var: "I"})
        env.readonly.add(s.var)
        if isinstance(s, While) and s.cond is not None:
            _expr(env, s.cond)
        env.loops += 1
        _block(env, s.body, new_scope=False)
        env.loops -= 1
        env.scopes.pop()
    elif isinstance(s, (Break, Continue)):
        if env.loops == 0:
            raise Invalid("jump outside a loop")
    elif isinstance(s, Return):
        if (s.expr is None) != (env.ret is None):
            raise Invalid("return value does not match")
        if s.expr is not None:
            _expr(env, s.expr)
            if s.expr.ty != env.ret:
                raise Invalid("return type does not match")
    else:
        raise Invalid(f"unknown statement {type(s).__name__}")


def _block(env: _Env, body: list, new_scope: bool = True) -> None:
    if new_scope:
        env.scopes.append({})
    for s in body:
        _stmt(env, s)
    if new_scope:
        env.scopes.pop()


def _steps(case: Case) -> None:
    have = {a.name: a.ty for a in case.arrays}
    kernels = {k.name for k in case.kernels}
    for st in case.steps:
        if isinstance(st, Launch):
            if st.kernel not in kernels:
                raise Invalid(f"launch of unknown kernel {st.kernel!r}")
            for param, name in st.bind.items():
                if have.get(name) != case.array(param).ty:
                    raise Invalid(f"launch binds {name!r} to {param!r}")
        elif isinstance(st, Clone):
            if st.src not in have or st.dst in have:
                raise Invalid("bad clone")
            have[st.dst] = have[st.src]
        elif isinstance(st, Copy) and (st.src not in have or st.src == st.dst or
                                       have.get(st.dst) != have[st.src]):
            raise Invalid("bad copy")


def check_case(case: Case) -> None:
    """Raise ``Invalid`` unless every func, kernel and program step is well formed."""
    arrays = {a.name: a.ty for a in case.arrays}
    funcs: dict[str, FuncDef] = {}
    for f in case.funcs:
        env = _Env({}, dict(funcs), [dict(f.params)], {n for n, t in f.params if t == "I"},
                   ret=f.ret)
        _block(env, f.body, new_scope=False)
        _expr(env, f.result)
        if f.result.ty != f.ret:
            raise Invalid("func result type")
        funcs[f.name] = f
    for k in case.kernels:
        env = _Env(arrays, funcs, [dict.fromkeys(case.ints, "I")], set(case.ints),
                   in_kernel=True)
        _block(env, k.body, new_scope=False)
    _steps(case)
    if not any(isinstance(s, Launch) for s in case.steps):
        raise Invalid("no launch")


def is_valid(case: Case) -> bool:
    try:
        check_case(case)
    except Invalid:
        return False
    return True
