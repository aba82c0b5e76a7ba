"""Atomic builtins on array elements (add, sub, min, max, and, or, xor, exch, cas): each returns
the element's old value. Vectors and matrices are updated atomically per component, as in Warp."""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import ScalarType, leaves, uint16, uint32, uint64
from . import memory, ops
from .registry import builtin
from .values import ArrayVal, Composite, Ctx, Value, describe, materialize, type_of

_INDEX = "(one index per array dimension: i, j, k, l)"
_UINT = {16: uint16, 32: uint32, 64: uint64}


def _sigs(value: str) -> tuple[str, ...]:
    return tuple(f"(arr: Array, i: Int, value: {t}) -> {t}" for t in value.split("|"))


def _place(ctx: Ctx, name: str, arr: Value, idx: tuple[Value, ...]) -> memory.Place:
    if not isinstance(arr, ArrayVal):
        raise ctx.error(f"wp.{name}() needs an array as its first argument, got {describe(arr)}")
    if len(idx) != arr.type.ndim:
        raise ctx.error(f"wp.{name}() on a {arr.type.ndim}-D array takes {arr.type.ndim} "
                        f"indices, got {len(idx)}")
    place = memory.index_array(ctx, arr, list(idx))
    assert isinstance(place, memory.Place)
    return place


def _split(ctx: Ctx, name: str, args: tuple[Value, ...], values: int = 1
           ) -> tuple[memory.Place, tuple[Value, ...]]:
    """(arr, i..., value...) -> the element's place and the trailing value arguments."""
    if len(args) < 2 + values:
        tail = "compare, value" if values == 2 else "value"
        raise ctx.error(f"wp.{name}(arr, i..., {tail}) needs at least {2 + values} arguments, "
                        f"got {len(args)}")
    return _place(ctx, name, args[0], args[1:-values]), args[-values:]


def _element_dtype(t: object) -> ScalarType | None:
    if isinstance(t, ScalarType):
        return t
    return getattr(t, "dtype", None)


def _integer_only(ctx: Ctx, name: str, place: memory.Place) -> None:
    dtype = _element_dtype(place.type)
    if dtype is None or not dtype.is_int:
        raise ctx.error(f"wp.{name}() needs an array of integers (or integer vectors), "
                        f"got elements of type {place.type!r}")


def _no_bool(ctx: Ctx, name: str, place: memory.Place) -> None:
    dtype = _element_dtype(place.type)
    if dtype is None or dtype.kind not in "fiu":
        raise ctx.error(f"wp.{name}() needs an array of numbers, got elements of type "
                        f"{place.type!r}")


#: the element scalar types Warp's atomic add/sub and min/max take (its message's words)
_ADD_TYPES = ("[u]int32, [u]int64, float16, bfloat16, float32, or float64",
              ("int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"))
_MINMAX_TYPES = ("[u]int32, [u]int64, bfloat16, float32, or float64",
                 ("int32", "uint32", "int64", "uint64", "bfloat16", "float32", "float64"))


def _warp_types(ctx: Ctx, name: str, place: memory.Place,
                allowed: tuple[str, tuple[str, ...]]) -> None:
    """Warp's element types for the arithmetic atomics (`+=` on array elements takes more)."""
    dtype = _element_dtype(place.type)
    if dtype is None or dtype.name not in allowed[1]:
        raise ctx.error(f"{name}() operations only work on arrays with {allowed[0]} as the "
                        f"underlying scalar types, but got {place.type!r} (with scalar type "
                        f"{dtype!r})")


@builtin("atomic_add", f"atomically add value to arr[i]; returns the old value {_INDEX}",
         signatures=_sigs("Scalar|Vector"))
def atomic_add(ctx: Ctx, *args: Value) -> Value:
    place, (value,) = _split(ctx, "atomic_add", args)
    _no_bool(ctx, "atomic_add", place)
    _warp_types(ctx, "atomic_add", place, _ADD_TYPES)
    return memory.atomic(ctx, "atomic_add", place, value)


@builtin("atomic_sub", f"atomically subtract value from arr[i]; returns the old value {_INDEX}",
         signatures=_sigs("Scalar|Vector"))
def atomic_sub(ctx: Ctx, *args: Value) -> Value:
    place, (value,) = _split(ctx, "atomic_sub", args)
    _no_bool(ctx, "atomic_sub", place)
    _warp_types(ctx, "atomic_sub", place, _ADD_TYPES)
    negated = ops.unary(ctx, "neg", value)
    return memory.atomic(ctx, "atomic_add", place, negated)


