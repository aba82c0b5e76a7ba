"""Renders IR as readable text (debug output and golden tests)."""

from __future__ import annotations

from .nodes import Block, Custom, If, KernelIR, Op, Stmt, Var


def _vars(vs: tuple[Var, ...]) -> str:
    return ", ".join(repr(v) for v in vs)


def _op(op: Op) -> str:
    attr = "" if op.attr is None else f" [{op.attr!r}]"
    lhs = f"{op.result!r} = " if op.result is not None else ""
    args = ", ".join(f"%{a.id}" for a in op.args)
    return f"{lhs}{op.prim}({args}){attr}"


def _stmt(s: Stmt, indent: str) -> list[str]:
    if isinstance(s, Op):
        return [indent + _op(s)]
    if isinstance(s, If):
        head = f"{indent}{_vars(s.results)}{' = ' if s.results else ''}if %{s.cond.id}:"
        return [head, *_block(s.then, indent + "  "), indent + "else:",
                *_block(s.orelse, indent + "  ")]
    if isinstance(s, Custom):
        head = f"{indent}{_vars(s.results)} = custom ({', '.join(f'%{v.id}' for v in s.inputs)}):"
        return [head, *_block(s.body, indent + "  "), f"{indent}adjoint ({_vars(s.seeds)}):",
                *_block(s.adjoint, indent + "  ")]
    head = f"{indent}{_vars(s.results)} = loop ({_vars(s.params)}) from ({_vars(s.inits)}):"
    return [head, indent + " while:", *_block(s.cond, indent + "  "), indent + " do:",
            *_block(s.body, indent + "  ")]


def _block(b: Block, indent: str) -> list[str]:
    lines = [line for s in b.stmts for line in _stmt(s, indent)]
    if b.yields:
        lines.append(f"{indent}yield {', '.join(f'%{v.id}' for v in b.yields)}")
    return lines


def format_block(b: Block) -> str:
    return "\n".join(_block(b, "  "))


def format_kernel(k: KernelIR) -> str:
    return f"kernel {k.name} (launch ndim {k.launch_ndim}):\n{format_block(k.body)}"
