"""What users write as types (annotations, `dtype=`) and Python constants, as gradloom types."""

from __future__ import annotations

import builtins
import typing
from typing import Any

import numpy as np

from .composite import TO_SCALAR, MatrixType, VectorType
from .layout import RESOLVE, ArrayType, FixedArrayType, IndexedArrayType, StructType
from .scalars import ScalarType, bool_, float32, int32, scalar_from_numpy, scalar_type_of
from .tiles import TileAnnotation, TileType, tile
from .values import VecValue


@TO_SCALAR.fill
def to_scalar(obj: Any) -> ScalarType:
    t = resolve_annotation(obj)
    if not isinstance(t, ScalarType):
        raise TypeError(f"expected a scalar type, got {obj!r}")
    return t


@RESOLVE.fill
def resolve_annotation(obj: Any) -> Any:
    """Turn what a user writes in an annotation or `dtype=` into a gradloom type."""
    if obj is builtins.float:
        return float32
    if obj is builtins.int:
        return int32
    if obj is builtins.bool:
        return bool_
    if isinstance(obj, (ScalarType, VectorType, MatrixType, StructType, ArrayType,
                        IndexedArrayType, FixedArrayType)):
        return obj
    if obj is typing.Any:
        return typing.Any
    if isinstance(obj, TileType):
        return obj
    if isinstance(obj, TileAnnotation) and not obj.shape:  # `wp.tile[float]`: any shape
        return TileType(resolve_annotation(obj.dtype), typing.Any)  # type: ignore[arg-type]
    if isinstance(obj, TileAnnotation) and all(isinstance(d, int) for d in obj.shape):
        return TileType(resolve_annotation(obj.dtype), obj.shape)
    if isinstance(obj, TileAnnotation) or obj is tile:
        raise TypeError(f"{obj!r}: a tile annotation needs a dtype and constant sizes "
                        "(wp.tile[float, 8, 4])")
    gl = getattr(obj, "__gl_type__", None)
    if gl is not None:
        key = getattr(obj, "_annotation_key", None)
        if not isinstance(obj, type) and key is not None and key() is None:
            raise TypeError(f"an array with memory ({type(obj).__name__}) cannot be used as an "
                            "annotation; write its type (wp.array[float], ...)")
        return gl() if callable(gl) else gl
    if isinstance(obj, (np.dtype, type)):
        try:
            st = scalar_from_numpy(obj)
        except TypeError:
            st = None
        if st is not None:
            return st
    raise TypeError(f"{obj!r} is not a gradloom type")


def is_value_type(t: Any) -> bool:
    return isinstance(t, (ScalarType, VectorType, MatrixType, StructType))


def type_of_constant(value: Any) -> Any:
    """The kernel type of a Python constant captured by a kernel, or None if it has none."""
    if isinstance(value, np.generic) or scalar_type_of(value) is not None:
        # first: numpy's float64 is also a Python float, `wp.bool(x)` an int
        return scalar_type_of(value)
    if isinstance(value, builtins.bool):
        return bool_
    if isinstance(value, builtins.int):
        return int32
    if isinstance(value, builtins.float):
        return float32
    if isinstance(value, VecValue):
        return value.gl_type
    return None


def constant(value: Any) -> Any:
    """`wp.constant(x)`: marks a global as a compile-time constant (it is captured by value)."""
    if type_of_constant(value) is None:
        raise TypeError(f"Invalid constant type: {type(value)}")
    return value


