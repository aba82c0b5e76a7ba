"""The nearest-first BVH walk of closest-point and ray queries: a stack in thread-local memory.

The walk reads runtime/geometry/bvh_tree.py's radix tree cut off at subtrees of at most
WALK_LEAF triangles, through the pair records of the inner nodes above them (types/mesh_layout.py
`PAIR_*`: both children's boxes and references in one cache line, written by the refit), so a
step loads one line where reading both child nodes loaded two apart; a reference is a record's
index, or ~(first << WALK_COUNT_BITS | count - 1) for a leaf of the walk, whose box sits in its
parent's record: its triangles are records first to first + count - 1 of the triangles in key
order (MESH_LEAF_TRIS: corners and index, one run of memory, tested one after another: the
loads of a leaf's triangles do not wait on each other, where each step down the tree waits on
the last). At an inner node both children's keys are computed (the squared distance from the
query point to the box, or the ray's entry t into it); the walk enters the nearer child and
pushes the farther one with its key, so the first leaf reached is the greedy descent's and the
best answer so far tightens early. A node (entered or popped) whose key exceeds the best so far
is dropped unvisited.

The stack holds (reference, key bits) pairs (integers, so autodiff has nothing to carry through
it) in a `local` buffer of `CAPACITY` entries. A path from the root holds one pushed sibling per
level at most, and levels strictly decrease in the radix tree's split height (at most 63 Morton
bits plus 31 index bits), so the stack never overflows.

The walk computes on detached copies of the query (its floats passed through integer bits),
so autodiff sees integer state only: it finds the winning triangle's record, and the caller
recomputes the answer for that triangle (found_triangle: its corners from the record, copies of
the mesh's points as of the last refit, which Warp too needs after points move) from the real
inputs, where gradients flow as before.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.nodes import Var
from ..types import ScalarType, float32, int32, int64, ptr, uint32
from ..types.mesh_layout import (
    LEAF_TRI_CORNERS,
    LEAF_TRI_ID,
    LEAF_TRI_SIZE,
    MESH_LEAF_TRIS,
    MESH_PAIRS,
    MESH_ROOT,
    PAIR_BOXES,
    PAIR_LEFT,
    PAIR_RIGHT,
    PAIR_SIZE,
    WALK_COUNT_BITS,
)
from .mesh_nodes import V3, _field, _load
from .values import Ctx, if_values, while_loop

#: stack entries (reference int32, key float32 bits): more than the radix tree's deepest path
CAPACITY = 96
_ENTRY = 8
#: the walk's end mark: no node's reference (~triangle is above it for any int32 triangle)
_DONE = -(2**31)

#: (lower, upper) of a box -> its key (+inf or larger than any best when it is missed)
KeyFn = Callable[[V3, V3], Var]
#: (record, corner a, b, c, state) -> the new state; state[0] is the best key so far (the
#: record, a triangle's position in key order, goes to found_triangle)
LeafFn = Callable[[Var, V3, V3, V3, list[Var]], list[Var]]


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


def _corners(ctx: Ctx, tris: Var, rec: Var) -> tuple[Var, V3, V3, V3]:
    """(triangle index, corner a, b, c) of walk record `rec` (>= 0)."""
    op = ctx.op
    base = op("mul", op("cast", rec, type=int64), ctx.const(LEAF_TRI_SIZE, int64))

    def at(off: int, t: ScalarType) -> Var:
        return _load(ctx, tris, op("add", base, ctx.const(off, int64)), t)

    a, b, c = (tuple(at(LEAF_TRI_CORNERS + 12 * v + 4 * k, float32) for k in range(3))
               for v in range(3))
    return at(LEAF_TRI_ID, int32), a, b, c  # type: ignore[return-value]


def found_triangle(ctx: Ctx, desc: Var, rec: Var) -> tuple[Var, V3, V3, V3]:
    """The triangle the walk found, from the record it returned (-1: none): (triangle index,
    -1 if none; its corners a, b, c, those of record 0 if none). The corners are the walk's
    copies, which the refit wrote from the points (the record line is likely still cached)."""
    op = ctx.op
    zero = ctx.const(0, int32)
    found = op("ge", rec, zero)
    face, a, b, c = _corners(ctx, _field(ctx, desc, MESH_LEAF_TRIS, ptr),
                             op("select", found, rec, zero))
    return op("select", found, face, ctx.const(-1, int32)), a, b, c


def _leaf_range(ctx: Ctx, tris: Var, ref: Var, state: list[Var], leaf: LeafFn) -> list[Var]:
    """`leaf` over the triangles of walk leaf `ref` (~(first << WALK_COUNT_BITS | count - 1)):
    records first, ..., first + count - 1 of the triangles in key order; the new state."""
    op = ctx.op
    enc = op("xor", ref, ctx.const(-1, int32))
    first = op("shr", enc, ctx.const(WALK_COUNT_BITS, int32))
    count = op("and", enc, ctx.const((1 << WALK_COUNT_BITS) - 1, int32))
    end = op("add", op("add", first, count), ctx.const(1, int32))

    def body(s: list[Var]) -> list[Var]:
        _, a, b, c = _corners(ctx, tris, s[0])
        return [op("add", s[0], ctx.const(1, int32)), *leaf(s[0], a, b, c, s[1:])]

    return while_loop(ctx, [first, *state], lambda s: op("lt", s[0], end), body)[1:]


def nearest_walk(ctx: Ctx, desc: Var, state: list[Var], key: KeyFn, leaf: LeafFn) -> list[Var]:
    """Walk the BVH nearest child first; `state[0]` is the best key so far (a node whose key
    is above it is dropped), the rest whatever `leaf` carries. Returns the final state."""
    op = ctx.op
    pairs, tris = _field(ctx, desc, MESH_PAIRS, ptr), _field(ctx, desc, MESH_LEAF_TRIS, ptr)
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
                return [*pop(sp), *_leaf_range(ctx, tris, ref, rest, leaf)]

            return if_values(ctx, op("lt", ref, zero_i), at_leaf, lambda: inner(ref, sp, rest))

        return if_values(ctx, op("le", k, rest[0]), visit, lambda: [*pop(sp), *rest])

    start = [_field(ctx, desc, MESH_ROOT, int32), ctx.const(0.0, float32), zero_i, *state]
    out = while_loop(ctx, start, lambda s: op("ne", s[0], done), body)
    assert len(out) == 3 + n_state
    return out[3:]
