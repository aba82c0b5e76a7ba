"""Warp's type introspection functions (`wp.types.type_is_vector(t)`, `is_vector(x)`,
`type_size`, `types_equal`, `type_repr`, ...): questions about types and about values."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .composite import MatrixType, VectorType
from .layout import (
    ArrayType,
    FabricArrayType,
    FixedArrayType,
    IndexedArrayType,
    StructType,
    fixedarray,
)
from .scalars import FLOAT_TYPES, INT_TYPES, ScalarType, bool_, float32, int32, scalar_from_numpy
from .tiles import TileAnnotation, tile

_SHORT = {"float16": "h", "float32": "f", "float64": "d", "int8": "b", "int16": "s",
          "int32": "i", "int64": "l", "uint8": "ub", "uint16": "us", "uint32": "ui",
          "uint64": "ul"}


def _scalar(t: Any) -> ScalarType | None:
    """t as a scalar type: gradloom's, Python's int/float/bool, or a numpy scalar class."""
    if isinstance(t, ScalarType):
        return t
    if t is builtins.int:
        return int32
    if t is builtins.float:
        return float32
    if t is builtins.bool:
        return bool_
    if isinstance(t, type) and issubclass(t, np.generic):
        return scalar_from_numpy(t)
    return None


def _gl_type(obj: Any) -> Any:
    gl = getattr(obj, "__gl_type__", None)
    return gl() if callable(gl) else gl


def type_is_int(t: Any) -> bool:
    """Whether t is an integer type (`int` counts as int32)."""
    return _scalar(t) in INT_TYPES


def type_is_float(t: Any) -> bool:
    """Whether t is a floating-point type (`float` counts as float32)."""
    return _scalar(t) in FLOAT_TYPES


def type_is_scalar(t: Any) -> bool:
    return type_is_int(t) or type_is_float(t)


def composite_of(t: Any) -> Any:
    """A value class (`type(wp.vec3())`, a ctypes array class: types/values.py) as the
    composite type it holds values of; anything else unchanged."""
    held = getattr(t, "gl_type", None) if isinstance(t, type) else None
    return held if isinstance(held, (VectorType, MatrixType)) else t


def _composite_kind(t: Any) -> str | None:
    t = composite_of(t)
    if isinstance(t, VectorType):
        return "vec" if t.kind == "spatial" else t.kind
    if isinstance(t, MatrixType):
        return "mat"
    return None


def type_is_vector(t: Any) -> bool:
    return _composite_kind(t) == "vec"


def type_is_quaternion(t: Any) -> bool:
    return _composite_kind(t) == "quat"


def type_is_matrix(t: Any) -> bool:
    return _composite_kind(t) == "mat"


def type_is_transformation(t: Any) -> bool:
    return _composite_kind(t) == "transform"


def type_is_composite(t: Any) -> bool:
    """Whether t is a vector, matrix, quaternion or transform type."""
    return _composite_kind(t) is not None


def type_is_value(t: Any) -> bool:
    """Whether t is a scalar (bool included) or composite type."""
    return _scalar(t) is not None or type_is_composite(t)


def type_is_struct(t: Any) -> bool:
    """Whether t is a `@wp.struct` class (or its type)."""
    if isinstance(t, StructType):
        return True
    return isinstance(t, type) and isinstance(_gl_type(t), StructType)


def type_is_array(t: Any) -> bool:
    """Whether t is one of the array classes (`wp.array`, `wp.indexedarray`, ...)."""
    if t is fixedarray:
        return True
    return isinstance(t, type) and isinstance(_gl_type(t), (ArrayType, IndexedArrayType))


def type_is_tile(t: Any) -> bool:
    """Whether t is Warp's tile type (accepted in annotations; gradloom has no tiles)."""
    return t is tile


def is_int(x: Any) -> bool:
    return type_is_int(type(x))


def is_float(x: Any) -> bool:
    return type_is_float(type(x))


def is_scalar(x: Any) -> bool:
    return type_is_scalar(type(x))


def _value_kind(x: Any) -> str | None:
    return None if isinstance(x, type) else _composite_kind(getattr(x, "gl_type", None))


def is_vector(x: Any) -> bool:
    return _value_kind(x) == "vec"


def is_quaternion(x: Any) -> bool:
    return _value_kind(x) == "quat"


def is_matrix(x: Any) -> bool:
    return _value_kind(x) == "mat"


def is_transformation(x: Any) -> bool:
    return _value_kind(x) == "transform"


