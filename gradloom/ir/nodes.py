"""IR nodes: SSA variables, primitive ops, structured if/loop regions, and the kernel."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import SourceLoc
from ..types import ScalarType


@dataclass(frozen=True, eq=False)
class Var:
    """An SSA value. Identity is the object; `id` is for printing and codegen names."""

    id: int
    type: ScalarType

    def __repr__(self) -> str:
        return f"%{self.id}:{self.type}"


@dataclass(frozen=True, eq=False)
class Op:
    """One primitive application. `result` is None for pure side effects (store, checks)."""

    prim: str
    args: tuple[Var, ...]
    result: Var | None
    loc: SourceLoc
    attr: Any = None


@dataclass(frozen=True, eq=False)
class Block:
    """A straight sequence of statements ending in the values it yields to its region."""

    stmts: tuple[Stmt, ...]
    yields: tuple[Var, ...] = ()


@dataclass(frozen=True, eq=False)
class If:
    """Structured conditional: each branch yields one value per result."""

    cond: Var
    then: Block
    orelse: Block
    results: tuple[Var, ...]
    loc: SourceLoc


@dataclass(frozen=True, eq=False)
class Loop:
    """A while loop with carried values.

    params start as inits; each trip runs `cond` (over params, yields one bool) and, while it
    is true, `body` (over params, yields the next params). `results` are the final params.
    """

    inits: tuple[Var, ...]
    params: tuple[Var, ...]
    cond: Block
    body: Block
    results: tuple[Var, ...]
    loc: SourceLoc


@dataclass(frozen=True, eq=False)
class Custom:
    """A call with a user-written reverse rule (`@wp.func_grad`).

    `body` computes the call from `inputs` (outer values it reads directly) and yields one value
    per result. Autodiff does not differentiate `body`: its reverse runs `adjoint`, which reads
    the primal `inputs` and `seeds` (placeholders for the results' adjoints) and yields one
    adjoint per input. Everything but autodiff sees the body inline (passes/custom.py).
    """

    inputs: tuple[Var, ...]
    body: Block
    results: tuple[Var, ...]
    seeds: tuple[Var, ...]
    adjoint: Block
    loc: SourceLoc


Stmt = Op | If | Loop | Custom


@dataclass(frozen=True, eq=False)
class KernelIR:
    """A kernel's body, run once per thread, with the facts codegen needs about it."""

    name: str
    body: Block
    launch_ndim: int
    locs: tuple[SourceLoc, ...]
    #: (innermost-stride argument, element size in bytes) per array parameter: codegen emits a
    #: copy of the thread loop with these strides constant, taken when every array is contiguous
    unit_strides: tuple[tuple[Var, int], ...] = ()
    #: run the thread range last thread first (adjoints: the exact reverse of a serial forward)
    reverse_threads: bool = False
    #: (byte offset of its data pointer in the arguments, parameter name) per array parameter,
    #: so that passes can name the array an error is about
    array_names: tuple[tuple[int, str], ...] = ()
    #: adjoints: the argument offsets of the arrays whose pre-launch contents the adjoint reads
    #: (autodiff/contents.py); a Tape keeps no copy of the others. None for forward kernels
    contents_read: frozenset[int] | None = None
    #: adjoints: what each launch checks before it runs (a passes/overlap.py `LaunchCheck`:
    #: no thread reads an element of certain arrays that another thread writes); None: nothing
    launch_check: Any = None


def pointer_root(defs: dict[int, Op], p: Var) -> Op | None:
    """The op a pointer derives from through `ptr_add`s (its array's `arg` when it is rooted in
    a kernel argument); None when p is not defined by an op."""
    d = defs.get(p.id)
    while d is not None and d.prim == "ptr_add":
        d = defs.get(d.args[0].id)
    return d


def regions(s: If | Loop | Custom) -> tuple[Block, ...]:
    """A compound statement's blocks, in program order (an if's branches, a loop's condition
    and body, a @wp.func_grad region's body and adjoint)."""
    if isinstance(s, If):
        return s.then, s.orelse
    if isinstance(s, Loop):
        return s.cond, s.body
    return s.body, s.adjoint


def walk_ops(b: Block) -> Iterator[Op]:
    """Every op in a block and its nested regions, in program order."""
    for s in b.stmts:
        if isinstance(s, Op):
            yield s
        else:
            for inner in regions(s):
                yield from walk_ops(inner)


def max_var_id(b: Block) -> int:
    """The largest variable id defined or used in a block (fresh ids start above it)."""
    top = 0
    for s in b.stmts:
        if isinstance(s, Op):
            top = max([top, *(a.id for a in s.args), s.result.id if s.result else 0])
        elif isinstance(s, If):
            top = max(top, *(r.id for r in s.results), max_var_id(s.then), max_var_id(s.orelse))
        elif isinstance(s, Custom):
            top = max(top, *(v.id for v in (*s.results, *s.seeds)), max_var_id(s.body),
                      max_var_id(s.adjoint))
        else:
            top = max(top, *(v.id for v in (*s.params, *s.results)), max_var_id(s.cond),
                      max_var_id(s.body))
    return top
