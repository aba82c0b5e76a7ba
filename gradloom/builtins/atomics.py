"""Atomic builtins on array elements: atomic_add/sub/min/max, each returning the old value."""

from __future__ import annotations

from . import memory, ops
from .registry import builtin
from .values import ArrayVal, Ctx, Value, describe


def _place(ctx: Ctx, name: str, arr: Value, idx: tuple[Value, ...]) -> memory.Place:
    if not isinstance(arr, ArrayVal):
        raise ctx.error(f"wp.{name}() needs an array as its first argument, got {describe(arr)}")
    if len(idx) != arr.type.ndim:
        raise ctx.error(f"wp.{name}() on a {arr.type.ndim}-D array takes {arr.type.ndim} "
                        f"indices, got {len(idx)}")
    place = memory.index_array(ctx, arr, list(idx))
    assert isinstance(place, memory.Place)
    return place


def _split(ctx: Ctx, name: str, args: tuple[Value, ...]) -> tuple[Value, tuple[Value, ...], Value]:
    if len(args) < 3:
        raise ctx.error(f"wp.{name}(array, index..., value) needs at least 3 arguments")
    return args[0], args[1:-1], args[-1]


@builtin("atomic_add", "atomically add value to arr[i...]; returns the old value")
def atomic_add(ctx: Ctx, *args: Value) -> Value:
    arr, idx, value = _split(ctx, "atomic_add", args)
    return memory.atomic(ctx, "atomic_add", _place(ctx, "atomic_add", arr, idx), value)


@builtin("atomic_sub", "atomically subtract value from arr[i...]; returns the old value")
def atomic_sub(ctx: Ctx, *args: Value) -> Value:
    arr, idx, value = _split(ctx, "atomic_sub", args)
    place = _place(ctx, "atomic_sub", arr, idx)
    negated = ops.unary(ctx, "neg", value)
    return memory.atomic(ctx, "atomic_add", place, negated)


@builtin("atomic_min", "atomically store min(arr[i...], value); returns the old value")
def atomic_min(ctx: Ctx, *args: Value) -> Value:
    arr, idx, value = _split(ctx, "atomic_min", args)
    return memory.atomic(ctx, "atomic_min", _place(ctx, "atomic_min", arr, idx), value)


@builtin("atomic_max", "atomically store max(arr[i...], value); returns the old value")
def atomic_max(ctx: Ctx, *args: Value) -> Value:
    arr, idx, value = _split(ctx, "atomic_max", args)
    return memory.atomic(ctx, "atomic_max", _place(ctx, "atomic_max", arr, idx), value)
