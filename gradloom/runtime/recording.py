"""The tapes recording right now (a context variable), and how array operations reach them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any

#: Every Tape whose `with` block is active, outermost first; each records every operation.
ACTIVE_TAPES: ContextVar[tuple[Any, ...]] = ContextVar("gradloom_active_tapes", default=())


def record_op(backward: Callable[[], None], arrays: Sequence[Any]) -> None:
    """Record an array operation's backward step on every active tape."""
    for tape in ACTIVE_TAPES.get():
        tape.record_func(backward, list(arrays))


def record_copy(dest: Any, src: Any, where: Any = ...) -> None:
    """On active tapes: the gradient of dest[where] = src flows from dest to src (summed over
    the dimensions src was broadcast along)."""
    dg, sg = dest._grad, src._grad
    if dg is None or sg is None or dest.dtype != src.dtype or not ACTIVE_TAPES.get():
        return

    def backward() -> None:
        taken = dg.numpy()[where]
        target = sg.numpy()
        extra = taken.ndim - target.ndim
        summed = taken.sum(axis=tuple(range(extra))) if extra > 0 else taken
        axes = tuple(k for k, n in enumerate(target.shape) if n == 1 and summed.shape[k] != 1)
        target += summed.sum(axis=axes, keepdims=True) if axes else summed
        dg.numpy()[where] = 0

    record_op(backward, [dest, src])
