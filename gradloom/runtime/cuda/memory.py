"""Memory behind arrays: host memory (numpy) and CUDA device allocations, and the copies and
fills between them (byte ranges; runtime/cuda/array.py maps array layouts onto these).

A `DeviceBuffer` owns one device allocation, taken from the device's stream-ordered memory
pool (cuMemAllocAsync on a stream) and given back on that stream when the buffer is collected
(cuMemFreeAsync), so a free never overtakes work queued before it on the stream that allocated
it. Devices without memory pools use cuMemAlloc / cuMemFree. Host memory is numpy's: a copy
names it by address. Every operation is queued on the given stream; `to_host` waits for its copy.

While a CUDA graph is being captured on a device (runtime/capturing.py, cuda_graph.py), the
work queued on its stream is recorded, not run, so memory behaves as a graph needs:
allocations on that device are plain cuMemAlloc memory owned by the graph (made with the
thread's capture mode relaxed: they are not stream work), a host-to-device copy is staged
through pinned memory the graph owns (its bytes are those of capture time, at every replay),
and a device-to-host copy — which would need the results now — is refused.
"""

from __future__ import annotations

import contextlib
import ctypes
import weakref
from collections.abc import Iterator
from typing import Any

from ...errors import GradloomError
from ..capturing import capturing
from ..device import cuda_device
from .driver import CudaError, Driver


def _stream_capture() -> Any:
    """The CUDA graph being captured in this context, on any device (a runtime/cuda_graph
    `Capture`: `keep(obj)` owns memory, `defer(fn)` runs once the capture ends), or None: a
    CPU graph records operations, not stream work."""
    cap = capturing()
    return cap if cap is not None and not cap.records_nodes else None


@contextlib.contextmanager
def relaxed(driver: Driver) -> Iterator[None]:
    """Inside a capture: let this thread make calls that are not stream work (allocations,
    module loads) without invalidating the capture; elsewhere nothing."""
    if _stream_capture() is None:
        yield
        return
    mode = driver.api.CUstreamCaptureMode
    old = driver.call("cuThreadExchangeStreamCaptureMode",
                      mode.CU_STREAM_CAPTURE_MODE_RELAXED)
    try:
        yield
    finally:
        driver.call("cuThreadExchangeStreamCaptureMode", old)


class DeviceBuffer:
    """One device allocation of `nbytes` bytes on device `ordinal` (`ptr` 0 when empty): from
    the memory pool on `stream` (a cuda_stream.StreamHandle, kept alive until the buffer is
    given back on it), or (`pooled=False`, or a device without pools) from cuMemAlloc."""

    __slots__ = ("__weakref__", "_finalizer", "driver", "nbytes", "ordinal", "ptr")

    def __init__(self, driver: Driver, ordinal: int, nbytes: int, stream: Any,
                 pooled: bool = True) -> None:
        self.driver, self.ordinal, self.nbytes = driver, ordinal, int(nbytes)
        self.ptr = 0
        if self.nbytes == 0:
            self._finalizer = None
            return
        driver.activate(ordinal)
        cap = capturing(cuda_device(ordinal))
        pooled = pooled and driver.info(ordinal).mempool and cap is None
        try:
            if pooled:
                self.ptr = int(driver.call("cuMemAllocAsync", self.nbytes, stream.handle))
            else:
                with relaxed(driver):
                    self.ptr = int(driver.call("cuMemAlloc", self.nbytes))
        except CudaError as exc:
            raise GradloomError(f"cannot allocate {self.nbytes:,} bytes on cuda:{ordinal}: "
                                f"{exc}") from None
        self._finalizer = weakref.finalize(self, _free, driver, ordinal, self.ptr,
                                           stream if pooled else None)
        if cap is not None:
            cap.keep(self)  # the graph's nodes use it at every replay

    def __repr__(self) -> str:
        return f"<DeviceBuffer cuda:{self.ordinal} {self.nbytes} bytes at {self.ptr:#x}>"


def _free(driver: Driver, ordinal: int, ptr: int, stream: Any) -> None:
    cap = _stream_capture()
    if cap is not None:  # collected during a capture: a free now would be captured (or refused)
        cap.defer(lambda: _free(driver, ordinal, ptr, stream))
        return
    try:
        driver.activate(ordinal)
        if stream is None:
            driver.call("cuMemFree", ptr)
        else:
            driver.call("cuMemFreeAsync", ptr, stream.handle)
    except Exception:  # at interpreter exit the driver may be gone: nothing left to free
        pass


class ExternalBuffer:
    """Device memory gradloom does not own (`wp.array(ptr=..., device="cuda")`); `deleter`,
    if given, is called with (ptr, nbytes) when the last array using it is collected."""

    __slots__ = ("__weakref__", "_finalizer", "nbytes", "ordinal", "ptr")

    def __init__(self, ordinal: int, ptr: int, nbytes: int, deleter: Any = None) -> None:
        self.ordinal, self.ptr, self.nbytes = ordinal, int(ptr), int(nbytes)
        self._finalizer = (weakref.finalize(self, deleter, self.ptr, self.nbytes)
                           if deleter is not None else None)


