"""Scalar types (bool, integers, float16, bfloat16, float32, float64): layout, numpy and ctypes
equivalents, Python-scope values (`ScalarValue`), and the bfloat16 bit conversions."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..hooks import Hook
from .classlike import ClassLike

#: an arithmetic operator on scalar values computes what the kernel library defines it as
#: (builtins/host.py fills it, as it fills types/values.py's hook for vectors)
SCALAR_OPERATOR: Hook[Any] = Hook("the operators of scalar values", "gradloom.builtins.host")


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
        """Python-scope construction (`wp.float32(1.5)`) gives a value of this type
        (`ScalarValue`); integers wrap as in C (`wp.uint8(-1)` is 255), a bfloat16 value is
        the bfloat16 nearest `value`."""
        if self.name == "uint64" and getattr(value, "__gl_handle__", False):
            return value  # `wp.uint64(grid.id)` keeps the handle (runtime/handles.py)
        if self.name == "bfloat16":
            return _VALUE_CLASSES["bfloat16"](bf16_round(np.float32(value)))
        if self.is_int and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            value = wrap_int(int(value), self.np_dtype)
        cls = _VALUE_CLASSES.get(self.name)
        return cls(value) if cls is not None else self.np_dtype.type(value)

    def __instancecheck__(self, obj: Any) -> bool:
        """`isinstance(x, wp.float32)`: x is a value of this type (`wp.float32(x)`, a result of a
        Python-scope call) or a numpy scalar of its dtype."""
        own = getattr(type(obj), "_gl_scalar", None)
        if own is not None:
            return bool(own == self)
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


def scalar_type_of(value: Any) -> ScalarType | None:
    """The scalar type of a Python-scope value (`wp.bfloat16(x)` included) or numpy scalar."""
    own = getattr(type(value), "_gl_scalar", None)
    if own is not None:
        return own  # type: ignore[no-any-return]
    return scalar_from_numpy(value.dtype) if isinstance(value, np.generic) else None


# -- Python-scope values ---------------------------------------------------------------------

_NUMBERS = (bool, int, float, np.generic)


def _operator(name: str, swap: bool = False) -> Callable[..., Any]:
    """An arithmetic dunder: the kernel's operator, evaluated on the host (SCALAR_OPERATOR)."""
    def method(self: ScalarValue, *other: Any) -> Any:
        if other and not isinstance(other[0], _NUMBERS) and \
                getattr(other[0], "gl_type", None) is None:
            return NotImplemented  # a numpy array, a list, ...: numpy's rules (or theirs)
        return _host(name, *((other[0], self) if swap else (self, *other)))
    return method


def _host(name: str, *operands: Any) -> Any:
    """The hook's call, as deep in the stack as vector values' (`host.caller_loc(3)` is the
    user's line)."""
    return SCALAR_OPERATOR.get()(name, *operands)


def _unsupported(symbol: str, swap: bool = False) -> Callable[..., Any]:
    """An operator Warp's scalar classes do not define (`//`, bit operations): Python's
    TypeError for it."""
    def method(self: ScalarValue, *other: Any) -> Any:
        if not other:
            raise TypeError(f"bad operand type for unary {symbol}: '{_type_name(self)}'")
        a, b = (other[0], self) if swap else (self, other[0])
        raise TypeError(f"unsupported operand type(s) for {symbol}: '{_type_name(a)}' and "
                        f"'{_type_name(b)}'")
    return method


def _type_name(v: Any) -> str:
    own = getattr(type(v), "_gl_scalar", None)
    return own.name if own is not None else type(v).__name__