def is_composite(x: Any) -> bool:
    return _value_kind(x) is not None


def is_value(x: Any) -> bool:
    """Whether x is a scalar (Python or numpy number, bool) or composite value."""
    return isinstance(x, (builtins.int, builtins.float, np.number, np.bool_)) or is_composite(x)


def is_struct(x: Any) -> bool:
    return not isinstance(x, type) and getattr(type(x), "__gl_struct__", False) is True


def is_array(x: Any) -> bool:
    """Whether x is an array instance or an array annotation."""
    if isinstance(x, (ArrayType, IndexedArrayType, FixedArrayType)):
        return True
    return not isinstance(x, type) and isinstance(_gl_type(x), (ArrayType, IndexedArrayType))


def is_tile(x: Any) -> bool:
    """Whether x is a tile annotation (`wp.tile[float, 8, 4]`)."""
    return isinstance(x, TileAnnotation)


def type_size(t: Any) -> int:
    """The number of scalar components of a type (1 for scalars and structs)."""
    return int(getattr(t, "length", 1)) if isinstance(t, (VectorType, MatrixType)) else 1


def type_size_in_bytes(t: Any) -> int:
    """Bytes one value of a scalar, vector, matrix or struct type takes (Python's int and float
    count as int32 and float32)."""
    scalar = _scalar(t)
    gl = scalar if scalar is not None else (_gl_type(t) or t)
    if not isinstance(gl, (ScalarType, VectorType, MatrixType)) and not type_is_struct(gl):
        raise TypeError(f"Invalid data type: {t!r}")
    return int(gl.size)


def type_length(t: Any) -> int:
    """A vector's length, a matrix's row count, 1 for a scalar."""
    if isinstance(t, (VectorType, MatrixType)):
        return t.shape[0]
    return 1


def type_scalar_type(t: Any) -> Any:
    """The scalar type of a vector/matrix type; a scalar type itself otherwise."""
    return t.dtype if isinstance(t, (VectorType, MatrixType)) else t


def types_equal(a: Any, b: Any) -> bool:
    """Whether two types are the same (Python's int/float/bool count as int32/float32/bool; a
    value class is the type of its values). As in Warp, a spatial vector or matrix is the plain
    vector or matrix of its shape and dtype (`spatial_matrixf` and a 6x6 float32 matrix are
    equal); quaternions and transforms stay their own."""
    a, b = composite_of(a), composite_of(b)
    sa, sb = _scalar(a), _scalar(b)
    if sa is not None or sb is not None:
        return sa == sb
    return bool(a == b)  # composite types compare as Warp's (types/composite.py)


def type_repr(t: Any) -> str:
    """A type's name as Warp writes it in messages (vec3f, mat22d, array(ndim=1, dtype=...))."""
    t = composite_of(t)
    if t is Any:
        return "Any"
    if isinstance(t, (ArrayType, IndexedArrayType)):
        kind = "array" if isinstance(t, ArrayType) else "indexedarray"
        if isinstance(t, FabricArrayType):
            kind = "indexedfabricarray" if t.indexed else "fabricarray"
        return f"{kind}(ndim={t.ndim}, dtype={type_repr(t.dtype)})"
    if (isinstance(t, VectorType) and t.kind == "vec" and t.length > 4) or \
            (isinstance(t, VectorType) and t.dtype.name not in _SHORT and t.kind == "vec"):
        return f"vector(length={t.length}, dtype={type_repr(t.dtype)})"
    if isinstance(t, MatrixType) and t.kind == "mat" and (
            max(t.rows, t.cols) > 4 or t.dtype.name not in _SHORT):
        return f"matrix(shape=({t.rows}, {t.cols}), dtype={type_repr(t.dtype)})"
    if isinstance(t, (ScalarType, VectorType, MatrixType, StructType)):
        return repr(t)
    s = _scalar(t)
    if s is not None:
        return {builtins.int: "int", builtins.float: "float", builtins.bool: "bool"}.get(t, s.name)
    gl = _gl_type(t)
    if gl is not None and gl is not t:
        return type_repr(gl)
    return getattr(t, "__name__", repr(t))


def type_name(t: Any) -> str:
    """Warp's spelling of a type in messages: float32, vec3f, mat22d, ..."""
    return getattr(t, "__name__", None) or str(t)


def scalar_of(t: Any) -> ScalarType | None:
    """`type_scalar_type`, or None where t has no scalar type (a struct)."""
    st = type_scalar_type(t)
    return st if isinstance(st, ScalarType) else None
