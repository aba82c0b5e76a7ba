"""Array memory in kernels: element addresses, bounds checks, loads and stores of any type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import config
from ..ir.nodes import Var
from ..ir.prims import PRIVATE
from ..types import (
    ArrayType,
    IndexedArrayType,
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    int32,
    int64,
    leaves,
    ptr,
    uint64,
)
from .values import (
    ArrayVal,
    Composite,
    Ctx,
    Literal,
    StructVal,
    Value,
    describe,
    flatten,
    if_values,
    materialize,
    scalar,
    type_of,
)


@dataclass(frozen=True)
class Place:
    """A typed location in memory: base pointer + runtime byte offset + constant byte offset."""

    ptr: Var
    offset: Var
    extra: int
    type: Any


#: array kinds addressed their own way, by type class (Fabric arrays: builtins/fabric.py fills it
#: when imported; the catalog imports it with the package)
SPECIAL_INDEX: dict[type, Callable[[Ctx, ArrayVal, list[Value]], ArrayVal | Place]] = {}


def index64(ctx: Ctx, v: Value) -> Var:
    i = scalar(ctx, v, None)
    if not i.type.is_int:
        raise ctx.error(f"array indices must be integers, got {i.type}")
    return i if i.type == int64 else ctx.op("cast", i, type=int64)


def index_array(ctx: Ctx, arr: ArrayVal, idx: list[Value]) -> ArrayVal | Place:
    """a[i, j, ...]: a Place when every dimension is indexed, else a sub-array view."""
    n = arr.type.ndim
    special = SPECIAL_INDEX.get(type(arr.type))
    if special is not None:
        return special(ctx, arr, idx)
    if len(idx) > n:
        raise ctx.error(f"too many indices ({len(idx)}) for a {n}-D array")
    offset: Var | None = None
    for k, v in enumerate(idx):
        i = _from_end(ctx, v, index64(ctx, v), arr.shape[k])
        if config.mode == "debug":
            ctx.b.effect("check_bounds", (i, arr.shape[k]), ctx.loc, attr=ctx.b.loc_index(ctx.loc))
        if arr.indices:
            i = _through_index(ctx, arr.indices[k], i)
        term = ctx.op("mul", i, arr.strides[k])
        offset = term if offset is None else ctx.op("add", offset, term)
    assert offset is not None
    if len(idx) == n:
        return Place(arr.data, offset, 0, arr.type.dtype)
    data = ctx.op("ptr_add", arr.data, offset)
    grad = ctx.op("ptr_add", arr.grad, offset)
    rest = len(idx)
    kind = IndexedArrayType if arr.indices else ArrayType
    return ArrayVal(kind(arr.type.dtype, n - rest), data, grad, arr.shape[rest:],
                    arr.strides[rest:], arr.indices[rest:])


#: integer ops whose result is >= 0 when their operands are (no wrap-around in index ranges)
_KEEPS_NONNEGATIVE = frozenset({"add", "mul", "div", "mod", "min", "max", "tid"})


def _nonnegative(ctx: Ctx, v: Value, depth: int = 6) -> bool:
    """v is an index known at compile time to be >= 0: a literal or constant, a wp.tid()
    component, an unsigned integer, or sums and products of such."""
    if isinstance(v, Literal):
        return isinstance(v.value, int) and v.value >= 0
    if not isinstance(v, Var) or not v.type.is_int:
        return False
    if v.type.kind == "u":
        return True
    op = ctx.b.defining_op(v)
    if op is None or depth == 0:
        return False
    if op.prim == "const":
        return isinstance(op.attr, int) and op.attr >= 0
    if op.prim == "cast":
        src = op.args[0]
        return src.type.is_int and src.type.bits <= v.type.bits and _nonnegative(ctx, src, depth - 1)
    return op.prim in _KEEPS_NONNEGATIVE and all(_nonnegative(ctx, a, depth - 1) for a in op.args)


def _from_end(ctx: Ctx, v: Value, i: Var, extent: Var) -> Var:
    """Warp's negative indices: a[-1] is the last element (i + extent where i < 0). Indices
    known to be >= 0 (wp.tid(), constants) stay as they are, so their addresses keep the
    `index * stride` form that passes/threads.py proves thread-own."""
    if _nonnegative(ctx, v):
        return i
    zero = ctx.const(0, int64)
    return ctx.op("add", i, ctx.op("select", ctx.op("lt", i, zero), extent, zero))


def _through_index(ctx: Ctx, indices: Var, i: Var) -> Var:
    """An indexed array's dimension: indices[i] (int32) where it has an index array, else i."""
    has = ctx.op("ne", indices, ctx.const(0, ptr))

    def mapped() -> list[Var]:
        off = ctx.op("mul", i, ctx.const(int32.size, int64))
        return [ctx.op("cast", ctx.op("load", indices, off, type=int32), type=int64)]

    return if_values(ctx, has, mapped, lambda: [i])[0]


