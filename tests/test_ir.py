"""IR invariants: codegen covers every primitive, type rules reject bad operands, verify works."""

from __future__ import annotations

import pytest

import gradloom as wp
from gradloom.codegen.llvm_ops import RULES
from gradloom.errors import KernelTypeError, SourceLoc
from gradloom.frontend.lower import lower_kernel
from gradloom.ir.builder import Builder
from gradloom.ir.nodes import Block, KernelIR, Op
from gradloom.ir.prims import PRIMS, result_type
from gradloom.ir.printer import format_kernel
from gradloom.ir.verify import IRVerifyError, verify
from gradloom.types import bool_, float32, float64, int32, int64, ptr

LOC = SourceLoc("test", 1)


def test_codegen_table_covers_every_primitive() -> None:
    assert set(RULES) == set(PRIMS)


def test_every_primitive_has_a_doc_or_obvious_name() -> None:
    for name, prim in PRIMS.items():
        assert prim.name == name
        assert prim.arity >= 0


@pytest.mark.parametrize("prim", ["add", "sub", "mul", "div", "min", "max"])
def test_binary_rules_reject_mixed_types(prim: str) -> None:
    assert result_type(prim, (float32, float32)) == float32
    with pytest.raises(TypeError):
        result_type(prim, (float32, float64))
    with pytest.raises(TypeError):
        result_type(prim, (float32, int32))


def test_float_only_primitives_reject_integers() -> None:
    for prim in ("sqrt", "sin", "exp", "log", "pow", "atan2"):
        arity = PRIMS[prim].arity
        with pytest.raises(TypeError):
            result_type(prim, (int32,) * arity)


def test_compare_gives_bool_and_memory_ops_check_operands() -> None:
    assert result_type("lt", (int32, int32)) == bool_
    assert result_type("load", (ptr, int64), float32) == float32
    with pytest.raises(TypeError):
        result_type("load", (ptr, int32), float32)
    with pytest.raises(TypeError):
        result_type("select", (int32, float32, float32))


def test_builder_reports_type_errors_at_the_source_location() -> None:
    b = Builder()
    x = b.const(1.0, float32, LOC)
    i = b.const(1, int32, LOC)
    with pytest.raises(KernelTypeError) as info:
        b.op("add", (x, i), LOC)
    assert info.value.loc == LOC


def test_verify_rejects_use_before_definition() -> None:
    b = Builder()
    x = b.new_var(float32)  # never defined
    y = b.op("neg", (x,), LOC)
    assert y.type == float32
    with pytest.raises(IRVerifyError):
        verify(KernelIR("k", b.finish(), 1, ()))


def test_verify_rejects_branch_type_mismatch() -> None:
    b = Builder()
    c = b.const(True, bool_, LOC)
    b.open_block()
    one = b.const(1.0, float32, LOC)
    then = b.close_block([one])
    b.open_block()
    two = b.const(2, int32, LOC)
    orelse = b.close_block([two])
    b.emit_if(c, then, orelse, LOC)
    with pytest.raises(IRVerifyError):
        verify(KernelIR("k", b.finish(), 1, ()))


@wp.kernel
def _loop_kernel(x: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for k in range(n):
        if k % 2 == 0:
            s += x[k]
    x[i] = s


def test_lowered_kernel_is_structured_and_verifies() -> None:
    ir = lower_kernel(_loop_kernel.info, list(_loop_kernel.params))
    verify(ir)
    text = format_kernel(ir)
    assert "loop" in text and "if" in text and "store" in text
    ops = [s.prim for s in ir.body.stmts if isinstance(s, Op)]
    assert ops.count("arg") == 5  # x: data, grad, shape, stride; n: one scalar
    assert isinstance(ir.body, Block)