@builtin("atomic_min", f"atomically store min(arr[i], value); returns the old value {_INDEX}",
         signatures=_sigs("Scalar|Vector"))
def atomic_min(ctx: Ctx, *args: Value) -> Value:
    place, (value,) = _split(ctx, "atomic_min", args)
    _no_bool(ctx, "atomic_min", place)
    _warp_types(ctx, "atomic_min", place, _MINMAX_TYPES)
    return memory.atomic(ctx, "atomic_min", place, value)


@builtin("atomic_max", f"atomically store max(arr[i], value); returns the old value {_INDEX}",
         signatures=_sigs("Scalar|Vector"))
def atomic_max(ctx: Ctx, *args: Value) -> Value:
    place, (value,) = _split(ctx, "atomic_max", args)
    _no_bool(ctx, "atomic_max", place)
    _warp_types(ctx, "atomic_max", place, _MINMAX_TYPES)
    return memory.atomic(ctx, "atomic_max", place, value)


def _make_bitwise(op: str) -> None:
    name = f"atomic_{op}"

    def fn(ctx: Ctx, *args: Value) -> Value:
        place, (value,) = _split(ctx, name, args)
        _integer_only(ctx, name, place)
        return memory.atomic(ctx, name, place, value)

    builtin(name, f"atomically store arr[i] {op.upper()} value (bitwise; integers or integer "
            f"vectors); returns the old value {_INDEX}", differentiable=False,
            signatures=_sigs("Int"))(fn)


for _op in ("and", "or", "xor"):
    _make_bitwise(_op)


@builtin("atomic_exch", f"atomically store value in arr[i]; returns the old value {_INDEX}",
         differentiable=False, signatures=_sigs("Scalar|Vector"))
def atomic_exch(ctx: Ctx, *args: Value) -> Value:
    place, (value,) = _split(ctx, "atomic_exch", args)
    _no_bool(ctx, "atomic_exch", place)
    return memory.atomic(ctx, "atomic_exch", place, value)


@builtin("atomic_cas", "atomically store value in arr[i] if arr[i] equals compare (compared "
         "bit for bit; a vector or matrix is replaced only when all its components equal "
         f"compare's); returns the old value {_INDEX}", differentiable=False,
         signatures=("(arr: Array, i: Int, compare: Scalar, value: Scalar) -> Scalar",
                     "(arr: Array, i: Int, compare: Vector, value: Vector) -> Vector"))
def atomic_cas(ctx: Ctx, *args: Value) -> Value:
    place, (compare, value) = _split(ctx, "atomic_cas", args, values=2)
    _no_bool(ctx, "atomic_cas", place)
    t = place.type
    scalar_t = t if isinstance(t, ScalarType) else None
    cmp, new = materialize(ctx, compare, scalar_t), materialize(ctx, value, scalar_t)
    for what, v in (("compare", cmp), ("value", new)):
        if type_of(v) != t:
            raise ctx.error(f"wp.atomic_cas() on an element of type {t!r} got a {what} of type "
                            f"{type_of(v)!r}")
    cmps, news = _scalars(cmp), _scalars(new)
    if not isinstance(t, ScalarType):
        news = _whole_value_swap(ctx, place, cmps, news)
    offsets = [place.extra + off for off, _ in leaves(t)]
    olds = [ctx.op("atomic_cas", place.ptr, place.offset, c, v, attr=off)
            for off, c, v in zip(offsets, cmps, news, strict=True)]
    return olds[0] if isinstance(t, ScalarType) else Composite(t, tuple(olds))


def _whole_value_swap(ctx: Ctx, place: memory.Place, cmps: tuple[Var, ...],
                      news: tuple[Var, ...]) -> tuple[Var, ...]:
    """Warp replaces a vector only when all of it equals compare. Each component's CAS stores
    the new component when the whole matched (read first), else compare's own bits, which
    leaves it unchanged: one compare-and-swap per component, no branch."""
    current = memory.load(ctx, place)
    assert isinstance(current, Composite)
    same = None
    for x, c in zip(current.comps, cmps, strict=True):
        eq = ctx.op("eq", _bits(ctx, x), _bits(ctx, c))
        same = eq if same is None else ctx.op("and", same, eq)
    assert same is not None
    return tuple(ctx.op("select", same, v, c) for v, c in zip(news, cmps, strict=True))


def _bits(ctx: Ctx, v: Var) -> Var:
    if not v.type.is_float:
        return v
    return ctx.op("bitcast", v, type=_UINT[v.type.bits])


def _scalars(v: Value) -> tuple[Var, ...]:
    if isinstance(v, Composite):
        return v.comps
    assert isinstance(v, Var)
    return (v,)
