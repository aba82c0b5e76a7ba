"""CUDA graph capture: `wp.ScopedCapture(device="cuda")`, `wp.capture_begin/end` on a CUDA
device, and `wp.capture_launch` of the graph, through the driver's stream capture.

`begin` starts capturing the device's current stream (or the stream given, made current for
the capture): from then on the launches, copies and fills gradloom queues on that device are
recorded into a CUDA graph by the driver, not run (runtime/cuda/memory.py says what memory does
meanwhile, runtime/cuda/launch.py what a launch does). `end` stops the capture and instantiates
the graph; `Graph.replay` launches it on the device's current stream. Everything captured keeps
the arrays and memory it was captured with: an array's contents are read when the graph runs;
scalars and host data are those of capture time.

A captured launch that can report an error (debug-mode bounds checks, an adjoint using its
stack) cannot be waited for while capturing: after each graph launch its status is read back
and raised then. A captured adjoint's stack has the capacity the kernel had at capture time (a
full stack raises: run the backward once outside the capture first, so it grows).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from ...abi import STATUS_BYTES, STATUS_RECORD, STATUS_STACK_FULL, error_word
from ...errors import GradloomError, KernelRuntimeError
from ..capturing import ACTIVE_CAPTURE, capturing
from ..device import Device
from ..launch import checks
from ..launch.capture import CaptureError, CaptureMode, Graph
from ..stream import Stream, cuda_stream, get_stream, set_stream
from .driver import Driver, current
from .memory import host_bytes
from .stream import StreamHandle


class Capture:
    """What a capture in progress holds: its device and stream, the memory its nodes use,
    the launches to check after each replay, the frees to run once it ends."""

    #: the driver records the stream's work; operations run as usual (capturing.recording_graph)
    records_nodes = False

    def __init__(self, driver: Driver, device: Device, stream: StreamHandle) -> None:
        self.driver, self.device, self.stream = driver, device, stream
        self.ordinal = device.ordinal
        self.kept: list[Any] = []
        #: (prepared entry, packed host block, device address of its block)
        self.checks: list[tuple[Any, bytes, int]] = []
        self.deferred: list[Callable[[], None]] = []

    def keep(self, obj: Any) -> None:
        self.kept.append(obj)

    def defer(self, fn: Callable[[], None]) -> None:
        self.deferred.append(fn)

    def check(self, prepared: Any, block: bytes, address: int) -> None:
        self.checks.append((prepared, block, address))


class CudaGraph(Graph):
    """A graph captured on a CUDA device: the driver's CUgraph and CUgraphExec, and what its
    nodes use (kept alive as long as the graph)."""

    def __init__(self, capture: Capture, graph: Any, graph_exec: Any) -> None:
        super().__init__(capture.device, id(self))
        self.graph, self.graph_exec = graph, graph_exec
        self.capture = capture
        self.driver = capture.driver

    @property
    def is_loaded(self) -> bool:
        return True

    def replay(self) -> None:
        """Launch the graph on the device's current stream (captured into the enclosing
        capture when one is active on it), then raise what a checked launch reported."""
        handle = cuda_stream(self.device)
        self.driver.activate(self.device.ordinal)
        self.driver.call("cuGraphLaunch", self.graph_exec, handle.handle)
        if self.capture.checks and capturing() is None:
            self.check(handle)

    def check(self, handle: StreamHandle) -> None:
        for prepared, block, address in self.capture.checks:
            status = host_bytes(self.driver, self.device.ordinal, address + STATUS_RECORD.start,
                                STATUS_BYTES, handle.handle)
            buf = bytearray(block)
            buf[STATUS_RECORD] = status
            err = error_word(buf)
            if err == STATUS_STACK_FULL:
                raise KernelRuntimeError(
                    f"kernel '{prepared.kernel.key}': its adjoint's stack ({prepared.stack_capacity}"
                    " bytes per thread, the capacity at capture time) filled up in a graph "
                    "launch, so the gradients of that launch of the graph are wrong; run the "
                    "backward pass once outside wp.ScopedCapture (the stack grows), then "
                    "capture again")
            if err:
                raise checks.status_error(prepared, err, buf)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the driver may be gone
            self.driver.call("cuGraphExecDestroy", self.graph_exec)
            self.driver.call("cuGraphDestroy", self.graph)

    def __repr__(self) -> str:
        return f"<gradloom CUDA Graph on {self.device}>"


def begin(device: Device, stream: Stream | None, mode: CaptureMode, apic: bool = False) -> None:
    """Start capturing on a CUDA device (see the module docstring; capture.capture_begin has
    checked that no capture is in progress)."""
    driver = current()
    if stream is not None:
        previous = get_stream(device)
        set_stream(stream, device)
    handle = cuda_stream(device)
    driver.activate(device.ordinal)
    driver.call("cuStreamBeginCapture", handle.handle,
                driver.api.CUstreamCaptureMode(int(mode)))
    cap = Capture(driver, device, handle)
    cap.restore_stream = previous if stream is not None else None  # type: ignore[attr-defined]
    cap.token = ACTIVE_CAPTURE.set(cap)  # type: ignore[attr-defined]


def end(cap: Capture) -> CudaGraph:
    """Stop the capture; the instantiated graph."""
    try:
        ACTIVE_CAPTURE.reset(cap.token)  # type: ignore[attr-defined]
    except ValueError:  # ended in another context than it began in
        ACTIVE_CAPTURE.set(None)
    driver = cap.driver
    try:
        graph = driver.call("cuStreamEndCapture", cap.stream.handle)
        graph_exec = driver.call("cuGraphInstantiate", graph, 0)
    except GradloomError as exc:
        raise CaptureError(f"the CUDA graph capture on {cap.device} failed: {exc}") from None
    finally:
        if cap.restore_stream is not None:  # type: ignore[attr-defined]
            set_stream(cap.restore_stream, cap.device)  # type: ignore[attr-defined]
        for fn in cap.deferred:
            fn()
        cap.deferred.clear()
    return CudaGraph(cap, graph, graph_exec)
