"""Array views in kernels: `a[i:j:k]`, `a[1:, n]`, `a[start:stop:step]` with run-time bounds.

A view is a new array value (an `ArrayVal`) over the same memory: its data and gradient pointers
are the source's moved to the first selected element, and each sliced dimension gets the length
of its slice and the source's byte stride times the step. Integer keys drop their dimension
(negative ones count from the end, as in Warp's views). Bounds follow Warp 1.19's rules: a
missing start or stop is the end the step walks from or to, a given one is clamped to
[-n, n] and taken from the end when negative; a zero step selects nothing (Warp stops the
process). Loads and stores through a view are ordinary array accesses, so gradients reach the
source array's gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import config
from ..ir.nodes import Var
from ..types import ArrayType, bool_, int64, resolve_annotation, size_of
from ..types import ptr as ptr_t
from .memory import index64
from .registry import builtin
from .values import ArrayVal, Ctx, Literal, TupleVal, Value, scalar


@dataclass(frozen=True)
class RuntimeSlice:
    """A slice key with a bound known only at run time (`a[start:stop]`): array views take it;
    vectors, matrices and fixed arrays need constant slices."""

    start: Value | None
    stop: Value | None
    step: Value | None


SliceKey = slice | RuntimeSlice


def is_slice(key: object) -> bool:
    return isinstance(key, (slice, RuntimeSlice))


def view(ctx: Ctx, arr: ArrayVal, keys: list[Value | SliceKey]) -> ArrayVal:
    """arr[keys] where at least one key is a slice: the view it selects."""
    if arr.indices:
        raise ctx.error("an indexed array cannot be sliced in a kernel (index it, or slice the "
                        "array it indexes)")
    n = arr.type.ndim
    if len(keys) > n:
        raise ctx.error(f"too many indices ({len(keys)}) for a {n}-D array")
    offset = ctx.const(0, int64)
    shape: list[Var] = []
    strides: list[Var] = []
    for k, key in enumerate(keys):
        extent, stride = arr.shape[k], arr.strides[k]
        if is_slice(key):
            start, length, step = _slice_bounds(ctx, key, extent)  # type: ignore[arg-type]
            shape.append(length)
            strides.append(ctx.op("mul", stride, step))
        else:
            start = _wrapped_index(ctx, key, extent)  # type: ignore[arg-type]
        offset = ctx.op("add", offset, ctx.op("mul", start, stride))
    shape += arr.shape[len(keys):]
    strides += arr.strides[len(keys):]
    data = ctx.op("ptr_add", arr.data, offset)
    grad = ctx.op("ptr_add", arr.grad, offset)
    return ArrayVal(ArrayType(arr.type.dtype, len(shape)), data, grad, tuple(shape),
                    tuple(strides))


def _wrapped_index(ctx: Ctx, key: Value, extent: Var) -> Var:
    """An integer key of a view: from the end when negative (checked in debug mode)."""
    i = index64(ctx, key)
    i = ctx.op("select", ctx.op("lt", i, _c(ctx, 0)), ctx.op("add", i, extent), i)
    if config.mode == "debug":
        ctx.b.effect("check_bounds", (i, extent), ctx.loc, attr=ctx.b.loc_index(ctx.loc))
    return i


def _c(ctx: Ctx, value: int) -> Var:
    return ctx.const(value, int64)


def _bound(ctx: Ctx, v: Value | int | None) -> Var | None:
    if v is None:
        return None
    return _c(ctx, v) if isinstance(v, int) else index64(ctx, v)


def _slice_bounds(ctx: Ctx, key: SliceKey, extent: Var) -> tuple[Var, Var, Var]:
    """(start, length, step) of a slice of a dimension of `extent` elements (int64 values)."""
    step_key = key.step
    if (isinstance(step_key, Literal) and step_key.value == 0) or step_key == 0:
        raise ctx.error("Slice step cannot be zero")
    step = _bound(ctx, step_key) or _c(ctx, 1)
    backward = ctx.op("lt", step, _c(ctx, 0))
    last = ctx.op("sub", extent, _c(ctx, 1))
    start = _clamped(ctx, _bound(ctx, key.start), extent,
                     ctx.op("select", backward, last, _c(ctx, 0)))
    stop = _clamped(ctx, _bound(ctx, key.stop), extent,
                    ctx.op("select", backward, _c(ctx, -1), extent))
    return start, _length(ctx, start, stop, step), step


def _clamped(ctx: Ctx, v: Var | None, extent: Var, default: Var) -> Var:
    """A given bound clamped to [-extent, extent], then taken from the end when negative."""
    if v is None:
        return default
    v = ctx.op("min", ctx.op("max", v, ctx.op("neg", extent)), extent)
    return ctx.op("select", ctx.op("lt", v, _c(ctx, 0)), ctx.op("add", v, extent), v)


def _length(ctx: Ctx, start: Var, stop: Var, step: Var) -> Var:
    """How many elements start, start + step, ... visits before stop (0 for a zero step)."""
    zero, one = _c(ctx, 0), _c(ctx, 1)
    forward = ctx.op("and", ctx.op("gt", step, zero), ctx.op("lt", start, stop), type=bool_)
    backward = ctx.op("and", ctx.op("lt", step, zero), ctx.op("gt", start, stop), type=bool_)
    span = ctx.op("select", forward, ctx.op("sub", stop, start), ctx.op("sub", start, stop))
    size = ctx.op("abs", step)
    size = ctx.op("select", ctx.op("eq", size, zero), one, size)  # never divide by zero
    count = ctx.op("add", one, ctx.op("div", ctx.op("sub", span, one), size))
    return ctx.op("select", ctx.op("or", forward, backward, type=bool_), count, zero)


@builtin("array", "an array over memory at a raw address (`wp.array(ptr=a.ptr, shape=(n, m), "
         "dtype=float)` in a kernel): contiguous, row-major; it has no gradient array, so "
         "differentiating through it is refused",
         differentiable=False, group="Utility",
         signatures=("(ptr: uint64, shape: Int, dtype: Any) -> Array",
                     "(ptr: uint64, shape: Tuple, dtype: Any) -> Array"))
def array_from_ptr(ctx: Ctx, ptr: Value | None = None, shape: Any = None,
                   dtype: Any = None) -> ArrayVal:
    """As Warp's kernel-side `wp.array(ptr=..., shape=..., dtype=...)`. Its memory has no
    gradient: differentiating through it gets autodiff's refusal of an array chosen at run
    time, never a silent zero."""
    if ptr is None or shape is None or dtype is None:
        raise ctx.error("wp.array() in a kernel takes ptr=, shape= and dtype=")
    dims = shape.items if isinstance(shape, TupleVal) else \
        (shape if isinstance(shape, tuple) else (shape,))
    if not 1 <= len(dims) <= 4:
        raise ctx.error(f"wp.array() in a kernel: shape needs 1 to 4 sizes, got {len(dims)}")
    try:
        elem = resolve_annotation(dtype)
    except TypeError as exc:
        raise ctx.error(f"wp.array() in a kernel: {exc}") from None
    sizes = [ctx.const(d, int64) if isinstance(d, int) else index64(ctx, d) for d in dims]
    strides: list[Var] = [ctx.const(size_of(elem), int64)]
    for extent in reversed(sizes[1:]):
        strides.insert(0, ctx.op("mul", strides[0], extent))
    address = scalar(ctx, ptr, None)
    if not address.type.is_int:
        raise ctx.error(f"wp.array() in a kernel: ptr must be an integer address, got "
                        f"{address.type}")
    data = ctx.op("cast", address, type=ptr_t)
    return ArrayVal(ArrayType(elem, len(sizes)), data, ctx.const(0, ptr_t), tuple(sizes),
                    tuple(strides))