def component_place(ctx: Ctx, place: Place, index: Value | int | str) -> Place:
    """A vector component, matrix row, or struct field inside a Place."""
    t = place.type
    if isinstance(t, StructType):
        assert isinstance(index, str)
        return Place(place.ptr, place.offset, place.extra + t.offsets[index], t.field_type(index))
    if not isinstance(t, (VectorType, MatrixType)):
        raise ctx.error(f"cannot index into a value of type {t!r}")
    if isinstance(t, VectorType) and t.kind == "transform" and index in ("p", "q"):
        part = VectorType(3, t.dtype) if index == "p" else VectorType(4, t.dtype, "quat")
        return Place(place.ptr, place.offset, place.extra + (0 if index == "p" else 3 * t.dtype.size), part)
    sub: Any = t.dtype if isinstance(t, VectorType) else VectorType(t.cols, t.dtype)
    step = sub.size
    if isinstance(index, int):
        return Place(place.ptr, place.offset, place.extra + index * step, sub)
    i = index64(ctx, index)  # type: ignore[arg-type]
    off = ctx.op("add", place.offset, ctx.op("mul", i, ctx.const(step, int64)))
    return Place(place.ptr, off, place.extra, sub)


def load(ctx: Ctx, place: Place) -> Value:
    t = place.type
    vals = [ctx.op("load", place.ptr, place.offset, attr=place.extra + off, type=st)
            for off, st in leaves(t)]
    return _assemble(t, vals)


def _assemble(t: Any, vals: list[Var]) -> Value:
    if isinstance(t, ScalarType):
        return vals[0]
    if isinstance(t, (VectorType, MatrixType)):
        return Composite(t, tuple(vals))
    if isinstance(t, StructType):
        it = iter(vals)
        fields = []
        for _, ft in t.fields:
            fields.append(_assemble(ft, [next(it) for _ in leaves(ft)]))
        return StructVal(t, tuple(fields))
    if isinstance(t, (ArrayType, IndexedArrayType)):  # a struct's array field, in an array
        return ArrayVal.from_words(t, vals)
    raise TypeError(f"cannot load a value of type {t!r}")


def store(ctx: Ctx, place: Place, value: Value) -> None:
    t = place.type
    value = materialize(ctx, value, t if isinstance(t, ScalarType) else None)
    if type_of(value) != t:
        raise ctx.error(f"cannot store {type_of(value)!r} into an array element of type {t!r}")
    for (off, _), v in zip(leaves(t), flatten(value), strict=True):
        ctx.b.effect("store", (place.ptr, place.offset, v), ctx.loc, attr=place.extra + off)


def atomic(ctx: Ctx, prim: str, place: Place, value: Value) -> Value:
    """An atomic read-modify-write of every scalar leaf; returns the old value."""
    t = place.type
    value = materialize(ctx, value, t if isinstance(t, ScalarType) else None)
    if type_of(value) != t:
        raise ctx.error(f"atomic on an element of type {t!r} got a value of type "
                        f"{type_of(value)!r}")
    olds = [ctx.op(prim, place.ptr, place.offset, v, attr=place.extra + off)
            for (off, _), v in zip(leaves(t), flatten(value), strict=True)]
    return _assemble(t, olds)


def handle_pointer(ctx: Ctx, name: str, handle: Value, what: str, private: bool = False) -> Var:
    """The address a host object's id (a uint64: a HashGrid's, Mesh's, Volume's `.id`) names,
    for builtins that read the object's memory; a clear error for anything else. `private`:
    the object's memory is its own (no array argument shares it) and kernels only read it."""
    if isinstance(handle, Literal) and isinstance(handle.value, int) \
            and not isinstance(handle.value, bool):
        handle = ctx.const(handle.value, uint64)
    if not isinstance(handle, Var) or handle.type.kind not in "iu" or handle.type.bits != 64:
        raise ctx.error(f"wp.{name}() needs {what} (wp.uint64), got {describe(handle)}")
    return ctx.op("cast", handle, type=ptr, attr=PRIVATE if private else None)
