"""Small edits of a case for the shrinker: drop or inline a statement, replace an expression node.

Statements and expression nodes are addressed by their position in a fixed preorder walk over
all funcs and kernels, so an edit is (position, replacement). Every edit returns a new case (the
input is never modified) or None when the position is past the end.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from .model import (
    Atomic,
    Case,
    Clone,
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
    child_blocks,
    walk_exprs,
    walk_stmts,
)
from .render import kernel_params

EXPR_FIELDS = {"Assign": ("expr",), "Aug": ("expr",), "CompSet": ("expr", "index"),
               "Store": ("idx", "expr"), "Atomic": ("idx", "expr"), "IntAtomic": ("idx", "args"),
               "If": ("cond",), "For": ("stop",), "While": ("bound", "cond"),
               "Return": ("expr",)}


def _bodies(case: Case) -> Iterator[list]:
    for f in case.funcs:
        yield f.body
    for k in case.kernels:
        yield k.body


def count_stmts(case: Case) -> int:
    return sum(1 for body in _bodies(case) for _ in walk_stmts(body))


def edit_stmt(case: Case, k: int, fn: Callable[[Any], list | None]) -> Case | None:
    """Replace statement number ``k`` by ``fn(stmt)`` (a list); None if fn declines."""
    new = copy.deepcopy(case)
    counter = [0]

    def visit(body: list) -> bool | None:
        for i, s in enumerate(body):
            if counter[0] == k:
                repl = fn(s)
                if repl is None:
                    return None
                body[i:i + 1] = repl
                return True
            counter[0] += 1
            for blk in child_blocks(s):
                r = visit(blk)
                if r is not False:
                    return r
        return False

    for body in _bodies(new):
        r = visit(body)
        if r is None:
            return None
        if r:
            return new
    return None


def _slots(s: Any) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for f in EXPR_FIELDS.get(type(s).__name__, ()):
        v = getattr(s, f)
        if isinstance(v, tuple):
            out += [(f, i) for i in range(len(v)) if isinstance(v[i], Expr)]
        elif v is not None:
            out.append((f, None))
    return out


def _get(s: Any, slot: tuple[str, int | None]) -> Expr:
    v = getattr(s, slot[0])
    return v[slot[1]] if slot[1] is not None else v


def _set(s: Any, slot: tuple[str, int | None], e: Expr) -> None:
    if slot[1] is None:
        setattr(s, slot[0], e)
    else:
        v = list(getattr(s, slot[0]))
        v[slot[1]] = e
        setattr(s, slot[0], tuple(v))


def _holders(case: Case) -> Iterator[tuple[Any, tuple[str, int | None]]]:
    for body in _bodies(case):
        for s in walk_stmts(body):
            for slot in _slots(s):
                yield s, slot
    for f in case.funcs:
        yield f, ("result", None)


def count_exprs(case: Case) -> int:
    return sum(sum(1 for _ in walk_exprs(_get(h, slot))) for h, slot in _holders(case))


def expr_at(case: Case, k: int) -> Expr | None:
    for h, slot in _holders(case):
        nodes = list(walk_exprs(_get(h, slot)))
        if k < len(nodes):
            return nodes[k]
        k -= len(nodes)
    return None


def _replace_nth(e: Expr, k: int, repl: Expr) -> tuple[Expr, int]:
    """(new expr, nodes left to skip); replaces the k-th node of e in preorder."""
    if k == 0:
        return repl, -1
    k -= 1
    args = list(e.args)
    for i, a in enumerate(args):
        new, k = _replace_nth(a, k, repl)
        args[i] = new
        if k < 0:
            return replace(e, args=tuple(args)), -1
    return e, k


def edit_expr(case: Case, k: int, repl: Expr) -> Case | None:
    new = copy.deepcopy(case)
    for h, slot in _holders(new):
        e, k = _replace_nth(_get(h, slot), k, repl)
        if k < 0:
            _set(h, slot, e)
            return new
    return None


def drop_unused(case: Case) -> Case:
    """Remove kernels never launched, funcs never called and arrays nothing uses."""
    new = copy.deepcopy(case)
    launched = {s.kernel for s in new.steps if isinstance(s, Launch)}
    new.kernels = [k for k in new.kernels if k.name in launched]
    called: set[str] = set()
    for _, body in [(None, k.body) for k in new.kernels]:
        called |= _calls(body)
    for f in reversed(new.funcs):
        if f.name in called:
            called |= _calls(f.body) | {e.data for e in walk_exprs(f.result) if e.kind == "call"}
    new.funcs = [f for f in new.funcs if f.name in called]
    used: set[str] = set()
    for k in new.kernels:
        used |= set(kernel_params(new, k)[0])
    for s in new.steps:
        if isinstance(s, (Clone, Copy)):
            used |= {s.src}
    new.arrays = [a for a in new.arrays if a.name in used]
    names = {a.name for a in new.arrays}
    for s in new.steps:
        if isinstance(s, Launch):
            s.bind = {p: a for p, a in s.bind.items() if p in names}
    new.steps = [s for s in new.steps if not isinstance(s, Copy) or
                 ((s.src in names or s.src.startswith("c")) and (s.dst in names or
                                                                s.dst.startswith("c")))]
    return new


def _calls(body: list) -> set[str]:
    out = set()
    for s in walk_stmts(body):
        for slot in _slots(s):
            out |= {e.data for e in walk_exprs(_get(s, slot)) if e.kind == "call"}
    return out


def size(case: Case) -> int:
    """What the shrinker minimises (a constant weighs less than a name, so that a variable
    replaced by a constant counts as progress and its definition can then go)."""
    nodes = sum(1 + (e.kind != "const") for h, slot in _holders(case)
                for e in walk_exprs(_get(h, slot)))
    return (10 * count_stmts(case) + nodes + 5 * len(case.steps) +
            3 * len(case.arrays) + 5 * len(case.funcs) + case.nt + sum(case.ints.values()) +
            (case.dtype == "float32"))


__all__ = ["Atomic", "For", "FuncDef", "If", "IntAtomic", "Return", "Store", "While",
           "count_exprs", "count_stmts", "drop_unused", "edit_expr", "edit_stmt", "expr_at",
           "size"]
