"""The CUDA driver API through `cuda-bindings`: checked calls, lazy initialisation, devices and
their primary contexts. Nothing here touches the driver until a CUDA device is asked for.

Every driver call goes through `Driver.call(name, *args)`, which raises `CudaError` naming the
call and the driver's error when the result is not CUDA_SUCCESS, and returns the call's outputs
(cuda-bindings returns `(CUresult, outputs...)`). `current()` is the process's driver: the real
`cuda.bindings.driver`, or — inside `using(api)` — a stand-in with the same functions (the tests
run the runtime against one on machines without a GPU). Without cuda-bindings, without an NVIDIA
driver or without a device, `Driver.device_count()` is 0 and `Driver.reason` says why.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import GradloomError

#: `pip install` line printed when cuda-bindings is missing
INSTALL_HINT = "pip install 'gradloom[cuda]' (cuda-bindings and nvidia-nvvm)"


class CudaError(GradloomError, RuntimeError):
    """A CUDA driver call failed; the message names the call and the driver's error."""

    def __init__(self, call: str, code: int, name: str, text: str) -> None:
        super().__init__(f"CUDA driver call {call} failed: {name} ({code}): {text}")
        self.call, self.code, self.error_name = call, code, name


@dataclass(frozen=True)
class DeviceInfo:
    """What gradloom needs to know about one CUDA device (read once, at first use)."""

    ordinal: int
    name: str
    #: compute capability as Warp's `Device.arch` gives it: 90 for sm_90
    arch: int
    sm_count: int
    max_threads_per_sm: int
    total_memory: int
    mempool: bool
    uva: bool
    max_shared_memory_per_block: int = 0

    @property
    def sm(self) -> str:
        """The PTX target architecture, "sm_90"."""
        return f"sm_{self.arch}"

    @property
    def resident_threads(self) -> int:
        """Threads the device holds at once (the grid of a stack-using launch is capped to it)."""
        return self.sm_count * self.max_threads_per_sm


