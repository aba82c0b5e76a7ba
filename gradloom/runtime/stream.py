"""Streams and events: Warp's stream API on CUDA devices (driver streams and events,
runtime/cuda/stream.py) and on the CPU, where all work is already synchronous.

Warp 1.19 raises `RuntimeError` for `wp.Stream("cpu")`, `wp.Event("cpu")` and `wp.get_stream("cpu")`
(streams are a CUDA concept there). gradloom offers them on the CPU too: every launch and copy has
finished when its call returns, so waiting is never needed, an event is complete as soon as it is
recorded, and a timing event holds the host clock. Code written for Warp's GPU streams therefore
runs unchanged on the CPU (docs/differences.md). Each CUDA device has its own current stream (a
ContextVar per device); its default stream is one gradloom creates on first use.
"""

from __future__ import annotations

import contextvars
import time
from types import TracebackType
from typing import Any

from ..errors import GradloomError
from .capturing import OpNode, capturing, recording_graph
from .device import GET_STREAM, SET_STREAM, Device, ScopedDevice, get_device


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
        self.device: Device = get_device(device)
        self.enable_timing = enable_timing
        self.interprocess = interprocess
        self.cuda_event: int | None = None
        self.owner = cuda_event is None
        self._time_ns: int | None = None
        #: the backend's event (None on the CPU, where work is synchronous)
        self._native: Any = self.device.backend.new_event(self.device, enable_timing,
                                                           interprocess, cuda_event)
        if self._native is not None:
            self.cuda_event = self._native.value

    def _stamp(self) -> None:
        self._time_ns = time.perf_counter_ns()

    @property
    def is_complete(self) -> bool:
        return True if self._native is None else self._native.is_complete()

    def ipc_handle(self) -> bytes:
        raise StreamError(f"Device {self.device} does not support IPC.")

    def __repr__(self) -> str:
        return f"<gradloom Event on {self.device}>"


class Stream:
    """A stream of work on a device. CPU work runs as it is issued, so waiting does nothing."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        external = kwargs.pop("cuda_stream", None)
        if kwargs:
            raise TypeError(f"Stream() got unexpected keyword argument(s): {', '.join(kwargs)}")
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError("Stream priority must be an integer.")
        self.device: Device = get_device(device)
        self._priority = max(-1, min(priority, 0))  # two levels, as in Warp
        self.cuda_stream: int | None = None
        self.owner = external is None
        self._cached_event: Event | None = None
        #: the backend's stream (None on the CPU, where work is synchronous)
        self._native: Any = self.device.backend.new_stream(self.device, self._priority, external)
        if self._native is not None:
            self.cuda_stream = self._native.value

    @property
    def handle(self) -> Any:
        """The CUDA stream (runtime/cuda_stream.StreamHandle); an error for a CPU stream."""
        if self._native is None:
            raise StreamError(f"stream on {self.device} is not a CUDA stream")
        return self._native

    @property
    def priority(self) -> int:
        return self._priority

    @property
    def is_blocking(self) -> bool:
        return True

    @property
    def is_complete(self) -> bool:
        return True if self._native is None else self._native.is_complete()

    @property
    def is_capturing(self) -> bool:
        """Whether a graph is being captured from this stream (a CPU stream: any CPU capture)."""
        cap = capturing(self.device)
        return cap is not None and (self._native is None or cap.stream is self._native)

    def synchronize(self) -> None:
        """Wait for the work queued on this stream so far."""
        synchronize_stream(self)

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
        graph = recording_graph()
        if self._native is not None:
            if graph is not None:
                raise StreamError("recording CUDA events inside a graph capture is not "
                                  "supported yet (docs/gpu.md)")
            assert event._native is not None
            event._native.record(self._native)
        elif graph is not None:
            graph.add(OpNode(event._stamp, "record_event"))
        else:
            event._stamp()
        return event

    def wait_event(self, event: Event, external: bool = False) -> None:
        """Later work on this stream waits for `event` (on the CPU it has already happened)."""
        _check_event(event)
        if self._native is not None and event._native is not None:
            self._native.wait_event(event._native)

    def wait_stream(self, other_stream: Stream, event: Event | None = None,
                    external: bool = False) -> None:
        """Later work on this stream waits for `other_stream`'s work so far (on the CPU it is
        done)."""
        if not isinstance(other_stream, Stream):
            raise TypeError(f"wait_stream() expects a wp.Stream, got {type(other_stream).__name__}")
        if self._native is not None and other_stream._native is not None:
            event = other_stream.record_event(event or other_stream.cached_event)
            self.wait_event(event)

    def __repr__(self) -> str:
        return f"<gradloom Stream on {self.device}>"


def _check_event(event: Any) -> Event:
    if not isinstance(event, Event):
        raise TypeError(f"expected a wp.Event, got {type(event).__name__}")
    return event


#: per device (by ordinal; the CPU's is -1), the context variable holding its current stream in
#: each context (None: the device's default stream, which its backend keeps)
_CURRENT: dict[int, contextvars.ContextVar[Stream | None]] = {}


def _current_var(dev: Device) -> contextvars.ContextVar[Stream | None]:
    var = _CURRENT.get(dev.ordinal)
    if var is None:
        var = _CURRENT.setdefault(dev.ordinal, contextvars.ContextVar(
            f"gradloom_stream_{dev.alias}", default=None))
    return var


def default_stream(dev: Device) -> Stream:
    """The device's default stream (its backend makes it on first use and keeps it)."""
    return dev.backend.default_stream(dev)  # type: ignore[no-any-return]


