"""`warp._src.types` under the alias: gradloom.types' names plus the typing helpers that Warp's
private types module defines for annotations.

Libraries built on Warp annotate Python-scope methods with Warp's private generics (newton's
Kamino solver: `from warp._src.types import Any, Int, Vector`, then `-> Vector[Any, Int]`). They
only need to exist and be subscriptable there, so they are typing objects: `Int`, `Float` and
`Scalar` are TypeVars over gradloom's scalar types, `Vector`, `Matrix`, `Quaternion` and
`Transformation` are Generic classes. Every other name is gradloom.types' own object, so
`warp._src.types.float32 is warp.float32` holds as in Warp.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import gradloom

__all__ = ["Any", "Cols", "DType", "Float", "Int", "Length", "Matrix", "Quaternion", "Rows",
           "Scalar", "Transformation", "Vector"]

Length = TypeVar("Length", bound=int)
Rows = TypeVar("Rows", bound=int)
Cols = TypeVar("Cols", bound=int)
DType = TypeVar("DType")
# The constraints are gradloom's type objects, values to mypy: built through an Any-typed alias
_type_var: Any = TypeVar
_t = gradloom.types
Int = _type_var("Int", int, _t.int8, _t.uint8, _t.int16, _t.uint16, _t.int32, _t.uint32,
                _t.int64, _t.uint64)
Float = _type_var("Float", float, _t.float16, _t.float32, _t.float64)
Scalar = _type_var("Scalar", Int, Float)


class Vector(Generic[Scalar, Length]):  # type: ignore[misc]
    """Annotation-only stand-in for Warp's private vector base class (`Vector[dtype, length]`)."""


class Matrix(Generic[Scalar, Rows, Cols]):  # type: ignore[misc]
    """Annotation-only stand-in for Warp's private matrix base class (`Matrix[dtype, rows, cols]`)."""


class Quaternion(Generic[Float]):  # type: ignore[misc]
    """Annotation-only stand-in for Warp's private quaternion base class (`Quaternion[dtype]`)."""


class Transformation(Generic[Float]):  # type: ignore[misc]
    """Annotation-only stand-in for Warp's private transform base class (`Transformation[dtype]`)."""


def __getattr__(name: str) -> Any:
    """Everything else is gradloom.types' (the scalar, vector and array types themselves)."""
    try:
        return getattr(gradloom.types, name)
    except AttributeError:
        raise AttributeError(f"warp._src.types.{name}: not offered by gradloom under the alias "
                             "(Warp-private; gradloom.types has the public types)") from None
