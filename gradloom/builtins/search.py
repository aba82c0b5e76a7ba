"""Searching sorted arrays in kernels: lower_bound (a binary search, as a loop in the IR)."""

from __future__ import annotations

from ..ir.nodes import Var
from ..types import ScalarType, int32, int64
from . import memory
from .registry import builtin
from .values import ArrayVal, Ctx, Value, describe, materialize, while_loop


@builtin("lower_bound", "the first index in the sorted 1-D array arr (or in "
         "arr[arr_begin:arr_end]) whose element is >= value; the range's end when there is none",
         differentiable=False,
         signatures=("(arr: Array, value: Scalar) -> Int",
                     "(arr: Array, arr_begin: Int, arr_end: Int, value: Scalar) -> Int"))
def lower_bound(ctx: Ctx, arr: Value, *args: Value) -> Value:
    if not isinstance(arr, ArrayVal) or arr.type.ndim != 1 or \
            not isinstance(arr.type.dtype, ScalarType) or arr.type.dtype.kind not in "fiu":
        raise ctx.error(f"wp.lower_bound() searches a 1-D array of numbers, got {describe(arr)}")
    if len(args) not in (1, 3):
        raise ctx.error("wp.lower_bound() takes (arr, value) or (arr, arr_begin, arr_end, value)")
    dtype = arr.type.dtype
    value = materialize(ctx, args[-1], dtype)
    if not isinstance(value, Var) or value.type != dtype:
        raise ctx.error(f"wp.lower_bound() on an array of {dtype} needs a {dtype} value, got "
                        f"{describe(args[-1])}")
    if len(args) == 3:
        begin, end = memory.index64(ctx, args[0]), memory.index64(ctx, args[1])
    else:
        begin, end = ctx.const(0, int64), arr.shape[0]
    found = _search(ctx, arr, value, begin, end)
    return ctx.op("cast", found, type=int32)


def _search(ctx: Ctx, arr: ArrayVal, value: Var, begin: Var, end: Var) -> Var:
    """Binary search for the first element >= value in [begin, end)."""
    def cond(p: list[Var]) -> Var:
        return ctx.op("lt", p[0], p[1])

    def body(p: list[Var]) -> list[Var]:
        lo, hi = p
        half = ctx.op("shr", ctx.op("sub", hi, lo), ctx.const(1, int64))
        mid = ctx.op("add", lo, half)
        place = memory.index_array(ctx, arr, [mid])
        assert isinstance(place, memory.Place)
        element = memory.load(ctx, place)
        assert isinstance(element, Var)
        below = ctx.op("lt", element, value)
        return [ctx.op("select", below, ctx.op("add", mid, ctx.const(1, int64)), lo),
                ctx.op("select", below, hi, mid)]

    return while_loop(ctx, [begin, end], cond, body)[0]
