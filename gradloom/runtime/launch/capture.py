"""Graph capture on the CPU: `wp.ScopedCapture`, `capture_begin/end/launch`, `capture_if/while`.

As in Warp 1.19 on the CPU, a capture records and does not run: launches, `wp.copy`, `fill_`,
`zero_`, `assign`, array-utility calls (and `wp.zeros` inside the capture, which zero their
memory on each run) become nodes of a `Graph` (runtime/capturing.py). `capture_launch(graph)`
replays them in order against the same arrays, reading their current contents. A recorded launch
replays its packed launch block directly (about a microsecond). Under an active `wp.Tape`,
`capture_launch` records every replayed launch and copy on the tape (Warp records nothing there).
"""

from __future__ import annotations

import contextlib
import enum
import functools
from collections.abc import Callable
from types import TracebackType
from typing import Any

from ...abi import ERROR_WORD, NO_ERROR
from ...errors import GradloomError
from ...types import int32
from ..array.array import array
from ..array.watch import before_write
from ..capturing import ACTIVE_CAPTURE, Node, OpNode, TapedNode, capturing, recording_graph
from ..device import CPU, Device, get_device
from ..recording import ACTIVE_TAPES
from ..signals import launch_words
from ..stream import Stream


class Graph:
    """A captured sequence of operations: `wp.capture_launch(graph)` runs them in order."""

    #: operations are recorded into it as nodes, not run (runtime/capturing.recording_graph)
    records_nodes = True

    def __init__(self, device: Any, capture_id: int = 0) -> None:
        self.device = device
        self.capture_id = capture_id
        self.nodes: list[Node] = []
        self.apic = False
        self.graph: Any = None
        self.graph_exec: Any = None
        self._plan: list[tuple[Any, int, Any, list[Any], Any]] | None = None

    @property
    def is_loaded(self) -> bool:
        return False

    # a graph read back by wp.capture_load binds named parameters (gradloom/graph_file.py)
    def _not_loaded(self, what: str) -> CaptureError:
        return CaptureError(f"Graph.{what}() is available on loaded APIC graphs only (from "
                            "wp.capture_load); this graph comes from a capture")

    @property
    def params(self) -> dict[str, Any]:
        """Named parameters: none, for a captured graph."""
        return {}

    def set_param(self, name: str, arr: Any) -> None:
        raise self._not_loaded("set_param")

    def get_param(self, name: str, arr: Any) -> None:
        raise self._not_loaded("get_param")

    def get_param_ptr(self, name: str) -> int | None:
        raise self._not_loaded("get_param_ptr")

    def add(self, node: Node) -> None:
        """Record a node; one captured while tapes record runs with them (TapedNode)."""
        tapes = ACTIVE_TAPES.get()
        if tapes:
            seen = self.__dict__.setdefault("_taped", set())
            cut = [(t, len(t.records)) for t in tapes
                   if id(t) not in seen and hasattr(t, "records")]
            seen.update(id(t) for t, _ in cut)
            node = TapedNode(node, tapes, cut)
        self.nodes.append(node)

    def replay(self) -> None:
        """Run every node in order (under an active Tape each launch and copy is recorded)."""
        if ACTIVE_TAPES.get():
            for node in self.nodes:
                node.run()
            return
        if self._plan is None or len(self._plan) != len(self.nodes):
            self._plan = [_step(node) for node in self.nodes]
        w = launch_words()  # a Ctrl-C from here on stops the kernel running (codegen/signals.py)
        w.gl_launch_base = w.gl_interrupts
        for entry, addr, block, written, node in self._plan:
            if entry is None:
                node.run()
                continue
            for a in written:  # what Launch.run does, without its per-call overhead
                if a._mem.watchers:
                    before_write(a)
            entry(addr)
            if block[ERROR_WORD] != NO_ERROR:
                node.raise_error()

    def run(self) -> None:  # a graph launched inside another capture is one node of it
        self.replay()

    def __repr__(self) -> str:
        return f"<gradloom Graph on {self.device}: {len(self.nodes)} operation(s)>"


def _step(node: Node) -> tuple[Any, int, Any, list[Any], Any]:
    """A node as the replay loop runs it: a small recorded launch's packed block, or its run()."""
    parts = getattr(node, "fast_parts", None)
    fast = parts() if parts is not None else None
    if fast is None:
        return None, 0, None, [], node
    return (*fast, node)


class CaptureError(GradloomError, RuntimeError):
    """Misuse of graph capture (a RuntimeError, as in Warp)."""


class CaptureMode(enum.IntEnum):
    """Warp's CUDA stream-capture modes; accepted and ignored on the CPU."""

    GLOBAL = 0
    THREAD_LOCAL = 1
    RELAXED = 2


def capture_begin(device: Any = None, stream: Stream | None = None,
                  force_module_load: bool | None = None, external: bool = False,
                  apic: bool = False, capture_mode: CaptureMode = CaptureMode.THREAD_LOCAL
                  ) -> None:
    """Start recording a graph in this context, the device's backend's way (see the module
    docstring; on a CUDA device, the driver's stream capture: runtime/cuda/graph.py)."""
    dev = stream.device if isinstance(stream, Stream) else get_device(device)
    if capturing() is not None:  # one capture at a time in a context, on any device
        raise CaptureError("Graph capture already in progress")
    dev.backend.begin_capture(dev, stream, capture_mode, apic)


def begin_host_capture(device: Device, stream: Stream | None, mode: CaptureMode,
                       apic: bool) -> None:
    """A CPU capture: a Graph that operations of every device are recorded into (the CPU
    backend's `begin_capture`)."""
    graph = Graph(device)
    graph.capture_id = id(graph)
    graph.apic = apic
    graph._token = ACTIVE_CAPTURE.set(graph)  # type: ignore[attr-defined]


