"""Lowers a kernel or func body statement by statement to IR, inlining the funcs it calls."""

from __future__ import annotations

import ast
import contextlib
import inspect
from typing import Any

from ..builtins import fixedarray, ops, tile_math, tiles
from ..builtins.registry import Builtin
from ..builtins.values import (
    ArrayVal,
    Composite,
    Ctx,
    FixedArrayVal,
    KernelValue,
    Literal,
    StructVal,
    TileVal,
    TupleVal,
    Value,
    describe,
    materialize,
    type_of,
    zeros_of,
)
from ..errors import (
    CompileError,
    KernelTypeError,
    SourceLoc,
    UnknownNameError,
    UnsupportedSyntaxError,
)
from ..ir.builder import Builder
from ..ir.nodes import KernelIR
from ..types import (
    ArrayType,
    IndexedArrayType,
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    arg_offsets,
    leaves,
    resolve_annotation,
    size_of,
)
from . import refs as refs_mod
from .asserts import AssertLowerer
from .constants import python_constant
from .control import BREAK, CONTINUE, RETURN, RETVAL, contains_jump
from .custom import GRADIENT_SCOPE, emit_custom_call
from .expr import BINOPS
from .func import BIND_ARGUMENTS, FUNCTION_PARAM, LOWERER, is_function_value
from .generic import matches_template
from .gradfn import GradFunction
from .iterate import IterLowerer
from .returns import check_return, declares_no_result
from .source import SourceInfo
from .static import literal_names
from .stores import StoreLowerer

_UNSUPPORTED_STMTS = {
    "ClassDef": "a class definition", "FunctionDef": "a nested function definition",
    "Try": "try/except", "With": "a with-statement", "Raise": "raise", "Global": "global",
    "Nonlocal": "nonlocal", "Delete": "del", "Import": "import", "ImportFrom": "import",
    "AsyncFunctionDef": "async def", "Match": "match",
}


