"""Fabric arrays in kernels: element places through the array's table of element addresses.

A Fabric array argument (types.FabricArrayType) is packed in an indexed array's words: `data`
points at one uint64 address per element, `strides[0]` is that table's stride, `indices[0]` an
optional int32 index array. `a[i]` loads element i's address from the table; for an array of
arrays (ndim 2) that address holds the sub-array's data pointer, and `strides[1]` is the address
of a second table giving each element's length address, so `a[i]` is a 1-D array view and
`a[i, j]` its element j. Fabric memory has no gradient (as in Warp).
"""

from __future__ import annotations

from ..ir.nodes import Var
from ..ir.prims import NO_GRADIENT
from ..types import ArrayType, FabricArrayType, int64, ptr, size_of, uint64
from . import memory
from .values import ArrayVal, Ctx, Value


def _load_address(ctx: Ctx, table: Var, offset: Var) -> Var:
    """The pointer stored as a uint64 at table + offset."""
    word = ctx.op("load", table, offset, type=uint64)
    return ctx.op("cast", word, type=ptr, attr=NO_GRADIENT)


def _table_offset(ctx: Ctx, arr: ArrayVal, v: Value) -> Var:
    i = memory.index64(ctx, v)
    i = memory._from_end(ctx, v, i, arr.shape[0])
    if arr.indices:
        i = memory._through_index(ctx, arr.indices[0], i)
    return ctx.op("mul", i, arr.strides[0])


def index_fabric(ctx: Ctx, arr: ArrayVal, idx: list[Value]) -> ArrayVal | memory.Place:
    """a[i] (a[i, j] for an array of arrays): a Place, or a sub-array view."""
    n = arr.type.ndim
    if not 1 <= len(idx) <= n:
        raise ctx.error(f"a Fabric array takes 1 to {n} indices, got {len(idx)}")
    offset = _table_offset(ctx, arr, idx[0])
    zero = ctx.const(0, int64)
    if n == 1:
        return memory.Place(_load_address(ctx, arr.data, offset), zero, 0, arr.type.dtype)
    slot = _load_address(ctx, arr.data, offset)
    data = _load_address(ctx, slot, zero)
    lengths = ctx.op("cast", arr.strides[1], type=ptr)
    count = ctx.op("load", _load_address(ctx, lengths, offset), zero, type=uint64)
    row = ArrayVal(ArrayType(arr.type.dtype, 1), data, ctx.const(0, ptr),
                   (ctx.op("cast", count, type=int64),),
                   (ctx.const(size_of(arr.type.dtype), int64),))
    return row if len(idx) == 1 else memory.index_array(ctx, row, idx[1:])


memory.SPECIAL_INDEX[FabricArrayType] = index_fabric
