"""Streams and events on the CPU: Warp's stream API, where all work is already synchronous.

Warp 1.19 raises `RuntimeError` for `wp.Stream("cpu")`, `wp.Event("cpu")` and `wp.get_stream("cpu")`
(streams are a CUDA concept there). gradloom runs only on the CPU, so it offers them there: every
launch and copy has finished when its call returns, so waiting is never needed, an event is
complete as soon as it is recorded, and a timing event holds the host clock. Code written for
Warp's GPU streams therefore runs unchanged (docs/differences.md).
"""

from __future__ import annotations

import contextvars
import time
from types import TracebackType
from typing import Any

from ..errors import GradloomError
from .capturing import ACTIVE_CAPTURE, OpNode, capturing
from .device import CPU, Device, ScopedDevice, get_device


class StreamError(GradloomError, RuntimeError):
    """Misuse of a stream or event (a RuntimeError, as in Warp)."""


class Event:
    """A point in a stream's work. On the CPU every event is complete once recorded; with
    `enable_timing=True` it keeps the host time at which it was recorded."""

    class Flags:
        DEFAULT = 0x0
        BLOCKING_SYNC = 0x1
        DISABLE_TIMING = 0x2
        INTERPROCESS = 0x4

    def __init__(self, device: Any = None, cuda_event: Any = None, enable_timing: bool = False,
                 interprocess: bool = False) -> None:
        if enable_timing and interprocess:
            raise ValueError("The combination of 'enable_timing=True' and 'interprocess=True' "
                             "is not allowed.")
        if cuda_event is not None:
            raise StreamError("Event(cuda_event=...) wraps a CUDA event; gradloom has no CUDA "
                              "device in this build")
        self.device: Device = get_device(device)
        self.enable_timing = enable_timing
        self.interprocess = interprocess
        self.cuda_event = None
        self.owner = True
        self._time_ns: int | None = None

    def _stamp(self) -> None:
        self._time_ns = time.perf_counter_ns()

    @property
    def is_complete(self) -> bool:
        return True

    def ipc_handle(self) -> bytes:
        raise StreamError(f"Device {self.device} does not support IPC.")

    def __repr__(self) -> str:
        return f"<gradloom Event on {self.device}>"


class Stream:
    """A stream of work on a device. CPU work runs as it is issued, so waiting does nothing."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        if "cuda_stream" in kwargs:
            raise StreamError("Stream(cuda_stream=...) wraps a CUDA stream; gradloom has no CUDA "
                              "device in this build")
        if kwargs:
            raise TypeError(f"Stream() got unexpected keyword argument(s): {', '.join(kwargs)}")
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError("Stream priority must be an integer.")
        self.device: Device = get_device(device)
        self._priority = max(-1, min(priority, 0))  # two levels, as in Warp
        self.cuda_stream = None
        self.owner = True
        self._cached_event: Event | None = None

    @property
    def priority(self) -> int:
        return self._priority

    @property
    def is_blocking(self) -> bool:
        return True

    @property
    def is_complete(self) -> bool:
        return True

    @property
    def is_capturing(self) -> bool:
        return capturing()

    @property
    def cached_event(self) -> Event:
        if self._cached_event is None:
            self._cached_event = Event(self.device)
        return self._cached_event

    def record_event(self, event: Event | None = None, external: bool = False) -> Event:
        """Record `event` (a new one if None) here; inside a graph capture it is recorded each
        time the graph runs."""
        if event is None:
            event = Event(self.device)
        elif not isinstance(event, Event):
            raise TypeError(f"record_event() expects a wp.Event, got {type(event).__name__}")
        elif event.device != self.device:
            raise StreamError(f"Event from device {event.device} cannot be recorded on stream "
                              f"from device {self.device}")
        graph = ACTIVE_CAPTURE.get()
        if graph is not None:
            graph.add(OpNode(event._stamp, "record_event"))
        else:
            event._stamp()
        return event

    def wait_event(self, event: Event, external: bool = False) -> None:
        """Later work waits for `event`: on the CPU it has already happened."""
        _check_event(event)

    def wait_stream(self, other_stream: Stream, event: Event | None = None,
                    external: bool = False) -> None:
        """Later work waits for `other_stream`'s work so far: on the CPU it is done."""
        if not isinstance(other_stream, Stream):
            raise TypeError(f"wait_stream() expects a wp.Stream, got {type(other_stream).__name__}")

    def __repr__(self) -> str:
        return f"<gradloom Stream on {self.device}>"


