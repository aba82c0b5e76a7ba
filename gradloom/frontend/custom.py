"""Calls to functions with a `@wp.func_grad` rule: a Custom region holding body and adjoint.

The gradient function is lowered like any function after a source rewrite: `wp.adjoint[x]`
becomes a local accumulator (starting at zero) and the body ends by returning the accumulators
in parameter order. For an array parameter, `wp.adjoint[a]` is the array's gradient: a view
whose element reads, writes and adds become gradient primitives (`adj_read`, `adj_add`, ...)
addressed through `a`'s data pointer; autodiff points them at the gradient when it reverses
the region (passes/custom.py). The adjoint block reads the call's inputs (every word of every
parameter, arrays included) and one placeholder per result adjoint; autodiff substitutes both.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..builtins.values import (
    ArrayVal,
    Ctx,
    StructVal,
    TupleVal,
    Value,
    flatten,
    rebuild,
    type_of,
    zeros_of,
)
from ..errors import CompileError, KernelTypeError, UnsupportedSyntaxError
from ..ir.builder import Builder
from ..ir.nodes import Block, Custom, If, Loop, Op, Stmt, Var, walk_ops
from ..ir.prims import PRIMS, MemoryRule
from ..types import ScalarType, int64, ptr
from .func import Overload
from .source import SourceInfo, parse_function

#: lower(info, env, stack=None) -> the value the function returns, emitted into the current
#: block; stack (when given) replaces the call stack the function is lowered under
LowerBody = Callable[..., Any]

_ADJ = "adjoint__"


class _GradientScope:
    """Marks a call stack as lowering a gradient function: calls of functions with their own
    `@wp.func_grad` rule inline their bodies there (a gradient is never differentiated again),
    and a gradient function may call the function it is the rule of."""

    def __repr__(self) -> str:
        return "<a @wp.func_grad function>"


GRADIENT_SCOPE = _GradientScope()


def emit_custom_call(b: Builder, ctx: Ctx, fn: Overload, env: dict[str, Any],
                     lower: LowerBody, grad_stack: list[Any]) -> Value | None:
    """Emit a call of fn (arguments bound in env) whose reverse is fn.grad; grad_stack: the
    call stack to lower the gradient function under (ending in GRADIENT_SCOPE)."""
    params = [name for name, _ in fn.param_types()]
    inputs = tuple(v for name in params for v in flatten(env[name]))
    b.open_block()
    result = lower(fn.info, dict(env))
    body = b.close_block(flatten(result) if result is not None else ())
    b.open_block()
    seeds = tuple(b.new_var(v.type) for v in body.yields)
    views: dict[Var, Var] = {}
    result_adj = rebuild(result, iter(seeds)) if result is not None else None
    grad_env = _grad_env(ctx, fn, env, params, result_adj, views)
    adjoints = lower(grad_source(fn), grad_env, grad_stack)
    adjoint = gradient_accesses(b.close_block(flatten(adjoints)), views, b.new_var)
    results = b.emit_custom(inputs, body, seeds, adjoint, ctx.loc)
    return rebuild(result, iter(results)) if result is not None else None


def _grad_env(ctx: Ctx, fn: Overload, env: dict[str, Any], params: list[str],
              result_adj: Value | None, views: dict[Var, Var]) -> dict[str, Any]:
    grad_params = list(parse_function(fn.grad).tree.args.args)
    adj_names = [a.arg for a in grad_params[len(params):]]
    if result_adj is None:
        adj_values: list[Value] = []
    elif isinstance(result_adj, TupleVal) and len(adj_names) > 1:
        adj_values = list(result_adj.items)
    else:
        adj_values = [result_adj]
    if len(adj_values) != len(adj_names):
        raise KernelTypeError(f"the @wp.func_grad function of {fn.key} takes {len(adj_names)} "
                              f"result adjoints, but {fn.key} returns {len(adj_values)} values",
                              ctx.loc)
    grad_names = [a.arg for a in grad_params[:len(params)]]
    out = {g: env[p] for g, p in zip(grad_names, params, strict=True)}
    out.update(zip(adj_names, adj_values, strict=True))
    out.update({_ADJ + g: _adjoint_start(ctx, env[p], views)
                for g, p in zip(grad_names, params, strict=True)})
    return out


def _adjoint_start(ctx: Ctx, v: Value, views: dict[Var, Var]) -> Value:
    """What `wp.adjoint[param]` holds when the gradient function starts: zero for a value, the
    gradient view for an array (views maps each view's data pointer to the array's)."""
    if isinstance(v, ArrayVal):
        data = ctx.op("ptr_add", v.data, ctx.const(0, int64))
        views[data] = v.data
        return replace(v, data=data, grad=ctx.const(0, ptr))
    if isinstance(v, StructVal):
        return StructVal(v.type, tuple(_adjoint_start(ctx, f, views) for f in v.fields))
    return zeros_of(ctx, type_of(v))


def grad_source(fn: Overload) -> SourceInfo:
    """The gradient function's source with `wp.adjoint[x]` rewritten to accumulators."""
    info = parse_function(fn.grad)
    tree = copy.deepcopy(info.tree)
    n_inputs = len(fn.param_types())
    names = [a.arg for a in tree.args.args[:n_inputs]]
    def adjoints() -> ast.Tuple:
        return ast.Tuple([ast.Name(_ADJ + n, ast.Load()) for n in names], ast.Load())

    for node in ast.walk(tree):
        if isinstance(node, ast.Return):
            if node.value is not None:
                raise UnsupportedSyntaxError("a @wp.func_grad function must not return a value; "
                                             "add into wp.adjoint[param] instead", info.loc(node))
            # a bare `return` ends the rule early (newton's adj_dense_solve: `if not tmp:
            # return`): the adjoints added so far are its result
            node.value = adjoints()
    tree = _AdjointRewriter(info, names).visit(tree)
    ret = ast.Return(adjoints())
    last = tree.body[-1]
    tree.body.append(ast.copy_location(ret, last))
    ast.fix_missing_locations(tree)
    return replace(info, tree=tree)


