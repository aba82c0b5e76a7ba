"""`wp.ref[T]`: a @wp.func parameter passed by reference.

`def f(x: wp.ref[wp.float32])` makes what f assigns to `x` (`x = ...`, `x += ...`, `x.field = ...`)
change the caller's storage: a local variable, an array element, a struct field or a vector
component. Functions are inlined (frontend/refs.py), so the caller's target takes the
parameter's final value when the call returns. `Reference` is the annotation object; its
`__gl_type__` is the value type, so the parameter is typed as a T inside the function.
"""

from __future__ import annotations

from typing import Any

from .annotations import resolve_annotation


class Reference:
    """The annotation `wp.ref[T]`: equal and hashed by T."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype

    @property
    def value_type(self) -> Any:
        return self.dtype

    def __gl_type__(self) -> Any:
        return resolve_annotation(self.dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reference) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("ref", self.dtype))

    def __repr__(self) -> str:
        name = getattr(self.dtype, "__name__", None) or repr(self.dtype)
        return f"wp.ref[{name}]"


class ref:
    """`wp.ref[T]`: the annotation of a by-reference function parameter (see the module)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("wp.ref is written wp.ref[T] (a parameter annotation)")

    def __class_getitem__(cls, dtype: Any) -> Reference:
        return Reference(dtype)


def is_reference(annotation: Any) -> bool:
    return isinstance(annotation, Reference)
