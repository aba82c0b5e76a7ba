"""The graph being captured right now (a context variable) and the replayable nodes it records.

On the CPU, as in Warp 1.19, a capture only records: launches, copies and fills issued while it
is active do not run then; `wp.capture_launch(graph)` runs them, in order, each time. A node
holds the same arrays (so the same memory) it was recorded with and reads their contents when
it runs, as a CUDA graph holds fixed pointers. `Graph` and the public functions live in
`capture.py`; this module is what array operations and launches consult.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

import numpy as np

from ..errors import GradloomError
from .recording import ACTIVE_TAPES

F = TypeVar("F", bound=Callable[..., Any])


class Node(Protocol):
    """One recorded step of a graph."""

    def run(self) -> None: ...


class OpNode:
    """An array operation (copy, fill, utility) recorded as the call that performs it."""

    __slots__ = ("fn", "what")

    def __init__(self, fn: Callable[[], Any], what: str) -> None:
        self.fn, self.what = fn, what

    def run(self) -> None:
        self.fn()

    def __repr__(self) -> str:
        return f"<{self.what}>"


class Recording(Protocol):
    """A graph being captured (runtime/capture.py `Graph`): recorded steps are added to it."""

    def add(self, node: Node) -> None: ...


#: The graph being captured in this context, if any (Warp's CaptureMode.THREAD_LOCAL).
ACTIVE_CAPTURE: ContextVar[Recording | None] = ContextVar("gradloom_active_capture", default=None)


def capturing() -> bool:
    """Whether a graph is being captured in this context."""
    return ACTIVE_CAPTURE.get() is not None


def no_tape_while_capturing(what: str) -> None:
    """A captured operation does not run now, so an active Tape cannot record it: refuse."""
    if ACTIVE_TAPES.get():
        raise GradloomError(
            f"{what} inside a graph capture while a Tape is recording: gradloom cannot record a "
            "captured operation on a Tape (it runs only when the graph is launched). Capture "
            "outside the Tape, then call wp.capture_launch(graph) inside `with tape:` — its "
            "launches and copies are recorded there."
        )


def defer(fn: Callable[[], Any], what: str) -> bool:
    """If a graph is being captured, record `fn` into it (not run now) and return True."""
    graph = ACTIVE_CAPTURE.get()
    if graph is None:
        return False
    no_tape_while_capturing(what)
    graph.add(OpNode(fn, what))
    return True


def deferrable(what: str) -> Callable[[F], F]:
    """Decorator for array methods that write: inside a graph capture the call is recorded
    and runs when the graph runs; otherwise it runs now. As in Warp, arrays (gradloom or
    numpy) are read when the graph runs (their memory is what was captured); other values
    (lists, scalars) are copied as they are now."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def write(self: Any, *args: Any) -> Any:
            if ACTIVE_CAPTURE.get() is None:
                return method(self, *args)
            kept = tuple(a if hasattr(a, "_mem") or isinstance(a, np.ndarray)
                         else copy.deepcopy(a) for a in args)
            defer(lambda: method(self, *kept), what)
            return None

        return write  # type: ignore[return-value]

    return wrap


def refuse_while_capturing(what: str) -> None:
    """For operations a CPU graph cannot hold (e.g. a Tape's backward pass)."""
    if ACTIVE_CAPTURE.get() is not None:
        raise GradloomError(
            f"{what} cannot be captured into a CPU graph in gradloom; run it outside "
            "wp.ScopedCapture / wp.capture_begin()."
        )