class Lowerer(StoreLowerer, IterLowerer, AssertLowerer):
    """Lowers one function body into the shared builder; funcs it calls get their own Lowerer."""

    def __init__(self, b: Builder, info: SourceInfo, env: dict[str, Any], stack: list[Any],
                 tid_arity: list[int], is_kernel: bool) -> None:
        self.b = b
        self.info = info
        self.env = env
        self.stack = stack
        self.tid_arity = tid_arity
        self.is_kernel = is_kernel
        self.result: Any = None
        self.return_types: list[Any] = []
        self.assign_locs: dict[str, SourceLoc] = {}

    # -- functions ---------------------------------------------------------------------------

    def lower_function(self, retval_type: Any = None) -> Any:
        body = self.info.tree.body
        loc = self.info.loc(self.info.tree)
        if self.is_kernel:
            self.check_kernel_annotation()
        tail_only = not contains_jump(body[:-1], (ast.Return,)) and not (
            body and not isinstance(body[-1], ast.Return)
            and contains_jump(body[-1:], (ast.Return,)))
        if not tail_only:
            self.env[RETURN] = self.flag(False, loc)
            if retval_type is not None:
                self.env[RETVAL] = zeros_of(self.ctx_at(loc), retval_type)
        self.direct_return = tail_only
        self.stmts(body)
        return self.result if tail_only else self.env.get(RETVAL)

    def stmts(self, body: list[ast.stmt]) -> None:
        for i, s in enumerate(body):
            self.stmt(s)
            if isinstance(s, (ast.Break, ast.Continue, ast.Return)):
                return  # the rest is unreachable
            rest = body[i + 1:]
            if rest and contains_jump([s], (ast.Break, ast.Continue, ast.Return)):
                loc = self.info.loc(rest[0])
                jumped = self.jumped(loc)
                if jumped is None:
                    continue
                go_on = self.b.op("not", (jumped,), loc)
                self.if_region(go_on, lambda r=rest: self.stmts(r), lambda: None, loc)  # type: ignore[misc]
                return

    def stmt(self, node: ast.stmt) -> None:
        if not self.probing:
            self.lower_stmt(node)
            return
        with contextlib.suppress(UnknownNameError):  # probing a loop's types: a name set
            self.lower_stmt(node)  # later in the body is not known yet (loops.py)

    def lower_stmt(self, node: ast.stmt) -> None:
        name = type(node).__name__
        if name in _UNSUPPORTED_STMTS:
            raise UnsupportedSyntaxError(f"{_UNSUPPORTED_STMTS[name]} is not supported in kernels",
                                         self.info.loc(node))
        method = getattr(self, "stmt_" + name, None)
        if method is None:
            raise UnsupportedSyntaxError(f"the statement '{name}' is not supported in kernels",
                                         self.info.loc(node))
        method(node)

    # -- simple statements -------------------------------------------------------------------

    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr(node.value)

    def stmt_Assign(self, node: ast.Assign) -> None:
        value: Any
        target0 = node.targets[0]
        if isinstance(target0, (ast.Tuple, ast.List)) and self._is_tid_call(node.value):
            value = self.tid(self.ctx(node), len(target0.elts))
        else:
            value = self.expr(node.value)
        if isinstance(target0, ast.Name):
            check_rebind(self.ctx(target0), target0.id, self.env.get(target0.id), value)
        if isinstance(value, Literal) and isinstance(target0, ast.Name) and \
                len(node.targets) == 1 and target0.id in self.literal_names():
            self.env[target0.id] = value  # a constant variable: keeps its exact value
            self.assign_locs[target0.id] = self.info.loc(target0)
            return
        for target in node.targets:
            self.assign(target, value, node)

    def literal_names(self) -> set[str]:
        names: set[str] | None = self.__dict__.get("_literal_names")
        if names is None:
            def is_type(func: ast.expr) -> bool:
                obj = self.python_object(func)
                return obj in (float, int, bool) or isinstance(
                    obj, (ScalarType, VectorType, MatrixType))
            names = self.__dict__["_literal_names"] = literal_names(self.info.tree, is_type)
        return names

    def _is_tid_call(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Call) and not node.args and self.is_tid(self.expr(node.func))

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise UnsupportedSyntaxError("a declaration without a value is not supported in kernels", self.info.loc(node))
        value = self.value(node.value)
        ann = self.expr(node.annotation)
        try:
            t = resolve_annotation(ann)
        except TypeError as exc:
            raise KernelTypeError(str(exc), self.info.loc(node)) from None
        if isinstance(t, ScalarType):
            value = materialize(self.ctx(node), value, t)
        if type_of(value) != t:
            raise KernelTypeError(f"{describe(value)} cannot be assigned to a variable declared "
                                  f"{t!r}", self.info.loc(node))
        self.assign(node.target, value, node)

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        opname = BINOPS.get(type(node.op))
        if opname is None:
            raise UnsupportedSyntaxError(f"the operator {type(node.op).__name__}=",
                                         self.info.loc(node))
        if not isinstance(node.target, ast.Name):
            self.aug_store_path(node.target, node.value, opname)
            return
        rhs = self.value(node.value)
        ctx = self.ctx(node)
        check_rebind(ctx, node.target.id, self.env.get(node.target.id), None)
        old = self.value(node.target)
        new: Value
        user = self.user_operator(opname, old, rhs)
        if user is not None:  # Warp's operator overloading (expr.py)
            new = materialize(ctx, self.call_operator(ctx, user, opname, (node.target, node.value),
                                                      old, rhs))
        elif isinstance(old, TileVal) or isinstance(rhs, TileVal):  # builtins/tile_math.py
            new = tile_math.binary(ctx, opname, old, rhs)
            if isinstance(old, TileVal):  # in place, as Warp (a tile argument of a func too)
                new = tiles.settle(ctx, new, old)
        else:
            new = materialize(ctx, ops.binary(ctx, opname, old, rhs))
        if type_of(new) != type_of(old):
            raise KernelTypeError(f"'{node.target.id}' would change type from "
                                  f"{type_of(old)!r} to {type_of(new)!r}", ctx.loc)
        self.env[node.target.id] = new
        self.assign_locs[node.target.id] = ctx.loc

    def assign(self, target: ast.expr, value: Any, node: ast.stmt) -> None:
        ctx = self.ctx(target)
        if isinstance(target, ast.Name):
            check_rebind(ctx, target.id, self.env.get(target.id), value)
            self.env[target.id] = bind_value(ctx, value)
            self.assign_locs[target.id] = ctx.loc
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = unpack(ctx, value, len(target.elts))
            for t, v in zip(target.elts, items, strict=True):
                self.assign(t, v, node)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            if not isinstance(value, KernelValue):
                raise CompileError(f"{describe(value)} cannot be stored", ctx.loc)
            self.store_path(target, value, node)
        else:
            raise UnsupportedSyntaxError("this assignment target is not supported in kernels", ctx.loc)

    # -- control flow ------------------------------------------------------------------------

    def stmt_If(self, node: ast.If) -> None:
        cond = self.value(node.test)
        if isinstance(cond, Literal):  # decided at compile time (constants, wp.static)
            self.stmts(node.body if cond.value else node.orelse)
            return
        loc = self.info.loc(node)
        self.if_region(self.truth_at(cond, loc), lambda: self.stmts(node.body),
                       lambda: self.stmts(node.orelse), loc)

    def stmt_Break(self, node: ast.Break) -> None:
        self.env[BREAK] = self.flag(True, self.info.loc(node))

    def stmt_Continue(self, node: ast.Continue) -> None:
        self.env[CONTINUE] = self.flag(True, self.info.loc(node))

    def check_kernel_annotation(self) -> None:
        """A kernel's return annotation may only say it returns nothing (`-> None`)."""
        if not declares_no_result(self.info.pyfunc):
            ann = self.info.tree.returns
            raise KernelTypeError(KERNEL_RETURNS, self.info.loc(ann or self.info.tree))

    def stmt_Return(self, node: ast.Return) -> None:
        loc = self.info.loc(node)
        value = None
        if node.value is not None:
            if self.is_kernel:
                raise KernelTypeError(KERNEL_RETURNS, loc)
            value = bind_value(self.ctx(node), self.value(node.value))
            self.return_types.append(type_of(value))
        if self.direct_return:
            self.result = value
            return
        if value is not None:
            old = self.env.get(RETVAL)
            if old is not None and type_of(old) != type_of(value):
                raise KernelTypeError(f"this return gives {type_of(value)!r} but an earlier one "
                                      f"gives {type_of(old)!r}", loc)
            self.env[RETVAL] = value
        self.env[RETURN] = self.flag(True, loc)

    # -- calls -------------------------------------------------------------------------------

    def inline_call(self, ctx: Ctx, node: ast.Call, fn: Any, args: list[Any],
                    kwargs: dict[str, Any]) -> Any:
        overload = fn.resolve(args, kwargs, ctx.loc) if hasattr(fn, "resolve") else fn
        # recursion is a call of the same overload: one overload of a name may call another
        # (Warp programs write `f(a, b)` as `f(a.x, a.y, b)`)
        if overload in self.stack:
            raise UnsupportedSyntaxError(f"recursion ({fn.key} calls itself) is not supported",
                                         ctx.loc)
        refs = refs_mod.ref_params(overload)
        if refs:
            refs_mod.check_targets(self.env, ctx, node, overload, refs)
        env = bind_arguments(ctx, overload, args, kwargs)
        stack = [*self.stack, overload]
        final: dict[str, Any] = {}

        def lower(info: SourceInfo, env: dict[str, Any], scope: list[Any] = stack) -> Any:
            retval_type = None
            if contains_return_in_loop(info.tree.body):
                trial = Lowerer(Builder(), info, dict(env), scope, [], False)
                trial.lower_function()
                retval_type = trial.return_types[0] if trial.return_types else None
            callee = Lowerer(self.b, info, env, scope, self.tid_arity, False)
            result = callee.lower_function(retval_type)
            check_return(info.pyfunc, info.name, result, ctx.loc)
            final.update(callee.env)
            return result

        custom = getattr(overload, "grad", None) is not None or \
            getattr(overload, "replay", None) is not None
        if custom and any(t is FUNCTION_PARAM for _, t in overload.param_types()):
            raise CompileError(f"{overload.key}(): Function parameters are not supported in "
                               "functions with custom gradients or replay functions", ctx.loc)
        if getattr(overload, "grad", None) is not None and GRADIENT_SCOPE not in self.stack:
            return emit_custom_call(self.b, ctx, overload, env, lower,
                                    [*self.stack, GRADIENT_SCOPE])
        start = dict(env)  # the callee's lowerer rebinds names in env itself
        result = lower(overload.info, env)
        self.write_back_fixed_arrays(node, overload, start, final)
        if refs:
            refs_mod.write_back(self, ctx, node, overload, final, refs)
        return result

    def write_back_fixed_arrays(self, node: ast.Call, fn: Any, start: dict[str, Any],
                                final: dict[str, Any]) -> None:
        """A fixed array a func wrote into (`arr[i] = v` on a parameter) is updated in the
        caller's variable too, as Warp's fixed arrays (references) are."""
        names = list(inspect.signature(fn.pyfunc).parameters)
        passed = {names[i]: a for i, a in enumerate(node.args) if i < len(names)}
        passed.update({k.arg: k.value for k in node.keywords if k.arg})
        for name, value in start.items():
            target = passed.get(name)
            if isinstance(value, FixedArrayVal) and final.get(name) is not value \
                    and isinstance(target, ast.Name) and isinstance(final.get(name),
                                                                    FixedArrayVal):
                self.env[target.id] = final[name]


