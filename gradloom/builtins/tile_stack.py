"""Tile stacks (`wp.tile_stack`, `tile_stack_push/pop/count/clear`): a fixed-capacity stack a block
shares, with Warp's CPU semantics (one thread per block: every call is that thread's alone).

A stack is a tile of its capacity (`StackVal`, whose type is a `StackType`) plus a one-element
int32 tile holding its count, both thread-local buffers (builtins/tile_loops.py); calls change
them in place, so a stack passed to a @wp.func is changed for the caller too, as in Warp. Pushes
and pops are branch-free: the slot they touch is clamped into range and the write keeps the old
value when the push fails.
"""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Var
from ..types import ScalarType, StackType, TileType, bool_, int32
from .registry import builtin
from .tile_block import each_lane
from .tile_loops import get, new_tile, select, write
from .tiles import _T, const_ints, dtype_of
from .values import (
    Composite,
    Ctx,
    Literal,
    StackVal,
    StructVal,
    TupleVal,
    Value,
    describe,
    flatten,
    rebuild,
    scalar,
    type_of,
    zeros_of,
)

_SIG = "(s: TileStack"


def _stack(ctx: Ctx, s: Any) -> StackVal:
    if not isinstance(s, StackVal) or s.count is None:
        raise ctx.error(f"argument 's' must be a tile stack (wp.tile_stack), got {describe(s)}")
    return s


def _count(ctx: Ctx, s: StackVal) -> Var:
    assert s.count is not None
    v = get(ctx, s.count, [0])
    assert isinstance(v, Var)
    return v


def _set_count(ctx: Ctx, s: StackVal, v: Var) -> None:
    assert s.count is not None
    write(ctx, s.count, [0], v)


@builtin("tile_stack", "a stack of at most capacity elements of dtype that the threads of a "
         "block share (on the CPU, one thread per block); starts empty", group=_T,
         differentiable=False, signatures="(capacity: int, dtype: Any) -> TileStack")
def tile_stack(ctx: Ctx, capacity: Any = None, dtype: Any = int,
               storage: str = "shared") -> StackVal:
    cap = capacity.value if isinstance(capacity, Literal) else capacity
    if isinstance(cap, Var):
        cap = ctx.b.constant_value(cap)
    if isinstance(cap, bool) or not isinstance(cap, int):
        raise ctx.error(f"tile_stack: capacity must be a compile-time constant integer, got "
                        f"{describe(capacity)} (no overload of tile_stack takes it)")
    if cap <= 0:
        raise ctx.error(f"tile_stack: capacity must be a positive integer, got {cap}")
    t = dtype_of(ctx, dtype, int32)
    data = new_tile(ctx, StackType(t, const_ints(ctx, cap, "capacity")))
    count = new_tile(ctx, TileType(int32, (1,)))
    return StackVal(data.type, data.base, data.span, data.offset, data.strides, data.dyn, count)


def _element(ctx: Ctx, s: StackVal, value: Value) -> Var | Composite | StructVal:
    t = s.type.dtype
    if isinstance(value, Literal) and isinstance(t, ScalarType):
        if isinstance(value.value, float) and not t.is_float:
            raise ctx.error(f"tile_stack_push: the value's type float32 does not match the "
                            f"stack's dtype {t!r}")
        return scalar(ctx, value, t)
    if not isinstance(value, (Var, Composite, StructVal)) or type_of(value) != t:
        given = type_of(value) if isinstance(value, (Var, Composite, Literal, StructVal)) \
            else value
        raise ctx.error(f"tile_stack_push: the value's type {given!r} does not match the "
                        f"stack's dtype {t!r}")
    return value


@builtin("tile_stack_push", "push value when has_value is true and the stack has room: the "
         "slot it went to, or -1", group=_T, differentiable=False,
         signatures=_SIG + ", value: Any, has_value: bool) -> int")
def tile_stack_push(ctx: Ctx, s: Any, value: Value, has_value: Value | None = None) -> Var:
    st = _stack(ctx, s)
    v = _element(ctx, st, value)
    cap = st.type.shape[0]
    want = ctx.const(True, bool_)
    if has_value is not None:
        want = scalar(ctx, has_value)
        if want.type.kind != "b":
            want = ctx.op("ne", want, ctx.const(0, want.type))

    def push(_: Var, got: list[Any]) -> list[Var]:
        x, wanted = got
        n = _count(ctx, st)
        ok = ctx.op("and", ctx.op("lt", n, ctx.const(cap, int32)), wanted)
        slot = ctx.op("min", n, ctx.const(cap - 1, int32))
        write(ctx, st, [slot], select(ctx, ok, x, get(ctx, st, [slot])))
        _set_count(ctx, st, ctx.op("add", n, ctx.op("cast", ok, type=int32)))
        return [ctx.op("select", ok, n, ctx.const(-1, int32))]

    # in a CPU block every thread's push, in lane order (builtins/tile_block.py)
    return each_lane(ctx, [v, want], push, [ctx.const(-1, int32)])[0]


@builtin("tile_stack_pop", "pop the top element: (value, slot), slot -1 and a zero value when "
         "the stack is empty (slot: this thread's rank among the block's successful pops)",
         group=_T, differentiable=False, signatures=_SIG + ") -> Tuple")
def tile_stack_pop(ctx: Ctx, s: Any) -> TupleVal:
    st = _stack(ctx, s)
    first = _count(ctx, st)
    zero, none = ctx.const(0, int32), _zero(ctx, st.type.dtype)

    def pop(_: Var, got: list[Any]) -> list[Var]:
        n = _count(ctx, st)
        ok = ctx.op("gt", n, zero)
        top = ctx.op("max", ctx.op("sub", n, ctx.const(1, int32)), zero)
        v = select(ctx, ok, get(ctx, st, [top]), none)
        _set_count(ctx, st, ctx.op("sub", n, ctx.op("cast", ok, type=int32)))
        # the slot: how many threads of the block popped an element before this one
        return [*flatten(v), ctx.op("select", ok, ctx.op("sub", first, n), ctx.const(-1, int32))]

    # in a CPU block every thread pops, in lane order (builtins/tile_block.py)
    out = each_lane(ctx, [], pop, [*flatten(none), ctx.const(-1, int32)])
    return TupleVal((rebuild(none, iter(out[:-1])), out[-1]))


def _zero(ctx: Ctx, t: Any) -> Any:
    return zeros_of(ctx, t)


@builtin("tile_stack_count", "the number of elements on the stack", group=_T,
         differentiable=False, signatures=_SIG + ") -> int")
def tile_stack_count(ctx: Ctx, s: Any) -> Var:
    return _count(ctx, _stack(ctx, s))


@builtin("tile_stack_clear", "empty the stack", group=_T, differentiable=False,
         signatures=_SIG + ") -> None")
def tile_stack_clear(ctx: Ctx, s: Any) -> None:
    _set_count(ctx, _stack(ctx, s), ctx.const(0, int32))
