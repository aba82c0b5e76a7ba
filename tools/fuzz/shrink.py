"""Shrink a failing case to a small one that still fails the same way.

Greedy: try edits that make the case smaller (drop a launch, drop a statement, replace an if or
a loop by its body, simplify a loop bound, replace an expression by one of its operands or a
constant, float32 -> float64, fewer threads), keep the first that is well formed and still
fails with the same signature, and go on from there until no edit helps or the budget is spent.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from functools import partial

import numpy as np

from .edits import count_exprs, count_stmts, drop_unused, edit_expr, edit_stmt, expr_at, size
from .model import Case, Expr, For, If, Launch, While
from .render import case_module
from .stmts import TID
from .validate import is_valid

Predicate = Callable[[Case], bool]


def _case_edits(case: Case) -> Iterator[Case]:
    for i in range(len(case.steps)):
        new = copy.deepcopy(case)
        del new.steps[i]
        if any(isinstance(s, Launch) for s in new.steps):
            yield new
    if case.dtype == "float32":
        new = copy.deepcopy(case)
        new.dtype = "float64"
        yield new
    if case.nt > 2:
        new = copy.deepcopy(case)
        new.nt -= 1
        new.ints["nt"] = new.nt
        for a in new.arrays:
            a.values = a.values[: new.nt].copy()
            if a.ty == "I":
                a.values = np.minimum(a.values, new.nt - 1)
        yield new
    for name, v in case.ints.items():
        if name != "nt" and v > 0:
            new = copy.deepcopy(case)
            new.ints[name] = v - 1
            yield new


def _inline(s: object, which: str) -> list | None:
    if isinstance(s, If):
        if which == "body":
            return s.body
        if which == "orelse":
            return s.orelse if s.orelse else None
        if which == "noelse" and s.orelse:
            return [If(s.cond, s.body, [])]
        if which == "swap" and s.orelse:
            return [If(s.cond, s.orelse, s.body)]
        return None
    if isinstance(s, (For, While)) and which == "body":
        return s.body
    if isinstance(s, While) and which == "nocond" and s.cond is not None:
        return [While(s.var, s.bound, None, s.body)]
    if isinstance(s, For) and which == "const" and s.stop.kind == "var":
        return [For(s.var, Expr("const", "I", data=1), s.body)]
    return None


def _stmt_edits(case: Case) -> Iterator[Case]:
    n = count_stmts(case)
    for k in range(n):
        new = edit_stmt(case, k, lambda s: [])
        if new is not None:
            yield new
    for which in ("body", "orelse", "noelse", "swap", "nocond", "const"):
        for k in range(n):
            new = edit_stmt(case, k, partial(_inline, which=which))
            if new is not None:
                yield new


def _simpler(e: Expr) -> list[Expr]:
    if e.kind == "op" and e.data == "mod":  # an index: keep it in [0, nt)
        return [TID, Expr("const", "I", data=0)]
    if e.kind == "op" and e.data in ("mod3", "mod4"):  # a component index
        return [Expr("const", "I", data=0)]
    out = [a for a in e.args if a.ty == e.ty]
    if e.ty == "F" and e.kind != "const":
        out.append(Expr("const", "F", data=0.5))
    if e.ty == "I" and e.kind not in ("const", "tid"):
        out += [TID, Expr("const", "I", data=0)]
    return out


def _expr_edits(case: Case) -> Iterator[Case]:
    for k in range(count_exprs(case)):
        e = expr_at(case, k)
        if e is None:
            return
        for repl in _simpler(e):
            new = edit_expr(case, k, repl)
            if new is not None:
                yield new


def candidates(case: Case) -> Iterator[Case]:
    yield from _case_edits(case)
    yield from _stmt_edits(case)
    yield from _expr_edits(case)


def shrink(case: Case, still_fails: Predicate, *, budget_s: float = 300.0,
           max_tries: int = 2000, log: Callable[[str], None] | None = None) -> Case:
    """The smallest case found that ``still_fails``; ``case`` itself must fail.

    After a successful edit at candidate number i, the next round starts near i (the earlier
    candidates failed a moment ago); a round that starts late and finds nothing is followed by
    one full round.
    """
    cur = drop_unused(case)
    if not (is_valid(cur) and still_fails(cur)):
        cur = case
    t_end, tries, start = time.monotonic() + budget_s, 0, 0
    seen: set[str] = set()
    while time.monotonic() < t_end and tries < max_tries:
        cur_size, found = size(cur), None
        for i, cand in enumerate(candidates(cur)):
            if i < start:
                continue
            if time.monotonic() >= t_end or tries >= max_tries:
                break
            cand = drop_unused(cand)
            key = case_module(cand)
            if size(cand) >= cur_size or key in seen or not is_valid(cand):
                continue
            seen.add(key)
            tries += 1
            if still_fails(cand):
                found = (i, cand)
                break
        if found is None:
            if start == 0:
                break
            start = 0
            continue
        start, cur = max(0, found[0] - 2), found[1]
        if log:
            log(f"  shrink: size {cur_size} -> {size(cur)} ({tries} tries)")
    return cur
