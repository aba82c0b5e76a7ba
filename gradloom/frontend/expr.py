"""Lowering of Python expressions (names, operators, calls, subscripts) to kernel values."""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from .. import types as types_module
from ..builtins import lang, memory, ops
from ..builtins.construct import construct
from ..builtins.math import where
from ..builtins.registry import REGISTRY, Builtin, call_mismatch
from ..builtins.transform import transform_part
from ..builtins.values import (
    ArrayVal,
    Composite,
    Ctx,
    KernelValue,
    Literal,
    OutArgs,
    StructVal,
    TupleVal,
    Value,
    describe,
    scalar,
)
from ..errors import (
    CompileError,
    KernelTypeError,
    SourceLoc,
    UnknownNameError,
    UnsupportedSyntaxError,
)
from ..ir.builder import Builder
from ..types import (
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    VecValue,
    int32,
    resolve_annotation,
    type_of_constant,
)
from .source import SourceInfo

BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
          ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul",
          ast.BitAnd: "bitand", ast.BitOr: "bitor", ast.BitXor: "bitxor",
          ast.LShift: "lshift", ast.RShift: "rshift"}
CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
          ast.GtE: "ge"}
UNOPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not", ast.Invert: "invert"}
_COMPONENT = {"x": 0, "y": 1, "z": 2, "w": 3}
#: expressions kernels do not support, in words
_UNSUPPORTED_EXPRS = {
    "JoinedStr": "an f-string", "FormattedValue": "an f-string",
    "ListComp": "a list comprehension", "SetComp": "a set comprehension",
    "DictComp": "a dict comprehension", "GeneratorExp": "a generator expression",
    "Lambda": "a lambda", "List": "a list", "Dict": "a dict", "Set": "a set",
    "Await": "await", "Yield": "yield", "YieldFrom": "yield from",
    "NamedExpr": "an assignment expression (:=)", "Starred": "a starred expression (*x)",
    "Slice": "a slice",
}
_PY_BUILTIN_ALIASES: dict[Any, str] = {
    abs: "abs", min: "min", max: "max", print: "print",
    # `wp.vector(...)` / `wp.matrix(...)` in a kernel construct values (Warp's builtins); in
    # Python scope the same names make types
    types_module.vector: "vector", types_module.matrix: "matrix",
}


def python_constant(ctx: Ctx, obj: Any) -> Any:
    """A captured Python object as a kernel value where it has one; else the object itself."""
    if isinstance(obj, (bool, int, float)) and not isinstance(obj, np.generic):
        return Literal(obj)
    if isinstance(obj, VecValue):
        t = obj.gl_type
        comps = tuple(ctx.const(v.item(), t.dtype) for v in np.ravel(obj))
        return Composite(t, comps)
    if isinstance(obj, np.generic):
        st = type_of_constant(obj)
        if st is not None:
            return ctx.const(obj.item(), st)
    return obj


