"""An adjoint whose threads first zero, or copy a seed into, their own element of some arrays'
gradients: the variant a Tape runs where those gradients' zeroing or seeding was deferred
(runtime/array/lazy_zero.py), so that no separate pass over memory does it.

Exact only where thread t touches the gradient at element t alone: a 1-D launch over a 1-D
array, every gradient access at `tid · stride` through the array's own gradient pointer (no
view, no other index). Then each element is zeroed by the one thread that uses it, before it
uses it; a thread that restarts (its adjoint stack grew) zeroes it again. The launch must cover
the whole array (runtime/tape/adjoint.py checks the grid); `fresh_ir` returns None where the
code does not qualify.

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


def fresh_ir(ir: KernelIR, arrays: dict[int, tuple[ScalarType, int, bool]]) -> KernelIR | None:
    """ir (an adjoint) with a prologue setting, per thread, its element of the gradient of each
    array in `arrays` (data pointer's argument offset -> (component type, element bytes,
    seeded)): to zero, or (seeded) to the element the array's data pointer points at, which
    then carries the seed's address (the adjoint must not use that pointer otherwise); None
    where an array's gradient is not touched at the thread's own element only."""
    start = _prologue_start(ir) if arrays else None
    if start is None:
        return None
    stmts, last, tid, defs, fresh = start
    assert tid.result is not None
    prologue: list[Op] = []
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
        cast, at = Var(fresh, int64), Var(fresh + 1, int64)
        fresh += 2
        prologue += [Op("cast", (tid.result,), cast, tid.loc),
                     Op("mul", (cast, stride[1]), at, tid.loc)]
        values = [(c, Var(fresh + k, scalar)) for k, c in enumerate(range(0, size, scalar.size))]
        fresh += len(values)
        if data is None:
            prologue += [Op("adj_take", (grad[1], at), v, tid.loc, c) for c, v in values]
        else:  # the seed's bits, as a copy gives them: the components' loads, then their
            # stores (consecutive, so SIMD lanes store a vec3's window whole: codegen/lanes.py)
            prologue += [Op("load", (data, at), v, tid.loc, c) for c, v in values]
            prologue += [Op("store", (grad[1], at, v), None, tid.loc, c) for c, v in values]
    body = Block((*stmts[:last + 1], *prologue, *stmts[last + 1:]), ir.body.yields)
    return replace(ir, body=body)


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
