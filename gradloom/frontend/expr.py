"""Lowering of Python expressions (names, operators, calls, subscripts) to kernel values."""

from __future__ import annotations

import ast
import builtins
import enum
import functools
import inspect
from typing import Any

from .. import types as types_module
from ..builtins import arrayview, fixedarray, lang, memory, ops, tile_index, tile_math
from ..builtins.construct import construct_typed
from ..builtins.math import where
from ..builtins.registry import REGISTRY, Builtin, call_mismatch
from ..builtins.transform import transform_part
from ..builtins.values import (
    ArrayVal,
    Composite,
    Ctx,
    FixedArrayVal,
    KernelValue,
    Literal,
    OutArgs,
    ShapeVal,
    StructVal,
    TileVal,
    TupleVal,
    Value,
    describe,
    scalar,
    type_of,
)
from ..errors import (
    CompileAttributeError,
    CompileError,
    GradloomError,
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
    int32,
    resolve_annotation,
)
from .attributes import array_attribute, shape_padding, struct_field
from .constants import (
    construct_struct,
    language_name,
    python_constant,
    static_result,
)
from .logic import compare_operands, logical_and, logical_or, truth
from .slices import (
    array_slice_items,
    constant_keys,
    has_slice,
    read_slice,
    slice_key,
    star_items,
)
from .source import SourceInfo
from .static import constant_names, static_locals

BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
          ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul",
          ast.BitAnd: "bitand", ast.BitOr: "bitor", ast.BitXor: "bitxor",
          ast.LShift: "lshift", ast.RShift: "rshift"}
