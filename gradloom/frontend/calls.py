"""Lowering of calls in kernels: builtins, types and casts, user functions, `len`, `type`,
`wp.static` and `wp.tid`; the expression lowerer (expr.py) builds on it."""

from __future__ import annotations

import ast
import functools
import inspect
from typing import Any

from .. import types as types_module
from ..builtins import lang
from ..builtins.construct import construct_typed
from ..builtins.registry import REGISTRY, Builtin, call_mismatch
from ..builtins.values import (
    ArrayVal,
    Composite,
    Ctx,
    FixedArrayVal,
    KernelValue,
    Literal,
    OutArgs,
    TupleVal,
    Value,
    describe,
    type_of,
)
from ..errors import (
    CompileAttributeError,
    CompileError,
    GradloomError,
    KernelTypeError,
    SourceLoc,
    UnknownNameError,
)
from ..ir.builder import Builder
from ..types import (
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    int32,
    resolve_annotation,
)
from .constants import construct_struct, static_result
from .source import SourceInfo
from .static import constant_names, static_locals

_PY_BUILTIN_ALIASES: dict[Any, str] = {
    abs: "abs", min: "min", max: "max", print: "print", slice: "slice",
    # Python's round() in a kernel is wp.round (halves away from zero), as in Warp
    round: "round",
    # `wp.vector(...)` / `wp.matrix(...)` in a kernel construct values (Warp's builtins); in
    # Python scope the same names make types
    types_module.vector: "vector", types_module.matrix: "matrix",
    types_module.quaternion: "quaternion", types_module.transformation: "transformation",
}

