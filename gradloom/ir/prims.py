"""The closed set of scalar primitives, each with its type rule (derivative rules join in autodiff)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..types import FLOAT_TYPES, ScalarType, bool_, int32, int64, ptr

TypeRule = Callable[[tuple[ScalarType, ...], ScalarType | None], ScalarType | None]


@dataclass(frozen=True)
class Prim:
    """A primitive: its name, arity, how its result type follows from its operands, and effects."""

    name: str
    arity: int
    type_rule: TypeRule
    side_effect: bool = False
    doc: str = ""


def _same(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    if any(t != ts[0] for t in ts):
        raise TypeError(f"operand types differ: {', '.join(map(str, ts))}")
    return ts[0]


def _float_same(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    t = _same(ts, r)
    if t not in FLOAT_TYPES:
        raise TypeError(f"needs a float operand, got {t}")
    return t


def _num_same(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    t = _same(ts, r)
    if t.kind not in "fiu":
        raise TypeError(f"needs a numeric operand, got {t}")
    return t


def _int_same(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    t = _same(ts, r)
    if t.kind not in "iub":
        raise TypeError(f"needs an integer operand, got {t}")
    return t


def _compare(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    _same(ts, r)
    return bool_


def _select(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    if ts[0] != bool_:
        raise TypeError(f"select condition must be bool, got {ts[0]}")
    return _same(ts[1:], r)


def _given(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    if r is None:
        raise TypeError("result type required")
    return r


def _load(ts: tuple[ScalarType, ...], r: ScalarType | None) -> ScalarType:
    if ts != (ptr, int64):
        raise TypeError(f"load takes (ptr, int64), got {ts}")
    return _given(ts, r)


def _store(ts: tuple[ScalarType, ...], _: ScalarType | None) -> None:
    if ts[:2] != (ptr, int64):
        raise TypeError(f"store takes (ptr, int64, value), got {ts}")
    return None


def _atomic(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    if ts[:2] != (ptr, int64):
        raise TypeError(f"atomic takes (ptr, int64, value), got {ts}")
    return ts[2]


def _gep(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    if ts != (ptr, int64):
        raise TypeError(f"ptr_add takes (ptr, int64), got {ts}")
    return ptr


def _check(ts: tuple[ScalarType, ...], _: ScalarType | None) -> None:
    if ts != (int64, int64):
        raise TypeError(f"check_bounds takes (int64, int64), got {ts}")
    return None


def _tid(ts: tuple[ScalarType, ...], _: ScalarType | None) -> ScalarType:
    return int32


_UNARY_FLOAT = (
    "sqrt", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "exp", "exp2", "log", "log2", "log10", "floor", "ceil", "round", "rint", "trunc", "erf",
)

_TABLE: list[Prim] = [
    Prim("const", 0, _given, doc="a constant; attr is its Python value"),
    Prim("arg", 0, _given, doc="a kernel parameter leaf; attr is its byte offset in the args"),
    Prim("tid", 0, _tid, doc="this thread's index along launch dimension attr"),
    Prim("neg", 1, _num_same), Prim("abs", 1, _num_same),
    *(Prim(n, 1, _float_same) for n in _UNARY_FLOAT),
    Prim("add", 2, _num_same), Prim("sub", 2, _num_same), Prim("mul", 2, _num_same),
    Prim("div", 2, _num_same, doc="float division, or C-style truncating integer division"),
    Prim("mod", 2, _num_same, doc="C-style remainder (sign of the dividend)"),
    Prim("min", 2, _num_same), Prim("max", 2, _num_same),
    Prim("pow", 2, _float_same), Prim("atan2", 2, _float_same),
    Prim("eq", 2, _compare), Prim("ne", 2, _compare), Prim("lt", 2, _compare),
    Prim("le", 2, _compare), Prim("gt", 2, _compare), Prim("ge", 2, _compare),
    Prim("and", 2, _int_same), Prim("or", 2, _int_same), Prim("xor", 2, _int_same),
    Prim("not", 1, _int_same, doc="logical not for bool, bitwise not for integers"),
    Prim("shl", 2, _int_same), Prim("shr", 2, _int_same),
    Prim("isnan", 1, lambda ts, r: bool_), Prim("isinf", 1, lambda ts, r: bool_),
    Prim("select", 3, _select, doc="select(cond, if_true, if_false)"),
    Prim("cast", 1, _given, doc="numeric conversion to the result type"),
    Prim("ptr_add", 2, _gep, doc="pointer plus a byte offset"),
    Prim("load", 2, _load, doc="load(ptr, byte offset); attr is a constant extra offset"),
    Prim("store", 3, _store, side_effect=True, doc="store(ptr, byte offset, value); attr offset"),
    Prim("atomic_add", 3, _atomic, side_effect=True, doc="returns the old value"),
    Prim("atomic_min", 3, _atomic, side_effect=True, doc="returns the old value"),
    Prim("atomic_max", 3, _atomic, side_effect=True, doc="returns the old value"),
    Prim("check_bounds", 2, _check, side_effect=True,
         doc="check_bounds(index, extent): debug mode; attr indexes the kernel's source locations"),
]

PRIMS: dict[str, Prim] = {p.name: p for p in _TABLE}
UNARY_FLOAT_PRIMS = frozenset(_UNARY_FLOAT)
COMPARE_PRIMS = frozenset(("eq", "ne", "lt", "le", "gt", "ge"))


def result_type(
    name: str, operand_types: tuple[ScalarType, ...], given: ScalarType | None = None
) -> ScalarType | None:
    """Apply a primitive's type rule; raises TypeError when the operands do not fit."""
    prim = PRIMS[name]
    if len(operand_types) != prim.arity:
        raise TypeError(f"{name} takes {prim.arity} operands, got {len(operand_types)}")
    return prim.type_rule(operand_types, given)
