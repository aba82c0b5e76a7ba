"""`@wp.func_grad` regions: inlined for code that does not differentiate them (forward kernels),
and their adjoint blocks prepared for the reverse sweep.

A `Custom` region becomes an `if` on a constant true condition whose then-branch is the region's
body, so the forward kernel computes exactly what the user's function computes; LLVM folds the
branch away. Only autodiff (autodiff/reverse.py) looks at a region's adjoint: its gradient
primitives address an array's gradient through the array's data pointer (`wp.adjoint[a]`,
frontend/custom.py) until `retarget_gradients` points them at the gradient itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Stmt, Var, max_var_id, walk_ops
from ..ir.prims import PRIMS, Effect
from ..types import ScalarType, bool_, int64

NewVar = Callable[[ScalarType], Var]
#: data pointer -> (the gradient's base pointer, a byte offset to add, or None)
GradTarget = Callable[[Var], tuple[Var, Var | None]]


def inline_custom(kernel: KernelIR) -> KernelIR:
    """The kernel with every Custom region replaced by its body."""
    counter = [max_var_id(kernel.body)]

    def new_var(t: ScalarType) -> Var:
        counter[0] += 1
        return Var(counter[0], t)

    return replace(kernel, body=inline_block(kernel.body, new_var))


def custom_as_if(s: Custom, new_var: NewVar) -> tuple[Op, If]:
    """The region as `true = const; if true: body else: zeros` (else only gives the types)."""
    true = Op("const", (), new_var(bool_), s.loc, True)
    assert true.result is not None
    zeros = [Op("const", (), new_var(r.type), s.loc, False if r.type.kind == "b" else 0)
             for r in s.results]
    orelse = Block(tuple(zeros), tuple(z.result for z in zeros if z.result is not None))
    return true, If(true.result, s.body, orelse, s.results, s.loc)


def inline_block(b: Block, new_var: NewVar) -> Block:
    """b with every Custom region in it (at any depth) replaced by its body."""
    out: list[Stmt] = []
    for s in b.stmts:
        out.extend(_stmt(s, new_var))
    return Block(tuple(out), b.yields)


def _stmt(s: Stmt, new_var: NewVar) -> list[Stmt]:
    if isinstance(s, Op):
        return [s]
    if isinstance(s, If):
        return [If(s.cond, inline_block(s.then, new_var), inline_block(s.orelse, new_var),
                   s.results, s.loc)]
    if isinstance(s, Loop):
        return [Loop(s.inits, s.params, inline_block(s.cond, new_var),
                     inline_block(s.body, new_var), s.results, s.loc)]
    true, branch = custom_as_if(replace(s, body=inline_block(s.body, new_var)), new_var)
    return [true, branch]


def retarget_gradients(b: Block, target: GradTarget, new_var: NewVar) -> Block:
    """An adjoint block with its gradient primitives moved from the arrays' data pointers to
    their gradients (target gives each data pointer's gradient place, emitted once, outside)."""
    places: dict[Var, tuple[Var, Var | None]] = {}

    def place(p: Var) -> tuple[Var, Var | None]:
        if p not in places:
            places[p] = target(p)
        return places[p]

    def block(blk: Block) -> Block:
        out: list[Stmt] = []
        for s in blk.stmts:
            if isinstance(s, Op) and Effect.GRAD in PRIMS[s.prim].effects:
                base, extra = place(s.args[0])
                off = s.args[1]
                if extra is not None:
                    off = new_var(int64)
                    out.append(Op("add", (extra, s.args[1]), off, s.loc))
                out.append(replace(s, args=(base, off, *s.args[2:])))
            elif isinstance(s, If):
                out.append(If(s.cond, block(s.then), block(s.orelse), s.results, s.loc))
            elif isinstance(s, Loop):
                out.append(Loop(s.inits, s.params, block(s.cond), block(s.body), s.results,
                                s.loc))
            elif isinstance(s, Custom):
                out.append(replace(s, body=block(s.body)))
            else:
                out.append(s)
        return Block(tuple(out), blk.yields)

    return block(b)


def has_effects(b: Block) -> bool:
    """Running b does more than compute values (it writes memory, gradients, prints, ...)."""
    return any(PRIMS[op.prim].effects & (Effect.WRITE | Effect.GRAD | Effect.IO)
               for op in walk_ops(b))
