"""The nearest-first BVH walk of closest-point and ray queries: a stack in thread-local memory.

The walk reads runtime/geometry/bvh_tree.py's radix tree through its inner nodes' pair records
(types/mesh_layout.py `PAIR_*`: both children's boxes and references in one cache line, written
by the refit), so a step loads one line where reading both child nodes loaded two apart; a
reference is an inner node's index, or ~triangle for a leaf, whose box sits in its parent's
record. At an inner node both children's keys are computed (the squared distance from the query
point to the box, or the ray's entry t into it); the walk enters the nearer child and pushes the
farther one with its key, so the first leaf reached is the greedy descent's and the best answer
so far tightens early. A node (entered or popped) whose key exceeds the best so far is dropped
unvisited.

The stack holds (reference, key bits) pairs (integers, so autodiff has nothing to carry through
it) in a `local` buffer of `CAPACITY` entries. A path from the root holds one pushed sibling per
level at most, and levels strictly decrease in the radix tree's split height (at most 63 Morton
bits plus 31 index bits), so the stack never overflows.

The walk computes on detached copies of the query (its floats passed through integer bits),
so autodiff sees integer state only: it finds the winning primitive, and the caller recomputes
the answer for that primitive from the real inputs, where gradients flow as before.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.nodes import Var
from ..types import ScalarType, float32, int32, int64, ptr, uint32
from ..types.mesh_layout import MESH_PAIRS, MESH_ROOT, PAIR_BOXES, PAIR_LEFT, PAIR_RIGHT, PAIR_SIZE
from .mesh_nodes import V3, _field, _load
from .values import Ctx, if_values, while_loop

#: stack entries (reference int32, key float32 bits): more than the radix tree's deepest path
CAPACITY = 96
_ENTRY = 8
#: the walk's end mark: no node's reference (~triangle is above it for any int32 triangle)
_DONE = -(2**31)

#: (lower, upper) of a box -> its key (+inf or larger than any best when it is missed)
KeyFn = Callable[[V3, V3], Var]
#: (primitive, state) -> the new state; state[0] is the best key so far
LeafFn = Callable[[Var, list[Var]], list[Var]]


def detach(ctx: Ctx, v: Var) -> Var:
    """v through its bits: the same value, and no derivative reaches v from it."""
    return ctx.op("bitcast", ctx.op("bitcast", v, type=uint32), type=float32)


def detach3(ctx: Ctx, v: V3) -> V3:
    return (detach(ctx, v[0]), detach(ctx, v[1]), detach(ctx, v[2]))


def _pair(ctx: Ctx, pairs: Var, ref: Var) -> tuple[V3, V3, V3, V3, Var, Var]:
    """Inner node `ref`'s pair record: (left lower, left upper, right lower, right upper, left
    reference, right reference)."""
    op = ctx.op
    base = op("mul", op("cast", ref, type=int64), ctx.const(PAIR_SIZE, int64))

    def at(off: int, t: ScalarType) -> Var:
        return _load(ctx, pairs, op("add", base, ctx.const(off, int64)), t)

    boxes = [tuple(at(PAIR_BOXES + 12 * j + 4 * c, float32) for c in range(3)) for j in range(4)]
    return (*boxes, at(PAIR_LEFT, int32), at(PAIR_RIGHT, int32))  # type: ignore[return-value]


def nearest_walk(ctx: Ctx, desc: Var, state: list[Var], key: KeyFn, leaf: LeafFn) -> list[Var]:
    """Walk the BVH nearest child first; `state[0]` is the best key so far (a node whose key
    is above it is dropped), the rest whatever `leaf` carries. Returns the final state."""
    op = ctx.op
    pairs = _field(ctx, desc, MESH_PAIRS, ptr)
    stack = ctx.b.hoist("local", ctx.loc, attr=CAPACITY * _ENTRY)
    zero_i, one_i, done = ctx.const(0, int32), ctx.const(1, int32), ctx.const(_DONE, int32)
    n_state = len(state)

    def slot(sp: Var, field: int) -> Var:
        return op("add", op("mul", op("cast", sp, type=int64), ctx.const(_ENTRY, int64)),
                  ctx.const(4 * field, int64))

    def pop(sp: Var) -> list[Var]:
        """[reference, key, sp] of the top entry, or the end mark when the stack is empty."""
        def take() -> list[Var]:
            top = op("sub", sp, one_i)
            n = op("lload", stack, slot(top, 0), attr=CAPACITY * _ENTRY, type=int32)
            k = op("lload", stack, slot(top, 1), attr=CAPACITY * _ENTRY, type=uint32)
            return [n, op("bitcast", k, type=float32), top]
        return if_values(ctx, op("gt", sp, zero_i), take,
                         lambda: [done, ctx.const(0.0, float32), sp])

    def inner(ref: Var, sp: Var, rest: list[Var]) -> list[Var]:
        lo_l, hi_l, lo_r, hi_r, left, right = _pair(ctx, pairs, ref)
        kl, kr = key(lo_l, hi_l), key(lo_r, hi_r)
        right_first = op("lt", kr, kl)
        near, k_near = op("select", right_first, right, left), op("min", kl, kr)
        far, k_far = op("select", right_first, left, right), op("max", kl, kr)

        def push() -> list[Var]:
            ctx.b.effect("lstore", (stack, slot(sp, 0), far), ctx.loc, attr=CAPACITY * _ENTRY)
            ctx.b.effect("lstore", (stack, slot(sp, 1), op("bitcast", k_far, type=uint32)),
                         ctx.loc, attr=CAPACITY * _ENTRY)
            return [op("add", sp, one_i)]

        keep = op("and", op("le", k_far, rest[0]), op("lt", sp, ctx.const(CAPACITY, int32)))
        (sp2,) = if_values(ctx, keep, push, lambda: [sp])
        return [near, k_near, sp2, *rest]

    def body(s: list[Var]) -> list[Var]:
        ref, k, sp, rest = s[0], s[1], s[2], s[3:]

        def visit() -> list[Var]:
            def at_leaf() -> list[Var]:
                new = leaf(op("xor", ref, ctx.const(-1, int32)), rest)
                return [*pop(sp), *new]

            return if_values(ctx, op("lt", ref, zero_i), at_leaf, lambda: inner(ref, sp, rest))

        return if_values(ctx, op("le", k, rest[0]), visit, lambda: [*pop(sp), *rest])

    start = [_field(ctx, desc, MESH_ROOT, int32), ctx.const(0.0, float32), zero_i, *state]
    out = while_loop(ctx, start, lambda s: op("ne", s[0], done), body)
    assert len(out) == 3 + n_state
    return out[3:]
