"""Arrays as annotations (`wp.array[float]`, `wp.array2d[wp.vec3]`, `wp.indexedarray[float,
Literal[2]]`): Warp's subscript spelling, equality and hashing by family, dtype and ndim,
unions (`wp.array[float] | None`), and the repr Warp prints (`wp.array2d[wp.vec3f]`)."""

from __future__ import annotations

import typing
from typing import Any

from ... import types
from ...types import MatrixType, ScalarType, StructType, VectorType, type_repr


def annotation_ndim(n: Any) -> Any:
    """An ndim parameter: an int or `Literal[n]`; `Any` (any number of dimensions, a generic
    annotation) stays `Any`."""
    if n is typing.Any:
        return n
    if typing.get_origin(n) is typing.Literal:
        n = typing.get_args(n)[0]
    return int(n)


def _dtype_text(t: Any) -> str:
    """A dtype as Warp writes it in an annotation: wp.float32, wp.vec3f, a struct's name."""
    if t is typing.Any:
        return "Any"
    if isinstance(t, StructType):
        return t.name
    if isinstance(t, ScalarType):
        return f"wp.{'bool' if t.name == 'bool' else t.name}"
    if isinstance(t, (VectorType, MatrixType)):
        name = repr(t)  # a public alias (wp.vec3f, wp.mat44f): types names them all
        return f"wp.{name}" if getattr(types, name, None) is t else type_repr(t)
    return type_repr(t)


class AnnotationProtocols:
    """Equality, hashing, `|` and repr of arrays built as annotations (a concrete array is
    only equal to itself)."""

    dtype: Any
    ndim: int

    def _annotation_key(self) -> tuple[str, Any, int] | None:
        """(family, dtype, ndim) of an annotation; None for an array with memory."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        key = self._annotation_key()
        if key is None or not isinstance(other, AnnotationProtocols):
            return self is other
        return key == other._annotation_key()

    def __hash__(self) -> int:
        key = self._annotation_key()
        return id(self) if key is None else hash(key)

    def __or__(self, other: Any) -> Any:
        return typing.Union[self, other]  # noqa: UP007 - a runtime Union of two objects

    def __ror__(self, other: Any) -> Any:
        return typing.Union[other, self]  # noqa: UP007

    def annotation_repr(self) -> str:
        family, dtype, ndim = self._annotation_key() or ("array", self.dtype, self.ndim)
        if ndim is typing.Any:
            return f"wp.{family}[{_dtype_text(dtype)}, Any]"
        if family == "array" and 2 <= ndim <= 4:
            return f"wp.array{ndim}d[{_dtype_text(dtype)}]"
        if ndim == 1:
            return f"wp.{family}[{_dtype_text(dtype)}]"
        return f"wp.{family}[{_dtype_text(dtype)}, Literal[{ndim}]]"