class Driver:
    """One CUDA driver API (`cuda.bindings.driver`, or a stand-in with its functions) and the
    state gradloom keeps for it: devices, primary contexts, default streams, loaded kernels."""

    def __init__(self, api: Any, reason: str = "") -> None:
        self.api = api
        self.reason = reason
        self._count: int | None = None if api is not None else 0
        self._handles: dict[int, Any] = {}
        self._infos: dict[int, DeviceInfo] = {}
        self._contexts: dict[int, Any] = {}
        #: per device ordinal: the device's default stream handle (runtime/stream.py)
        self.default_streams: dict[int, Any] = {}
        #: per kernel: {(variant, ordinal): launch_cuda.CudaPrepared}
        self.kernels: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = (
            weakref.WeakKeyDictionary())
        _DRIVERS.add(self)

    # -- calls --------------------------------------------------------------------------------

    def call(self, name: str, *args: Any) -> Any:
        """Call `name` with `args`; raise CudaError unless it succeeded; return its outputs
        (None, the one output, or a tuple)."""
        result = getattr(self.api, name)(*args)
        err = result[0]
        if int(err) != 0:
            raise self.error(name, err)
        if len(result) == 1:
            return None
        return result[1] if len(result) == 2 else tuple(result[1:])

    def status(self, name: str, *args: Any) -> int:
        """Call `name` and return its CUresult as an int, unchecked (for queries whose "not
        ready" answer is not an error)."""
        return int(getattr(self.api, name)(*args)[0])

    def error(self, call: str, err: Any) -> CudaError:
        code = int(err)
        try:
            res, name = self.api.cuGetErrorName(err)
            res2, text = self.api.cuGetErrorString(err)
            name_s = name.decode() if int(res) == 0 else f"CUresult {code}"
            text_s = text.decode() if int(res2) == 0 else "unknown error"
        except Exception:  # the driver cannot even describe its error
            name_s, text_s = f"CUresult {code}", "unknown error"
        return CudaError(call, code, name_s, text_s)

    # -- devices ------------------------------------------------------------------------------

    def device_count(self) -> int:
        """The number of CUDA devices (0 when the driver or cuda-bindings is missing: `reason`
        says why). The first call initialises the driver."""
        if self._count is None:
            self._count = self._probe()
        return self._count

    def _probe(self) -> int:
        try:
            self.call("cuInit", 0)
            count = int(self.call("cuDeviceGetCount"))
        except CudaError as exc:
            self.reason = f"the CUDA driver failed to initialise: {exc}"
            return 0
        except Exception as exc:  # cuda-bindings raises when libcuda.so cannot be loaded
            self.reason = f"no NVIDIA driver could be loaded ({type(exc).__name__}: {exc})"
            return 0
        if count == 0:
            self.reason = "the NVIDIA driver reports no CUDA device"
        return count

    def driver_version(self) -> int | None:
        """The driver's CUDA version (12040 for 12.4), None without a driver."""
        if self.device_count() == 0 and self.reason and "no NVIDIA driver" in self.reason:
            return None
        try:
            return int(self.call("cuDriverGetVersion"))
        except Exception:  # no driver library: Warp answers None too
            return None

    def handle(self, ordinal: int) -> Any:
        """The CUdevice of device `ordinal`."""
        if ordinal not in self._handles:
            self._handles[ordinal] = self.call("cuDeviceGet", ordinal)
        return self._handles[ordinal]

    def info(self, ordinal: int) -> DeviceInfo:
        if ordinal not in self._infos:
            self._infos[ordinal] = self._read_info(ordinal)
        return self._infos[ordinal]

    def _read_info(self, ordinal: int) -> DeviceInfo:
        dev = self.handle(ordinal)
        attr = self.api.CUdevice_attribute

        def get(name: str) -> int:
            return int(self.call("cuDeviceGetAttribute", getattr(attr, name), dev))

        raw = self.call("cuDeviceGetName", 256, dev)
        name = bytes(raw).split(b"\0", 1)[0].decode(errors="replace")
        major = get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR")
        minor = get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")
        return DeviceInfo(
            ordinal, name, 10 * major + minor,
            get("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
            get("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR"),
            int(self.call("cuDeviceTotalMem", dev)),
            bool(get("CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED")),
            bool(get("CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING")),
            get("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"))

    def context(self, ordinal: int) -> Any:
        """The device's primary context (retained once; shared with the CUDA runtime, so torch
        and gradloom see the same allocations). On first use, the device's default memory
        pool is told to keep freed memory (cuMemAllocAsync then reuses it without a trip to the
        driver's allocator)."""
        if ordinal not in self._contexts:
            ctx = self.call("cuDevicePrimaryCtxRetain", self.handle(ordinal))
            self._contexts[ordinal] = ctx
            self.call("cuCtxSetCurrent", ctx)
            if self.info(ordinal).mempool:
                pool = self.call("cuDeviceGetDefaultMemPool", self.handle(ordinal))
                keep_all = self.api.cuuint64_t(2**64 - 1)
                self.call("cuMemPoolSetAttribute", pool,
                          self.api.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                          keep_all)
        return self._contexts[ordinal]

    def activate(self, ordinal: int) -> None:
        """Make the device's primary context current on this thread (before any call that
        works in "the current context")."""
        self.call("cuCtxSetCurrent", self.context(ordinal))

    def synchronize(self, ordinal: int) -> None:
        """Wait for all work on the device (only if gradloom has used it: nothing else can be
        pending on it from gradloom)."""
        if ordinal in self._contexts:
            self.activate(ordinal)
            self.call("cuCtxSynchronize")

    def used_devices(self) -> list[int]:
        return sorted(self._contexts)


_DRIVERS: weakref.WeakSet[Driver] = weakref.WeakSet()


def all_drivers() -> list[Driver]:
    """Every driver created in this process (the real one, stand-ins of tests)."""
    return list(_DRIVERS)


@functools.cache
def real_driver() -> Driver:
    """The driver behind cuda-bindings (created once; cuda-bindings is imported here, lazily)."""
    try:
        from cuda.bindings import driver as api  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError as exc:
        return Driver(None, f"cuda-bindings is not installed ({exc}); {INSTALL_HINT}")
    return Driver(api)


_OVERRIDE: contextvars.ContextVar[Driver | None] = contextvars.ContextVar(
    "gradloom_cuda_driver", default=None)


def current() -> Driver:
    """The driver in use: a stand-in installed by `using`, else the real one."""
    d = _OVERRIDE.get()
    return d if d is not None else real_driver()


def started() -> Driver | None:
    """The driver in use if one exists yet: a program that never touched CUDA never imports
    cuda-bindings (wp.synchronize() on the CPU)."""
    d = _OVERRIDE.get()
    if d is not None:
        return d
    return real_driver() if real_driver.cache_info().currsize else None


@contextlib.contextmanager
def using(api: Any) -> Iterator[Driver]:
    """Run the block against `api` (an object with cuda.bindings.driver's functions) instead of
    the real driver: the tests' stand-in for a GPU."""
    token = _OVERRIDE.set(Driver(api))
    try:
        yield _OVERRIDE.get()  # type: ignore[misc]
    finally:
        _OVERRIDE.reset(token)


def is_cuda_available() -> bool:
    """True only when cuda-bindings loads, an NVIDIA driver initialises and it has a device."""
    return current().device_count() > 0


def unavailable_reason() -> str:
    """Why no CUDA device is available ("" when one is)."""
    d = current()
    return "" if d.device_count() > 0 else d.reason
