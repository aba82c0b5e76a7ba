"""A CPU stand-in for `cuda.bindings.driver`, to test gradloom's CUDA runtime without a GPU.

Use: `with cuda_driver.using(FakeCuda(kernels=[k])) as driver: ...`. Every call is first made on
the real `cuda.bindings.driver` with the same arguments when no NVIDIA driver can be loaded:
cuda-bindings converts its arguments before it loads the driver, so a well-formed call raises
its "driver not found" error and a malformed one (a str where a pointer goes, a negative size,
an int where a cuuint64_t goes) raises TypeError/OverflowError — which fails the test. Then the
stand-in does the work on host memory:
- device memory is host memory; every copy, memset and launch block is checked to lie inside a
  live allocation (a wrong size or a use after free fails the test);
- streams and events run everything at once (the timing of an event is the host clock);
- a launch reads its kernel-parameter array (void*[1] -> the block's address), checks the
  block and the adjoint stack (capacity x grid threads bytes) are device memory, and runs the
  kernel's CPU entry on the block: the same block layout (gradloom/abi.py), the same error
  word. The kernel is one of `kernels`, else any live kernel whose PTX the module holds.
- stream capture (cuStreamBeginCapture ... cuGraphLaunch) records the work queued on a
  capturing stream and replays it at each graph launch; as on a real driver, a call that is not
  stream work (an allocation, a free, a module load, a synchronisation) made while a capture is
  active fails unless the calling thread's capture mode is relaxed, and so do a copy from
  pageable host memory and a copy to the host on the capturing stream.
Nothing here is a GPU: the PTX is only checked to define the entry that is looked up.
"""

from __future__ import annotations

import ctypes
import struct
import threading
import time
from typing import Any

import cuda.bindings.driver as real

from gradloom.abi import BLOCK_ARGS, BLOCK_STACK
from gradloom.cuda_build import symbol_for
from gradloom.errors import CompileError

OK = real.CUresult.CUDA_SUCCESS
UNSUPPORTED = real.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
INVALIDATED = real.CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
RELAXED = real.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
#: stream work: the position of the call's stream argument
_STREAM_WORK = {"cuMemcpyHtoDAsync": 3, "cuMemcpyDtoHAsync": 3, "cuMemcpyDtoDAsync": 3,
                "cuMemcpyPeerAsync": 5, "cuMemsetD8Async": 3, "cuMemsetD16Async": 3,
                "cuMemsetD32Async": 3, "cuLaunchKernel": 8, "cuGraphLaunch": 1,
                "cuEventRecord": 1, "cuStreamWaitEvent": 0, "cuMemAllocAsync": 1,
                "cuMemFreeAsync": 1}
#: calls that are not stream work: refused while a capture is active, unless relaxed
_UNSAFE = {"cuMemAlloc", "cuMemFree", "cuMemHostAlloc", "cuMemFreeHost", "cuModuleLoadData",
           "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize"}

_ATTRS = {
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": 9,
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": 0,
    "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": 2,
    "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR": 128,
    "CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED": 1,
    "CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING": 1,
    "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK": 49152,
}


#: whether this thread is inside FakeCuda._check (see there)
_CHECKING = threading.local()


def _real_driver_missing() -> bool:
    try:
        real.cuDriverGetVersion()
    except Exception:
        return True
    return False


