"""Host rules over every thread of a launch at once: integer and bool primitives on numpy arrays.

A launch-time check (passes/overlap.py) computes the addresses a kernel's threads touch from
the launch's arguments and grid, one numpy array per IR value with an element per thread. Each
rule here computes what the compiled op computes (integers wrap at their width, C division
truncates and a zero divisor gives 0, as ir/hostops.py's scalar rules do), on arrays of the
op's integer or bool types. Float values never take part: an address computed through floats
is not checked at launch. `ir/prims.py` names the rule in each primitive's table entry
(`host_threads=`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..types import ScalarType

#: A rule over threads: (operand arrays, result type, the op's attr) -> the result array.
ThreadsRule = Callable[[list[Any], ScalarType, Any], Any]


def _c_div(a: Any, b: Any) -> Any:
    """C division (truncates toward zero); a zero divisor gives 0 (kernels never trap)."""
    safe = np.where(b == 0, np.ones_like(b), b)
    with np.errstate(over="ignore"):  # the lowest value over -1 wraps, as in kernels
        q = a // safe
        if a.dtype.kind == "i":  # floor division rounds down: step back toward zero
            q = q + (((a - q * safe) != 0) & ((a < 0) != (safe < 0))).astype(q.dtype)
    return np.where(b == 0, np.zeros_like(q), q)


def _c_rem(a: Any, b: Any) -> Any:
    return np.where(b == 0, np.zeros_like(a), a - _c_div(a, b) * b)


def _binary(fn: Callable[[Any, Any], Any]) -> ThreadsRule:
    def rule(args: list[Any], rt: ScalarType, attr: Any) -> Any:
        a, b = args
        return np.asarray(fn(a, b)).astype(rt.np_dtype, copy=False)
    return rule


def _shift(fn: Callable[[Any, Any], Any]) -> ThreadsRule:
    """Shifts take the amount modulo the width, as the scalar rules and LLVM on x86 do."""
    def rule(args: list[Any], rt: ScalarType, attr: Any) -> Any:
        a, b = args
        amount = (b.astype(np.int64) & (a.dtype.itemsize * 8 - 1)).astype(a.dtype)
        return fn(a, amount)
    return rule


def _bitwise(fn: Callable[[Any, Any], Any], logical: Callable[[Any, Any], Any]) -> ThreadsRule:
    def rule(args: list[Any], rt: ScalarType, attr: Any) -> Any:
        a, b = args
        return logical(a, b) if a.dtype.kind == "b" else fn(a, b)
    return rule


def _compare(fn: Callable[[Any, Any], Any]) -> ThreadsRule:
    def rule(args: list[Any], rt: ScalarType, attr: Any) -> Any:
        return np.asarray(fn(args[0], args[1]), dtype=np.bool_)
    return rule


def _neg(args: list[Any], rt: ScalarType, attr: Any) -> Any:
    (a,) = args
    return (np.zeros_like(a) - a).astype(rt.np_dtype, copy=False)


def _abs(args: list[Any], rt: ScalarType, attr: Any) -> Any:
    (a,) = args
    return a if a.dtype.kind == "u" else np.where(a < 0, _neg([a], rt, attr), a)


def _not(args: list[Any], rt: ScalarType, attr: Any) -> Any:
    (a,) = args
    return np.logical_not(a) if a.dtype.kind == "b" else np.invert(a)


def _select(args: list[Any], rt: ScalarType, attr: Any) -> Any:
    c, a, b = args
    return np.where(c, a, b).astype(rt.np_dtype, copy=False)


def _const(args: list[Any], rt: ScalarType, attr: Any) -> Any:
    if rt.kind == "b":
        return np.asarray(bool(attr))
    return np.asarray(int(attr) & ((1 << rt.bits) - 1)).astype(np.uint64).astype(rt.np_dtype)


def _cast(args: list[Any], rt: ScalarType, attr: Any) -> Any:
    """Integer and bool conversions: sign or zero extension, truncation (to bool: the low bit,
    as LLVM truncates)."""
    (a,) = args
    if rt.kind == "b" and a.dtype.kind != "b":
        return (a & 1).astype(np.bool_)
    return a.astype(rt.np_dtype)


def _bitcast(args: list[Any], rt: ScalarType, attr: Any) -> Any:
    """The same bits read as another integer type of the same width."""
    return np.ascontiguousarray(args[0]).view(rt.np_dtype)


def _never(args: list[Any], rt: ScalarType, attr: Any) -> Any:
    """isnan / isinf of an integer: never."""
    return np.zeros(np.shape(args[0]), dtype=np.bool_)


def _popcount(args: list[Any], rt: ScalarType, attr: Any) -> Any:
    (a,) = args
    octets = np.ascontiguousarray(a).reshape((*a.shape, 1)).view(np.uint8)
    return np.unpackbits(octets, axis=-1).sum(axis=-1).astype(rt.np_dtype)


RULES: dict[str, ThreadsRule] = {
    "const": _const, "bitcast": _bitcast, "popcount": _popcount, "isnan": _never,
    "isinf": _never, "cast": _cast, "select": _select, "neg": _neg, "abs": _abs, "not": _not,
    "add": _binary(operator.add), "sub": _binary(operator.sub), "mul": _binary(operator.mul),
    "div": _binary(_c_div), "mod": _binary(_c_rem),
    "min": _binary(np.minimum), "max": _binary(np.maximum),
    "and": _bitwise(np.bitwise_and, np.logical_and), "or": _bitwise(np.bitwise_or, np.logical_or),
    "xor": _bitwise(np.bitwise_xor, np.logical_xor),
    "shl": _shift(np.left_shift), "shr": _shift(np.right_shift),
    **{name: _compare(fn) for name, fn in (("eq", operator.eq), ("ne", operator.ne),
                                           ("lt", operator.lt), ("le", operator.le),
                                           ("gt", operator.gt), ("ge", operator.ge))},
}