class ScalarValue:
    """Mixin of the Python-scope scalar values `wp.int32(3)`, `wp.float16(1.5)` builds: a numpy
    scalar of the type's dtype (numpy interop, launch arguments, struct fields, `int()`,
    `float()`, `__index__`) that is an instance of its gradloom type, has Warp's `.value`,
    and whose arithmetic is the kernel's (`wp.int32(-7) / wp.int32(2)` is -3; results follow
    Python-scope builtin calls: float32/int32/bool as Python numbers). bfloat16 values are
    float32 scalars holding a bfloat16 value."""

    __slots__ = ()
    _gl_scalar: ClassVar[ScalarType]

    @property
    def value(self) -> Any:
        """The value as a Python number (Warp's `.value`)."""
        return self.item()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{self._gl_scalar.name}({self})"

    def __reduce__(self) -> Any:
        return self._gl_scalar, (self.item(),)  # type: ignore[attr-defined]

    def __abs__(self) -> Any:
        return self._gl_scalar(abs(self.item()))  # type: ignore[attr-defined]

    __add__, __radd__ = _operator("add"), _operator("add", swap=True)
    __sub__, __rsub__ = _operator("sub"), _operator("sub", swap=True)
    __mul__, __rmul__ = _operator("mul"), _operator("mul", swap=True)
    __truediv__, __rtruediv__ = _operator("div"), _operator("div", swap=True)
    __mod__, __rmod__ = _operator("mod"), _operator("mod", swap=True)
    __pow__, __rpow__ = _operator("pow"), _operator("pow", swap=True)
    __neg__, __pos__ = _operator("neg"), _operator("pos")
    __floordiv__, __rfloordiv__ = _unsupported("//"), _unsupported("//", swap=True)
    __lshift__, __rlshift__ = _unsupported("<<"), _unsupported("<<", swap=True)
    __rshift__, __rrshift__ = _unsupported(">>"), _unsupported(">>", swap=True)
    __and__, __rand__ = _unsupported("&"), _unsupported("&", swap=True)
    __or__, __ror__ = _unsupported("|"), _unsupported("|", swap=True)
    __xor__, __rxor__ = _unsupported("^"), _unsupported("^", swap=True)
    __invert__ = _unsupported("~")


_NOT_COPIED = ("__dict__", "__weakref__", "__module__", "__doc__", "__slots__", "__annotations__")


def _value_class(t: ScalarType) -> type:
    """The class of t's values. The numpy scalar comes first among its bases (numpy finds the
    dtype there), so ScalarValue's members are copied into the class to take precedence."""
    base = np.float32 if t is bfloat16 else _NP_DTYPES[t.name].type
    members = {k: v for k, v in vars(ScalarValue).items() if k not in _NOT_COPIED}
    return type(t.name, (base, ScalarValue), {**members, "__slots__": (), "_gl_scalar": t,
                                               "__module__": __name__})


class BoolValue(int):
    """`wp.bool(x)`: numpy's bool scalars cannot be subclassed (its constructor returns one of
    two singletons), so a bool value is an int (0 or 1) that is an instance of `wp.bool`, has
    Warp's `.value` and repr, and converts to numpy's bool where a bool dtype is asked for."""

    __slots__ = ()
    _gl_scalar: ClassVar[ScalarType] = bool_

    def __new__(cls, value: Any = False) -> BoolValue:
        return super().__new__(cls, bool(value))

    @property
    def value(self) -> bool:
        return bool(self)

    @property
    def dtype(self) -> np.dtype[Any]:
        return _NP_DTYPES["bool"]

    def item(self) -> bool:
        return bool(self)

    def __repr__(self) -> str:
        return f"bool({bool(self)})"

    def __str__(self) -> str:
        return str(bool(self))

    def __reduce__(self) -> Any:
        return bool_, (bool(self),)


_VALUE_CLASSES: dict[str, type] = {t.name: _value_class(t) for t in SCALAR_TYPES if t is not bool_}
_VALUE_CLASSES["bool"] = BoolValue


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


def scalar_value(value: Any, type_name: str) -> Any:
    """A numpy scalar holding a value of the named type (bfloat16: a float32 holding a bfloat16
    value) as that type's Python-scope value; other names leave it as it is."""
    cls = _VALUE_CLASSES.get(type_name)
    return value if cls is None or type(value) is cls else cls(value)
