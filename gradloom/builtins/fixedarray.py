"""Fixed-size arrays local to a kernel thread: `wp.zeros(shape=..., dtype=...)` inside a kernel.

A fixed array is a value, like a vector: its elements are SSA values, row-major
(values.FixedArrayVal). Constant indices pick an element at compile time. A runtime index reads
through a chain of selects over the elements, and a write replaces every element k by
`select(index == k, new, old)`; loops that fill and read such an array are then ordinary scalar
IR, and reverse mode differentiates them like any other values (no new primitive, nothing in
autodiff). The cost of a runtime-indexed access grows with the array's size, hence the limit
`MAX_SCALARS` on its scalar components.

Differences from Warp, where a fixed array lives in stack memory and behaves as a reference:
`r = arr[0]` (a row) is a copy here, so writes through `r` do not reach `arr`; passing a fixed
array to a `@wp.func` that writes into it does update the caller's variable (frontend/lower.py
copies it back), which covers the common idiom. `.ptr` is not available.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import config
from ..ir.nodes import Var
from ..types import ArrayType, FixedArrayType, int64, leaves, resolve_annotation
from .registry import builtin
from .values import (
    Ctx,
    FixedArrayVal,
    Literal,
    TupleVal,
    Value,
    describe,
    flatten,
    rebuild,
    scalar,
    type_of,
    zeros_of,
)

#: the most scalar components a fixed array may have (each runtime-indexed access costs a
#: compare and a select per component)
MAX_SCALARS = 1024

Key = Value | slice


@builtin("zeros", "a zero-initialized fixed-size array local to the thread; shape must be a "
         "constant (an int or a tuple of ints)", differentiable=False, group="Utility",
         signatures=("(shape: Int, dtype: Any) -> FixedArray",
                     "(shape: Tuple, dtype: Any) -> FixedArray"))
def zeros(ctx: Ctx, shape: Any = None, dtype: Any = float) -> FixedArrayVal:
    dims = (shape,) if isinstance(shape, int) and not isinstance(shape, bool) else shape
    if not isinstance(dims, tuple) or not dims or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise ctx.error(f"wp.zeros() in a kernel, got {describe(shape)} as the shape: the "
                        "`shape` argument must be specified as a constant when zero-initializing "
                        "an array")
    if any(d <= 0 for d in dims) or len(dims) > 4:
        raise ctx.error(f"wp.zeros() in a kernel: shape {dims} must have 1 to 4 positive sizes")
    try:
        t = FixedArrayType(dims, resolve_annotation(dtype))
    except TypeError as exc:
        raise ctx.error(f"wp.zeros() in a kernel: {exc}") from None
    scalars = t.count * len(leaves(t.dtype))
    if scalars > MAX_SCALARS:
        raise ctx.error(f"wp.zeros() in a kernel: a fixed array of {scalars} scalar components "
                        f"exceeds the limit of {MAX_SCALARS} (its elements are registers here)")
    return FixedArrayVal(t, (zeros_of(ctx, t.dtype),) * t.count)


def accepts(t: Any, v: Any) -> bool:
    """A fixed array passed where an array of t is expected (`arr: wp.array2d[int]`)."""
    return isinstance(v, FixedArrayVal) and isinstance(t, ArrayType) and \
        t.ndim == v.type.ndim and (t.dtype is Any or t.dtype == v.type.dtype)


def attribute(ctx: Ctx, arr: FixedArrayVal, name: str) -> Value:
    """`arr.shape` (four entries, unused dimensions 0, as in Warp), `arr.ndim`, `arr.size`."""
    if name == "shape":
        dims = arr.type.shape
        return TupleVal(tuple(Literal(d) for d in (*dims, *(0,) * (4 - len(dims)))))
    if name == "ndim":
        return Literal(arr.type.ndim)
    if name == "size":
        return Literal(arr.type.count)
    if name == "ptr":
        raise ctx.error("fixed arrays are values in gradloom (kept in registers): they have no "
                        ".ptr; index the array directly")
    raise ctx.error(f"fixed arrays have no attribute '{name}'")


# -- reading ------------------------------------------------------------------------------------


def subscript(ctx: Ctx, arr: FixedArrayVal, keys: list[Key]) -> Value:
    """arr[i], arr[i, j], arr[i][j], arr[:2, 1:]: an element, or a sub-array (a copy)."""
    if any(isinstance(k, slice) for k in keys):
        return _sliced(ctx, arr, keys)
    blocks, sub = _blocks(ctx, arr, len(keys))
    picked = _pick(ctx, blocks, _linear(ctx, arr, keys))
    return picked[0] if sub is None else FixedArrayVal(sub, tuple(picked))


def _blocks(ctx: Ctx, arr: FixedArrayVal, n: int) -> tuple[list[list[Value]], Any]:
    """The elements grouped by the first n indices, and the type of one group (None: one
    element)."""
    t = arr.type
    if n > t.ndim:
        raise ctx.error(f"too many indices ({n}) for a fixed array of {t.ndim} dimension(s)")
    size = _inner(t.shape, n)
    items = list(arr.items)
    blocks = [items[b:b + size] for b in range(0, len(items), size)]
    return blocks, (None if n == t.ndim else FixedArrayType(t.shape[n:], t.dtype))


def _linear(ctx: Ctx, arr: FixedArrayVal, keys: list[Key]) -> int | Var:
    """The row-major position of the leading indices among the blocks (an int when they are
    all constants): Σ key_k · Π shape[k+1:len(keys)]."""
    shape, n = arr.type.shape, len(keys)
    const = 0
    lin: Var | None = None
    for k, key in enumerate(keys):
        stride = _inner(shape[:n], k + 1)
        if isinstance(key, Literal):
            if isinstance(key.value, float) or not 0 <= int(key.value) < shape[k]:
                raise ctx.error(f"index {key.value!r} is out of range for a fixed array "
                                f"dimension of size {shape[k]}")
            const += int(key.value) * stride
            continue
        i = scalar(ctx, key)  # type: ignore[arg-type]
        if not i.type.is_int:
            raise ctx.error(f"fixed array indices must be integers, got {i.type}")
        i = i if i.type == int64 else ctx.op("cast", i, type=int64)
        if config.mode == "debug":
            ctx.b.effect("check_bounds", (i, ctx.const(shape[k], int64)), ctx.loc,
                         attr=ctx.b.loc_index(ctx.loc))
        term = ctx.op("mul", i, ctx.const(stride, int64))
        lin = term if lin is None else ctx.op("add", lin, term)
    if lin is None:
        return const
    return ctx.op("add", lin, ctx.const(const, int64)) if const else lin


def _inner(shape: tuple[int, ...], n: int) -> int:
    """The number of elements in one index of dimension n - 1: Π shape[n:]."""
    size = 1
    for d in shape[n:]:
        size *= d
    return size


def _pick(ctx: Ctx, blocks: list[list[Value]], lin: int | Var) -> list[Value]:
    """blocks[lin]: direct for a constant, a chain of selects for a runtime position."""
    if isinstance(lin, int):
        return blocks[lin]
    out = blocks[0]
    for b in range(1, len(blocks)):
        hit = ctx.op("eq", lin, ctx.const(b, int64))
        out = [_select(ctx, hit, new, old) for new, old in zip(blocks[b], out, strict=True)]
    return out


def _select(ctx: Ctx, cond: Var, a: Value, b: Value) -> Value:
    """select(cond, a, b) for values of one type, scalar by scalar."""
    picked = [ctx.op("select", cond, x, y) for x, y in zip(flatten(a), flatten(b), strict=True)]
    return rebuild(a, iter(picked))


def _sliced(ctx: Ctx, arr: FixedArrayVal, keys: list[Key]) -> FixedArrayVal:
    """arr[:2, 1:] with constant bounds: a new fixed array of the selected elements."""
    t = arr.type
    if len(keys) > t.ndim:
        raise ctx.error(f"too many indices ({len(keys)}) for a fixed array of {t.ndim} "
                        "dimension(s)")
    ranges: list[list[int]] = []
    kept: list[int] = []
    for k, key in enumerate([*keys, *[slice(None)] * (t.ndim - len(keys))]):
        if isinstance(key, slice):
            ranges.append(list(range(t.shape[k]))[key])
            kept.append(len(ranges[-1]))
        elif isinstance(key, Literal) and isinstance(key.value, int):
            ranges.append([int(key.value)])
        else:
            raise ctx.error("slicing a fixed array needs constant indices and bounds")
    if any(not r for r in ranges):
        raise ctx.error("a fixed array slice must not be empty")
    out: list[Value] = []
    _gather(arr, ranges, 0, 0, out)
    return FixedArrayVal(FixedArrayType(tuple(kept), t.dtype), tuple(out))


def _gather(arr: FixedArrayVal, ranges: list[list[int]], dim: int, base: int,
            out: list[Value]) -> None:
    if dim == len(ranges):
        out.append(arr.items[base])
        return
    stride = _inner(arr.type.shape, dim + 1)
    for i in ranges[dim]:
        _gather(arr, ranges, dim + 1, base + i * stride, out)


# -- writing ------------------------------------------------------------------------------------


def put(ctx: Ctx, arr: FixedArrayVal, keys: list[Key],
        update: Callable[[Value], Value]) -> FixedArrayVal:
    """The array with the element (or sub-array) at keys replaced by update(its old value)."""
    if any(isinstance(k, slice) for k in keys):
        raise ctx.error("assigning to a slice of a fixed array is not supported; assign "
                        "elements")
    blocks, sub = _blocks(ctx, arr, len(keys))
    lin = _linear(ctx, arr, keys)
    old = _pick(ctx, blocks, lin)
    new = update(old[0] if sub is None else FixedArrayVal(sub, tuple(old)))
    if type_of(new) != type_of(old[0] if sub is None else FixedArrayVal(sub, tuple(old))):
        raise ctx.error(f"cannot store {describe(new)} into a fixed array element of type "
                        f"{arr.type.dtype!r}")
    new_items = [new] if sub is None else list(new.items)  # type: ignore[union-attr]
    if isinstance(lin, int):
        blocks[lin] = new_items
    else:
        for b, block in enumerate(blocks):
            hit = ctx.op("eq", lin, ctx.const(b, int64))
            blocks[b] = [_select(ctx, hit, n, o) for n, o in zip(new_items, block, strict=True)]
    return FixedArrayVal(arr.type, tuple(v for block in blocks for v in block))
