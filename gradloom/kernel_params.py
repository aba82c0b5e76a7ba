"""Kernel parameter types: whether a kernel is generic (read from its annotations), the
concrete type an overload gives a parameter, which parameters get forward mode's tangents, and
the parameter view libraries read as Warp's `kernel.adj.args`."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from .frontend.generic import describe_type, is_generic, matches_template
from .types import ArrayType, FabricArrayType, IndexedArrayType, StructType, resolve_annotation
from .types.query import scalar_of


def holds_float_arrays(t: Any) -> bool:
    """A parameter type whose values hold float arrays (it gets a tangent argument)."""
    if isinstance(t, FabricArrayType):
        return False
    if isinstance(t, (ArrayType, IndexedArrayType)):
        st = scalar_of(t.dtype)
        return st is not None and st.is_float
    if isinstance(t, StructType):
        return any(isinstance(ft, StructType | ArrayType) and holds_float_arrays(ft)
                   for _, ft in t.fields)
    return False


def annotations_generic(func: Any) -> bool:
    """Whether a kernel function has a generic parameter (read from its annotations, without
    parsing its source; one that does not evaluate is left for the compiler to report)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    for p in params:
        ann = p.annotation
        try:
            if isinstance(ann, str):
                ann = eval(ann, func.__globals__)
            if ann is not inspect.Parameter.empty and is_generic(resolve_annotation(ann)):
                return True
        except Exception:
            continue
    return False


def concrete_param(key: str, name: str, t: Any, template: Any) -> Any:
    """The type given for a kernel parameter in `wp.overload`, checked against the parameter's
    own (generic) annotation."""
    try:
        t = resolve_annotation(t)
    except TypeError as exc:
        raise TypeError(f"Kernel {key} argument '{name}': {exc}") from None
    if is_generic(t):
        raise TypeError(f"Kernel {key} argument '{name}' cannot be generic, got "
                        f"{describe_type(t)}")
    if not matches_template(t, template):
        raise TypeError(f"Kernel {key} argument '{name}' type mismatch: expected "
                        f"{describe_type(template)}, got {t!r}")
    return t


@dataclass(frozen=True)
class ParamView:
    """One kernel parameter as Warp's codegen exposes it: its name (`label`) and type."""

    label: str
    type: Any


@dataclass(frozen=True)
class ParamsView:
    """Warp's `kernel.adj` as far as libraries read it: `args`, in order. newton's Kamino walks
    it to declare a generic kernel's float32 overloads up front."""

    args: tuple[ParamView, ...]

