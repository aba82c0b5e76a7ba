"""The capture in progress (one context variable, asked through `capturing`) and the
replayable nodes a CPU graph records.

One capture at a time runs in a context (Warp's CaptureMode.THREAD_LOCAL), on one device. On
the CPU, as in Warp 1.19, a capture only records: launches, copies and fills issued while it is
active — on any device — do not run then but become nodes of a `Graph`; `wp.capture_launch(graph)`
runs them, in order, each time. A node holds the same arrays (so the same memory) it was
recorded with and reads their contents when it runs, as a CUDA graph holds fixed pointers. On a
CUDA device the driver records the work queued on the captured stream (runtime/cuda/graph.py).
`Graph` and the public functions live in `capture.py`; this module is what array operations,
launches, streams and device memory consult.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

import numpy as np

from ..errors import GradloomError
from .device import Device
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


#: The capture in progress in this context, if any: on the CPU the `Graph` recording operations
#: (runtime/launch/capture.py), on a CUDA device the stream capture (runtime/cuda/graph.py `Capture`).
#: Both name their `device`.
ACTIVE_CAPTURE: ContextVar[Any] = ContextVar("gradloom_active_capture", default=None)


def capturing(device: Device | None = None) -> Any:
    """The capture in progress in this context — on `device` when given — or None."""
    cap = ACTIVE_CAPTURE.get()
    if cap is None or (device is not None and cap.device is not device):
        return None
    return cap


def recording_graph() -> Any:
    """The graph that operations are recorded into instead of running (a CPU capture records
    the launches, copies and fills of every device), or None."""
    cap = ACTIVE_CAPTURE.get()
    return cap if cap is not None and cap.records_nodes else None


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
    graph = recording_graph()
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
            if recording_graph() is None:
                return method(self, *args)
            kept = tuple(a if hasattr(a, "_mem") or isinstance(a, np.ndarray)
                         else copy.deepcopy(a) for a in args)
            defer(lambda: method(self, *kept), what)
            return None

        return write  # type: ignore[return-value]

    return wrap


def refuse_while_capturing(what: str) -> None:
    """For operations a CPU graph cannot hold (e.g. a Tape's backward pass)."""
    if recording_graph() is not None:
        raise GradloomError(
            f"{what} cannot be captured into a CPU graph in gradloom; run it outside "
            "wp.ScopedCapture / wp.capture_begin()."
        )