def contains_return_in_loop(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, (ast.For, ast.While)) and contains_jump(n.body, (ast.Return,))
               for s in body for n in ast.walk(s))


#: Warp's words for a kernel that returns a value or is annotated to
KERNEL_RETURNS = ("Warp kernels cannot return values. Write results to output arguments, and omit "
                  "the return annotation or use `-> None`.")


def check_rebind(ctx: Ctx, name: str, old: Any, new: Any) -> None:
    """A local bound to a function (or to `wp.grad(f)`) names that function for good, as in
    Warp, which has no function pointers: rebinding it is an error (Warp's words)."""
    if isinstance(old, GradFunction):
        raise CompileError(f"Cannot reassign local '{name}' after binding it to wp.grad(...): "
                           "wp.grad(...) results are static function handles; use a different "
                           "local variable for the new value", ctx.loc)
    if not _is_function(old) or new is old:
        return
    what = "a different function" if _is_function(new) else "a non-function value"
    raise CompileError(f"Error, rebinding function-valued local '{name}' to {what} is not "
                       "supported: there are no function pointers in kernels, so a local bound "
                       "to a function must refer to the same function throughout the kernel",
                       ctx.loc)


def _is_function(v: Any) -> bool:
    return isinstance(v, Builtin) or (hasattr(v, "pyfunc") and hasattr(v, "param_types"))


