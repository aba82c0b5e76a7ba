"""Where Warp's type objects are Python classes, gradloom's behave as such: `|` unions, subclassing.

Warp's `wp.vec3`, `wp.float32` and the types its factories build are classes, and code written
against Warp uses them as classes: `FloatType = wp.float16 | wp.float32`, `Vec2 = list[float] |
wp.vec2`, and above all `class vec10f(wp.types.vector(length=10, dtype=wp.float32)): pass`, the
idiom MuJoCo Warp and newton use to name their vector and matrix types. gradloom's type objects
are values compared by layout (a vector type *is* its length, dtype and kind), so a "subclass"
is the type it derives from: `vec10f == wp.types.vector(10, wp.float32)`, and kernels accept
either wherever Warp accepts both. A subclass body may hold a docstring only; members could not
be honoured in kernels, so they are refused by name rather than dropped.
"""

from __future__ import annotations

import typing
from typing import Any

_ALLOWED_MEMBERS = {"__module__", "__qualname__", "__doc__", "__orig_bases__", "__firstlineno__",
                    "__static_attributes__", "__classcell__"}  # fmt: skip


class _DeriveMeta(type):
    """Metaclass of the stand-in base `__mro_entries__` gives: the class statement's result is
    the gradloom type derived from (a metaclass's `__new__` may return any object)."""

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        parent = getattr(bases[0], "_gl_parent", None) if bases else None
        if parent is None:  # the stand-in base itself
            return super().__new__(mcls, name, bases, ns)
        if len(bases) != 1:
            raise TypeError(f"class {name}: a gradloom type ({parent!r}) cannot be combined "
                            "with other base classes")  # fmt: skip
        extra = sorted(k for k in ns if k not in _ALLOWED_MEMBERS)
        if extra:
            raise TypeError(
                f"class {name}({parent!r}): gradloom's vector and matrix types are layouts, so a "
                f"subclass may only hold a docstring; it defines {', '.join(extra)}"
            )
        return parent


class ClassLike:
    """Mixin of the type objects (scalars, vectors, matrices): Python class behaviour."""

    def __or__(self, other: Any) -> Any:
        return typing.Union[self, other]  # noqa: UP007 (self is not a type to the `|` syntax)

    def __ror__(self, other: Any) -> Any:
        return typing.Union[other, self]  # noqa: UP007

    def __subclasscheck__(self, cls: Any) -> bool:
        """`issubclass(wp.float32, wp.float16 | wp.float32)`: Python asks each member of the
        union. A type object's subclasses are itself (a derived class is the same object) and
        the class of its values (`isinstance(v, wp.float16 | wp.float32)`: a typing union asks
        about `type(v)`)."""
        if cls == self:
            return True
        held = getattr(cls, "_gl_scalar", None) or getattr(cls, "gl_type", None)
        return held is not None and bool(held == self)

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        """`class vec10f(wp.types.vector(10, wp.float32))`: a base whose class statement
        returns this type (see the module's docstring)."""
        return (_DeriveMeta("derived_from", (), {"_gl_parent": self}),)
