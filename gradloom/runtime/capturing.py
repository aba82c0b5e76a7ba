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


class TapedNode:
    """A node captured while tapes recorded (Warp: `with tape:` inside a capture). It runs
    with those tapes active, so its launch or operation is recorded when the graph runs —
    with the copy-on-write snapshots of that moment — after cutting each tape back to the
    records it had when the capture first reached it: a replay's records replace the last
    replay's, as Warp's tape holds one copy of the captured launches."""

    __slots__ = ("cut", "node", "tapes")

    def __init__(self, node: Node, tapes: tuple[Any, ...], cut: list[tuple[Any, int]]) -> None:
        self.node, self.tapes, self.cut = node, tapes, cut

    def run(self) -> None:
        for tape, n in self.cut:
            del tape.records[n:]
        token = ACTIVE_TAPES.set(self.tapes)
        try:
            self.node.run()
        finally:
            ACTIVE_TAPES.reset(token)


def defer(fn: Callable[[], Any], what: str) -> bool:
    """If a graph is being captured, record `fn` into it (not run now) and return True."""
    graph = recording_graph()
    if graph is None:
        return False
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
            # a partial of the class attribute (not a lambda): a saved graph pickles it
            defer(functools.partial(write, self, *kept), what)
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
