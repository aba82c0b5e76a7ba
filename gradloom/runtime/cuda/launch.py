"""`wp.launch` on a CUDA device: the kernel's PTX loaded into the device's primary context, the
launch block packed on the host as for the CPU and copied to the device, a grid-stride launch
on a stream, and the error word read back.

The block (abi.py: dims, the error record, the stack words, start/end, the arguments packed by packing.Packer with
device pointers) is copied to a device buffer before each launch, on the launch's stream, and the
kernel's only parameter is that buffer's address; each (entry, stream) keeps its own buffer, so
launches queued on one stream never overwrite a block another still reads. A release-mode
forward launch returns at once (work queued, nothing read back). A launch that can report an
error — debug mode's bounds checks, `config.verify_fp`, or an adjoint using its stack — waits
for the stream and reads the status back, then raises as the CPU does.

The adjoint stack is one device buffer, slot-major: `capacity` bytes for every thread of the
grid (entry_nvptx.py), so the grid of such a launch is capped to the threads the device holds
at once and to a share of its memory. When a thread finds its stack full the launch cannot
resume where it stopped (GPU threads run in no order: others have already added their
gradients), so the arrays the adjoint writes and every gradient are saved before the launch,
restored, and the whole launch runs again with twice the capacity (kept for later launches).
"""

from __future__ import annotations

import ctypes
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ... import config
from ...abi import (
    BLOCK_STATUS,
    CLEAR_STATUS,
    STATUS_BYTES,
    STATUS_RECORD,
    STATUS_STACK_FULL,
    error_word,
)
from ...errors import GradloomError, KernelRuntimeError, LaunchError
from ...types import ArrayType, IndexedArrayType, size_of
from ...types import StructType as _StructType
from ..array.array import array
from ..array.watch import before_write
from ..backend import CUDA
from ..capturing import capturing
from ..device import Device
from ..launch import checks
from ..launch.launch import arg_array, array_keys
from ..launch.packing import ArgError, Getter, Packer, describe, flat_values
from ..layout import span
from ..stream import cuda_stream
from .array import address, is_device_array, with_grad
from .driver import Driver, current
from .foreign import adapt_device_args, is_device_foreign
from .memory import DeviceBuffer, address_of, dtod, host_bytes, htod, relaxed
from .stream import StreamHandle

#: adjoint stack bytes per thread at a kernel's first launch (doubled when a thread fills it)

FIRST_STACK = 256
#: the largest grid (gridDim.x) CUDA allows
MAX_GRID = 2**31 - 1
#: the adjoint stack may take at most this fraction of the device's memory
STACK_SHARE = 1 / 8
_ONES = {n: (1,) * (4 - n) for n in range(1, 5)}


# --------------------------------------------------------------------------------------------
# the grid


def ptx_arch(arch: int) -> str:
    """The PTX target for a device of compute capability `arch` (90 for sm_90): newer devices
    than sm_90 get sm_90 PTX, which their driver compiles (the PTX ISA gradloom emits,
    codegen/nvptx.PTX_ISA, names no newer target)."""
    return f"sm_{min(arch, 90)}"


def block_size(block_dim: Any) -> int:
    """The threads per block: Warp's `block_dim` (1 to 1024)."""
    if not isinstance(block_dim, int) or isinstance(block_dim, bool) \
            or not 1 <= block_dim <= 1024:
        raise LaunchError(f"block_dim must be an int from 1 to 1024, got {block_dim!r}")
    return block_dim


