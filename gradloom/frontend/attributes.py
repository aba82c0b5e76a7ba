"""Attributes of kernel values: a struct's fields, an array's `shape` (Warp's four entries),
`ndim` and `dtype`."""

from __future__ import annotations

import ast
from typing import Any

from ..builtins.values import ArrayVal, Ctx, Literal, ShapeVal, StructVal, Value
from ..errors import CompileAttributeError, CompileError
from ..types import int32, uint64


def struct_field(ctx: Ctx, node: ast.Attribute, base: StructVal) -> Value:
    if node.attr not in [n for n, _ in base.type.fields]:
        where = f"{getattr(base.type.cls, '__module__', '')}.{base.type.name}".lstrip(".")
        raise CompileAttributeError(
            f"struct {base.type.name} has no field '{node.attr}': `{node.attr}` is not an "
            f"attribute of '{ast.unparse(node.value)}' ({where})", ctx.loc)
    return base.get(node.attr)


def array_attribute(ctx: Ctx, base: ArrayVal, attr: str) -> Any:
    """`a.shape`, `a.ndim`, `a.dtype` (the element type, e.g. to construct one: `a.dtype(1)`),
    `a.ptr` (its data address, a uint64)."""
    if attr == "shape":
        return ShapeVal(tuple(ctx.op("cast", s, type=int32) for s in base.shape))
    if attr == "ndim":
        return Literal(base.type.ndim)
    if attr == "dtype":
        return base.type.dtype
    if attr == "ptr" and not base.indices:  # the data address, as Warp's `a.ptr`
        return ctx.op("cast", base.data, type=uint64)
    raise CompileError(f"arrays have no attribute '{attr}' in kernels", ctx.loc)


def shape_padding(ctx: Ctx, shape: ShapeVal, index: Value) -> Value | None:
    """`a.shape[k]` for a constant k past the last dimension (below 4): 0, as in Warp, whose
    shapes have four entries; None for any other index (an ordinary tuple item)."""
    if isinstance(index, Literal) and len(shape.items) <= index.value < 4:
        return ctx.const(0, int32)
    return None
