"""An adjoint whose threads first zero, or copy a seed into, their own element of some arrays'
gradients: the variant a Tape runs where those gradients' zeroing or seeding was deferred
(runtime/array/lazy_zero.py), so that no separate pass over memory does it.

Exact only where thread t touches the gradient at element t alone: a 1-D launch over a 1-D
array, every gradient access at `tid · stride` through the array's own gradient pointer (no
view, no other index). Then each element is zeroed by the one thread that uses it, before it
uses it; a thread that restarts (its adjoint stack grew) zeroes it again. The launch must cover
the whole array (runtime/tape/adjoint.py checks the grid); `fresh_ir` returns None where the
code does not qualify. Where the adjoint adds into a large gradient once per component and
reads it only before (saxpy's x, integrate's v, a loss's F), its adds become the element's one
store, which codegen writes with non-temporal stores (pipeline.Variant.FRESH, marks "n"): a
line written whole is not read for ownership first.

`zeroed_ir` is the same for a forward kernel's own memory: each thread zeroes its element of
some arrays before the kernel runs, so forward mode need not zero a tangent buffer the tangent
kernel writes at each thread's own element (runtime/tape/tangent.py); where the kernel stores
there unconditionally, LLVM drops the zeroing store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..abi import ARRAY_DATA, GRAD_SLOT, array_strides
from ..ir.nodes import Block, KernelIR, Op, Stmt, Var, max_var_id, walk_ops
from ..ir.prims import PRIMS, Effect
from ..types import ScalarType, int64

#: a 1-D array's words: data pointer, gradient pointer, extent, stride (abi.py)
_STRIDE_WORD = array_strides(1) - ARRAY_DATA


def fresh_ir(ir: KernelIR, arrays: dict[int, tuple[ScalarType, int, bool]],
             written: frozenset[int] = frozenset()) -> KernelIR | None:
    """ir (an adjoint) with a prologue setting, per thread, its element of the gradient of each
    array in `arrays` (data pointer's argument offset -> (component type, element bytes,
    seeded)): to zero, or (seeded) to the element the array's data pointer points at, which
    then carries the seed's address (the adjoint must not use that pointer otherwise); None
    where an array's gradient is not touched at the thread's own element only. An array in
    `written` whose gradient the adjoint adds each component of once, outside branches and
    loops, is not set first: its adds become stores of 0 (or the seed) + the value, the same
    bits, so its element is written once (a store codegen may stream: pipeline._streamed)."""
    start = _prologue_start(ir) if arrays else None
    if start is None:
        return None
    stmts, last, tid, defs, fresh = start
    assert tid.result is not None
    prologue: list[Op] = []
    stores: dict[int, list[Op]] = {}  # id of a top-level adj_add -> the ops replacing it
    for off, (scalar, size, seeded) in arrays.items():
        grad = _top_arg(stmts, off + GRAD_SLOT)
        stride = _top_arg(stmts, off + _STRIDE_WORD)
        if grad is None or stride is None or \
                not _own_only(ir.body, defs, grad[1], stride[1], tid.result, Effect.GRAD):
            return None
        last = max(last, stride[0], grad[0])
        data = None
        if seeded:
            found = _top_arg(stmts, off)
            if found is not None and any(found[1] in op.args for op in walk_ops(ir.body)):
                return None  # the adjoint reads the array's contents: no room for a seed
            data = Var(fresh, grad[1].type)
            prologue.append(Op("arg", (), data, tid.loc, off))
            fresh += 1
        fresh, ops, replaced = _element_start(ir.body, (grad[1], stride[1], data), tid,
                                              (scalar, size), fresh, off in written)
        prologue += ops
        stores.update(replaced)
    rest = [new for s in stmts[last + 1:] for new in stores.get(id(s), [s])]
    body = Block((*stmts[:last + 1], *prologue, *rest), ir.body.yields)
    return replace(ir, body=body)


def _element_start(body: Block, ptrs: tuple[Var, Var, Var | None], tid: Op,
                   elem: tuple[ScalarType, int], fresh: int, written: bool
                   ) -> tuple[int, list[Op], dict[int, list[Op]]]:
    """The prologue setting a thread's element of one gradient (ptrs: the gradient pointer,
    the stride, the seed's pointer or None) and the replaced adds (`_adds_as_stores`, where
    `written`); the next free value id first."""
    (grad, stride, data), (scalar, size) = ptrs, elem
    if written and data is None:
        fresh, adds = _adds_as_stores(body, grad, scalar, size, fresh, None)
        if adds:
            return fresh, [], adds
    assert tid.result is not None
    cast, at = Var(fresh, int64), Var(fresh + 1, int64)
    values = [(c, Var(fresh + 2 + k, scalar))
              for k, c in enumerate(range(0, size, scalar.size))]
    fresh += 2 + len(values)
    ops = [Op("cast", (tid.result,), cast, tid.loc), Op("mul", (cast, stride), at, tid.loc)]
    if data is None:
        return fresh, ops + [Op("adj_take", (grad, at), v, tid.loc, c) for c, v in values], {}
    # the seed's bits, as a copy gives them: the components' loads, then their stores
    # (consecutive, so SIMD lanes store a vec3's window whole: codegen/lanes.py)
    ops += [Op("load", (data, at), v, tid.loc, c) for c, v in values]
    replaced: dict[int, list[Op]] = {}
    if written:
        fresh, replaced = _adds_as_stores(body, grad, scalar, size, fresh, (data, dict(values)))
    if not replaced:
        ops += [Op("store", (grad, at, v), None, tid.loc, c) for c, v in values]
    return fresh, ops, replaced


def _adds_or_reads(prim: str) -> bool:
    """A gradient access that only adds into its element (adj_add) or only reads it
    (adj_read), by the primitive's effects (ir/prims.py)."""
    fx = PRIMS[prim].effects
    return bool(fx & Effect.GRAD) and (bool(fx & Effect.ACCUMULATE) or not fx & Effect.WRITE)


