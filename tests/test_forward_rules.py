"""Forward mode's rules are total: every primitive that can turn a float operand into a float
result has a forward rule (its own `jvp`, or the one its `vjp` implies), every MemoryRule has a
forward rule in autodiff/forward.py, and a primitive without one is a clear compile error, not
a silently zero tangent. Runs over whatever ir/prims.py holds when it runs (new primitives
included)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gradloom as wp
from gradloom.autodiff import forward
from gradloom.autodiff.forward import MEMORY_RULES, tangent_kernel
from gradloom.errors import CompileError
from gradloom.ir.prim_entry import jvp_of
from gradloom.ir.prims import PRIMS, Effect, MemoryRule, Prim
from gradloom.types import bool_, float32, int32, int64, ptr

#: float results from float operands that carry no derivative, and why
NOT_DIFFERENTIABLE = {
    "bitcast": "the same bits read as another type (documented: no derivative)",
}
_OPERAND_TYPES = (float32, bool_, int32, int64, ptr)


def _float_from_float(p: Prim) -> bool:
    """Whether some operand types with a float among them give a float result."""
    for types in itertools.product(_OPERAND_TYPES, repeat=p.arity):
        if float32 not in types:
            continue
        try:
            r = p.type_rule(types, float32)
        except TypeError:
            continue
        if r is not None and r.is_float:
            return True
    return False


@pytest.mark.parametrize("name", sorted(PRIMS))
def test_every_differentiable_primitive_has_a_forward_rule(name: str) -> None:
    p = PRIMS[name]
    if forward.refusal(p) is not None:
        pytest.skip(f"refused with a clear error: {forward.refusal(p)}")
    if p.memory_rule is not None:
        assert p.memory_rule in MEMORY_RULES, f"{name}: MemoryRule {p.memory_rule} has no forward rule"
        return
    if p.vjp is not None:
        assert p.forward_rule is not None, f"{name}: has a vjp but no forward rule"
    elif name not in NOT_DIFFERENTIABLE:
        assert not _float_from_float(p), (
            f"{name} can compute a float from a float operand but has neither a vjp nor a jvp "
            "in ir/prims.py (or add it to NOT_DIFFERENTIABLE with the reason)")


def test_every_memory_rule_has_a_forward_rule() -> None:
    assert set(MEMORY_RULES) == set(MemoryRule)


def test_jvp_of_is_the_row_of_partials() -> None:
    """The rule a vjp implies gives Σ p_i t_i (checked on mul and div with numbers)."""
    class Numbers:
        def op(self, prim: str, *args: float, type: object = None) -> float:
            return {"mul": lambda a, b: a * b, "div": lambda a, b: a / b,
                    "neg": lambda a: -a, "add": lambda a, b: a + b}[prim](*args)

        def const(self, value: float, t: object) -> float:
            return value

        def primal(self, v: float) -> float:
            return v

    class FakeOp:
        def __init__(self, args: tuple[float, ...], result: float) -> None:
            self.args, self.result = args, result

    x, y = 3.0, 5.0
    mul = jvp_of(PRIMS["mul"].vjp)  # type: ignore[arg-type]
    assert mul(Numbers(), FakeOp((x, y), x * y), (2.0, 7.0)) == pytest.approx(2.0 * y + 7.0 * x)
    div = jvp_of(PRIMS["div"].vjp)  # type: ignore[arg-type]
    got = div(Numbers(), FakeOp((x, y), x / y), (2.0, 7.0))
    assert got == pytest.approx(2.0 / y - 7.0 * x / y**2)


def test_a_primitive_without_a_rule_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    @wp.kernel
    def k(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = wp.sin(x[i])

    from gradloom import pipeline

    ir = pipeline.lowered(k)
    bare = Prim("sin", 1, PRIMS["sin"].type_rule, Effect.NONE)
    monkeypatch.setitem(forward.PRIMS, "sin", bare)
    with pytest.raises(CompileError, match="'sin' has no forward-mode"):
        tangent_kernel(ir, lambda off: off + 1000)


def test_func_grad_in_forward_mode_is_a_clear_error() -> None:
    @wp.func
    def clipped(x: float):
        return x * x

    @wp.func_grad(clipped)
    def adj_clipped(x: float, adj_ret: float):
        wp.adjoint[x] += wp.clamp(adj_ret, -1.0, 1.0)

    @wp.kernel
    def k(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = clipped(x[i])

    x = wp.array(np.ones(3, np.float32))
    y = wp.zeros(3, dtype=float)
    with pytest.raises(CompileError, match="func_grad"):
        wp.autograd.jvp(k, [x], [np.ones(3, np.float32)], dim=3, outputs=[y])
