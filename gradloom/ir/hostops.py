"""Host evaluation rules of the scalar primitives: each computes what the compiled op computes,
on numpy scalars of the op's types (float32 math rounds as float32, integers wrap, the C math
library gives the transcendental functions, as in kernels).

`ir/prims.py` names one rule per primitive in its table entry (`host=`); `ir/evaluate.py` runs
them. Primitives that touch memory or the adjoint stack are declared `Unavailable` there.
"""

from __future__ import annotations

import ctypes
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..types import ScalarType, bf16_bits_to_float32, bf16_round, float32_to_bf16_bits

#: A host rule: (operand values, result type or None, the op's attr) -> the result value.
HostRule = Callable[[list[Any], ScalarType | None, Any], Any]


@dataclass(frozen=True)
class Unavailable:
    """The primitive cannot run on the host (memory, thread index, adjoint stack)."""

    reason: str


# -- integers -----------------------------------------------------------------------------------


def wrap(value: int, t: Any) -> Any:
    """A Python int as a numpy scalar of dtype t, wrapped modulo 2**bits like machine integers."""
    dt = np.dtype(t)
    if dt.kind == "b":
        return np.bool_(value & 1)
    bits = dt.itemsize * 8
    value &= (1 << bits) - 1
    if dt.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return dt.type(value)


_FLOATS = frozenset((np.float16, np.float32, np.float64))


def _is_float(x: Any) -> bool:
    return type(x) in _FLOATS


def _int_binary(fn: Callable[[int, int], int]) -> Callable[[Any, Any], Any]:
    def rule(a: Any, b: Any) -> Any:
        return wrap(fn(int(a), int(b)), a.dtype)
    return rule


def _c_div(a: int, b: int) -> int:
    """C division (truncates); a zero divisor gives 0 (kernels never trap)."""
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _c_rem(a: int, b: int) -> int:
    return 0 if b == 0 else a - _c_div(a, b) * b


def _shift_amount(a: Any, b: Any) -> int:
    return int(b) & (a.dtype.itemsize * 8 - 1)


