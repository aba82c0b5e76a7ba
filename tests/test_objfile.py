"""The JIT loader refuses object code that needs a symbol the process lacks, instead of binding
it to address 0 (a kernel then crashed on its first use: fuzz case 200:43)."""

from __future__ import annotations

import llvmlite.binding as llvm
import pytest

from gradloom.codegen import cpu
from gradloom.codegen.objfile import undefined_symbols

_NEEDS = """
declare double @{callee}(double)
@{var} = external global i64
@gl_weakling = extern_weak global i64
define double @{name}(double %x) {{
  %v = load i64, ptr @{var}
  %f = sitofp i64 %v to double
  %y = call double @{callee}(double %x)
  %r = fadd double %y, %f
  ret double %r
}}
"""


def _object(name: str, callee: str, var: str) -> bytes:
    return cpu.compile_to_object(_NEEDS.format(name=name, callee=callee, var=var), 2)


def test_undefined_symbols_lists_what_the_object_needs() -> None:
    names = undefined_symbols(_object("gl_t_f", "cos", "gl_interrupts"))
    assert "cos" in names and "gl_interrupts" in names
    assert "gl_weakling" not in names and "gl_t_f" not in names


def test_undefined_symbols_ignores_other_formats() -> None:
    assert undefined_symbols(b"MZ not an ELF object") == []


def test_128_bit_division_links() -> None:
    ir = """
define i128 @gl_t_div(i128 %a, i128 %b) {
  %q = udiv i128 %a, %b
  ret i128 %q
}
"""
    obj = cpu.compile_to_object(ir, 2)
    assert "__udivti3" in undefined_symbols(obj)
    assert cpu.object_loader().load(obj, "gl_t_div") != 0


def test_missing_symbol_is_an_error_not_a_crash() -> None:
    obj = _object("gl_t_missing", "gl_no_such_function_anywhere", "gl_interrupts")
    with pytest.raises(RuntimeError, match="gl_no_such_function_anywhere"):
        cpu.object_loader().load(obj, "gl_t_missing")
    assert llvm.address_of_symbol("gl_t_missing") is None
