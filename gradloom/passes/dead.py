"""Drops operations whose results nothing uses and which change nothing (dead code).

An adjoint re-runs its kernel's forward code, and values that only fed gradients nobody keeps
(those of the kernel's scalar and vector parameters) are left unused there: the loads of
`integrate`'s positions and velocities, say. LLVM removes a dead load, but not the prefetches
the SIMD thread loop issues for the load's window (codegen/lane_memory.py), which then fetch
a whole array from memory for nothing (integrate's adjoint read 100 MB more than it used). So
dead code goes before codegen: operations, and the results of `if` regions and the carried
values of loops that nothing reads (a value assigned in a branch or a loop becomes one). An
operation with an observable effect (`OBSERVABLE` in ir/prims.py: writes, output, checks, the
adjoint stack, gradient memory) always stays, and so do parameters (codegen finds arrays'
strides and the contiguous loop's facts through them), the conditions of regions and
everything in `@wp.func_grad` regions.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Stmt, walk_ops
from ..ir.prims import PRIMS, Effect


def drop_dead(kernel: KernelIR) -> KernelIR:
    """The kernel without its dead operations, region results and loop-carried values."""
    live = _live(kernel.body)
    return replace(kernel, body=_prune(kernel.body, live))


def _live(body: Block) -> set[int]:
    """The ids of the variables something observable depends on (a fixed point: a loop's
    carried value is live when its result or its parameter is)."""
    live = {v.id for v in body.yields}
    while True:
        before = len(live)
        _mark(body, live)
        if len(live) == before:
            return live


def _kept(op: Op) -> bool:
    """Whether an operation stays whatever uses its result."""
    return PRIMS[op.prim].side_effect or PRIMS[op.prim].has(Effect.PARAM)


def _mark(b: Block, live: set[int]) -> None:
    for s in reversed(b.stmts):
        if isinstance(s, Op):
            if _kept(s) or (s.result is not None and s.result.id in live):
                live.update(a.id for a in s.args)
        elif isinstance(s, If):
            for k, r in enumerate(s.results):
                if r.id in live:
                    live.update((s.then.yields[k].id, s.orelse.yields[k].id))
            live.add(s.cond.id)
            _mark(s.then, live)
            _mark(s.orelse, live)
        elif isinstance(s, Loop):
            for k, (p, r) in enumerate(zip(s.params, s.results, strict=True)):
                if p.id in live or r.id in live:
                    live.update((s.inits[k].id, s.body.yields[k].id))
            live.update(v.id for v in s.cond.yields)
            _mark(s.cond, live)
            _mark(s.body, live)
        else:
            live.update(v.id for v in s.inputs)
            for region in (s.body, s.adjoint):
                live.update(v.id for v in region.yields)
                for op in walk_ops(region):
                    live.update(a.id for a in op.args)


def _prune(b: Block, live: set[int]) -> Block:
    stmts: list[Stmt] = []
    for s in b.stmts:
        if isinstance(s, Op):
            if s.result is None or s.result.id in live or _kept(s):
                stmts.append(s)
        elif isinstance(s, If):
            keep = [k for k, r in enumerate(s.results) if r.id in live]
            stmts.append(replace(s, then=_prune(_yielding(s.then, keep), live),
                                 orelse=_prune(_yielding(s.orelse, keep), live),
                                 results=tuple(s.results[k] for k in keep)))
        elif isinstance(s, Loop):
            keep = [k for k, (p, r) in enumerate(zip(s.params, s.results, strict=True))
                    if p.id in live or r.id in live]
            stmts.append(replace(s, inits=tuple(s.inits[k] for k in keep),
                                 params=tuple(s.params[k] for k in keep),
                                 cond=_prune(s.cond, live),
                                 body=_prune(_yielding(s.body, keep), live),
                                 results=tuple(s.results[k] for k in keep)))
        else:
            assert isinstance(s, Custom)
            stmts.append(s)
    return Block(tuple(stmts), b.yields)


def _yielding(b: Block, keep: list[int]) -> Block:
    return Block(b.stmts, tuple(b.yields[k] for k in keep))