def _check_event(event: Any) -> Event:
    if not isinstance(event, Event):
        raise TypeError(f"expected a wp.Event, got {type(event).__name__}")
    return event


#: The device's default stream (it holds no state, so one object serves every context).
CPU_STREAM = Stream(CPU)

_current_stream: contextvars.ContextVar[Stream] = contextvars.ContextVar(
    "gradloom_stream", default=CPU_STREAM)


def get_stream(device: Any = None) -> Stream:
    """The stream the device uses now (the CPU's default stream unless one was set)."""
    get_device(device)
    return _current_stream.get()


def set_stream(stream: Stream, device: Any = None, sync: bool = False) -> None:
    """Make `stream` the device's current stream (in this context)."""
    dev = get_device(device)
    if not isinstance(stream, Stream):
        raise TypeError(f"set_stream() expects a wp.Stream, got {type(stream).__name__}")
    if stream.device != dev:
        raise StreamError(f"Stream from device {stream.device} cannot be used on device {dev}")
    _current_stream.set(stream)


def record_event(event: Event | None = None, external: bool = False) -> Event:
    """Record an event on the current stream."""
    return get_stream().record_event(event, external)


def wait_event(event: Event, external: bool = False) -> None:
    get_stream().wait_event(event, external)


def wait_stream(other_stream: Stream, event: Event | None = None, external: bool = False) -> None:
    get_stream().wait_stream(other_stream, event, external)


def synchronize_stream(stream_or_device: Any = None) -> None:
    """Wait for a stream's work (a device: its current stream's). Nothing is ever pending on the
    CPU; as in Warp, a Stream cannot be synchronized while a graph is being captured."""
    if isinstance(stream_or_device, Stream):
        if capturing():
            raise StreamError("Cannot synchronize stream while graph capture is active")
        return
    get_device(stream_or_device)


def synchronize_event(event: Event) -> None:
    """Wait until `event` has happened (it has, on the CPU)."""
    _check_event(event)
    if capturing():
        raise StreamError("Cannot synchronize event while graph capture is active")


def get_event_elapsed_time(start_event: Event, end_event: Event,
                           synchronize: bool = True) -> float:
    """Milliseconds between two recorded events created with `enable_timing=True`."""
    stamps = []
    for name, ev in (("start_event", start_event), ("end_event", end_event)):
        _check_event(ev)
        if not ev.enable_timing:
            raise StreamError(f"get_event_elapsed_time(): {name} was created without "
                              "enable_timing=True")
        if ev._time_ns is None:
            raise StreamError(f"get_event_elapsed_time(): {name} has not been recorded")
        stamps.append(ev._time_ns)
    return (stamps[1] - stamps[0]) / 1e6


class ScopedStream:
    """`with wp.ScopedStream(stream):` makes `stream` (and its device) current for the block;
    `ScopedStream(None)` does nothing."""

    def __init__(self, stream: Stream | None, sync_enter: bool = True,
                 sync_exit: bool = False) -> None:
        self.stream = stream
        self.sync_enter, self.sync_exit = sync_enter, sync_exit
        self._saved: list[tuple[ScopedDevice, contextvars.Token[Stream]]] = []
        if stream is not None:
            if not isinstance(stream, Stream):
                raise TypeError(f"ScopedStream() expects a wp.Stream or None, got "
                                f"{type(stream).__name__}")
            self.device = stream.device

    def __enter__(self) -> Stream | None:
        if self.stream is not None:
            scope = ScopedDevice(self.device)
            scope.__enter__()
            self._saved.append((scope, _current_stream.set(self.stream)))
        return self.stream

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.stream is not None:
            scope, token = self._saved.pop()
            _current_stream.reset(token)
            scope.__exit__(exc_type, exc, tb)