_OP_SIGNS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%",
             "pow": "**", "matmul": "@", "bitand": "&", "bitor": "|", "bitxor": "^",
             "lshift": "<<", "rshift": ">>"}
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
_WARP_WORDS = {
    "List": "List constructs are not supported in kernels. Use vectors like `wp.vec3()` for small "
            "fixed-size collections, or `wp.zeros(shape=N, dtype=...)` for stack-allocated arrays.",
    "Dict": "a dict is not supported in kernels: Construct `ast.Dict` not supported in kernels.",
}
_PY_BUILTIN_ALIASES: dict[Any, str] = {
    abs: "abs", min: "min", max: "max", print: "print", slice: "slice",
    # Python's round() in a kernel is wp.round (halves away from zero), as in Warp
    round: "round",
    # `wp.vector(...)` / `wp.matrix(...)` in a kernel construct values (Warp's builtins); in
    # Python scope the same names make types
    types_module.vector: "vector", types_module.matrix: "matrix",
    types_module.quaternion: "quaternion", types_module.transformation: "transformation",
}


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
            if kind in _WARP_WORDS:  # Warp's own words (its tests match them)
                raise UnsupportedSyntaxError(_WARP_WORDS[kind], self.info.loc(node))
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
        if node.value is None:  # a type error, as Warp reports it (WarpCodegenTypeError)
            raise KernelTypeError("None type unsupported: the constant None is not a kernel "
                                  "value", self.info.loc(node))
        raise self.unsupported(node, f"the constant {node.value!r}")

    def expr_Name(self, node: ast.Name) -> Any:
        if node.id in self.env:
            return self.env[node.id]
        found, obj = self.info.resolve(node.id)
        if not found:  # as in Warp, a kernel builtin or type name needs no `wp.` prefix
            found, obj = language_name(node.id)
        if not found:
            conflict = self.__dict__.get("type_conflicts", {}).get(node.id)
            if conflict is not None:  # set on two branches with two types (control.py)
                raise KernelTypeError(*conflict)
            raise UnknownNameError(f"name '{node.id}' is not defined (Referencing undefined "
                                   f"symbol: {node.id})", self.info.loc(node))
        return python_constant(self.ctx(node), obj)

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        ctx = self.ctx(node)
        if node.attr in ("value", "name"):  # `Color.RED.value`
            member = self.python_object(node.value)
            if isinstance(member, enum.Enum):
                return python_constant(ctx, getattr(member, node.attr))
        base = self.expr(node.value)
        if isinstance(base, Composite):
            part = transform_part(base, node.attr)  # xform.p / xform.q
            if part is not None:
                return part
            if node.attr == "dtype":  # the component type
                return base.type.dtype
            if node.attr == "length" and isinstance(base.type, VectorType):
                return Literal(base.type.length)
            return self.component(ctx, base, Literal(self.component_index(node, base)))
        if isinstance(base, FixedArrayVal):
            return fixedarray.attribute(ctx, base, node.attr)
        if isinstance(base, StructVal):
            return struct_field(ctx, node, base)
        if isinstance(base, ArrayVal):
            return array_attribute(ctx, base, node.attr)
        if isinstance(base, KernelValue):
            raise CompileError(f"{describe(base)} has no attribute '{node.attr}'", ctx.loc)
        if node.attr in ("float", "int") and getattr(base, "__name__", "") in ("gradloom", "warp") \
                and not hasattr(base, node.attr):
            return getattr(builtins, node.attr)  # `wp.float(x)` in kernels, as in Warp
        if not hasattr(base, node.attr):
            raise CompileAttributeError(f"'{getattr(base, '__name__', base)}' has no attribute "
                                        f"'{node.attr}': `{node.attr}` is not an attribute of "
                                        f"'{ast.unparse(node.value)}'", ctx.loc)
        return python_constant(ctx, getattr(base, node.attr))

    def python_object(self, node: ast.expr) -> Any:
        """The Python object a global name or attribute chain (`mod.Enum.MEMBER`) names, or
        None (a local, or not such a chain)."""
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return None
            return self.info.resolve(node.id)[1]
        if isinstance(node, ast.Attribute):
            base = self.python_object(node.value)
            return None if base is None else getattr(base, node.attr, None)
        return None

    def component_index(self, node: ast.Attribute, base: Composite) -> int:
        idx = _COMPONENT.get(node.attr)
        if idx is None or not isinstance(base.type, VectorType) or idx >= base.type.length:
            # Warp's words and type (an AttributeError), then ours
            raise CompileAttributeError(
                f"`{node.attr}` is not an attribute of '{ast.unparse(node.value)}' "
                f"({base.type!r}): {base.type!r} has no component '{node.attr}'",
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
        if isinstance(base, FixedArrayVal):  # builtins/fixedarray.py (slices allowed)
            return fixedarray.subscript(ctx, base, constant_keys(ctx, self.indices(node.slice)))
        if isinstance(base, TileVal):  # builtins/tile_index.py
            return tile_index.subscript(ctx, base, self.indices(node.slice))
        idx = self.indices(node.slice)
        if has_slice(idx):
            return self.sliced(ctx, base, idx)
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
        if isinstance(base, (list, tuple, dict)) and all(isinstance(i, Literal) for i in idx):
            key = idx[0].value if len(idx) == 1 else tuple(i.value for i in idx)
            try:  # a Python container indexed by a constant (`table[wp.static(i)](x)`)
                return python_constant(ctx, base[key])  # type: ignore[index]
            except (LookupError, TypeError) as exc:
                raise CompileError(f"{type(base).__name__}[{key!r}]: {exc}", ctx.loc) from None
        padding = shape_padding(ctx, base, idx[0]) if isinstance(base, ShapeVal) and \
            len(idx) == 1 else None
        if padding is not None:
            return padding
        if isinstance(base, TupleVal) and len(idx) == 1 and (isinstance(idx[0], Literal) or len(
                {repr(type_of(i)) for i in base.items}) == 1):  # a run-time index: one item type
            return self.pick(ctx, list(base.items), idx[0], len(base.items))
        raise CompileError(f"{describe(base)} cannot be indexed", ctx.loc)

    def indices(self, node: ast.expr) -> list[Any]:
        """The keys of a subscript: values, or Python slices with constant bounds."""
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        return [self.slice_key(e) if isinstance(e, ast.Slice) else self.value(e) for e in elts]

    def slice_key(self, node: ast.Slice) -> Any:
        bounds = [None if b is None else self.value(b) for b in (node.lower, node.upper, node.step)]
        return slice_key(self.ctx(node), *bounds)

    def starred(self, node: ast.expr) -> list[Value]:
        """The arguments `*node` passes: components, rows, tuple items or array elements."""
        if isinstance(node, ast.Subscript):
            base = self.expr(node.value)
            if isinstance(base, ArrayVal):
                return array_slice_items(self.ctx(node), base, self.indices(node.slice))
        return star_items(self.ctx(node), self.value(node))

    def sliced(self, ctx: Ctx, base: Any, idx: list[Any]) -> Value:
        """`v[1:3]`, `m[0, 1:3]`, `m[1:]`, `m[:, j]`, `m[i, 1:]` (i at run time); array views
        `a[i:j:k, n]` (builtins/arrayview.py)."""
        if isinstance(base, ArrayVal):
            return arrayview.view(ctx, base, idx)
        if not isinstance(base, Composite):
            raise CompileError(f"{describe(base)} cannot be sliced (vectors, matrices and arrays can)",
                               ctx.loc)
        if isinstance(base.type, MatrixType) and len(idx) == 2 and not isinstance(idx[0], slice) \
                and not isinstance(idx[0], Literal):
            row = self.component(ctx, base, idx[0])
            assert isinstance(row, Composite)
            return read_slice(ctx, row, idx[1:])
        return read_slice(ctx, base, idx)

    def expr_BinOp(self, node: ast.BinOp) -> Value:
        opname = BINOPS.get(type(node.op))
        if opname is None:
            raise self.unsupported(node, f"the operator {type(node.op).__name__}")
        left, right = self.value(node.left), self.value(node.right)
        user = self.user_operator(opname, left, right)
        if user is not None:
            return self.call_operator(self.ctx(node), user, opname, (node.left, node.right),
                                      left, right)
        if isinstance(left, StructVal) or isinstance(right, StructVal):
            raise KernelTypeError(f"{describe(left)} {_OP_SIGNS[opname]} {describe(right)}: "
                                  f"define a @wp.func named '{opname}' for these types",
                                  self.ctx(node).loc)
        if isinstance(left, TileVal) or isinstance(right, TileVal):
            return tile_math.binary(self.ctx(node), opname, left, right)
        return ops.binary(self.ctx(node), opname, left, right)

    def user_operator(self, opname: str, left: Value, right: Value) -> Any:
        """Warp's operator overloading (`a + b`, `a += b`, `a[i].x += b`): the @wp.func named
        for the operator (`add`, `sub`, `mul`, ...) that the code's scope resolves, when one
        of its overloads takes these operands; None for the builtin operator (also inside that
        very function, which would otherwise call itself)."""
        found, fn = self.info.resolve(opname)
        if not (found and hasattr(fn, "pyfunc") and hasattr(fn, "param_types")):
            return None
        overloads = getattr(fn, "overloads", [fn])
        if any(o in getattr(self, "stack", ()) for o in overloads):
            return None
        if all(o.accepts([left, right], {}) is None for o in overloads):
            return None
        return fn

    def call_operator(self, ctx: Ctx, fn: Any, opname: str, nodes: tuple[ast.expr, ast.expr],
                      left: Value, right: Value) -> Value:
        """Inline the user's operator function on (left, right)."""
        call = ast.copy_location(ast.Call(func=ast.Name(opname, ast.Load()), args=list(nodes),
                                          keywords=[]), nodes[0])
        return self.inline_call(ctx, call, fn, [left, right], {})  # type: ignore[no-any-return]

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Value:
        operand = self.value(node.operand)
        if isinstance(node.op, ast.Not) and isinstance(operand, ArrayVal):
            ctx = self.ctx(node)
            return ctx.op("not", truth(ctx, operand))
        if isinstance(operand, TileVal):
            return tile_math.unary(self.ctx(node), UNOPS[type(node.op)], operand)
        return ops.unary(self.ctx(node), UNOPS[type(node.op)], operand)

    def expr_Compare(self, node: ast.Compare) -> Value:
        ctx = self.ctx(node)
        left = self.value(node.left)
        result: Value | None = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            prim = CMPOPS.get(type(op))
            if prim is None:
                raise self.unsupported(node, f"the comparison '{type(op).__name__}'")
            right = self.value(right_node)
            if isinstance(left, Composite) and isinstance(right, Composite) and \
                    not left.comps and not right.comps and prim in ("eq", "ne"):
                c: Value = Literal(prim == "eq")  # empty slices (`v[4:] == vec0()`) are equal
            else:
                c = ops.compare(ctx, prim, *compare_operands(ctx, left, right))
            result = c if result is None else logical_and(ctx, result, c)
            left = right
        assert result is not None
        return result

    def expr_BoolOp(self, node: ast.BoolOp) -> Value:
        ctx = self.ctx(node)
        combine = logical_and if isinstance(node.op, ast.And) else logical_or
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
        # a slice(...) may stand among the items: tile_view(t, offset=(slice(0, -1, 1),))
        items: list[Any] = []
        for e in node.elts:
            v = self.expr(e)
            items.append(v if isinstance(v, slice) else self.as_value(self.ctx(e), v))
        return TupleVal(tuple(items))

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
        if count == 1:
            return ctx.op("tid", attr=(0, 1))
        return TupleVal(tuple(ctx.op("tid", attr=(k, count)) for k in range(count)))

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