def capture_end(device: Any = None, stream: Stream | None = None) -> Any:
    """Stop recording; returns the graph to run with `wp.capture_launch`."""
    dev = stream.device if isinstance(stream, Stream) else (
        get_device(device) if device is not None else None)
    cap = capturing()
    if cap is None or (dev is not None and cap.device is not dev):
        where = "" if dev is None else f" on {dev}"
        raise CaptureError(f"Graph capture is not active{where} (call wp.capture_begin() "
                           "first)")
    return cap.device.backend.end_capture(cap)


def end_host_capture(graph: Graph) -> Graph:
    """End a CPU capture (the CPU backend's `end_capture`)."""
    try:
        ACTIVE_CAPTURE.reset(graph._token)  # type: ignore[attr-defined]
    except ValueError:  # ended in another context than it began in
        ACTIVE_CAPTURE.set(None)
    return graph


def capture_launch(graph: Graph, stream: Stream | None = None) -> None:
    """Run a captured graph's operations in order (inside another capture: record it there)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"capture_launch() expects a Graph from wp.capture_end() or "
                        f"wp.ScopedCapture, got {type(graph).__name__}")
    outer = recording_graph()
    if outer is graph:
        raise CaptureError("a graph cannot launch itself while it is being captured")
    if outer is not None:
        outer.add(graph)
        return
    graph.replay()


class ScopedCapture:
    """`with wp.ScopedCapture() as capture:` records the block's operations into
    `capture.graph` (available after the block)."""

    def __init__(self, device: Any = None, stream: Stream | None = None,
                 force_module_load: bool | None = None, external: bool = False,
                 apic: bool = False, capture_mode: CaptureMode = CaptureMode.THREAD_LOCAL
                 ) -> None:
        self.device, self.stream = device, stream
        self.force_module_load, self.external = force_module_load, external
        self.apic, self.capture_mode = apic, capture_mode
        self.active = False
        self.graph: Graph | None = None

    def __enter__(self) -> ScopedCapture:
        capture_begin(self.device, self.stream, self.force_module_load, self.external,
                      self.apic, self.capture_mode)
        self.active = True
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.active:
            self.active = False
            if exc is None:
                self.graph = capture_end(self.device, self.stream)
                return
            with contextlib.suppress(GradloomError):  # the block's error is the one to see
                capture_end(self.device, self.stream)


# --------------------------------------------------------------------------------------------
# Conditional nodes


def _condition(condition: Any) -> array:
    if not isinstance(condition, array) or condition.dtype is not int32:
        raise TypeError("Condition must be a Warp array of int32 with a single element")
    return condition


def _is_true(condition: array) -> bool:
    return bool(condition.numpy().reshape(-1)[0])


def _body(body: Callable[..., Any] | Graph, kwargs: dict[str, Any]) -> Graph:
    """A branch or loop body as a graph: a callable runs once now, recorded into a sub-graph."""
    if isinstance(body, Graph):
        return body
    if not callable(body):
        raise TypeError(f"a capture_if/capture_while body must be a callable or a Graph, got "
                        f"{type(body).__name__}")
    sub = Graph(CPU, 0)  # a body is recorded only inside a CPU capture
    token = ACTIVE_CAPTURE.set(sub)
    try:
        body(**kwargs)
    finally:
        ACTIVE_CAPTURE.reset(token)
    return sub


def _run_body(body: Callable[..., Any] | Graph, kwargs: dict[str, Any]) -> None:
    if isinstance(body, Graph):
        capture_launch(body)
    else:
        body(**kwargs)


def capture_if(condition: array, on_true: Callable[..., Any] | Graph | None = None,
               on_false: Callable[..., Any] | Graph | None = None, stream: Stream | None = None,
               **kwargs: Any) -> None:
    """Run `on_true` if `condition[0]` is nonzero, else `on_false` — decided when the graph runs
    if a capture is active, else now. Keyword arguments go to the callables."""
    if on_true is None and on_false is None:
        return
    cond = _condition(condition)
    if recording_graph() is None:
        branch = on_true if _is_true(cond) else on_false
        if branch is not None:
            _run_body(branch, kwargs)
        return
    yes = None if on_true is None else _body(on_true, kwargs)
    no = None if on_false is None else _body(on_false, kwargs)
    graph = recording_graph()
    assert graph is not None
    graph.add(OpNode(functools.partial(_run_if, cond, yes, no), "capture_if"))


def _run_if(cond: array, yes: Graph | None, no: Graph | None) -> None:
    """A recorded capture_if (a partial of a module function, so a saved graph can hold it)."""
    branch = yes if _is_true(cond) else no
    if branch is not None:
        branch.replay()


def capture_while(condition: array, while_body: Callable[..., Any] | Graph,
                  stream: Stream | None = None, **kwargs: Any) -> None:
    """Run `while_body` while `condition[0]` is nonzero (the body must update it) — when the
    graph runs if a capture is active, else now."""
    cond = _condition(condition)
    if recording_graph() is None:
        while _is_true(cond):
            _run_body(while_body, kwargs)
        return
    body = _body(while_body, kwargs)
    graph = recording_graph()
    assert graph is not None
    graph.add(OpNode(functools.partial(_run_while, cond, body), "capture_while"))


def _run_while(cond: array, body: Graph) -> None:
    """A recorded capture_while."""
    while _is_true(cond):
        body.replay()


def is_conditional_graph_supported() -> bool:
    """CPU graphs support `capture_if` / `capture_while`."""
    return True
