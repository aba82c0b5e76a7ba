"""Batched solves (an operator with `batch_offsets`): each batch, a range of the flat scalar vector,
solved as its own system through a restriction of the operator; elements past the last batch
(the inactive tail) are left as they are."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import gradloom as wp

from .operators import LinearOperator, flat


def restricted(op: LinearOperator, lo: int, hi: int, scratch: tuple[Any, Any]) -> LinearOperator:
    """`op` seen on the flat scalar range [lo, hi): z = alpha op[lo:hi, lo:hi] x + beta y."""
    full_in, full_out = scratch

    def matvec(x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        full_in.zero_()
        wp.copy(full_in, flat(x), dest_offset=lo, count=hi - lo)
        op.matvec(full_in, full_out, full_out, 1.0, 0.0)
        part = full_out[lo:hi]
        st = part.dtype
        from . import _kernels as K

        fz = flat(z)
        wp.launch(K.axpby(st), dim=fz.size, device=fz.device,
                  inputs=[part, flat(y if y is not None else z), fz, st(alpha), st(beta)])

    return LinearOperator((hi - lo, hi - lo), full_in.dtype, op.device, matvec)


def _as_floats(result: Any) -> tuple[float, float, float]:
    it, err, atol = result
    if isinstance(err, wp.array):
        return (float(it.numpy()[0]), math.sqrt(max(float(err.numpy()[0]), 0.0)),
                math.sqrt(float(atol.numpy()[0])))
    return float(it), float(err), float(atol)


def solve_batches(A: LinearOperator, b: Any, x: Any, M: Any,
                  solve_one: Callable[[LinearOperator, Any, Any, Any], Any]) -> Any:
    """Solve each batch of A (its `batch_offsets`) with `solve_one(A_i, b_i, x_i, M_i)`; the
    result of the batch furthest from its tolerance (the largest iteration count on ties)."""
    offsets = np.asarray(A.batch_offsets.numpy(), dtype=np.int64)
    fb, fx = flat(b), flat(x)
    scratch_a = (wp.zeros(fb.size, dtype=fb.dtype, device=fb.device),
                 wp.zeros(fb.size, dtype=fb.dtype, device=fb.device))
    scratch_m = (wp.zeros(fb.size, dtype=fb.dtype, device=fb.device),
                 wp.zeros(fb.size, dtype=fb.dtype, device=fb.device))
    worst: Any = None
    worst_key = (-math.inf, -1.0)
    for lo, hi in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        if hi <= lo:
            continue
        Ai = restricted(A, lo, hi, scratch_a)
        Mi = restricted(M, lo, hi, scratch_m) if M is not None else None
        result = solve_one(Ai, fb[lo:hi], fx[lo:hi], Mi)
        it, err, atol = _as_floats(result)
        key = (err / atol if atol > 0 else err, it)
        if worst is None or key > worst_key:
            worst, worst_key = result, key
    return worst if worst is not None else (0, 0.0, 0.0)
