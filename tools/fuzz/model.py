"""The fuzz case tree: typed expressions, statements, funcs, kernels and the launch program.

A ``Case`` is plain data (picklable): the generator builds it, ``render`` turns it into Python
source, the shrinker edits it. ``check_scopes`` says whether an edited case is still well formed
(every name defined before use, jumps inside loops), so the shrinker only tries valid kernels.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Expr:
    """A typed expression. ``kind``: op, var, const, load, comp, call, ternary, tid.

    * op: ``data`` is the operator name (ops.OPS[(ty, data)]), ``args`` its operands;
    * var: ``data`` is the name; const: ``data`` is the value;
    * load: ``data`` is the array name, ``args`` = (index,);
    * comp: ``data`` is the component index tuple, ``args`` = (base, *computed): a ``None`` in
      ``data`` takes the next computed index from ``args`` (``v[j % 3]``);
    * call: ``data`` is a func name; ternary: ``args`` = (cond, if_true, if_false).
    """

    kind: str
    ty: str
    args: tuple[Expr, ...] = ()
    data: Any = None


# --------------------------------------------------------------------------------- statements


@dataclass
class Assign:
    """``name = expr``; ``decl`` marks the first definition of ``name``."""

    name: str
    ty: str
    expr: Expr
    decl: bool


@dataclass
class Aug:
    """``name op= expr`` on a local (op: + - *)."""

    name: str
    ty: str
    op: str
    expr: Expr


@dataclass
class CompSet:
    """``name[i] op= expr`` / ``name[i, j] op= expr`` on a local vector, matrix or quat; an
    index entry is an int or an I expression (``j % 3``)."""

    name: str
    index: tuple
    op: str
    expr: Expr


@dataclass
class Store:
    """``arr[idx] = expr``, ``arr[idx][c] = expr``, or ``arr[idx] += expr`` (atomic add)."""

    arr: str
    idx: Expr
    op: str
    expr: Expr
    comp: tuple[int, ...] | None = None


@dataclass
class Atomic:
    """``wp.atomic_<fn>(arr, idx, expr)`` as a statement (float add / sub)."""

    fn: str
    arr: str
    idx: Expr
    expr: Expr


@dataclass
class IntAtomic:
    """``name = wp.atomic_<fn>(arr, idx, *args)`` on an int slot array (exch, cas, or, xor, and)."""

    name: str
    fn: str
    arr: str
    idx: Expr
    args: tuple[Expr, ...]


@dataclass
class If:
    cond: Expr
    body: list
    orelse: list = field(default_factory=list)


@dataclass
class For:
    """``for var in range(stop):`` (stop: an int constant or a runtime int parameter)."""

    var: str
    stop: Expr
    body: list


@dataclass
class While:
    """``var = int(0)`` / ``while var < bound [and cond]:`` / ``var = var + 1`` / body."""

    var: str
    bound: Expr
    cond: Expr | None
    body: list


@dataclass
class Break:
    pass


@dataclass
class Continue:
    pass


@dataclass
class Return:
    expr: Expr | None = None


# ------------------------------------------------------------------------------- definitions


@dataclass
class FuncDef:
    name: str
    params: list[tuple[str, str]]
    ret: str
    body: list
    result: Expr


@dataclass
class KernelDef:
    name: str
    body: list


@dataclass
class ArrayDef:
    """A program array: ``ty`` (F V M Q, or I for an int slot array) and its initial values."""

    name: str
    ty: str
    values: np.ndarray


@dataclass
class Launch:
    kernel: str
    bind: dict[str, str]  # kernel array parameter -> program array name


@dataclass
class Clone:
    dst: str
    src: str


@dataclass
class Copy:
    dst: str
    src: str


@dataclass
class Case:
    """One fuzz case: arrays, int parameters, funcs, kernels and the program that runs them."""

    tag: str
    dtype: str  # "float64" | "float32"
    nt: int
    arrays: list[ArrayDef]
    ints: dict[str, int]
    funcs: list[FuncDef]
    kernels: list[KernelDef]
    steps: list
    origin: str = ""  # "seed:index" it was generated from

    def array(self, name: str) -> ArrayDef:
        return next(a for a in self.arrays if a.name == name)

    def program_arrays(self) -> dict[str, str]:
        """Every array name the program ends with (initial arrays and clones) -> type."""
        out = {a.name: a.ty for a in self.arrays}
        for s in self.steps:
            if isinstance(s, Clone):
                out[s.dst] = out[s.src]
        return out


BLOCK_FIELDS = ("body", "orelse")


def child_blocks(stmt: Any) -> list[list]:
    return [getattr(stmt, f) for f in BLOCK_FIELDS if hasattr(stmt, f)]


def stmt_exprs(stmt: Any) -> list[Expr]:
    """The expressions directly held by a statement (not those of nested statements)."""
    if isinstance(stmt, CompSet):
        return [stmt.expr, *(i for i in stmt.index if isinstance(i, Expr))]
    if isinstance(stmt, (Assign, Aug)):
        return [stmt.expr]
    if isinstance(stmt, (Store, Atomic)):
        return [stmt.idx, stmt.expr]
    if isinstance(stmt, IntAtomic):
        return [stmt.idx, *stmt.args]
    if isinstance(stmt, If):
        return [stmt.cond]
    if isinstance(stmt, For):
        return [stmt.stop]
    if isinstance(stmt, While):
        return [stmt.bound] + ([stmt.cond] if stmt.cond is not None else [])
    if isinstance(stmt, Return) and stmt.expr is not None:
        return [stmt.expr]
    return []


def walk_exprs(e: Expr) -> Iterator[Expr]:
    yield e
    for a in e.args:
        yield from walk_exprs(a)


def walk_stmts(body: list) -> Iterator[Any]:
    for s in body:
        yield s
        for blk in child_blocks(s):
            yield from walk_stmts(blk)


def all_bodies(case: Case) -> Iterator[tuple[Any, list]]:
    """(owner, top-level body) for every func and kernel."""
    for f in case.funcs:
        yield f, f.body
    for k in case.kernels:
        yield k, k.body