def _adds_as_stores(body: Block, grad: Var, scalar: ScalarType, size: int, fresh: int,
                    seed: tuple[Var, dict[int, Var]] | None) -> tuple[int, dict[int, list[Op]]]:
    """Where every use of the gradient pointer is at top level, an `adj_add` of each component
    once after any `adj_read`s: {id of each use: what replaces it}: a read becomes the
    component's start (zero, or its element of the `seed`: (data pointer, loaded values)), an
    add the sum of the start and the value added, the last add also the stores; else none."""
    uses = [op for op in walk_ops(body) if any(a is grad for a in op.args)]
    top = {id(s): k for k, s in enumerate(body.stmts)}
    adds = [op for op in uses if op.prim == "adj_add"]
    comps = sorted(int(op.attr or 0) for op in adds)
    if not adds or comps != list(range(0, size, scalar.size)) or any(
            not _adds_or_reads(op.prim) or id(op) not in top or
            (op.result or op.args[2]).type != scalar for op in uses) or \
            max((top[id(op)] for op in uses if op.prim == "adj_read"), default=-1) > \
            min(top[id(op)] for op in adds):
        return fresh, {}
    out, stores = {}, []
    for op in uses:
        c = int(op.attr or 0)
        if op.prim == "adj_read":
            assert op.result is not None
            out[id(op)] = [Op("const", (), op.result, op.loc, 0.0) if seed is None else
                           Op("load", (seed[0], op.args[1]), op.result, op.loc, c)]
            continue
        base, total = Var(fresh, scalar), Var(fresh + 1, scalar)
        fresh += 2
        out[id(op)] = [Op("const", (), base, op.loc, 0.0)] if seed is None else []
        base = base if seed is None else seed[1][c]
        out[id(op)].append(Op("add", (base, op.args[2]), total, op.loc))
        stores.append(Op("store", (op.args[0], op.args[1], total), None, op.loc, op.attr))
    out[id(adds[-1])] += stores  # together at the last add: SIMD lanes store them as a window
    return fresh, out


