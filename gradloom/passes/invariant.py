"""Drops loop parameters that every iteration passes through unchanged, and if results that
both branches yield alike.

The frontend carries every name a loop body might rebind (for `y[i] = v` that includes the array
`y`); a parameter whose next value is itself is just its initial value. Replacing it by that
value keeps arrays' pointers visibly rooted in kernel arguments (which autodiff needs) and the
adjoint from saving values that never change.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Stmt, Var


def drop_invariant_params(kernel: KernelIR) -> KernelIR:
    return replace(kernel, body=_block(kernel.body, {}))


def _v(v: Var, sub: dict[Var, Var]) -> Var:
    while v in sub:
        v = sub[v]
    return v


def _block(b: Block, sub: dict[Var, Var]) -> Block:
    stmts = tuple(_stmt(s, sub) for s in b.stmts)
    return Block(stmts, tuple(_v(y, sub) for y in b.yields))


def _stmt(s: Stmt, sub: dict[Var, Var]) -> Stmt:
    if isinstance(s, Op):
        args = tuple(_v(a, sub) for a in s.args)
        return s if args == s.args else Op(s.prim, args, s.result, s.loc, s.attr)
    if isinstance(s, If):
        return _if(s, sub)
    if isinstance(s, Custom):
        return Custom(tuple(_v(v, sub) for v in s.inputs), _block(s.body, sub), s.results,
                      s.seeds, _block(s.adjoint, sub), s.loc)
    return _loop(s, sub)


def _if(s: If, sub: dict[Var, Var]) -> If:
    """An if whose branches both yield the same value for a result (an array passed through a
    region that might have rebound it) has that value as the result."""
    then, orelse = _block(s.then, sub), _block(s.orelse, sub)
    keep = [j for j, (a, b) in enumerate(zip(then.yields, orelse.yields, strict=True))
            if a is not b]
    for j in set(range(len(s.results))) - set(keep):
        sub[s.results[j]] = then.yields[j]
    return If(_v(s.cond, sub), Block(then.stmts, tuple(then.yields[j] for j in keep)),
              Block(orelse.stmts, tuple(orelse.yields[j] for j in keep)),
              tuple(s.results[j] for j in keep), s.loc)


def _loop(s: Loop, sub: dict[Var, Var]) -> Loop:
    inits = [_v(v, sub) for v in s.inits]
    keep = list(range(len(inits)))
    while True:
        # a parameter passed through an inner loop is yielded as that loop's result, which is
        # the parameter itself only once the inner loop's own pass-throughs are dropped: repeat
        # until no more parameters turn out to be pass-throughs
        body = _block(s.body, sub)
        still = [j for j in keep if body.yields[j] is not s.params[j]]
        if still == keep:
            break
        for j in set(keep) - set(still):
            sub[s.params[j]] = inits[j]
            sub[s.results[j]] = inits[j]
        keep = still
    cond = _block(s.cond, sub)
    return Loop(tuple(inits[j] for j in keep), tuple(s.params[j] for j in keep), cond,
                Block(body.stmts, tuple(body.yields[j] for j in keep)),
                tuple(s.results[j] for j in keep), s.loc)
