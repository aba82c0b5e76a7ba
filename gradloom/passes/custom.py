"""Inlines `@wp.func_grad` regions for code that does not differentiate them (forward kernels).

A `Custom` region becomes an `if` on a constant true condition whose then-branch is the region's
body, so the forward kernel computes exactly what the user's function computes; LLVM folds the
branch away. Only autodiff (autodiff/reverse.py) looks at a region's adjoint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Stmt, Var, max_var_id
from ..types import ScalarType, bool_

NewVar = Callable[[ScalarType], Var]


def inline_custom(kernel: KernelIR) -> KernelIR:
    """The kernel with every Custom region replaced by its body."""
    counter = [max_var_id(kernel.body)]

    def new_var(t: ScalarType) -> Var:
        counter[0] += 1
        return Var(counter[0], t)

    return replace(kernel, body=_block(kernel.body, new_var))


def custom_as_if(s: Custom, new_var: NewVar) -> tuple[Op, If]:
    """The region as `true = const; if true: body else: zeros` (else only gives the types)."""
    true = Op("const", (), new_var(bool_), s.loc, True)
    assert true.result is not None
    zeros = [Op("const", (), new_var(r.type), s.loc, False if r.type.kind == "b" else 0)
             for r in s.results]
    orelse = Block(tuple(zeros), tuple(z.result for z in zeros if z.result is not None))
    return true, If(true.result, s.body, orelse, s.results, s.loc)


def _block(b: Block, new_var: NewVar) -> Block:
    out: list[Stmt] = []
    for s in b.stmts:
        out.extend(_stmt(s, new_var))
    return Block(tuple(out), b.yields)


def _stmt(s: Stmt, new_var: NewVar) -> list[Stmt]:
    if isinstance(s, Op):
        return [s]
    if isinstance(s, If):
        return [If(s.cond, _block(s.then, new_var), _block(s.orelse, new_var), s.results, s.loc)]
    if isinstance(s, Loop):
        return [Loop(s.inits, s.params, _block(s.cond, new_var), _block(s.body, new_var),
                     s.results, s.loc)]
    true, branch = custom_as_if(replace(s, body=_block(s.body, new_var)), new_var)
    return [true, branch]
