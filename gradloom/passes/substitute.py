"""Copies a block with some free variables replaced and every variable it defines renamed."""

from __future__ import annotations

from collections.abc import Callable

from ..ir.nodes import Block, Custom, If, Loop, Op, Stmt, Var
from ..types import ScalarType


def substitute(b: Block, mapping: dict[Var, Var], new_var: Callable[[ScalarType], Var]) -> Block:
    """b with free uses of mapping's keys replaced; definitions get fresh variables, so the
    copy can sit in the same function as the original (SSA names stay unique)."""
    return _Copier(dict(mapping), new_var).block(b)


class _Copier:
    def __init__(self, env: dict[Var, Var], new_var: Callable[[ScalarType], Var]) -> None:
        self.env = env
        self.new_var = new_var

    def use(self, v: Var) -> Var:
        return self.env.get(v, v)

    def define(self, v: Var) -> Var:
        fresh = self.new_var(v.type)
        self.env[v] = fresh
        return fresh

    def block(self, b: Block) -> Block:
        stmts = tuple(self.stmt(s) for s in b.stmts)
        return Block(stmts, tuple(self.use(y) for y in b.yields))

    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, Op):
            args = tuple(self.use(a) for a in s.args)
            result = self.define(s.result) if s.result is not None else None
            return Op(s.prim, args, result, s.loc, s.attr)
        if isinstance(s, If):
            cond, then, orelse = self.use(s.cond), self.block(s.then), self.block(s.orelse)
            return If(cond, then, orelse, tuple(self.define(r) for r in s.results), s.loc)
        if isinstance(s, Loop):
            inits = tuple(self.use(v) for v in s.inits)
            params = tuple(self.define(p) for p in s.params)
            loop_cond, loop_body = self.block(s.cond), self.block(s.body)
            return Loop(inits, params, loop_cond, loop_body,
                        tuple(self.define(r) for r in s.results), s.loc)
        inputs = tuple(self.use(v) for v in s.inputs)
        body = self.block(s.body)
        seeds = tuple(self.define(v) for v in s.seeds)
        adjoint = self.block(s.adjoint)
        return Custom(inputs, body, tuple(self.define(r) for r in s.results), seeds, adjoint,
                      s.loc)