class ExprLowerer:
    """Expression half of the lowerer; the statement half (lower.py) provides env and info."""

    b: Builder
    info: SourceInfo
    env: dict[str, Any]
    tid_arity: list[int]

    def ctx(self, node: ast.AST) -> Ctx:
        return Ctx(self.b, self.info.loc(node))

    def ctx_at(self, loc: SourceLoc) -> Ctx:
        return Ctx(self.b, loc)

    def unsupported(self, node: ast.AST, what: str) -> CompileError:
        return UnsupportedSyntaxError(f"{what} is not supported in kernels", self.info.loc(node))

    def expr(self, node: ast.expr) -> Any:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            kind = type(node).__name__
            raise self.unsupported(node, _UNSUPPORTED_EXPRS.get(kind, f"the expression '{kind}'"))
        return method(node)

    def value(self, node: ast.expr) -> Value:
        """An expression that must give a kernel value (not a module, type or function)."""
        v = self.expr(node)
        if not isinstance(v, KernelValue):
            raise CompileError(f"{describe(v)} cannot be used as a value here", self.info.loc(node))
        return v

    def expr_Constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, (bool, int, float)):
            return Literal(node.value)
        if isinstance(node.value, str):
            return node.value
        raise self.unsupported(node, f"the constant {node.value!r}")

    def expr_Name(self, node: ast.Name) -> Any:
        if node.id in self.env:
            return self.env[node.id]
        found, obj = self.info.resolve(node.id)
        if not found:
            raise UnknownNameError(f"name '{node.id}' is not defined", self.info.loc(node))
        return python_constant(self.ctx(node), obj)

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        ctx = self.ctx(node)
        if isinstance(base, Composite):
            part = transform_part(base, node.attr)  # xform.p / xform.q
            if part is not None:
                return part
            return self.component(ctx, base, Literal(self.component_index(node, base)))
        if isinstance(base, StructVal):
            if node.attr not in [n for n, _ in base.type.fields]:
                raise CompileError(f"struct {base.type.name} has no field '{node.attr}'", ctx.loc)
            return base.get(node.attr)
        if isinstance(base, ArrayVal):
            if node.attr == "shape":
                return TupleVal(tuple(ctx.op("cast", s, type=int32) for s in base.shape))
            if node.attr == "ndim":
                return Literal(base.type.ndim)
            raise CompileError(f"arrays have no attribute '{node.attr}' in kernels", ctx.loc)
        if isinstance(base, KernelValue):
            raise CompileError(f"{describe(base)} has no attribute '{node.attr}'", ctx.loc)
        if not hasattr(base, node.attr):
            raise UnknownNameError(f"'{getattr(base, '__name__', base)}' has no attribute "
                                   f"'{node.attr}'", ctx.loc)
        return python_constant(ctx, getattr(base, node.attr))

    def component_index(self, node: ast.Attribute, base: Composite) -> int:
        idx = _COMPONENT.get(node.attr)
        if idx is None or not isinstance(base.type, VectorType) or idx >= base.type.length:
            raise CompileError(f"{base.type!r} has no component '{node.attr}'",
                               self.info.loc(node))
        return idx

    def component(self, ctx: Ctx, base: Composite, index: Value) -> Value:
        """v[i] (scalar) or m[i] (row vector), with a literal or runtime index."""
        t = base.type
        if isinstance(t, MatrixType):
            rows = [Composite(VectorType(t.cols, t.dtype), base.comps[r * t.cols:(r + 1) * t.cols])
                    for r in range(t.rows)]
            return self.pick(ctx, rows, index, t.rows)
        return self.pick(ctx, list(base.comps), index, t.length)

    def pick(self, ctx: Ctx, items: list[Any], index: Value, n: int) -> Any:
        if isinstance(index, Literal):
            k = int(index.value)
            if not -n <= k < n:
                raise CompileError(f"index {k} is out of range for length {n}", ctx.loc)
            return items[k]
        i = scalar(ctx, index)
        if not i.type.is_int:
            raise CompileError(f"indices must be integers, got {i.type}", ctx.loc)
        out = items[0]
        for k in range(1, n):
            out = where(ctx, ctx.op("eq", i, ctx.const(k, i.type)), items[k], out)
        return out

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        ctx = self.ctx(node)
        idx = self.indices(node.slice)
        if isinstance(base, ArrayVal):
            r = memory.index_array(ctx, base, idx)
            return memory.load(ctx, r) if isinstance(r, memory.Place) else r
        if isinstance(base, Composite):
            out: Any = base
            for i in idx:
                if not isinstance(out, Composite):
                    raise CompileError("too many indices", ctx.loc)
                out = self.component(ctx, out, i)
            return out
        if isinstance(base, TupleVal) and len(idx) == 1 and isinstance(idx[0], Literal):
            return self.pick(ctx, list(base.items), idx[0], len(base.items))
        raise CompileError(f"{describe(base)} cannot be indexed", ctx.loc)

    def indices(self, node: ast.expr) -> list[Value]:
        if isinstance(node, ast.Slice):
            raise self.unsupported(node, "slicing")
        if isinstance(node, ast.Tuple):
            return [self.value(e) for e in node.elts]
        return [self.value(node)]

    def expr_BinOp(self, node: ast.BinOp) -> Value:
        opname = BINOPS.get(type(node.op))
        if opname is None:
            raise self.unsupported(node, f"the operator {type(node.op).__name__}")
        return ops.binary(self.ctx(node), opname, self.value(node.left), self.value(node.right))

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Value:
        return ops.unary(self.ctx(node), UNOPS[type(node.op)], self.value(node.operand))

    def expr_Compare(self, node: ast.Compare) -> Value:
        ctx = self.ctx(node)
        left = self.value(node.left)
        result: Value | None = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            prim = CMPOPS.get(type(op))
            if prim is None:
                raise self.unsupported(node, f"the comparison '{type(op).__name__}'")
            right = self.value(right_node)
            c = ops.compare(ctx, prim, left, right)
            result = c if result is None else _and(ctx, result, c)
            left = right
        assert result is not None
        return result

    def expr_BoolOp(self, node: ast.BoolOp) -> Value:
        ctx = self.ctx(node)
        combine = _and if isinstance(node.op, ast.And) else _or
        acc: Value = self.value(node.values[0])
        for v in node.values[1:]:
            acc = combine(ctx, acc, self.value(v))
        return acc if not isinstance(acc, Literal) else Literal(bool(acc.value))

    def expr_IfExp(self, node: ast.IfExp) -> Value:
        ctx = self.ctx(node)
        cond = self.value(node.test)
        if isinstance(cond, Literal):
            return self.value(node.body if cond.value else node.orelse)
        a, b = self.value(node.body), self.value(node.orelse)
        return where(ctx, cond, a, b)

    def expr_Tuple(self, node: ast.Tuple) -> Value:
        return TupleVal(tuple(self.value(e) for e in node.elts))

    def expr_Call(self, node: ast.Call) -> Any:
        callee = self.expr(node.func)
        ctx = self.ctx(node)
        if callee is _static_marker():
            return self.static_eval(node)
        if self.is_tid(callee):
            if node.args or node.keywords:
                raise CompileError("wp.tid() takes no arguments", ctx.loc)
            return self.tid(ctx, 1)
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords if k.arg}
        return self.call(ctx, node, callee, args, kwargs)

    def call(self, ctx: Ctx, node: ast.Call, callee: Any, args: list[Any],
             kwargs: dict[str, Any]) -> Any:
        callee = _PY_BUILTIN_ALIASES.get(callee, callee) if _hashable(callee) else callee
        if isinstance(callee, str) and callee in REGISTRY:
            callee = REGISTRY[callee]
        if isinstance(callee, Builtin):
            kw = {k: _unliteral(v) for k, v in kwargs.items()}
            mismatch = call_mismatch(callee, args, kw)
            if mismatch:
                raise KernelTypeError(mismatch, ctx.loc)
            result = callee.fn(ctx, *args, **kw)
            if isinstance(result, OutArgs):
                return self.write_out_args(ctx, node, callee.name, result)
            return result
        if callee is len:
            return self.length_of(ctx, args)
        if hasattr(callee, "pyfunc") and hasattr(callee, "param_types"):
            return self.inline_call(ctx, node, callee, args, kwargs)
        t = _as_type(callee)
        if t is not None:
            if kwargs:
                raise CompileError(f"{t!r}() takes no keyword arguments", ctx.loc)
            return construct(ctx, t, [self.as_value(ctx, a) for a in args])
        if isinstance(callee, KernelValue):
            raise CompileError(f"'{ast.unparse(node.func)}' is {describe(callee)}, which is not "
                               "callable", ctx.loc)
        raise UnknownNameError(_not_callable(node, callee), ctx.loc)

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
        raise CompileError("len() takes one vector, matrix, array or tuple", ctx.loc)

    def static_eval(self, node: ast.Call) -> Any:
        """wp.static(expr): evaluate expr in Python now, with the function's globals."""
        if len(node.args) != 1:
            raise CompileError("wp.static() takes one expression", self.info.loc(node))
        code = compile(ast.Expression(node.args[0]), self.info.file, "eval")
        namespace = dict(self.info.pyfunc.__globals__)
        namespace.update(self.info.closure)
        try:
            result = eval(code, namespace)
        except Exception as exc:
            raise CompileError(f"wp.static() expression failed: {exc}", self.info.loc(node)) \
                from None
        return python_constant(self.ctx(node), result)

    def is_tid(self, callee: Any) -> bool:
        return isinstance(callee, Builtin) and callee.name == "tid"

    def tid(self, ctx: Ctx, count: int) -> Value:
        if count > 4:
            raise CompileError(f"wp.tid() gives at most 4 indices, not {count}", ctx.loc)
        self.tid_arity.append(count)
        if count == 1:
            return ctx.op("tid", attr=(0, 1))
        return TupleVal(tuple(ctx.op("tid", attr=(k, count)) for k in range(count)))

    def inline_call(self, ctx: Ctx, node: ast.Call, fn: Any, args: list[Any],
                    kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError  # provided by the statement lowerer


def _and(ctx: Ctx, a: Value, b: Value) -> Value:
    if isinstance(a, Literal) and isinstance(b, Literal):
        return Literal(bool(a.value) and bool(b.value))
    return ctx.op("and", ops.truth(ctx, a), ops.truth(ctx, b))


def _or(ctx: Ctx, a: Value, b: Value) -> Value:
    if isinstance(a, Literal) and isinstance(b, Literal):
        return Literal(bool(a.value) or bool(b.value))
    return ctx.op("or", ops.truth(ctx, a), ops.truth(ctx, b))


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