# --------------------------------------------------------------------------------------------
# Byte-range operations, each queued on `stream` of device `ordinal`


def htod(driver: Driver, ordinal: int, dst: int, src_addr: int, nbytes: int, stream: Any) -> None:
    """Host memory at `src_addr` to device memory at `dst`. The host memory may be reused as
    soon as this returns (the driver stages pageable memory before returning; a capture
    stages it through pinned memory of its own)."""
    if nbytes:
        driver.activate(ordinal)
        cap = capturing(cuda_device(ordinal))
        if cap is not None:
            staged = PinnedBuffer(driver, nbytes)
            ctypes.memmove(staged.ptr, src_addr, nbytes)
            cap.keep(staged)
            src_addr = staged.ptr
        driver.call("cuMemcpyHtoDAsync", dst, src_addr, nbytes, stream)


def dtoh(driver: Driver, ordinal: int, dst_addr: int, src: int, nbytes: int, stream: Any) -> None:
    """Device memory to host memory; returns when the bytes are there (the stream is
    synchronized, so everything queued before the copy has finished too). Refused while a
    graph is captured on the device: nothing has run yet."""
    if nbytes:
        if capturing(cuda_device(ordinal)) is not None:
            raise GradloomError(
                f"reading memory of cuda:{ordinal} to the host (.numpy(), a print, a host-side "
                "utility, a write into a non-contiguous view, a debug check) cannot be captured "
                "into a CUDA graph: nothing in the graph has run yet. Do it outside "
                "wp.ScopedCapture, after wp.capture_launch")
        driver.activate(ordinal)
        driver.call("cuMemcpyDtoHAsync", dst_addr, src, nbytes, stream)
        driver.call("cuStreamSynchronize", stream)


def dtod(driver: Driver, dst_ordinal: int, dst: int, src_ordinal: int, src: int, nbytes: int,
         stream: Any) -> None:
    """Device to device, on one device or between two (a peer copy through both contexts)."""
    if not nbytes:
        return
    driver.activate(dst_ordinal)
    if dst_ordinal == src_ordinal:
        driver.call("cuMemcpyDtoDAsync", dst, src, nbytes, stream)
    else:
        driver.call("cuMemcpyPeerAsync", dst, driver.context(dst_ordinal), src,
                    driver.context(src_ordinal), nbytes, stream)


def host_bytes(driver: Driver, ordinal: int, src: int, nbytes: int, stream: Any) -> bytearray:
    """`nbytes` of device memory at `src`, copied to a new host buffer."""
    out = bytearray(nbytes)
    if nbytes:
        dtoh(driver, ordinal, address_of(out), src, nbytes, stream)
    return out


def address_of(buf: bytearray) -> int:
    """The address of a bytearray's contents (valid while it is neither resized nor freed)."""
    return ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))


def fill(driver: Driver, ordinal: int, dst: int, pattern: bytes, count: int,
         stream: Any) -> None:
    """Set `count` consecutive copies of `pattern` (one element's bytes) starting at `dst`.

    A pattern that repeats a 1-, 2- or 4-byte word is one memset; any other (a float64 1.0, a
    vec3 of distinct values) is written once and then doubled by device copies, log2(count)
    of them."""
    size = len(pattern)
    total = size * count
    if total == 0:
        return
    driver.activate(ordinal)
    for word, fn in ((1, "cuMemsetD8Async"), (2, "cuMemsetD16Async"), (4, "cuMemsetD32Async")):
        if size % word == 0 and total % word == 0 and dst % word == 0 \
                and pattern == pattern[:word] * (size // word):
            value = int.from_bytes(pattern[:word], "little")
            driver.call(fn, dst, value, total // word, stream)
            return
    staged = bytearray(pattern)
    htod(driver, ordinal, dst, address_of(staged), size, stream)
    done = 1
    while done < count:
        n = min(done, count - done)
        driver.call("cuMemcpyDtoDAsync", dst + done * size, dst, n * size, stream)
        done += n


class PinnedBuffer:
    """Page-locked host memory (cuMemHostAlloc): what a captured host-to-device copy reads
    from at every replay of its graph."""

    __slots__ = ("__weakref__", "_finalizer", "nbytes", "ptr")

    def __init__(self, driver: Driver, nbytes: int) -> None:
        self.nbytes = int(nbytes)
        with relaxed(driver):
            self.ptr = int(driver.call("cuMemHostAlloc", self.nbytes, 0))
        self._finalizer = weakref.finalize(self, _free_host, driver, self.ptr)


def _free_host(driver: Driver, ptr: int) -> None:
    cap = _stream_capture()
    if cap is not None:
        cap.defer(lambda: _free_host(driver, ptr))
        return
    with contextlib.suppress(Exception):  # at interpreter exit the driver may be gone
        driver.call("cuMemFreeHost", ptr)