class _AdjointRewriter(ast.NodeTransformer):
    def __init__(self, info: SourceInfo, names: list[str]) -> None:
        self.info = info
        self.names = names

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = node.value
        is_adjoint = (isinstance(base, ast.Attribute) and base.attr == "adjoint") or \
            (isinstance(base, ast.Name) and base.id == "adjoint")
        if not is_adjoint:
            return self.generic_visit(node)
        return ast.copy_location(self._target(node.slice, node, node.ctx), node)

    def _target(self, target: ast.expr, node: ast.Subscript, ctx: ast.expr_context) -> ast.expr:
        """`x` -> the accumulator of x; `x.field.sub` -> that field of the accumulator."""
        if isinstance(target, ast.Name) and target.id in self.names:
            return ast.Name(_ADJ + target.id, ctx)
        if isinstance(target, ast.Attribute):
            inner = self._target(target.value, node, ast.Load())
            return ast.Attribute(ast.copy_location(inner, target), target.attr, ctx)
        raise UnsupportedSyntaxError(
            f"wp.adjoint[...] takes a parameter of the function ({', '.join(self.names)}) or a "
            "field of one", self.info.loc(node))


# -- gradient views: `wp.adjoint[array]` --------------------------------------------------------


def gradient_accesses(b: Block, views: dict[Var, Var],
                      new_var: Callable[[ScalarType], Var]) -> Block:
    """b with every memory access through a gradient view made a gradient primitive on the
    array's data pointer, the view's pointer steps folded into the offset."""
    if not views:
        return b
    return _GradientAccesses(b, views, new_var).block(b)