def grid_for(total: int, block: int, max_blocks: int = 0, resident: int = 0,
             stack_per_thread: int = 0, stack_budget: int = 0) -> int:
    """The number of blocks for `total` threads of `block` each (the entry's grid-stride loop
    covers the rest): at most `max_blocks` (> 0) and CUDA's limit; for a launch using the
    adjoint stack, at most the `resident` threads the device holds at once and what fits
    `stack_budget` bytes at `stack_per_thread` bytes each. 0 when not even one block fits."""
    blocks = min(-(-total // block), MAX_GRID)
    if max_blocks > 0:
        blocks = min(blocks, max_blocks)
    if stack_per_thread:
        if resident:
            blocks = min(blocks, max(1, resident // block))
        blocks = min(blocks, stack_budget // (stack_per_thread * block))
    return max(blocks, 0)


# --------------------------------------------------------------------------------------------
# packing with device arrays


def device_array_words(device: Device, value: Any, t: ArrayType) -> list[Any]:
    """An array argument's words (data, grad, shape, strides) for a launch on `device`."""
    if not isinstance(value, array) or value.ndim != t.ndim or value.dtype != t.dtype:
        raise ArgError(f"expected {t!r}, got {describe(value)}")
    if value.device is not device:
        raise ArgError(f"array is on device {value.device}, but the launch is on {device}")
    return list(value.launch_words())


def _struct_words(device: Device, value: Any, t: _StructType) -> list[Any]:
    if not isinstance(value, t.cls):
        raise ArgError(f"expected an instance of struct {t.name}, got {describe(value)}")
    out: list[Any] = []
    for name, ft in t.fields:
        try:
            out.extend(_device_getter(device, ft)(getattr(value, name), ft))
        except ArgError as exc:
            raise ArgError(f"field '{name}': {exc}") from None
    return out


def _no_indexed(value: Any, t: Any) -> list[Any]:
    raise ArgError("indexed arrays are not supported on CUDA devices yet")


def _device_getter(device: Device, t: Any) -> Getter:
    if isinstance(t, ArrayType):
        return functools.partial(device_array_words, device)
    if isinstance(t, _StructType):
        return functools.partial(_struct_words, device)
    if isinstance(t, IndexedArrayType):
        return _no_indexed
    return flat_values


class DevicePacker(Packer):
    """Packs arguments as Packer does, with array words checked to be on `device`."""

    RECALLS = False  # a CPU launch's words of an array say nothing of where it lives

    def __init__(self, kernel_key: str, params: Sequence[tuple[str, Any]], device: Device):
        super().__init__(kernel_key, params)
        self.getters = [(_device_getter(device, t), t) for t in self.types]


# --------------------------------------------------------------------------------------------
# a compiled entry on one device


class BlockParams:
    """A device launch block and cuLaunchKernel's kernelParams for it: the address of a
    void*[1] holding the address of the block's address."""

    def __init__(self, driver: Driver, ordinal: int, size: int) -> None:
        self.block = DeviceBuffer(driver, ordinal, size, None, pooled=False)
        self._word = ctypes.c_uint64(self.block.ptr)
        self._params = (ctypes.c_void_p * 1)(ctypes.addressof(self._word))
        self.params = ctypes.addressof(self._params)


class StreamSlot(BlockParams):
    """What launches of one entry on one stream reuse: the device copy of the launch block,
    the kernel-parameter array pointing at it, and the adjoint stack. Plain cuMemAlloc memory
    (not the stream-ordered pool): it may outlive the stream."""

    def __init__(self, driver: Driver, ordinal: int, size: int) -> None:
        super().__init__(driver, ordinal, size)
        self.driver, self.ordinal = driver, ordinal
        self._stack: DeviceBuffer | None = None

    def stack(self, nbytes: int) -> int:
        """The address of an adjoint stack of at least `nbytes` bytes."""
        if self._stack is None or self._stack.nbytes < nbytes:
            self._stack = None  # free the old one first
            self._stack = DeviceBuffer(self.driver, self.ordinal, nbytes, None, pooled=False)
        return self._stack.ptr


@dataclass(frozen=True)
class ThreadFacts:
    """How a kernel's threads share memory (passes/threads.ThreadPlan's words): why they
    must run in order (None: they need not), and the argument offsets they add into."""

    serial: str | None
    scatter: tuple[int, ...]
    #: launch checks a CPU plan may rely on (ThreadPlan.conditions); CUDA entries are planned
    #: without permutations, so there are none
    conditions: tuple[tuple[int, int, int, int], ...] = ()
    #: launch sizes a CPU plan's spans rely on (ThreadPlan.limits); none here, as conditions
    limits: tuple[tuple[int, int, int], ...] = ()


class CudaPrepared:
    """A kernel's forward or adjoint entry loaded on one CUDA device, with its packer."""

    def __init__(self, driver: Driver, kernel: Any, variant: str, device: Device) -> None:
        self.driver, self.kernel, self.variant, self.device = driver, kernel, variant, device
        self.ordinal = device.ordinal
        self.info = driver.info(self.ordinal)
        entry = kernel.cuda_entry(ptx_arch(self.info.arch), variant)
        if entry.get("order_dependent"):
            raise LaunchError(
                f"kernel '{kernel.key}': its adjoint cannot run on a CUDA device: "
                f"{entry['order_dependent']}, so gradients passed between threads through "
                "memory need the threads to run in order, which a GPU does not give; run the "
                "adjoint on the CPU")
        self.load(entry)
        params = tuple(kernel.params)
        #: what checks.status_error / verify_fp read: compiled.params, launch_ndim, writes
        self.compiled = self
        self.params = params
        self.launch_ndim = int(entry["launch_ndim"])
        self.uses_stack = bool(entry["uses_stack"])
        self.is_adjoint = variant == "adjoint"
        #: what a Tape reads (runtime/tape/adjoint.py): how the kernel touches each array (None:
        #: not analysable), and how its threads share memory
        self.access = entry.get("access")
        #: adjoints: what each launch checks of its threads' addresses (passes/overlap.py)
        self.launch_check = entry.get("launch_check")
        self.threads = ThreadFacts(*entry["threads"])
        keys = array_keys(params)
        access = self.access
        if access is None:
            access = {k: frozenset({"stores"}) for k in keys}
        self.writes = [k for k, flags in access.items() if flags & {"stores", "minmax"}]
        self.array_keys = keys
        self.packer = DevicePacker(kernel.key, params, device)
        self._pack = self.packer.whole.pack_into
        self.buf = bytearray(self.packer.block_bytes)
        self.buf_addr = address_of(self.buf)
        self.debug = config.mode == "debug"
        self.verify_fp = config.verify_fp
        #: launches read the status back (and so wait for the stream)
        self.checked = self.uses_stack or self.debug or self.verify_fp
        self.stack_capacity = FIRST_STACK
        self.slots: dict[int, StreamSlot] = {}

    def load(self, entry: dict[str, Any]) -> None:
        """Load the entry's PTX into the device's context (allowed during a graph capture:
        it is not stream work)."""
        driver = self.driver
        driver.activate(self.ordinal)
        with relaxed(driver):
            self.module = driver.call("cuModuleLoadData", entry["ptx"].encode() + b"\0")
            self.function = driver.call("cuModuleGetFunction", self.module,
                                        entry["symbol"].encode())

    def attributes(self) -> dict[str, int]:
        """Warp's `get_cuda_kernel_properties`: registers per thread and local memory bytes
        per thread of the loaded function, as the driver reports them."""
        api = self.driver.api
        attrs = {"register_count": api.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS,
                 "local_memory_size": api.CUfunction_attribute.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES}
        self.driver.activate(self.ordinal)
        return {name: int(self.driver.call("cuFuncGetAttribute", a, self.function))
                for name, a in attrs.items()}

    # -- the backend protocol (runtime/backend.py) ---------------------------------------------

    def adapt(self, args: Sequence[Any]) -> Sequence[Any]:
        """The arguments with foreign CUDA memory (torch, cupy, DLPack) wrapped as arrays."""
        if any(is_device_foreign(a) for a in args):
            return adapt_device_args(self.kernel.key, self.kernel.params, list(args),
                                     self.device)
        return args

    def admit(self, args: Sequence[Any]) -> Sequence[Any]:
        """The arguments adapted, after tapes that still need the contents of arrays the launch
        writes have copied them."""
        args = self.adapt(args)
        self.protect_writes(args)
        return args

    def with_gradients(self, args: Sequence[Any], adj: Sequence[Any]) -> list[Any]:
        return with_device_gradients(self.kernel.key, args, adj)

    def begin(self, tape: Any, kernel: Any, dims: tuple[int, ...], args: Sequence[Any],
              max_blocks: int, block_dim: int) -> Any:
        """A tape's record of the launch about to run (runtime/cuda/tape.py)."""
        make = functools.partial(CUDA.get("tape_record"), device=self.device,
                                 max_blocks=max_blocks, block_dim=block_dim)
        return tape.begin_launch(kernel, dims, args, self, make)

    def run(self, dims: tuple[int, ...], args: Sequence[Any], stream: Any = None,
            max_blocks: int = 0, block_dim: int = 256) -> None:
        """Queue the launch on `stream` (None: the device's current stream)."""
        self.run_on(dims, args, cuda_stream(self.device, stream), max_blocks, block_dim)

    def protect_writes(self, args: Sequence[Any]) -> None:
        """Before the launch writes its arrays: tapes that still need their contents copy them
        (device copies: runtime/cuda/tape.py)."""
        for key in self.writes:
            a = arg_array(args, key)
            if a is not None and a._mem.watchers:
                before_write(a)

    def slot(self, stream: StreamHandle) -> StreamSlot:
        s = self.slots.get(stream.value)
        if s is None:
            s = self.slots[stream.value] = StreamSlot(self.driver, self.ordinal, len(self.buf))
        return s

    def run_on(self, dims: tuple[int, ...], args: Sequence[Any], stream: StreamHandle,
               max_blocks: int = 0, block_dim: int = 256) -> None:
        if self.launch_ndim > len(dims):
            raise LaunchError(f"kernel '{self.kernel.key}' unpacks {self.launch_ndim} "
                              f"indices from wp.tid() but was launched with dim={dims!r}")
        values = self.packer.values(args)
        total = math.prod(dims)
        block = block_size(block_dim)
        if total == 0:
            return
        cap = capturing(self.device)
        if cap is not None:
            self.capture(cap, dims, values, total, block, max_blocks, stream)
            return
        saved = self.save(args, stream) if self.uses_stack or self.debug else None
        try:
            while True:
                err = self.launch_once(dims, values, total, block, max_blocks, stream)
                if err == 0:
                    break
                if err != STATUS_STACK_FULL:
                    raise checks.status_error(self, err, self.buf)
                self.restore(saved, stream)
                self.stack_capacity *= 2
        except BaseException:
            if self.debug:
                self.restore(saved, stream)
            raise
        if self.verify_fp:
            checks.verify_fp(self, args)

    def grid(self, total: int, block: int, max_blocks: int, cap: int) -> int:
        """The blocks of a launch (a stack-using one: what fits the device)."""
        blocks = grid_for(total, block, max_blocks, self.info.resident_threads, cap,
                          int(self.info.total_memory * STACK_SHARE))
        if blocks == 0:
            raise KernelRuntimeError(
                f"kernel '{self.kernel.key}': the adjoint needs more than {cap // 2} bytes per "
                f"thread to store its loops' values; {block} threads' worth does not fit in "
                f"1/{round(1 / STACK_SHARE)} of the memory of {self.device}")
        return blocks

    def capture(self, cap: Any, dims: tuple[int, ...], values: list[Any], total: int,
                block: int, max_blocks: int, stream: StreamHandle) -> None:
        """Queue the launch into the CUDA graph being captured (runtime/cuda/graph.py): a block
        and a stack of its own, owned by the graph; its block is copied in before the kernel
        at every replay (so its error word starts clear); a checked launch is read back after
        each replay."""
        if self.verify_fp:
            raise LaunchError(f"kernel '{self.kernel.key}': wp.config.verify_fp reads the arrays "
                              "back after each launch, which a captured graph cannot do")
        stack_cap = self.stack_capacity if self.uses_stack else 0
        blocks = self.grid(total, block, max_blocks, stack_cap)
        own = BlockParams(self.driver, self.ordinal, len(self.buf))
        stack = DeviceBuffer(self.driver, self.ordinal, stack_cap * blocks * block, None,
                             pooled=False).ptr if stack_cap else 0
        self._pack(self.buf, 0, *dims, *_ONES[len(dims)], *CLEAR_STATUS, stack, stack_cap, 0,
                   total, *values)
        htod(self.driver, self.ordinal, own.block.ptr, self.buf_addr, len(self.buf),
             stream.handle)
        self.driver.call("cuLaunchKernel", self.function, blocks, 1, 1, block, 1, 1, 0,
                         stream.handle, own.params, 0)
        cap.keep(own)
        if self.checked:
            cap.check(self, bytes(self.buf), own.block.ptr)

    def launch_once(self, dims: tuple[int, ...], values: list[Any], total: int, block: int,
                    max_blocks: int, stream: StreamHandle) -> int:
        """Pack, copy and launch; the error word if the launch is checked, else 0."""
        cap = self.stack_capacity if self.uses_stack else 0
        blocks = self.grid(total, block, max_blocks, cap)
        slot = self.slot(stream)
        stack = slot.stack(cap * blocks * block) if cap else 0
        self._pack(self.buf, 0, *dims, *_ONES[len(dims)], *CLEAR_STATUS, stack, cap, 0, total,
                   *values)
        drv = self.driver
        htod(drv, self.ordinal, slot.block.ptr, self.buf_addr, len(self.buf), stream.handle)
        drv.call("cuLaunchKernel", self.function, blocks, 1, 1, block, 1, 1, 0, stream.handle,
                 slot.params, 0)
        if not self.checked:
            return 0
        status = host_bytes(drv, self.ordinal, slot.block.ptr + BLOCK_STATUS, STATUS_BYTES,
                            stream.handle)
        self.buf[STATUS_RECORD] = status
        return error_word(self.buf)

    # -- saving what a rerun must undo --------------------------------------------------------

    def save(self, args: Sequence[Any], stream: StreamHandle) -> list[tuple[int, DeviceBuffer]]:
        """Device copies of the byte spans of the arrays the launch writes and of every
        gradient it is given."""
        targets = [arg_array(args, k) for k in self.writes]
        targets += [a.grad for k in self.array_keys if (a := arg_array(args, k)) is not None]
        spans: dict[int, int] = {}
        for a in targets:
            if is_device_array(a) and a.size:
                lo, hi = span(a.shape, a.strides, size_of(a.dtype))
                spans[address(a) + lo] = max(spans.get(address(a) + lo, 0), hi - lo)
        saved = []
        for ptr, n in spans.items():
            copy = DeviceBuffer(self.driver, self.ordinal, n, stream)
            dtod(self.driver, self.ordinal, copy.ptr, self.ordinal, ptr, n, stream.handle)
            saved.append((ptr, copy))
        return saved

    def restore(self, saved: list[tuple[int, DeviceBuffer]] | None, stream: StreamHandle
                ) -> None:
        for ptr, copy in saved or ():
            dtod(self.driver, self.ordinal, ptr, self.ordinal, copy.ptr, copy.nbytes,
                 stream.handle)


def prepared(kernel: Any, variant: str, device: Device) -> CudaPrepared:
    """The kernel's entry on `device` (compiled or loaded from the cache, then loaded into the
    device's context, once per driver)."""
    if not hasattr(kernel, "cuda_entry"):
        raise LaunchError(f"wp.launch() needs a @wp.kernel, got {type(kernel).__name__}")
    driver = current()
    entries = driver.kernels.get(kernel)
    if entries is None:
        entries = driver.kernels[kernel] = {}
    prepared = entries.get((variant, device.ordinal))
    if prepared is None:
        prepared = entries[variant, device.ordinal] = CudaPrepared(driver, kernel, variant,
                                                                   device)
    return prepared


def _forget_prepared() -> None:
    from .driver import all_drivers

    for driver in all_drivers():
        driver.kernels.clear()


config._add_rebuild_hook(_forget_prepared)


# --------------------------------------------------------------------------------------------
# wp.launch


def with_device_gradients(kernel_key: str, args: Sequence[Any], adj: Sequence[Any]
                          ) -> list[Any]:
    """Arguments whose arrays use the given gradient arrays (None: the array's own .grad)."""
    out = list(args)
    for i, (value, g) in enumerate(zip(args, adj, strict=True)):
        if g is None or not is_device_array(value):
            continue
        try:
            out[i] = with_grad(value, g)
        except GradloomError as exc:
            raise LaunchError(f"kernel '{kernel_key}' adjoint argument {i}: {exc}") from None
    return out
