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