def _arith(float_fn: Callable[[Any, Any], Any], int_fn: Callable[[int, int], int]) -> HostRule:
    ints = _int_binary(int_fn)

    def rule(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
        a, b = args
        return float_fn(a, b) if _is_float(a) else ints(a, b)
    return rule


def _bitwise(fn: Callable[[int, int], int]) -> HostRule:
    def rule(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
        a, b = args
        if a.dtype.kind == "b":
            return np.bool_(fn(bool(a), bool(b)))
        return wrap(fn(int(a), int(b)), a.dtype)
    return rule


def _shl(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    a, b = args
    return wrap(int(a) << _shift_amount(a, b), a.dtype)


def _shr(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    a, b = args  # Python's >> is arithmetic for signed values, logical for unsigned ones
    return wrap(int(a) >> _shift_amount(a, b), a.dtype)


def _not(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    (a,) = args
    return np.bool_(not a) if a.dtype.kind == "b" else wrap(~int(a), a.dtype)


def _popcount(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    (a,) = args
    return a.dtype.type(bin(int(a) & ((1 << (a.dtype.itemsize * 8)) - 1)).count("1"))


# -- the C math library ---------------------------------------------------------------------------
# Kernels call libm's sinf / sin / ... (LLVM lowers its math intrinsics to them); the host calls
# the very same functions through ctypes, so float32 results agree bit for bit. float32 exp, log,
# sin and cos are gradloom's own (ir/float32_math.py), on the host as in kernels.


def _libm() -> Any:
    try:
        return ctypes.CDLL(None) if sys.platform != "win32" else ctypes.CDLL("ucrtbase")
    except OSError:  # pragma: no cover - no C library to call: numpy below
        return None


_LIB = _libm()


def _cfunc(name: str, ctype: Any, nargs: int) -> Callable[..., float] | None:
    fn = getattr(_LIB, name, None) if _LIB is not None else None
    if fn is None:
        return None
    fn.restype = ctype
    fn.argtypes = [ctype] * nargs
    return fn  # type: ignore[no-any-return]


#: numpy stand-ins where the C library cannot be called (evaluated in float64, then rounded)
_NUMPY_MATH: dict[str, Callable[..., Any]] = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "exp": np.exp,
    "exp2": np.exp2, "log": np.log, "log2": np.log2, "log10": np.log10, "cbrt": np.cbrt,
    "erf": np.vectorize(math.erf), "erfc": np.vectorize(math.erfc), "pow": np.power,
    "atan2": np.arctan2,
    "round": lambda x: np.trunc(x) + (abs(x - np.trunc(x)) >= 0.5) * np.copysign(1.0, x),
}


def libm(name: str, nargs: int = 1) -> HostRule:
    """The C function `name` (double) / `name`f (float, and half through float)."""
    f64 = _cfunc(name, ctypes.c_double, nargs)
    f32 = _cfunc(name + "f", ctypes.c_float, nargs)

    def rule(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
        dt = args[0].dtype
        fn = f64 if dt.itemsize == 8 else f32
        if fn is None:
            work = [np.float64(a) for a in args]
            return dt.type(_NUMPY_MATH[name](*work))
        return dt.type(fn(*(float(a) for a in args)))
    return rule


def _numpy_unary(fn: Callable[[Any], Any]) -> HostRule:
    def rule(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
        return args[0].dtype.type(fn(args[0]))
    return rule


#: where Python-scope calls find gradloom's own float32 functions: the scalar code kernels
#: inline, compiled (native.py sets the loader when gradloom is imported; a function of this
#: bottom layer cannot import the code generator)
_OWN_FLOAT32: list[Callable[[], dict[str, Callable[[float], float]]]] = []


def use_own_float32(loader: Callable[[], dict[str, Callable[[float], float]]]) -> None:
    _OWN_FLOAT32[:] = [loader]


def own_float32(name: str) -> HostRule:
    """gradloom's own float32 function (codegen/float32_math.py; half and bfloat16 values go
    through float32), the C library's for float64: as kernels compute it on the CPU."""
    double = libm(name)

    def rule(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
        dt = args[0].dtype
        if dt.itemsize == 8:
            return double(args, rt, attr)
        fn = _OWN_FLOAT32[0]()[name]
        return dt.type(np.float32(fn(float(np.float32(args[0])))))
    return rule


UNARY_FLOAT: dict[str, HostRule] = {
    **{n: libm(n) for n in ("tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp2",
                            "log2", "log10", "cbrt", "erf", "erfc", "round")},
    **{n: own_float32(n) for n in ("exp", "log", "sin", "cos")},
    "sqrt": _numpy_unary(np.sqrt), "floor": _numpy_unary(np.floor),
    "ceil": _numpy_unary(np.ceil), "rint": _numpy_unary(np.rint),
    "trunc": _numpy_unary(np.trunc),
}


# -- the rest of the arithmetic -------------------------------------------------------------------


def _neg(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    (a,) = args
    return -a if _is_float(a) else wrap(-int(a), a.dtype)


def _abs(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    (a,) = args
    if _is_float(a):
        return np.abs(a)
    return a if a.dtype.kind == "u" else wrap(abs(int(a)), a.dtype)


def _minmax(float_fn: Callable[[Any, Any], Any], pick: Callable[[Any, Any], Any]) -> HostRule:
    """Floats follow LLVM's minnum/maxnum (a NaN operand gives the other operand)."""
    def rule(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
        a, b = args
        return a.dtype.type(float_fn(a, b)) if _is_float(a) else pick(a, b)
    return rule


def _copysign(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    a, b = args
    return a.dtype.type(np.copysign(a, b))


def _compare(fn: Callable[[Any, Any], Any]) -> HostRule:
    def rule(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
        return np.bool_(fn(args[0], args[1]))
    return rule


def _isnan(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    return np.bool_(np.isnan(args[0]))


def _isinf(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    return np.bool_(np.isinf(args[0]))


def _select(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    c, a, b = args
    return a if c else b


def const(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    assert rt is not None
    if rt.kind == "b":
        return np.bool_(bool(attr))
    if rt.kind in "iu":
        return wrap(int(attr), rt.np_dtype)
    return rt.host_dtype.type(attr)


def cast(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    """Numeric conversion as codegen/llvm_ops.py emits it (fptosi/uitofp/sext/zext/trunc...)."""
    assert rt is not None
    (a,) = args
    dst = rt.host_dtype
    if dst.kind == "f":
        if dst == np.float16 and a.dtype != np.float32:
            a = np.float32(a)  # as the kernel: through float (codegen/llvm_ops.py cast)
        return dst.type(a)  # rounds to nearest, from any numeric type
    if a.dtype.kind == "f":
        if not np.isfinite(a):  # out of range: undefined in LLVM; x86 gives the minimum
            return wrap(-(1 << (dst.itemsize * 8 - 1)), dst) if dst.kind == "i" else dst.type(0)
        return wrap(int(a), dst)  # int() truncates toward zero, like fptosi
    return wrap(int(a), dst)  # sext / zext / trunc (to bool: the low bit, as LLVM truncates)


def bitcast(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    assert rt is not None
    (a,) = args
    if rt.name == "bfloat16":  # a bfloat16's value is a float32 on the host
        return bf16_bits_to_float32(np.asarray(a).view(np.uint16))[()]
    if a.dtype == np.float32 and rt.size == 2:  # bfloat16 -> its bits
        return float32_to_bf16_bits(a).view(rt.np_dtype)[()]
    return np.asarray(a).view(rt.np_dtype)[()]


def bf16_result(rule: HostRule) -> HostRule:
    """A rule whose result is a bfloat16: computed in float32 (the host's bfloat16 values),
    then rounded to the nearest bfloat16, as kernels do (codegen/llvm_bf16.py)."""
    def rounded(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
        return bf16_round(np.float32(rule(args, rt, attr)))
    return rounded


def print_(args: list[Any], rt: ScalarType | None, attr: Any) -> Any:
    """printf(format, values...) when the condition holds (floats as double, bools as words)."""
    cond, *values = args
    if not cond:
        return None
    py: list[Any] = []
    for v in values:
        if v.dtype.kind == "b":
            py.append("True" if v else "False")
        else:
            py.append(float(v) if _is_float(v) else int(v))
    print(_C_LENGTH.sub(r"%\1\2", str(attr)) % tuple(py), end="", flush=True)
    return None


#: a C length modifier (%lld, %hu), which Python's % formatting does not take
_C_LENGTH = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)(?:hh|ll|h|l|j|z|t|L)([diouxXeEfgGcs])")


def _arith_rules() -> dict[str, HostRule]:
    return {
        "add": _arith(lambda a, b: a + b, lambda a, b: a + b),
        "sub": _arith(lambda a, b: a - b, lambda a, b: a - b),
        "mul": _arith(lambda a, b: a * b, lambda a, b: a * b),
        "div": _arith(lambda a, b: a / b, _c_div),
        "mod": _arith(lambda a, b: a.dtype.type(np.fmod(a, b)), _c_rem),
        "min": _minmax(np.fmin, min), "max": _minmax(np.fmax, max),
        "pow": libm("pow", 2), "atan2": libm("atan2", 2), "copysign": _copysign,
    }


ARITH = _arith_rules()
NEG, ABS, POPCOUNT, NOT, SHL, SHR = _neg, _abs, _popcount, _not, _shl, _shr
BITWISE = {"and": _bitwise(lambda a, b: a & b), "or": _bitwise(lambda a, b: a | b),
           "xor": _bitwise(lambda a, b: a ^ b)}
COMPARE = {"eq": _compare(lambda a, b: a == b), "ne": _compare(lambda a, b: a != b),
           "lt": _compare(lambda a, b: a < b), "le": _compare(lambda a, b: a <= b),
           "gt": _compare(lambda a, b: a > b), "ge": _compare(lambda a, b: a >= b)}
ISNAN, ISINF, SELECT, CONST, CAST, BITCAST, PRINT = (
    _isnan, _isinf, _select, const, cast, bitcast, print_)

MEMORY = Unavailable("reads or writes array memory")
THREAD = Unavailable("needs a kernel launch")
ADJOINT = Unavailable("exists only in adjoint kernels")