class _GradientAccesses:
    def __init__(self, b: Block, views: dict[Var, Var],
                 new_var: Callable[[ScalarType], Var]) -> None:
        ops = list(walk_ops(b))
        self.defs = {op.result.id: op for op in ops if op.result is not None}
        self.used = {a.id for op in ops for a in op.args}
        self.alias: dict[Var, Var] = {}
        _pass_throughs(b, self.alias)
        self.views = views
        self.new_var = new_var

    def block(self, b: Block) -> Block:
        out: list[Stmt] = []
        for s in b.stmts:
            out.extend(self.stmt(s))
        return Block(tuple(out), b.yields)

    def stmt(self, s: Stmt) -> list[Stmt]:
        if isinstance(s, Op):
            return self.op(s)
        if isinstance(s, If):
            return [If(s.cond, self.block(s.then), self.block(s.orelse), s.results, s.loc)]
        if isinstance(s, Loop):
            return [Loop(s.inits, s.params, self.block(s.cond), self.block(s.body), s.results,
                         s.loc)]
        assert isinstance(s, Custom)  # a call inside the gradient function: its body runs
        return [replace(s, body=self.block(s.body))]

    def view_of(self, p: Var) -> tuple[Var, list[Var]] | None:
        """(the array's data pointer, pointer steps) when p points into a gradient view."""
        steps: list[Var] = []
        while (p := _resolve(p, self.alias)) not in self.views:
            d = self.defs.get(p.id)
            if d is None or d.prim != "ptr_add":
                return None
            steps.append(d.args[1])
            p = d.args[0]
        return self.views[p], steps

    def op(self, s: Op) -> list[Stmt]:
        found = self.view_of(s.args[0]) if PRIMS[s.prim].memory else None
        if found is None:
            return [s]
        data, steps = found
        out: list[Stmt] = []
        off = s.args[1]
        for step in steps:
            total = self.new_var(int64)
            out.append(Op("add", (step, off), total, s.loc))
            off = total
        return out + self.gradient_op(s, data, off)

    def gradient_op(self, s: Op, data: Var, off: Var) -> list[Stmt]:
        """The gradient primitive(s) doing what s does, on the gradient of data's array."""
        rule = PRIMS[s.prim].memory_rule
        value = s.result if rule is MemoryRule.GATHER else s.args[2]
        assert value is not None or rule is not MemoryRule.GATHER
        if value is None or not value.type.is_float:  # integer arrays have no gradient
            return [Op("const", (), s.result, s.loc, 0)] if s.result is not None else []
        if rule is MemoryRule.GATHER:
            return [Op("adj_read", (data, off), s.result, s.loc, s.attr)]
        if rule is MemoryRule.OVERWRITE:
            old = self.new_var(value.type)
            return [Op("adj_take", (data, off), old, s.loc, s.attr),
                    Op("adj_add", (data, off, value), None, s.loc, s.attr)]
        if rule is MemoryRule.ACCUMULATE:
            used = s.result is not None and s.result.id in self.used
            read = [Op("adj_read", (data, off), s.result, s.loc, s.attr)] if used else []
            return [*read, Op("adj_add", (data, off, value), None, s.loc, s.attr)]
        raise CompileError(f"wp.{s.prim}() on wp.adjoint[array] is not supported; add into "
                           "it with += or wp.atomic_add", s.loc)


def _resolve(v: Var, alias: dict[Var, Var]) -> Var:
    while v in alias:
        v = alias[v]
    return v


def _pass_throughs(b: Block, alias: dict[Var, Var]) -> None:
    """alias: loop parameters (and results) every trip passes through unchanged, and if
    results both branches give the same value, mapped to that value (the frontend carries
    array pointers through loops; passes/invariant.py drops such parameters later)."""
    for s in b.stmts:
        if isinstance(s, If):
            _pass_throughs(s.then, alias)
            _pass_throughs(s.orelse, alias)
            for r, t, e in zip(s.results, s.then.yields, s.orelse.yields, strict=True):
                if _resolve(t, alias) == _resolve(e, alias):
                    alias[r] = _resolve(t, alias)
        elif isinstance(s, Loop):
            _pass_throughs(s.cond, alias)
            _pass_throughs(s.body, alias)
            for init, p, y, r in zip(s.inits, s.params, s.body.yields, s.results, strict=True):
                if _resolve(y, alias) == p:
                    alias[p] = alias[r] = init
        elif isinstance(s, Custom):
            _pass_throughs(s.body, alias)