def zeroed_ir(ir: KernelIR, arrays: dict[int, tuple[ScalarType, int, int]]) -> KernelIR | None:
    """ir (a forward kernel) with a prologue storing zero, per thread, at its own element of
    each array in `arrays` (data pointer's argument offset -> (component type, element bytes,
    data pointer's offset of the array whose stride its accesses use: a tangent's primal's));
    None where
    the kernel uses an array's data pointer other than by loads, stores and atomics at the
    thread's own element (or where no array is given)."""
    start = _prologue_start(ir) if arrays else None
    if start is None:
        return None
    stmts, last, tid, defs, fresh = start
    assert tid.result is not None
    prologue: list[Op] = []
    for off, (scalar, size, layout) in arrays.items():
        data, stride = _top_arg(stmts, off), _top_arg(stmts, layout + _STRIDE_WORD)
        if data is None or stride is None or not _own_only(
                ir.body, defs, data[1], stride[1], tid.result, Effect.READ | Effect.WRITE):
            return None
        last = max(last, stride[0], data[0])
        zero, cast, at = Var(fresh, scalar), Var(fresh + 1, int64), Var(fresh + 2, int64)
        fresh += 3
        prologue += [Op("const", (), zero, tid.loc, 0.0),
                     Op("cast", (tid.result,), cast, tid.loc),
                     Op("mul", (cast, stride[1]), at, tid.loc)]
        prologue += [Op("store", (data[1], at, zero), None, tid.loc, c)
                     for c in range(0, size, scalar.size)]
    body = Block((*stmts[:last + 1], *prologue, *stmts[last + 1:]), ir.body.yields)
    return replace(ir, body=body)


def _prologue_start(ir: KernelIR) -> tuple[list[Stmt], int, Op, dict[int, Op], int] | None:
    """`_thread_start`'s statements, tid position and op, with the ops defining each value
    (for `_own_only`) and the first free value id: what a per-thread prologue is built from."""
    start = _thread_start(ir)
    if start is None:
        return None
    defs = {op.result.id: op for op in walk_ops(ir.body) if op.result is not None}
    return (*start, defs, max_var_id(ir.body) + 1)


def _thread_start(ir: KernelIR) -> tuple[list[Stmt], int, Op] | None:
    """The top-level statements of a 1-D launch's kernel, and the position and op of its one
    `wp.tid()` (a prologue goes after it); None where the kernel has another form."""
    if ir.launch_ndim != 1:
        return None
    stmts = list(ir.body.stmts)
    tids = [(k, s) for k, s in enumerate(stmts) if isinstance(s, Op) and s.prim == "tid"]
    if len(tids) != 1 or tids[0][1].result is None:
        return None
    return stmts, tids[0][0], tids[0][1]


def _top_arg(stmts: Sequence[object], offset: int) -> tuple[int, Var] | None:
    """(position, value) of the top-level `arg` op reading the argument word at offset."""
    for k, s in enumerate(stmts):
        if isinstance(s, Op) and s.prim == "arg" and s.attr == offset and s.result is not None:
            return k, s.result
    return None


def _own_only(body: Block, defs: dict[int, Op], ptr: Var, stride: Var, tid: Var,
              kind: Effect) -> bool:
    """Every use of the pointer is a memory access of `kind` (gradient accesses: GRAD; the
    array's own memory: READ | WRITE) at `cast(tid) * stride`."""
    for op in walk_ops(body):
        if not any(a is ptr for a in op.args):
            continue
        effects = PRIMS[op.prim].effects
        if not effects & kind or (kind is not Effect.GRAD and effects & Effect.GRAD) or \
                op.args[0] is not ptr or any(a is ptr for a in op.args[1:]):
            return False
        at = defs.get(op.args[1].id)
        if at is None or at.prim != "mul" or len(at.args) != 2:
            return False
        a, b = at.args
        index = b if a is stride else a if b is stride else None
        cast = None if index is None else defs.get(index.id)
        if cast is None or cast.prim != "cast" or cast.args[0] is not tid or \
                cast.result is None or cast.result.type != int64:
            return False
    return True
