"""Checks IR invariants: every use is defined earlier in scope, and region arities/types agree."""

from __future__ import annotations

from ..errors import GradloomError
from .nodes import Block, Custom, If, KernelIR, Loop, Op, Var
from .prims import result_type


class IRVerifyError(GradloomError):
    """The IR breaks an invariant (a compiler bug, never the user's)."""


def _use(v: Var, scope: set[int], where: str) -> None:
    if v.id not in scope:
        raise IRVerifyError(f"%{v.id} used before definition in {where}")


def _same_types(a: tuple[Var, ...], b: tuple[Var, ...], where: str) -> None:
    if [v.type for v in a] != [v.type for v in b]:
        raise IRVerifyError(f"type mismatch in {where}: {a} vs {b}")


def _block(b: Block, scope: set[int]) -> None:
    inner = set(scope)
    for s in b.stmts:
        if isinstance(s, Op):
            for a in s.args:
                _use(a, inner, s.prim)
            rt = result_type(s.prim, tuple(a.type for a in s.args),
                             s.result.type if s.result else None)
            if s.result is not None and rt is not None and rt != s.result.type:
                raise IRVerifyError(f"{s.prim}: result {s.result} but rule gives {rt}")
            if s.result is not None:
                inner.add(s.result.id)
        elif isinstance(s, If):
            _use(s.cond, inner, "if")
            _block(s.then, inner)
            _block(s.orelse, inner)
            _same_types(s.then.yields, s.results, "if/then")
            _same_types(s.orelse.yields, s.results, "if/else")
            inner.update(r.id for r in s.results)
        elif isinstance(s, Custom):
            _block(s.body, inner)
            _same_types(s.body.yields, s.results, "custom body")
            _same_types(s.seeds, s.results, "custom seeds")
            _block(s.adjoint, inner | {v.id for v in s.seeds})
            _same_types(s.adjoint.yields, s.inputs, "custom adjoint")
            inner.update(r.id for r in s.results)
        else:
            assert isinstance(s, Loop)
            for v in s.inits:
                _use(v, inner, "loop init")
            _same_types(s.inits, s.params, "loop params")
            _same_types(s.body.yields, s.params, "loop body")
            loop_scope = inner | {p.id for p in s.params}
            _block(s.cond, loop_scope)
            _block(s.body, loop_scope)
            inner.update(r.id for r in s.results)
    for y in b.yields:
        _use(y, inner, "yield")


def verify(k: KernelIR) -> None:
    _block(k.body, set())
