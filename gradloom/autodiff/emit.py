"""Builds adjoint IR: mutable blocks (statements are added to a loop after it is built), frozen at the end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import SourceLoc
from ..ir.nodes import Block, If, Loop, Op, Stmt, Var
from ..ir.prims import result_type
from ..types import ScalarType


@dataclass(eq=False)
class MBlock:
    """A block under construction."""

    stmts: list[Any] = field(default_factory=list)
    yields: list[Var] = field(default_factory=list)


@dataclass(eq=False)
class MIf:
    cond: Var
    then: MBlock
    orelse: MBlock
    results: list[Var]
    loc: SourceLoc


@dataclass(eq=False)
class MLoop:
    inits: list[Var]
    params: list[Var]
    cond: MBlock
    body: MBlock
    results: list[Var]
    loc: SourceLoc


class Emitter:
    """Appends ops to the current mutable block; fresh variables never reuse a primal id."""

    def __init__(self, first_id: int, loc: SourceLoc) -> None:
        self._next_id = first_id
        self.loc = loc  # the location given to ops autodiff makes (the kernel's def line)
        self.blocks: list[MBlock] = [MBlock()]

    @property
    def cur(self) -> MBlock:
        return self.blocks[-1]

    def new_var(self, t: ScalarType) -> Var:
        self._next_id += 1
        return Var(self._next_id, t)

    def make(self, prim: str, args: tuple[Var, ...], type: ScalarType | None = None,
             attr: Any = None) -> Op:
        """An op with a fresh result variable, not yet placed in any block."""
        rt = result_type(prim, tuple(a.type for a in args), type)
        result = None if rt is None else self.new_var(rt)
        return Op(prim, args, result, self.loc, attr)

    def op(self, prim: str, *args: Var, type: ScalarType | None = None, attr: Any = None) -> Var:
        made = self.make(prim, args, type, attr)
        assert made.result is not None, prim
        self.cur.stmts.append(made)
        return made.result

    def effect(self, prim: str, *args: Var, attr: Any = None) -> None:
        self.cur.stmts.append(self.make(prim, args, None, attr))

    def const(self, value: float, t: ScalarType) -> Var:
        return self.op("const", type=t, attr=value)

    def zero(self, t: ScalarType) -> Var:
        value: Any = False if t.kind == "b" else 0 if t.kind in "iup" else 0.0
        return self.const(value, t)

    def open(self) -> MBlock:
        self.blocks.append(MBlock())
        return self.cur

    def close(self) -> MBlock:
        return self.blocks.pop()


def freeze(b: MBlock) -> Block:
    return Block(tuple(_freeze_stmt(s) for s in b.stmts), tuple(b.yields))


def _freeze_stmt(s: Any) -> Stmt:
    if isinstance(s, MIf):
        return If(s.cond, freeze(s.then), freeze(s.orelse), tuple(s.results), s.loc)
    if isinstance(s, MLoop):
        return Loop(tuple(s.inits), tuple(s.params), freeze(s.cond), freeze(s.body),
                    tuple(s.results), s.loc)
    assert isinstance(s, (Op, If, Loop))
    return s
