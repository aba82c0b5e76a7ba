"""Calls to functions with a `@wp.func_grad` rule: a Custom region holding body and adjoint.

The gradient function is lowered like any function after a source rewrite: `wp.adjoint[x]`
becomes a local accumulator (starting at zero) and the body ends by returning the accumulators
in parameter order. The adjoint block reads the call's inputs and one placeholder per result
adjoint; autodiff substitutes both when it reverses the region.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..builtins.values import ArrayVal, Ctx, TupleVal, Value, flatten, rebuild, type_of, zeros_of
from ..errors import KernelTypeError, UnsupportedSyntaxError
from ..ir.builder import Builder
from .func import Overload
from .source import SourceInfo, parse_function

#: lower(info, env) -> the value the function returns, emitted into the current block
LowerBody = Callable[[SourceInfo, dict[str, Any]], Any]

_ADJ = "adjoint__"


def emit_custom_call(b: Builder, ctx: Ctx, fn: Overload, env: dict[str, Any],
                     lower: LowerBody) -> Value:
    """Emit a call of fn (arguments bound in env) whose reverse is fn.grad."""
    params = [name for name, _ in fn.param_types()]
    for name in params:
        if _has_array(env[name]):
            raise KernelTypeError(f"{fn.key}(): parameter {name!r} holds an array; functions "
                                  "with a @wp.func_grad rule take values only", ctx.loc)
    inputs = tuple(v for name in params for v in flatten(env[name]))
    b.open_block()
    result = lower(fn.info, dict(env))
    if result is None:
        raise KernelTypeError(f"{fn.key}() has a @wp.func_grad rule but returns nothing",
                              ctx.loc)
    body = b.close_block(flatten(result))
    b.open_block()
    seeds = tuple(b.new_var(v.type) for v in body.yields)
    grad_env = _grad_env(ctx, fn, env, params, rebuild(result, iter(seeds)))
    adjoints = lower(grad_source(fn), grad_env)
    adjoint = b.close_block(flatten(adjoints))
    results = b.emit_custom(inputs, body, seeds, adjoint, ctx.loc)
    return rebuild(result, iter(results))


def _has_array(v: Any) -> bool:
    if isinstance(v, ArrayVal):
        return True
    items = getattr(v, "fields", None) or getattr(v, "items", None) or ()
    return any(_has_array(i) for i in items)


def _grad_env(ctx: Ctx, fn: Overload, env: dict[str, Any], params: list[str],
              result_adj: Value) -> dict[str, Any]:
    grad_params = list(parse_function(fn.grad).tree.args.args)
    adj_names = [a.arg for a in grad_params[len(params):]]
    adj_values = list(result_adj.items) if isinstance(result_adj, TupleVal) and \
        len(adj_names) > 1 else [result_adj]
    if len(adj_values) != len(adj_names):
        raise KernelTypeError(f"the @wp.func_grad function of {fn.key} takes {len(adj_names)} "
                              f"result adjoints, but {fn.key} returns {len(adj_values)} values",
                              ctx.loc)
    grad_names = [a.arg for a in grad_params[:len(params)]]
    out = {g: env[p] for g, p in zip(grad_names, params, strict=True)}
    out.update(zip(adj_names, adj_values, strict=True))
    out.update({_ADJ + g: zeros_of(ctx, type_of(env[p])) for g, p in zip(grad_names, params,
                                                                        strict=True)})
    return out


def grad_source(fn: Overload) -> SourceInfo:
    """The gradient function's source with `wp.adjoint[x]` rewritten to accumulators."""
    info = parse_function(fn.grad)
    tree = copy.deepcopy(info.tree)
    n_inputs = len(fn.param_types())
    names = [a.arg for a in tree.args.args[:n_inputs]]
    for node in ast.walk(tree):
        if isinstance(node, ast.Return):
            raise UnsupportedSyntaxError("a @wp.func_grad function must not return; add into "
                                         "wp.adjoint[param] instead", info.loc(node))
    tree = _AdjointRewriter(info, names).visit(tree)
    ret = ast.Return(ast.Tuple([ast.Name(_ADJ + n, ast.Load()) for n in names], ast.Load()))
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
        target = node.slice
        if not isinstance(target, ast.Name) or target.id not in self.names:
            raise UnsupportedSyntaxError(
                f"wp.adjoint[...] takes a parameter of the function ({', '.join(self.names)})",
                self.info.loc(node))
        return ast.copy_location(ast.Name(_ADJ + target.id, node.ctx), node)
