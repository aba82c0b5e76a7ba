"""Lowering of Python expressions (names, operators, calls, subscripts) to kernel values."""

from __future__ import annotations

import ast
import builtins
import enum
from typing import Any

from ..builtins import arrayview, fixedarray, memory, ops, tile_index, tile_math
from ..builtins.math import where
from ..builtins.transform import transform_part
from ..builtins.values import (
    ArrayVal,
    Composite,
    Ctx,
    FixedArrayVal,
    KernelValue,
    Literal,
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
    KernelTypeError,
    UnknownNameError,
    UnsupportedSyntaxError,
)
from ..ir.builder import Builder
from ..types import (
    MatrixType,
    VectorType,
)
from .attributes import array_attribute, shape_padding, struct_field
from .calls import CallLowerer
from .constants import (
    language_name,
    python_constant,
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


class ExprLowerer(CallLowerer):
    """Expression half of the lowerer; the statement half (lower.py) provides env and info."""

    b: Builder
    info: SourceInfo
    env: dict[str, Any]
    tid_arity: list[int]

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
