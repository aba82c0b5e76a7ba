"""`wp.ref[T]` parameters of inlined functions: the caller's target takes their final value.

A function is inlined at its call site, so passing by reference is copy-in, copy-out: the
parameter starts as the argument's value and, when the call returns, the argument's target (a
local variable, an array element, a struct field, a vector component: anything an assignment
could write) is assigned the parameter's final value. The argument must be such a target; a
literal, an expression, a function's result or a compile-time constant local is refused before
the call is lowered, as in Warp. Array parameters need no copy back (an array is a reference).
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

from ..builtins.values import ArrayVal, Ctx, KernelValue, Literal, materialize, type_of
from ..errors import CompileError, KernelTypeError
from ..types.reference import Reference


def _annotation(fn: Any, name: str, ann: Any) -> Any:
    if not isinstance(ann, str):
        return ann
    namespace = dict(getattr(fn.pyfunc, "__globals__", {}))
    try:
        return eval(ann, namespace)
    except Exception:
        return None


def ref_params(fn: Any) -> dict[str, Reference]:
    """The parameters of an overload (or function) annotated `wp.ref[T]`, by name."""
    try:
        sig = inspect.signature(fn.pyfunc)
    except (TypeError, ValueError):
        return {}
    out = {}
    for name, p in sig.parameters.items():
        ann = _annotation(fn, name, p.annotation)
        if isinstance(ann, Reference):
            out[name] = ann
    return out


def _passed(node: ast.Call, fn: Any) -> dict[str, ast.expr]:
    names = list(inspect.signature(fn.pyfunc).parameters)
    passed = {names[i]: a for i, a in enumerate(node.args) if i < len(names)}
    passed.update({k.arg: k.value for k in node.keywords if k.arg})
    return passed


def _base_name(target: ast.expr) -> ast.expr:
    while isinstance(target, (ast.Subscript, ast.Attribute)):
        target = target.value
    return target


def check_targets(env: dict[str, Any], ctx: Ctx, node: ast.Call, fn: Any,
                  refs: dict[str, Reference]) -> None:
    """Each wp.ref[T] argument names storage the call can write back to."""
    passed = _passed(node, fn)
    for name, ref in refs.items():
        target = passed.get(name)
        if target is None:
            continue
        base = _base_name(target)
        if not isinstance(base, ast.Name) or (isinstance(target, ast.Name) and \
                not isinstance(env.get(target.id), KernelValue)):
            raise CompileError(f"{fn.key}(): argument '{name}' is passed by reference (wp.ref[T])"
                               f"; '{ast.unparse(target)}' is not a variable, array element or "
                               "field it could write to", ctx.loc)
        value = env.get(base.id)
        if isinstance(value, Literal) and isinstance(target, ast.Name):
            tname = getattr(ref.dtype, "__name__", repr(ref.dtype))
            raise CompileError(f"{fn.key}(): argument '{name}' is passed by reference "
                               f"(wp.ref[T]) but '{base.id}' is a compile-time constant; give "
                               f"it a type: {base.id} = wp.{tname}({value.value!r})", ctx.loc)


def write_back(lowerer: Any, ctx: Ctx, node: ast.Call, fn: Any, final: dict[str, Any],
               refs: dict[str, Reference]) -> None:
    """Assign each wp.ref[T] parameter's final value to the caller's argument target."""
    passed = _passed(node, fn)
    types = dict(fn.param_types())
    for name in refs:
        target, value = passed.get(name), final.get(name)
        if target is None or value is None or isinstance(value, ArrayVal):
            continue
        want = types.get(name)
        if isinstance(value, Literal) and want is not None:
            value = materialize(ctx, value, want)
        if want is not None and isinstance(value, KernelValue) and type_of(value) != want:
            raise KernelTypeError(f"{fn.key}(): augmented assignment to ref parameter '{name}' "
                                  f"gives {type_of(value)!r}, not {want!r}", ctx.loc)
        lowerer.assign(target, value, node)
