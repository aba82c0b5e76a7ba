"""Which known-bug patterns (known-bug letters) a case contains: a hint attached to each failure.

A  a plain copy ``s = t`` / ``s = v[1]`` of a float value, also as a func argument or inside a
   vec / quat constructor (``vec3(a, b, p[2])``);
B  a read at another index of an array the same kernel stores into, a store at another index
   into an array it reads, or two arguments of one launch bound to the same array;
C  an int atomic (exch, cas, or, xor, and) inside a loop, or on an array the kernel also reads
   (the adjoint then indexes with the value the array ends with);
D  a float atomic (``wp.atomic_add/sub``, ``acc[i] += v``) inside a loop;
E  an array store inside a loop that is nested in a loop or an ``if``.
``generate(..., avoid=...)`` leaves these out; this module finds them in any case.
"""

from __future__ import annotations

from typing import Any

from .model import (
    Assign,
    Atomic,
    Case,
    Expr,
    For,
    IntAtomic,
    Launch,
    Store,
    While,
    stmt_exprs,
    walk_exprs,
    walk_stmts,
)
from .render import kernel_params


def _copies(e: Expr) -> bool:
    """A plain variable or component passed to a func or to a vec / quat constructor."""
    return any((sub.kind == "call" or (sub.kind == "op" and sub.data in ("vec", "quat"))) and
               any(a.kind in ("var", "comp") and a.ty != "I" for a in sub.args)
               for sub in walk_exprs(e))


def _plain_call_arg(s: object) -> bool:
    return any(_copies(e) for e in stmt_exprs(s))


def _visit(body: list, loops: int, nest: list[str], found: set[str]) -> None:
    for s in body:
        if isinstance(s, Assign) and s.ty != "I" and s.expr.kind in ("var", "comp"):
            found.add("A")
        if _plain_call_arg(s):
            found.add("A")
        if isinstance(s, IntAtomic) and loops:
            found.add("C")
        if (isinstance(s, Atomic) or (isinstance(s, Store) and s.op != "=")) and loops:
            found.add("D")
        if isinstance(s, Store) and s.op == "=" and len(nest) > 1 and "loop" in nest[1:]:
            found.add("E")
        inner = "loop" if isinstance(s, (For, While)) else "if"
        for blk in (getattr(s, "body", None), getattr(s, "orelse", None)):
            if blk:
                _visit(blk, loops + (inner == "loop"), [*nest, inner], found)


def _int_atomic_read(k: Any) -> bool:
    """An int atomic on an array the kernel also reads."""
    changed = {s.arr for s in walk_stmts(k.body) if isinstance(s, IntAtomic)}
    return any(sub.kind == "load" and sub.data in changed
               for s in walk_stmts(k.body) for e in stmt_exprs(s) for sub in walk_exprs(e))


def _cross_reads(k: Any) -> bool:
    """A thread may read an element another thread stores: a load at another index of an
    array the kernel stores into, or a store at another index into an array it loads."""
    stores = [s for s in walk_stmts(k.body) if isinstance(s, Store) and s.op == "="]
    loads = [sub for s in walk_stmts(k.body) for e in stmt_exprs(s) for sub in walk_exprs(e)
             if sub.kind == "load"]
    written = {s.arr for s in stores}
    read = {ld.data for ld in loads}
    return any(ld.data in written and ld.args[0].kind != "tid" for ld in loads) or \
        any(s.arr in read and s.idx.kind != "tid" for s in stores)


def _aliased_launch(case: Case) -> bool:
    kernels = {k.name: k for k in case.kernels}
    for st in case.steps:
        if isinstance(st, Launch) and st.kernel in kernels:
            used = [st.bind[p] for p in kernel_params(case, kernels[st.kernel])[0]]
            if len(used) != len(set(used)):
                return True
    return False


def known_patterns(case: Case) -> set[str]:
    found: set[str] = set()
    for f in case.funcs:
        _visit(f.body, 0, [], found)
        if _copies(f.result):
            found.add("A")
    for k in case.kernels:
        _visit(k.body, 0, [], found)
        if _cross_reads(k):
            found.add("B")
        if _int_atomic_read(k):
            found.add("C")
    if _aliased_launch(case):
        found.add("B")
    return found