def bind_value(ctx: Ctx, value: Any) -> Any:
    """What a variable holds after `x = value`: literals get their default type."""
    if isinstance(value, Literal):
        return materialize(ctx, value)
    if isinstance(value, TupleVal):
        return TupleVal(tuple(bind_value(ctx, v) for v in value.items))
    return value


def unpack(ctx: Ctx, value: Any, n: int) -> list[Any]:
    if isinstance(value, TupleVal):
        items: list[Any] = list(value.items)
    elif isinstance(value, Composite) and not isinstance(value.type, MatrixType):
        items = list(value.comps)
    else:
        raise CompileError(f"cannot unpack {describe(value)} into {n} names", ctx.loc)
    if len(items) != n:
        raise CompileError(f"cannot unpack {len(items)} values into {n} names", ctx.loc)
    return items


@BIND_ARGUMENTS.fill
def bind_arguments(ctx: Ctx, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    params = fn.param_types()
    sig = inspect.signature(fn.pyfunc)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise KernelTypeError(f"{fn.key}(): {exc}", ctx.loc) from None
    defaults = getattr(fn, "defaults", None)
    for name, value in (defaults or {}).items():  # the function's current defaults (Warp's)
        bound.arguments.setdefault(name, value)
    bound.apply_defaults()
    env: dict[str, Any] = {}
    for name, t in params:
        v = bound.arguments[name]
        if t is FUNCTION_PARAM:
            if not is_function_value(v):
                raise KernelTypeError(f"{fn.key}(): argument '{name}' expects a function "
                                      f"(wp.Function), got {describe(v)}", ctx.loc)
            env[name] = v
            continue
        if not isinstance(v, KernelValue):
            v = python_constant(ctx, v)
        env[name] = coerce_argument(ctx, fn.key, name, v, t)
    return env


def coerce_argument(ctx: Ctx, fname: str, pname: str, v: Any, t: Any) -> Any:
    if t is Any:
        return bind_value(ctx, v)
    if isinstance(t, ScalarType) and isinstance(v, Literal):
        if isinstance(v.value, float) and not t.is_float:
            raise KernelTypeError(f"{fname}(): argument '{pname}' expects {t}, got float "
                                  f"{v.value!r}", ctx.loc)
        return materialize(ctx, v, t)
    got = type_of(v) if isinstance(v, KernelValue) else None
    if not matches_template(got, t) and not fixedarray.accepts(t, v):
        raise KernelTypeError(f"{fname}(): argument '{pname}' expects {t!r}, got "
                              f"{describe(v)}", ctx.loc)
    return v


# -- kernels -----------------------------------------------------------------------------------


def param_value(b: Builder, t: Any, base: int, loc: Any) -> Value:
    """A kernel parameter as a value built from `arg` loads of its scalar leaves."""
    vars_ = [b.op("arg", (), loc, attr=base + off, type=st) for off, st in leaves(t)]
    if isinstance(t, (ArrayType, IndexedArrayType)):
        return ArrayVal.from_words(t, vars_)
    return _assemble_param(b, t, base, loc, iter(vars_))


def _assemble_param(b: Builder, t: Any, base: int, loc: Any, it: Any) -> Value:
    if isinstance(t, ScalarType):
        return next(it)  # type: ignore[no-any-return]
    if isinstance(t, StructType):
        fields: list[Value] = []
        for name, ft in t.fields:
            if isinstance(ft, (ArrayType, IndexedArrayType)):
                fields.append(ArrayVal.from_words(ft, [next(it) for _ in leaves(ft)]))
            else:
                fields.append(_assemble_param(b, ft, base + t.offsets[name], loc, it))
        return StructVal(t, tuple(fields))
    return Composite(t, tuple(next(it) for _ in range(t.length)))


def lower_kernel(info: SourceInfo, params: list[tuple[str, Any]]) -> KernelIR:
    """The IR of a kernel whose arguments have the given (concrete) types."""
    b, first_env, tid_arity = _lower_body(info, params, [])
    if len(set(tid_arity)) > 1:  # a wp.tid() unpacked fewer indices than a later one: again,
        b, first_env, tid_arity = _lower_body(info, params, [max(tid_arity)])  # knowing it
    offsets, _ = arg_offsets([t for _, t in params])
    arrays = env_params(first_env, params)
    unit_strides = tuple((v.strides[-1], size_of(v.type.dtype)) for v in arrays)
    names = tuple((off, name) for (name, t), off in zip(params, offsets, strict=True)
                  if isinstance(t, (ArrayType, IndexedArrayType)))
    return KernelIR(info.name, b.finish(), max(tid_arity, default=1), tuple(b.locs), unit_strides,
                    array_names=names)


def _lower_body(info: SourceInfo, params: list[tuple[str, Any]], tid_arity: list[int]
                ) -> tuple[Builder, dict[str, Any], list[int]]:
    """The kernel's body lowered into a new builder; its parameters' first bindings and the
    index counts its wp.tid() calls unpacked (after those already in tid_arity)."""
    b = Builder()
    loc = info.loc(info.tree)
    offsets, _ = arg_offsets([t for _, t in params])
    env: dict[str, Any] = {}
    for (name, t), off in zip(params, offsets, strict=True):
        env[name] = param_value(b, t, off, loc)
    first_env = dict(env)
    Lowerer(b, info, env, [], tid_arity, True).lower_function()
    return b, first_env, tid_arity


def env_params(env: dict[str, Any], params: list[tuple[str, Any]]) -> list[ArrayVal]:
    """The array parameters as first bound (before the body could rebind their names)."""
    return [env[name] for name, t in params
            if isinstance(t, ArrayType) and isinstance(env.get(name), ArrayVal)]


@LOWERER.fill
def _host_lowerer(b: Builder, info: SourceInfo) -> Lowerer:
    """A lowerer for a function called from Python (no kernel around it)."""
    return Lowerer(b, info, {}, [], [], False)