class FakeCuda:
    """The stand-in (see the module docstring). `kernels`: the @wp.kernels launches may run."""

    def __init__(self, kernels: list[Any] = (), devices: int = 1,
                 total_memory: int = 1 << 30) -> None:
        self.check_args = _real_driver_missing()
        self.devices = devices
        self.total_memory = total_memory
        self.mem: dict[int, ctypes.Array[ctypes.c_char]] = {}
        self.freed: set[int] = set()
        self.modules: dict[int, bytes] = {}
        self.functions: dict[int, str] = {}
        self.function_ptx: dict[int, bytes] = {}
        self.events: dict[int, float] = {}
        self.streams: set[int] = set()
        self.kernels = list(kernels)
        self.calls: list[str] = []
        self.launches: list[dict[str, Any]] = []
        self.current_ctx = 0
        self._next = 0x1000
        #: capturing stream -> (its mode, the work recorded, still valid)
        self.capturing: dict[int, list[Any]] = {}
        self.graphs: dict[int, list[Any]] = {}
        self.thread_mode = real.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
        self.pinned: dict[int, ctypes.Array[ctypes.c_char]] = {}

    # -- plumbing -------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if not (name.startswith("cu") and name[2:3].isupper()):
            return getattr(real, name)  # enums, handle classes, cuuint64_t
        impl = getattr(self, "_" + name)

        def call(*args: Any) -> Any:
            self.calls.append(name)
            if self.check_args:
                self._check(name, args)
            refused = self._refused(name, args)
            if refused is not None:
                return (refused, None)  # gradloom reads outputs only after success
            at = _STREAM_WORK.get(name)
            if at is not None and int(args[at] or 0) in self.capturing:
                assert name != "cuMemAllocAsync", "a pool allocation on a capturing stream"
                self.capturing[int(args[at])][1].append(lambda: impl(*args))
                return (OK,)
            return impl(*args)

        return call

    def _check(self, name: str, args: tuple[Any, ...]) -> None:
        # cuda-bindings loads libcuda on its first call, under a lock; a garbage-collected
        # device buffer freed meanwhile (a weakref finalizer) calls the driver again on this
        # thread, and a second check there would wait on that lock forever
        if getattr(_CHECKING, "active", False):
            return
        _CHECKING.active = True
        try:
            self._check_on_real(name, args)
        finally:
            _CHECKING.active = False

    def _check_on_real(self, name: str, args: tuple[Any, ...]) -> None:
        try:
            getattr(real, name)(*args)
        except (TypeError, ValueError, OverflowError, AttributeError) as exc:
            raise AssertionError(f"malformed driver call {name}{args!r}: {exc}") from exc
        except Exception:
            return  # the driver library is missing: the arguments were accepted
        raise AssertionError(f"{name} ran on a real driver")

    def _refused(self, name: str, args: tuple[Any, ...]) -> Any:
        """The error a real driver gives for this call during a capture (None: allowed)."""
        if not self.capturing:
            return None
        if name in _UNSAFE and self.thread_mode != RELAXED and any(
                mode != RELAXED for mode, _, _ in self.capturing.values()):
            for cap in self.capturing.values():
                cap[2] = False
            return UNSUPPORTED
        if name == "cuMemcpyDtoHAsync" and int(args[3] or 0) in self.capturing:
            return UNSUPPORTED
        if name == "cuMemcpyHtoDAsync" and int(args[3] or 0) in self.capturing and not any(
                base <= args[1] and args[1] + args[2] <= base + len(buf)
                for base, buf in self.pinned.items()):
            return UNSUPPORTED  # pageable host memory cannot be captured
        return None

    def _id(self) -> int:
        self._next += 0x10
        return self._next

    def _where(self, ptr: int, n: int) -> None:
        for base, buf in self.mem.items():
            if base <= ptr and ptr + n <= base + len(buf):
                return
        raise AssertionError(f"{n} bytes at {ptr:#x} are not inside a live device allocation")

    # -- init and devices -----------------------------------------------------------------

    def _cuInit(self, flags: int) -> tuple[Any]:
        return (OK,)

    def _cuDriverGetVersion(self) -> tuple[Any, int]:
        return OK, 13000

    def _cuDeviceGetCount(self) -> tuple[Any, int]:
        return OK, self.devices

    def _cuDeviceGet(self, ordinal: int) -> tuple[Any, Any]:
        assert 0 <= ordinal < self.devices
        return OK, real.CUdevice(ordinal)

    def _cuDeviceGetName(self, length: int, dev: Any) -> tuple[Any, bytes]:
        return OK, b"gradloom fake GPU".ljust(length, b"\0")

    def _cuDeviceGetAttribute(self, attr: Any, dev: Any) -> tuple[Any, int]:
        return OK, _ATTRS[attr.name]

    def _cuDeviceTotalMem(self, dev: Any) -> tuple[Any, int]:
        return OK, self.total_memory

    def _cuDevicePrimaryCtxRetain(self, dev: Any) -> tuple[Any, Any]:
        return OK, real.CUcontext(0x100 + int(dev))

    def _cuCtxSetCurrent(self, ctx: Any) -> tuple[Any]:
        self.current_ctx = int(ctx)
        return (OK,)

    def _cuCtxSynchronize(self) -> tuple[Any]:
        return (OK,)

    def _cuDeviceGetDefaultMemPool(self, dev: Any) -> tuple[Any, Any]:
        return OK, real.CUmemoryPool(0x200 + int(dev))

    def _cuMemPoolSetAttribute(self, pool: Any, attr: Any, value: Any) -> tuple[Any]:
        return (OK,)

    def _cuGetErrorName(self, err: Any) -> tuple[Any, bytes]:
        return OK, real.CUresult(err).name.encode()

    def _cuGetErrorString(self, err: Any) -> tuple[Any, bytes]:
        return OK, b"fake error"

    # -- memory ---------------------------------------------------------------------------

    def _cuMemAllocAsync(self, n: int, stream: Any) -> tuple[Any, Any]:
        return self._cuMemAlloc(n)

    def _cuMemAlloc(self, n: int) -> tuple[Any, Any]:
        assert n > 0, "zero-byte allocation"
        if n > self.total_memory:
            return real.CUresult.CUDA_ERROR_OUT_OF_MEMORY, real.CUdeviceptr(0)
        buf = ctypes.create_string_buffer(b"\xcd" * n, n)  # garbage, as device memory is
        ptr = ctypes.addressof(buf)
        self.mem[ptr] = buf
        return OK, real.CUdeviceptr(ptr)

    def _cuMemFreeAsync(self, ptr: Any, stream: Any) -> tuple[Any]:
        return self._cuMemFree(ptr)

    def _cuMemFree(self, ptr: Any) -> tuple[Any]:
        p = int(ptr)
        assert p in self.mem, f"free of {p:#x}, which is not an allocation"
        del self.mem[p]
        self.freed.add(p)
        return (OK,)

    def _cuMemcpyHtoDAsync(self, dst: Any, src: int, n: int, stream: Any) -> tuple[Any]:
        self._where(int(dst), n)
        ctypes.memmove(int(dst), src, n)
        return (OK,)

    def _cuMemcpyDtoHAsync(self, dst: int, src: Any, n: int, stream: Any) -> tuple[Any]:
        self._where(int(src), n)
        ctypes.memmove(dst, int(src), n)
        return (OK,)

    def _cuMemcpyDtoDAsync(self, dst: Any, src: Any, n: int, stream: Any) -> tuple[Any]:
        self._where(int(dst), n)
        self._where(int(src), n)
        ctypes.memmove(int(dst), int(src), n)
        return (OK,)

    def _cuMemcpyPeerAsync(self, dst: Any, dctx: Any, src: Any, sctx: Any, n: int,
                           stream: Any) -> tuple[Any]:
        return self._cuMemcpyDtoDAsync(dst, src, n, stream)

    def _memset(self, dst: Any, value: int, count: int, width: int) -> tuple[Any]:
        self._where(int(dst), count * width)
        pattern = value.to_bytes(width, "little") * count
        ctypes.memmove(int(dst), pattern, len(pattern))
        return (OK,)

    def _cuMemsetD8Async(self, dst: Any, value: int, n: int, stream: Any) -> tuple[Any]:
        return self._memset(dst, value, n, 1)

    def _cuMemsetD16Async(self, dst: Any, value: int, n: int, stream: Any) -> tuple[Any]:
        return self._memset(dst, value, n, 2)

    def _cuMemsetD32Async(self, dst: Any, value: int, n: int, stream: Any) -> tuple[Any]:
        return self._memset(dst, value, n, 4)

    # -- streams and events ---------------------------------------------------------------

    def _cuStreamCreateWithPriority(self, flags: int, priority: int) -> tuple[Any, Any]:
        h = self._id()
        self.streams.add(h)
        return OK, real.CUstream(h)

    def _cuStreamDestroy(self, stream: Any) -> tuple[Any]:
        self.streams.discard(int(stream))
        return (OK,)

    def _cuStreamSynchronize(self, stream: Any) -> tuple[Any]:
        return (OK,)

    def _cuStreamQuery(self, stream: Any) -> tuple[Any]:
        return (OK,)

    def _cuStreamWaitEvent(self, stream: Any, event: Any, flags: int) -> tuple[Any]:
        return (OK,)

    def _cuEventCreate(self, flags: int) -> tuple[Any, Any]:
        h = self._id()
        self.events[h] = 0.0
        return OK, real.CUevent(h)

    def _cuEventDestroy(self, event: Any) -> tuple[Any]:
        self.events.pop(int(event), None)
        return (OK,)

    def _cuEventRecord(self, event: Any, stream: Any) -> tuple[Any]:
        self.events[int(event)] = time.perf_counter()
        return (OK,)

    def _cuEventSynchronize(self, event: Any) -> tuple[Any]:
        return (OK,)

    def _cuEventQuery(self, event: Any) -> tuple[Any]:
        return (OK,)

    def _cuEventElapsedTime(self, start: Any, end: Any) -> tuple[Any, float]:
        return OK, (self.events[int(end)] - self.events[int(start)]) * 1e3

    # -- capture and graphs ---------------------------------------------------------------

    def _cuThreadExchangeStreamCaptureMode(self, mode: Any) -> tuple[Any, Any]:
        old, self.thread_mode = self.thread_mode, real.CUstreamCaptureMode(int(mode))
        return OK, old

    def _cuStreamBeginCapture(self, stream: Any, mode: Any) -> tuple[Any]:
        assert int(stream) not in self.capturing, "the stream is capturing already"
        self.capturing[int(stream)] = [real.CUstreamCaptureMode(int(mode)), [], True]
        return (OK,)

    def _cuStreamEndCapture(self, stream: Any) -> tuple[Any, Any]:
        _, work, valid = self.capturing.pop(int(stream))
        if not valid:
            return INVALIDATED, real.CUgraph(0)
        h = self._id()
        self.graphs[h] = work
        return OK, real.CUgraph(h)

    def _cuGraphInstantiate(self, graph: Any, flags: int) -> tuple[Any, Any]:
        h = self._id()
        self.graphs[h] = self.graphs[int(graph)]
        return OK, real.CUgraphExec(h)

    def _cuGraphLaunch(self, graph_exec: Any, stream: Any) -> tuple[Any]:
        for work in self.graphs[int(graph_exec)]:
            work()
        return (OK,)

    def _cuGraphExecDestroy(self, graph_exec: Any) -> tuple[Any]:
        del self.graphs[int(graph_exec)]
        return (OK,)

    def _cuGraphDestroy(self, graph: Any) -> tuple[Any]:
        del self.graphs[int(graph)]
        return (OK,)

    def _cuMemHostAlloc(self, n: int, flags: int) -> tuple[Any, int]:
        buf = ctypes.create_string_buffer(n)
        self.pinned[ctypes.addressof(buf)] = buf
        return OK, ctypes.addressof(buf)

    def _cuMemFreeHost(self, ptr: int) -> tuple[Any]:
        assert int(ptr) in self.pinned, "cuMemFreeHost of memory cuMemHostAlloc did not give"
        del self.pinned[int(ptr)]
        return (OK,)

    # -- modules and launches -------------------------------------------------------------

    def _cuModuleLoadData(self, image: Any) -> tuple[Any, Any]:
        data = bytes(image)
        assert data.endswith(b"\0") and b".version" in data and b".entry" in data
        h = self._id()
        self.modules[h] = data
        return OK, real.CUmodule(h)

    def _cuModuleGetFunction(self, module: Any, name: bytes) -> tuple[Any, Any]:
        assert b".entry " + name + b"(" in self.modules[int(module)], name
        h = self._id()
        self.functions[h] = name.decode()
        self.function_ptx[h] = self.modules[int(module)]
        return OK, real.CUfunction(h)

    def _cuLaunchKernel(self, f: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                        shmem: int, stream: Any, params: int, extra: int) -> tuple[Any]:
        assert (gy, gz, by, bz, shmem, extra) == (1, 1, 1, 1, 0, 0)
        assert 1 <= gx < 2**31 and 1 <= bx <= 1024
        arg = ctypes.c_void_p.from_address(params).value
        block = ctypes.c_uint64.from_address(arg).value
        self._where(block, BLOCK_ARGS)
        stack, cap = struct.unpack_from("<Qq", ctypes.string_at(block + BLOCK_STACK, 16))
        if cap:
            self._where(stack, cap * gx * bx)  # capacity bytes for every grid thread
        symbol = self.functions[int(f)]
        self.launches.append({"symbol": symbol, "grid": gx, "block": bx, "capacity": cap})
        self._entry(symbol, self.function_ptx[int(f)])(block)
        return (OK,)

    def _entry(self, symbol: str, ptx: bytes) -> Any:
        """The CPU entry of the kernel whose PTX entry is `symbol`: one of `kernels`, else any
        live kernel or overload (generated kernels such as wp.map's too) whose PTX is `ptx`."""
        from gradloom.kernel import _KERNELS

        for k in self.kernels:
            forward = symbol_for(k._kernel_ir(False)[0].name)
            if symbol in (forward, forward + "_adjoint"):
                return k.compiled().entry if symbol == forward else k.adjoint_compiled().entry
        variant = "adjoint" if symbol.endswith("_adjoint") else "forward"
        for o in [o for k in list(_KERNELS) for o in (k, *k.overloads.values())]:
            if _named_like(o, symbol) and _ptx_of(o, variant) == ptx:
                return o.compiled().entry if variant == "forward" else \
                    o.adjoint_compiled().entry
        raise AssertionError(f"no kernel has the entry {symbol}")


def _ptx_of(k: Any, variant: str) -> bytes | None:
    """Kernel k's PTX as the driver gets it; None where k has no such entry (another test
    module's kernel of the same name whose adjoint is refused, say)."""
    try:
        return bytes(k.cuda_entry("sm_90", variant)["ptx"].encode() + b"\0")
    except CompileError:
        return None


def _named_like(k: Any, symbol: str) -> bool:
    """Whether kernel k (not generic) may have the entry `symbol` (its function's name starts
    it; the PTX decides)."""
    return not getattr(k, "is_generic", False) and symbol.startswith(symbol_for(k.func.__name__))
