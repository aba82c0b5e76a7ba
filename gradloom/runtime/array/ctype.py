"""Warp's ctypes views of values: a value type's ctypes class (gradloom's layout), `array.cptr()`,
`__ctype__()` of struct instances and arrays, and the way back for `Launch.set_param_*_from_ctype`.

A struct's ctypes class has its fields at the struct's byte offsets (scalars as their storage
ctype, vectors and matrices as flat ctypes arrays, nested structs as their own class, an array
field as its launch words). An array's `__ctype__()` is its launch words (data and gradient
addresses, shape, byte strides) and keeps the array it came from, so a recorded launch given
it binds that very array (its gradient and its Tape bookkeeping included).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy as np

from ...types import ArrayType, IndexedArrayType, MatrixType, ScalarType, StructType, VectorType
from .storage import element_value, storage_dtype, struct_record


@functools.cache
def ctype_of(t: Any) -> Any:
    """The ctypes class of one value of type t, laid out as gradloom stores it."""
    if isinstance(t, ScalarType):
        return t._type_
    if isinstance(t, (VectorType, MatrixType)):
        return ctype_of(t.dtype) * t.length
    if isinstance(t, StructType):
        return _struct_class(t)
    if isinstance(t, (ArrayType, IndexedArrayType)):
        return ctypes.c_uint64 * (t.size // 8)
    raise TypeError(f"{t!r} has no ctypes layout")


def _struct_class(t: StructType) -> Any:
    fields: list[tuple[str, Any]] = []
    at = 0
    for k, (name, ft) in enumerate(t.fields):
        offset = t.offsets[name]
        if offset > at:
            fields.append((f"_pad{k}", ctypes.c_ubyte * (offset - at)))
        fields.append((name, ctype_of(ft)))
        at = offset + ctypes.sizeof(ctype_of(ft))
    if t.size > at:
        fields.append(("_pad_end", ctypes.c_ubyte * (t.size - at)))
    return type(t.name, (ctypes.Structure,), {"_fields_": fields, "_pack_": 1})


def struct_ctype(value: Any) -> Any:
    """`s.__ctype__()`: a ctypes copy of struct instance s's stored bytes."""
    t: StructType = type(value).__gl_type__
    record = np.array(struct_record(value, t), dtype=storage_dtype(t))
    return ctype_of(t).from_buffer_copy(record.tobytes())


def array_ctype(arr: Any) -> Any:
    """`a.__ctype__()`: the array's launch words, holding on to the array itself."""
    words = ctype_of(arr._type)(*(int(w) for w in arr.launch_words()))
    words._gl_array = arr
    return words


def array_cptr(arr: Any) -> Any:
    """`a.cptr()`: a ctypes pointer to the first element of host array a."""
    if not arr.device.is_cpu:
        raise RuntimeError("cptr() is only available for arrays in host memory")
    return ctypes.cast(arr.ptr, ctypes.POINTER(ctype_of(arr._type.dtype)))


def from_ctype(t: Any, value: Any) -> Any:
    """The launch argument a ctypes value stands for, for a parameter of type t."""
    held = getattr(value, "_gl_array", None)
    if held is not None:
        return held
    if isinstance(t, StructType) and isinstance(value, ctypes.Structure):
        raw = np.frombuffer(bytes(value), dtype=storage_dtype(t), count=1)[0]
        return element_value(t, raw)
    if isinstance(value, ctypes.Array):
        return list(value)
    if isinstance(value, ctypes._SimpleCData):
        return value.value
    return value