@GET_STREAM.fill
def get_stream(device: Any = None) -> Stream:
    """The stream the device uses now (its default stream unless one was set)."""
    dev = get_device(device)
    s = _current_var(dev).get()
    if s is None:
        return default_stream(dev)
    return s


@SET_STREAM.fill
def set_stream(stream: Stream, device: Any = None, sync: bool = False) -> None:
    """Make `stream` the device's current stream (in this context)."""
    dev = get_device(device)
    if not isinstance(stream, Stream):
        raise TypeError(f"set_stream() expects a wp.Stream, got {type(stream).__name__}")
    if stream.device != dev:
        raise StreamError(f"Stream from device {stream.device} cannot be used on device {dev}")
    var = _current_var(dev)
    if sync and stream._native is not None:
        stream.wait_stream(get_stream(dev))
    var.set(stream)


def cuda_stream(dev: Device, stream: Any = None) -> Any:
    """The CUDA stream work on `dev` goes to: `stream` (a wp.Stream on dev), else the device's
    current stream."""
    s = get_stream(dev) if stream is None else stream
    if not isinstance(s, Stream):
        raise TypeError(f"expected a wp.Stream, got {type(s).__name__}")
    if s.device != dev:
        raise StreamError(f"Stream from device {s.device} cannot be used on device {dev}")
    return s.handle


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
        if recording_graph() is not None:
            raise StreamError("Cannot synchronize stream while graph capture is active")
        if stream_or_device._native is not None:
            stream_or_device._native.synchronize()
        return
    native = get_stream(stream_or_device)._native
    if native is not None:
        native.synchronize()


def synchronize_event(event: Event) -> None:
    """Wait until `event` has happened (it has, on the CPU)."""
    _check_event(event)
    if recording_graph() is not None:
        raise StreamError("Cannot synchronize event while graph capture is active")
    if event._native is not None:
        event._native.synchronize()


def get_event_elapsed_time(start_event: Event, end_event: Event,
                           synchronize: bool = True) -> float:
    """Milliseconds between two recorded events created with `enable_timing=True`."""
    stamps = []
    for name, ev in (("start_event", start_event), ("end_event", end_event)):
        _check_event(ev)
        if not ev.enable_timing:
            raise StreamError(f"get_event_elapsed_time(): {name} was created without "
                              "enable_timing=True")
        if ev._native is not None:
            continue
        if ev._time_ns is None:
            raise StreamError(f"get_event_elapsed_time(): {name} has not been recorded")
        stamps.append(ev._time_ns)
    if start_event._native is not None and end_event._native is not None:
        if synchronize:
            end_event._native.synchronize()
        return start_event._native.elapsed_ms(end_event._native)
    if len(stamps) != 2:
        raise StreamError("get_event_elapsed_time(): both events must be on the same kind of "
                          "device")
    return (stamps[1] - stamps[0]) / 1e6


class ScopedStream:
    """`with wp.ScopedStream(stream):` makes `stream` (and its device) current for the block;
    `ScopedStream(None)` does nothing."""

    def __init__(self, stream: Stream | None, sync_enter: bool = True,
                 sync_exit: bool = False) -> None:
        self.stream = stream
        self.sync_enter, self.sync_exit = sync_enter, sync_exit
        self._saved: list[tuple[ScopedDevice, contextvars.ContextVar[Stream | None],
                                contextvars.Token[Stream | None]]] = []
        if stream is not None:
            if not isinstance(stream, Stream):
                raise TypeError(f"ScopedStream() expects a wp.Stream or None, got "
                                f"{type(stream).__name__}")
            self.device = stream.device

    def __enter__(self) -> Stream | None:
        if self.stream is not None:
            scope = ScopedDevice(self.device)
            scope.__enter__()
            var = _current_var(self.device)
            if self.sync_enter and self.stream._native is not None:
                self.stream.wait_stream(get_stream(self.device))
            self._saved.append((scope, var, var.set(self.stream)))
        return self.stream

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.stream is not None:
            scope, var, token = self._saved.pop()
            var.reset(token)
            if self.sync_exit and self.stream._native is not None:
                get_stream(self.device).wait_stream(self.stream)
            scope.__exit__(exc_type, exc, tb)
