"""Scalar types (bool, integers, float16, bfloat16, float32, float64): layout, numpy and ctypes
equivalents, Python-scope construction, and the bfloat16 bit conversions."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from .classlike import ClassLike


@dataclass(frozen=True)
class ScalarType(ClassLike):
    """A scalar type. kind: 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool, 'p' pointer."""

    name: str
    kind: str
    bits: int

    @property
    def np_dtype(self) -> np.dtype[Any]:
        """The numpy dtype of this type's storage (bfloat16: its bits, as uint16)."""
        return _NP_DTYPES[self.name]

    @property
    def host_dtype(self) -> np.dtype[Any]:
        """The numpy dtype of this type's Python-scope values (bfloat16: float32 holding a
        bfloat16 value); the storage dtype for every other type."""
        return _NP_FLOAT32 if self.name == "bfloat16" else _NP_DTYPES[self.name]

    @property
    def size(self) -> int:
        return 1 if self.kind == "b" else self.bits // 8

    @property
    def alignment(self) -> int:
        return self.size

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in ("i", "u")

    # -- Warp's class attributes (Warp's scalar types are ctypes-backed classes) ----------------

    @property
    def _type_(self) -> Any:
        """The ctypes type of one value's storage (`wp.int8._type_(300).value` wraps)."""
        return _CTYPES[self.name]

    _length_ = 1

    @property
    def __numpy_dtype__(self) -> np.dtype[Any]:
        """`np.dtype(wp.float32)` (numpy >= 2.4); bfloat16 has no numpy equivalent."""
        if self.name in ("bfloat16", "ptr"):
            raise AttributeError(f"{self.name} has no numpy dtype")
        return _NP_DTYPES[self.name]

    def __call__(self, value: Any = 0) -> Any:
        """Python-scope construction (`wp.float32(1.5)`) gives a numpy scalar of this type;
        integers wrap as in C (`wp.uint8(-1)` is 255), bfloat16 gives a float32 rounded to
        bfloat16."""
        if self.name == "uint64" and getattr(value, "__gl_handle__", False):
            return value  # `wp.uint64(grid.id)` keeps the handle (runtime/handles.py)
        if self.name == "bfloat16":
            return bf16_round(np.float32(value))
        if self.is_int and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return wrap_int(int(value), self.np_dtype)
        return self.np_dtype.type(value)

    def __instancecheck__(self, obj: Any) -> bool:
        """`isinstance(x, wp.float32)`: x is a numpy scalar of this type."""
        return isinstance(obj, np.generic) and self.name != "bfloat16" and \
            obj.dtype == _NP_DTYPES[self.name]

    @property
    def __name__(self) -> str:  # Warp's type objects are classes with names
        return self.name

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


def wrap_int(value: int, dtype: np.dtype[Any]) -> Any:
    """A Python int as a numpy scalar of integer dtype, wrapped modulo 2**bits like C."""
    bits = dtype.itemsize * 8
    value &= (1 << bits) - 1
    if dtype.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return dtype.type(value)


bool_ = ScalarType("bool", "b", 8)
int8 = ScalarType("int8", "i", 8)
int16 = ScalarType("int16", "i", 16)
int32 = ScalarType("int32", "i", 32)
int64 = ScalarType("int64", "i", 64)
uint8 = ScalarType("uint8", "u", 8)
uint16 = ScalarType("uint16", "u", 16)
uint32 = ScalarType("uint32", "u", 32)
uint64 = ScalarType("uint64", "u", 64)
#: Warp's type for object handles (Mesh, Volume, Bvh ids): a uint64 in every respect
handle = uint64
float16 = ScalarType("float16", "f", 16)
#: bfloat16: float32's 8-bit exponent with a 7-bit mantissa, stored as 16 bits. Arithmetic
#: runs in float32 and every result is rounded (to nearest even) back to bfloat16, as in Warp.
bfloat16 = ScalarType("bfloat16", "f", 16)
float32 = ScalarType("float32", "f", 32)
float64 = ScalarType("float64", "f", 64)
#: Internal: a raw address (array data and grad pointers). Never a user-visible type.
ptr = ScalarType("ptr", "p", 64)

SCALAR_TYPES: tuple[ScalarType, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32,
    float64,
)
FLOAT_TYPES = (float16, bfloat16, float32, float64)
INT_TYPES = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)

_NP_DTYPES: dict[str, np.dtype[Any]] = {
    "bool": np.dtype(np.bool_), "int8": np.dtype(np.int8), "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32), "int64": np.dtype(np.int64), "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16), "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64), "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(np.uint16), "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64), "ptr": np.dtype(np.uint64),
}
_NP_FLOAT32 = np.dtype(np.float32)
_CTYPES: dict[str, Any] = {
    "bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16,
    "int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
    "float16": ctypes.c_uint16, "bfloat16": ctypes.c_uint16, "float32": ctypes.c_float,
    "float64": ctypes.c_double, "ptr": ctypes.c_void_p,
}
# bfloat16 shares uint16's storage dtype: numpy's uint16 means uint16
_SCALAR_BY_NP = {np.dtype(t.np_dtype): t for t in SCALAR_TYPES if t is not bfloat16}


def scalar_from_numpy(dtype: Any) -> ScalarType | None:
    return _SCALAR_BY_NP.get(np.dtype(dtype))


# -- bfloat16 bits ---------------------------------------------------------------------------


def float32_to_bf16_bits(values: Any) -> np.ndarray[Any, Any]:
    """float32 values as bfloat16 bits (uint16), rounded to nearest even; a NaN stays a NaN
    (its quiet bit is set before the low half is dropped)."""
    f = np.array(values, dtype=np.float32, ndmin=1)
    bits = f.view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    out = np.where(np.isnan(f), bits | np.uint32(0x00400000), rounded)
    return (out >> np.uint32(16)).astype(np.uint16).reshape(np.shape(values))


def bf16_bits_to_float32(bits: Any) -> np.ndarray[Any, Any]:
    """bfloat16 bits (uint16) as float32 values (exact)."""
    wide = np.array(bits, dtype=np.uint16, ndmin=1).astype(np.uint32) << np.uint32(16)
    return wide.view(np.float32).reshape(np.shape(bits))


def bf16_round(value: Any) -> Any:
    """A float32 value (scalar or array) rounded to the nearest bfloat16, as float32."""
    out = bf16_bits_to_float32(float32_to_bf16_bits(value))
    return out[()] if np.ndim(value) == 0 else out