class CallLowerer:
    """The call half of expression lowering; expr.py's ExprLowerer provides the expression
    dispatch (`expr`, `starred`, `python_object`) and lower.py the user-function inlining."""

    b: Builder
    info: SourceInfo
    env: dict[str, Any]
    tid_arity: list[int]

    def ctx(self, node: ast.AST) -> Ctx:
        return Ctx(self.b, self.info.loc(node))

    def ctx_at(self, loc: SourceLoc) -> Ctx:
        return Ctx(self.b, loc)

    def expr(self, node: ast.expr) -> Any:
        raise NotImplementedError  # provided by the expression lowerer

    def starred(self, node: ast.expr) -> list[Value]:
        raise NotImplementedError  # provided by the expression lowerer

    def python_object(self, node: ast.expr) -> Any:
        raise NotImplementedError  # provided by the expression lowerer

    def expr_Call(self, node: ast.Call) -> Any:
        ctx = self.ctx(node)
        if id(node) in self.info.statics:  # a wp.static(...) evaluated at declaration
            return static_result(ctx, self.info.statics[id(node)])
        callee = self.callee(node.func)
        if callee is _static_marker():
            return self.static_eval(node)
        if self.is_tid(callee):
            if node.args or node.keywords:
                raise CompileError("wp.tid() takes no arguments", ctx.loc)
            return self.tid(ctx, 1)
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.starred(a.value))
            else:
                args.append(self.expr(a))
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords if k.arg}
        return self.call(ctx, node, callee, args, kwargs)

    def callee(self, node: ast.expr) -> Any:
        """What a call calls; a bare name defined nowhere may name a builtin or a type, as in
        Warp (`expect_eq(a, b)`, `vec3(...)` without `wp.`)."""
        if isinstance(node, ast.Name) and node.id not in self.env and \
                not self.info.resolve(node.id)[0]:
            found = REGISTRY.get(node.id) or getattr(types_module, node.id, None)
            if isinstance(found, (Builtin, ScalarType, VectorType, MatrixType)):
                return found
        if isinstance(node, ast.Attribute) and node.attr not in ("float", "int"):
            module = self.python_object(node.value)
            if inspect.ismodule(module) and not hasattr(module, node.attr):
                raise CompileAttributeError(f"Could not find function {ast.unparse(node)}: "
                                            f"module '{module.__name__}' has no attribute "
                                            f"'{node.attr}'", self.info.loc(node))
        return self.expr(node)

    def call(self, ctx: Ctx, node: ast.Call, callee: Any, args: list[Any],
             kwargs: dict[str, Any]) -> Any:
        callee = _PY_BUILTIN_ALIASES.get(callee, callee) if _hashable(callee) else callee
        # a Python-scope function that is also a kernel builtin (`wp.zeros` makes fixed arrays)
        callee = getattr(callee, "__gl_kernel_builtin__", callee)
        if isinstance(callee, str) and callee in REGISTRY:
            callee = REGISTRY[callee]
        if getattr(callee, "__module__", None) == "math" and \
                getattr(callee, "__name__", None) in REGISTRY:
            callee = REGISTRY[callee.__name__]  # `math.sqrt(x)`: Warp calls its builtin sqrt
        if isinstance(callee, Builtin):
            return self.call_builtin(ctx, node, callee, args, kwargs)
        if callee is len:
            return self.length_of(ctx, args)
        if callee is type:  # `type(x)(...)`: the type of a value, to construct or cast with
            if len(args) != 1 or kwargs or not isinstance(args[0], KernelValue) or \
                    isinstance(args[0], TupleVal):
                raise CompileError("type() takes one value (scalar, vector, matrix, struct or "
                                   "array)", ctx.loc)
            return type_of(args[0])
        lower_call = getattr(callee, "__gl_call__", None)  # wp.grad, wp.func_native stubs
        if lower_call is not None:
            return lower_call(self, ctx, node, args, kwargs)
        if hasattr(callee, "pyfunc") and hasattr(callee, "param_types"):
            return self.inline_call(ctx, node, callee, args, kwargs)
        t = _as_type(callee)
        if isinstance(t, StructType) and (args or kwargs):
            return construct_struct(ctx, t, args, kwargs)
        if t is not None:
            return self.call_type(ctx, t, args, kwargs)
        if isinstance(callee, KernelValue):
            raise CompileError(f"'{ast.unparse(node.func)}' is {describe(callee)}, which is not "
                               "callable", ctx.loc)
        raise UnknownNameError(_not_callable(node, callee), ctx.loc)

    def call_builtin(self, ctx: Ctx, node: ast.Call, callee: Builtin, args: list[Any],
                     kwargs: dict[str, Any]) -> Any:
        kw = {k: v if _takes_value(callee.fn, k) else _unliteral(v) for k, v in kwargs.items()}
        mismatch = call_mismatch(callee, args, kw)
        if mismatch:
            raise KernelTypeError(mismatch, ctx.loc)
        try:
            result = callee.fn(ctx, *args, **kw)
        except TypeError as exc:
            if isinstance(exc, GradloomError) or _binds(callee.fn, ctx, args, kw):
                raise
            raise KernelTypeError(f"wp.{callee.name}(): {exc}", ctx.loc) from None
        if isinstance(result, OutArgs):
            return self.write_out_args(ctx, node, callee.name, result)
        return result

    def call_type(self, ctx: Ctx, t: Any, args: list[Any], kwargs: dict[str, Any]) -> Value:
        """A type called in a kernel: a cast or a constructor (`wp.transform(p=..., q=...)`)."""
        try:
            kw = {k: _unliteral(v) if k in ("length", "shape", "dtype") else v
                  for k, v in kwargs.items()}
            return construct_typed(ctx, t, [self.as_value(ctx, a) for a in args], kw)
        except TypeError as exc:  # a keyword the builtin does not take
            if isinstance(exc, GradloomError):
                raise
            raise KernelTypeError(f"{t!r}(): {exc}", ctx.loc) from None

    def write_out_args(self, ctx: Ctx, node: ast.Call, name: str, out: OutArgs) -> Any:
        """Rebind the variables passed as a builtin's output arguments."""
        for index, value in out.writes:
            target = node.args[index] if index < len(node.args) else None
            if not isinstance(target, ast.Name) and out.temporaries_ok:
                continue
            if not isinstance(target, ast.Name):
                raise CompileError(f"wp.{name}(): argument {index + 1} is an output and must be "
                                   "a variable name", ctx.loc)
            self.env[target.id] = value
        return out.result

    def as_value(self, ctx: Ctx, v: Any) -> Value:
        if not isinstance(v, KernelValue):
            raise CompileError(f"{describe(v)} cannot be used as a value here", ctx.loc)
        return v

    def length_of(self, ctx: Ctx, args: list[Any]) -> Value:
        v = args[0] if len(args) == 1 else None
        if isinstance(v, Composite):
            return Literal(v.type.length if isinstance(v.type, VectorType) else v.type.rows)
        if isinstance(v, ArrayVal):
            return ctx.op("cast", v.shape[0], type=int32)
        if isinstance(v, TupleVal):
            return Literal(len(v.items))
        if isinstance(v, FixedArrayVal):
            return Literal(v.type.shape[0])
        raise CompileError("len() takes one vector, matrix, array or tuple", ctx.loc)

    def static_eval(self, node: ast.Call) -> Any:
        """wp.static(expr) as a kernel value (or the Python object: a function, a type)."""
        return static_result(self.ctx(node), self.static_value(node))

    def static_value(self, node: ast.Call) -> Any:
        """wp.static(expr): evaluate expr in Python now, with the function's globals and the
        compile-time view of its locals (static.py)."""
        if len(node.args) != 1:
            raise CompileError("wp.static() takes one expression", self.info.loc(node))
        if id(node) in self.info.statics:  # evaluated when the function was declared
            return self.info.statics[id(node)]
        code = compile(ast.Expression(node.args[0]), self.info.file, "eval")
        namespace = dict(self.info.pyfunc.__globals__)
        namespace.update(self.info.closure)
        constants = self.__dict__.setdefault("_constants", constant_names(self.info.tree,
                                                                            self.info.statics))
        unrolled: dict[str, Any] = self.__dict__.setdefault("static_indices", {})
        namespace.update(static_locals(self.env, {**constants, **unrolled}))
        try:
            return eval(code, namespace)
        except Exception as exc:
            hint = (". Make sure all variables used in the static expression are constant."
                    if isinstance(exc, NameError) else "")
            raise CompileError(f"wp.static(): Error evaluating static expression: {exc}{hint}",
                               self.info.loc(node)) from None

    def is_tid(self, callee: Any) -> bool:
        return isinstance(callee, Builtin) and callee.name == "tid"

    def tid(self, ctx: Ctx, count: int) -> Value:
        if count > 4:
            raise CompileError(f"wp.tid() gives at most 4 indices, not {count}", ctx.loc)
        self.tid_arity.append(count)
        # the leading `count` of the kernel's indices (Warp: `i = wp.tid()` in a kernel that
        # also unpacks `i, j = wp.tid()` is the leading index; lower.py lowers again once it
        # knows the kernel's count)
        n = max(self.tid_arity)
        if count == 1:
            return ctx.op("tid", attr=(0, n))
        return TupleVal(tuple(ctx.op("tid", attr=(k, n)) for k in range(count)))

    def inline_call(self, ctx: Ctx, node: ast.Call, fn: Any, args: list[Any],
                    kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError  # provided by the statement lowerer


def _as_type(obj: Any) -> Any:
    if isinstance(obj, (ScalarType, VectorType, MatrixType, StructType)):
        return obj
    if obj in (float, int, bool) or hasattr(obj, "__gl_struct__"):
        return resolve_annotation(obj)
    return None


def _hashable(obj: Any) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _binds(fn: Any, *args: Any, **kwargs: Any) -> bool:
    """Whether a builtin's Python signature accepts these arguments."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return False
    return True


@functools.cache
def _takes_value(fn: Any, name: str) -> bool:
    """Whether a builtin's keyword parameter takes a kernel value (`tolerance=1e-5`) rather
    than a Python constant (`dtype=`, `n=`): its annotation says `Value`."""
    ann = getattr(fn, "__annotations__", {}).get(name, "")
    return str(ann).startswith("Value")


def _unliteral(v: Any) -> Any:
    if isinstance(v, Literal):
        return v.value
    if isinstance(v, TupleVal) and all(isinstance(i, Literal) for i in v.items):
        return tuple(i.value for i in v.items)  # type: ignore[union-attr]
    return v


def _static_marker() -> Any:
    return lang.STATIC



def _not_callable(node: ast.Call, callee: Any) -> str:
    """Why a call's target is not something kernels can call (suggesting wp.<name> for NumPy's
    and math's functions that have a kernel builtin of the same name)."""
    name = getattr(callee, "__name__", None) or repr(callee)
    text = ast.unparse(node.func)
    if name in REGISTRY and not text.startswith(("wp.", "warp.", "gradloom.")):
        return (f"'{text}' is a Python function, which kernels cannot call; use the kernel "
                f"builtin wp.{name} instead")
    return f"'{text}' is not a kernel builtin or @wp.func"
