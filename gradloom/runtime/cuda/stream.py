"""The driver calls behind CUDA streams and events (runtime/stream.py's classes use them).

Handles are the driver's objects (CUstream, CUevent); Warp's `cuda_stream` / `cuda_event`
attributes are their integer values. A stream gradloom creates is a blocking stream
(CU_STREAM_DEFAULT): it waits for work on the legacy default stream, so code that uses the
legacy stream (torch's default stream, for one) stays ordered with gradloom's work.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

from ...errors import GradloomError
from ..device import Device
from ..stream import Stream
from .driver import Driver, current

#: CUresult of a query whose work has not finished yet
CUDA_ERROR_NOT_READY = 600


class StreamHandle:
    """A CUDA stream: its driver handle, device and whether gradloom destroys it."""

    __slots__ = ("__weakref__", "driver", "handle", "ordinal")

    def __init__(self, ordinal: int, priority: int = 0, external: Any = None) -> None:
        self.driver: Driver = current()
        self.ordinal = ordinal
        api = self.driver.api
        if external is not None:
            self.handle = api.CUstream(int(external))
            return
        self.driver.activate(ordinal)
        flags = int(api.CUstream_flags.CU_STREAM_DEFAULT)
        self.handle = self.driver.call("cuStreamCreateWithPriority", flags, priority)
        weakref.finalize(self, _destroy, self.driver, "cuStreamDestroy", self.handle)

    @property
    def value(self) -> int:
        return int(self.handle)

    def synchronize(self) -> None:
        self.driver.call("cuStreamSynchronize", self.handle)

    def is_complete(self) -> bool:
        return _done(self.driver, "cuStreamQuery", self.handle)

    def wait_event(self, event: EventHandle) -> None:
        check_same_device("wait_event", self.ordinal, event.ordinal)
        self.driver.call("cuStreamWaitEvent", self.handle, event.handle, 0)


class EventHandle:
    """A CUDA event: its driver handle and device."""

    __slots__ = ("__weakref__", "driver", "handle", "ordinal")

    def __init__(self, ordinal: int, enable_timing: bool, interprocess: bool = False,
                 external: Any = None) -> None:
        self.driver: Driver = current()
        self.ordinal = ordinal
        api = self.driver.api
        if external is not None:
            self.handle = api.CUevent(int(external))
            return
        flags = api.CUevent_flags
        bits = 0 if enable_timing else int(flags.CU_EVENT_DISABLE_TIMING)
        if interprocess:
            bits |= int(flags.CU_EVENT_INTERPROCESS)
        self.driver.activate(ordinal)
        self.handle = self.driver.call("cuEventCreate", bits)
        weakref.finalize(self, _destroy, self.driver, "cuEventDestroy", self.handle)

    @property
    def value(self) -> int:
        return int(self.handle)

    def record(self, stream: StreamHandle) -> None:
        self.driver.call("cuEventRecord", self.handle, stream.handle)

    def synchronize(self) -> None:
        self.driver.call("cuEventSynchronize", self.handle)

    def is_complete(self) -> bool:
        return _done(self.driver, "cuEventQuery", self.handle)

    def elapsed_ms(self, end: EventHandle) -> float:
        return float(self.driver.call("cuEventElapsedTime", self.handle, end.handle))


def _done(driver: Driver, query: str, handle: Any) -> bool:
    code = driver.status(query, handle)
    if code == 0:
        return True
    if code == CUDA_ERROR_NOT_READY:
        return False
    raise driver.error(query, code)


def _destroy(driver: Driver, fn: str, handle: Any) -> None:
    with contextlib.suppress(Exception):  # at interpreter exit the driver may be gone already
        driver.call(fn, handle)


def check_same_device(what: str, a: int, b: int) -> None:
    if a != b:
        raise GradloomError(f"{what}: cuda:{a} and cuda:{b} are different devices")


def order_streams(ordinal: int, first: int, then: int) -> None:
    """Make work queued on stream `then` from now on wait for the work queued on stream
    `first` so far (handles as ints; 1 and 2 are CUDA's legacy and per-thread default streams):
    the stream handshake of DLPack and the CUDA Array Interface. Nothing when they are one."""
    if first == then:
        return
    driver = current()
    api = driver.api
    driver.activate(ordinal)
    event = driver.call("cuEventCreate", int(api.CUevent_flags.CU_EVENT_DISABLE_TIMING))
    try:
        driver.call("cuEventRecord", event, api.CUstream(first))
        driver.call("cuStreamWaitEvent", api.CUstream(then), event, 0)
    finally:
        driver.call("cuEventDestroy", event)


# --------------------------------------------------------------------------------------------
# the backend's parts (runtime/cuda/backend.py provides them)


def new_stream(device: Device, priority: int, external: Any) -> StreamHandle:
    """A `wp.Stream`'s driver stream (`external`: a CUstream to wrap, not to destroy)."""
    return StreamHandle(device.ordinal, priority, external)


def new_event(device: Device, enable_timing: bool, interprocess: bool,
              external: Any) -> EventHandle:
    """A `wp.Event`'s driver event."""
    return EventHandle(device.ordinal, enable_timing, interprocess, external)


def synchronize(device: Device) -> None:
    """Wait for all work on the device."""
    current().synchronize(device.ordinal)


def default_stream(device: Device) -> Stream:
    """The device's default stream: made on first use, kept by the driver state (so a new
    driver, as the tests' fake one, starts with fresh streams)."""
    streams = current().default_streams
    s = streams.get(device.ordinal)
    if s is None:
        s = streams[device.ordinal] = Stream(device)
    return s  # type: ignore[no-any-return]
