"""Python objects as kernel values: captured constants, struct instances, `wp.static` results,
the language's bare names (`vec3`, `expect_eq`), struct construction."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .. import types as types_module
from ..builtins.registry import REGISTRY
from ..builtins.values import (
    Composite,
    Ctx,
    KernelValue,
    Literal,
    StructVal,
    Value,
    describe,
    materialize,
    type_of,
    zeros_of,
)
from ..errors import CompileError
from ..types import (
    ArrayType,
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    VecValue,
    resolve_annotation,
    scalar_from_numpy,
)


def python_constant(ctx: Ctx, obj: Any) -> Any:
    """A captured Python object as a kernel value where it has one; else the object itself."""
    # `wp.bool(x)` (an int), `wp.bfloat16(x)`: read on the class, so that a module (`wp`
    # itself) is not asked through its __getattr__, which loads every on-demand subsystem
    own = getattr(type(obj), "_gl_scalar", None)
    if own is not None and not isinstance(obj, type):
        return ctx.const(obj.item(), own)
    if isinstance(obj, (bool, int, float)) and not isinstance(obj, np.generic):
        return Literal(obj)
    if isinstance(obj, VecValue):
        t = obj.gl_type
        # components as Python numbers (iterating a value gives Warp's scalar types)
        comps = tuple(ctx.const(v, t.dtype) for v in np.asarray(obj).ravel().tolist())
        return Composite(t, comps)
    if isinstance(obj, np.generic):  # numpy's own dtype (np.float64 is also a Python float)
        st = scalar_from_numpy(obj.dtype)
        if st is not None:
            return ctx.const(obj.item(), st)
    if hasattr(type(obj), "__gl_struct__") and not isinstance(obj, type):
        return struct_constant(ctx, obj)
    return obj


def struct_constant(ctx: Ctx, obj: Any, path: tuple[str, ...] = (), root: str = "",
                    label: str = "the Warp struct") -> StructVal:
    """A Python struct instance as a kernel value (its fields' current values)."""
    t = resolve_annotation(type(obj))
    root = root or t.name
    fields: list[Value] = []
    for name, ft in t.fields:
        v = getattr(obj, name)
        if hasattr(type(v), "__gl_struct__"):
            fields.append(struct_constant(ctx, v, (*path, name), root, label))
            continue
        value = python_constant(ctx, v)
        if isinstance(value, Literal) and isinstance(ft, ScalarType):
            value = materialize(ctx, value, ft)
        if not isinstance(value, KernelValue) or type_of(value) != ft:
            what = ("a Warp array cannot be created inside Warp kernels"
                    if isinstance(ft, ArrayType) else f"{describe(value)} is not a {ft!r}")
            raise CompileError(f"{label} contains a data type that cannot be constructed inside "
                               f"Warp kernels: {what} at {'.'.join((root, *path))}", ctx.loc)
        fields.append(value)
    return StructVal(t, tuple(fields))


def static_result(ctx: Ctx, value: Any) -> Any:
    """What `wp.static(...)` gives a kernel; Warp's message for values kernels cannot hold."""
    try:
        if value is None:
            raise CompileError("None is returned", ctx.loc)
        if type(value).__module__.startswith("gradloom.runtime") and hasattr(value, "device"):
            raise CompileError("a Warp array cannot be created inside Warp kernels", ctx.loc)
        if hasattr(type(value), "__gl_struct__") and not isinstance(value, type):
            result = struct_constant(ctx, value, label="the returned Warp struct")
        else:
            result = python_constant(ctx, value)
    except CompileError as exc:
        raise CompileError(f"wp.static(): Static expression returns an unsupported value: "
                           f"{exc.bare_message}", ctx.loc) from None
    if not _static_ok(result):
        raise CompileError(f"wp.static(): Static expression returns an unsupported value: value "
                           f"of type {type(value)} cannot be constructed inside Warp kernels",
                           ctx.loc)
    return result


def _static_ok(v: Any) -> bool:
    """Whether a kernel can use what a static expression gave: a value, a type, a function or
    module, a string, or a container of those."""
    if isinstance(v, (tuple, list)):
        return all(_static_ok(i) for i in v)
    if isinstance(v, dict):
        return all(_static_ok(i) for i in v.values())
    return isinstance(v, (KernelValue, str, type, types_module.ScalarType, VectorType,
                          MatrixType, StructType)) or callable(v) or inspect.ismodule(v)


def construct_struct(ctx: Ctx, t: StructType, args: list[Any], kwargs: dict[str, Any]) -> Value:
    """`S(1.0, wp.vec3(0.0))` or `S(a=1.0)` in a kernel: fields in declaration order, the rest
    zero."""
    names = [n for n, _ in t.fields]
    if len(args) > len(names):
        raise CompileError(f"{t.name}() takes at most {len(names)} arguments, got {len(args)}",
                           ctx.loc)
    given = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise CompileError(f"struct {t.name} has no field '{k}'", ctx.loc)
        if k in given:
            raise CompileError(f"{t.name}(): field '{k}' given twice", ctx.loc)
        given[k] = v
    fields: list[Value] = []
    for name, ft in t.fields:
        if name not in given:
            fields.append(zeros_of(ctx, ft))
            continue
        v = given[name]
        if isinstance(v, Literal) and isinstance(ft, ScalarType):
            v = materialize(ctx, v, ft)
        if not isinstance(v, KernelValue) or type_of(v) != ft:
            raise CompileError(f"{t.name}(): field '{name}' is {ft!r}, got {describe(v)}",
                               ctx.loc)
        fields.append(v)
    return StructVal(t, tuple(fields))


def language_name(name: str) -> tuple[bool, Any]:
    """A kernel builtin (`expect_eq`) or a type of the kernel language (`vec3`, `float32`)
    by its bare name."""
    if name in REGISTRY:
        return True, REGISTRY[name]
    t = getattr(types_module, name, None)
    if isinstance(t, (ScalarType, VectorType, MatrixType)):
        return True, t
    return False, None
