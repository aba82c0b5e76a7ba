"""Generic parameter types (`Any`, `wp.Float`, `wp.array(dtype=Any)`): which types fit them."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

from ..types import (
    FLOAT_TYPES,
    INT_TYPES,
    ArrayType,
    IndexedArrayType,
    MatrixType,
    ScalarType,
    TileType,
    VectorType,
    resolve_annotation,
)


@dataclass(frozen=True, repr=False)
class ScalarTypeSet(ScalarType):
    """A generic scalar annotation that any of `members` fits (Warp's `wp.Int`, `wp.Float`,
    `wp.Scalar`). It is a ScalarType so that `wp.vector(3, wp.Float)` builds a generic vector
    annotation; it is never the type of a value."""

    members: tuple[ScalarType, ...] = ()

    def __call__(self, value: Any = 0) -> Any:
        raise TypeError(f"{self.name} is a generic annotation, not a type to construct")


Int = ScalarTypeSet("Int", "g", 0, INT_TYPES)
Float = ScalarTypeSet("Float", "g", 0, FLOAT_TYPES)
Scalar = ScalarTypeSet("Scalar", "g", 0, INT_TYPES + FLOAT_TYPES)


@dataclass(frozen=True)
class TupleOf:
    """A `tuple[...]` parameter annotation of a @wp.func: item types, or `tuple[T, ...]`
    (any number of T). Tuples are values while compiling (calls are inlined), so such a
    parameter is matched against the argument's item types."""

    items: tuple[Any, ...]
    variadic: bool = False

    def __repr__(self) -> str:
        inner = ", ".join(describe_type(t) for t in self.items)
        return f"tuple[{inner}{', ...' if self.variadic else ''}]"


def tuple_template(ann: Any) -> TupleOf | None:
    """The template of a `tuple[...]` annotation (None if ann is not one)."""
    if typing.get_origin(ann) is not tuple:
        return None
    args = typing.get_args(ann)
    if len(args) == 2 and args[1] is Ellipsis:
        return TupleOf((resolve_annotation(args[0]),), variadic=True)
    return TupleOf(tuple(resolve_annotation(a) for a in args))


def is_generic(t: Any) -> bool:
    """Whether a parameter annotation leaves a type to be chosen per call or launch."""
    if t is typing.Any or isinstance(t, (ScalarTypeSet, TupleOf)):
        return True
    if isinstance(t, VectorType) and t.length is typing.Any:
        return True  # `wp.types.vector(Any, float)`
    if isinstance(t, MatrixType) and typing.Any in (t.rows, t.cols):
        return True
    if isinstance(t, TileType) and t.shape is typing.Any:
        return True  # `wp.tile[float]`: a tile of any shape
    if isinstance(t, (ArrayType, IndexedArrayType)) and t.ndim is typing.Any:
        return True  # `wp.array[float, Any]`: any number of dimensions
    if isinstance(t, (ArrayType, IndexedArrayType, VectorType, MatrixType)):
        return is_generic(t.dtype)
    return False


def matches_template(t: Any, template: Any) -> bool:
    """Whether the concrete type t may be bound to a parameter annotated `template`."""
    if template is typing.Any:
        return True
    if isinstance(template, TupleOf):
        if not isinstance(t, tuple):
            return False
        items = template.items * len(t) if template.variadic else template.items
        return len(items) == len(t) and all(map(matches_template, t, items))
    if isinstance(template, ScalarTypeSet):
        return t in template.members
    if not is_generic(template):
        return bool(t == template)
    if isinstance(template, TileType):
        return type(t) is type(template) and matches_template(t.dtype, template.dtype)
    if isinstance(template, (ArrayType, IndexedArrayType)):
        return type(t) is type(template) and _size_fits(t.ndim, template.ndim) and \
            getattr(t, "indexed", None) == getattr(template, "indexed", None) and \
            matches_template(t.dtype, template.dtype)
    if isinstance(template, VectorType):
        return isinstance(t, VectorType) and t.kind == template.kind and \
            _size_fits(t.length, template.length) and matches_template(t.dtype, template.dtype)
    return isinstance(t, MatrixType) and t.kind == template.kind and \
        _size_fits(t.rows, template.rows) and _size_fits(t.cols, template.cols) and \
        matches_template(t.dtype, template.dtype)


def _size_fits(n: Any, template: Any) -> bool:
    return template is typing.Any or n == template


def describe_type(t: Any) -> str:
    return "Any" if t is typing.Any else repr(t)
