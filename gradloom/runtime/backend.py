"""Device backends: the protocol a device kind implements, and the registry that loads one by name.

Generic runtime code (arrays, copies, launches, the Tape, capture) never imports a backend. It
asks the device for its backend (`device.backend`) and calls a part of the protocol below; the
first use of a backend imports its registration module by name (`runtime/cpu/backend.py`,
`runtime/cuda/backend.py`), which imports that backend's modules and provides the parts. So
dependencies point from the backends to the generic runtime, a process that never touches a GPU
never loads the CUDA code, and the CPU is a backend like any other (as tinygrad loads
`ops_<device>`, Triton its drivers and Dr.Jit its per-backend thread states).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

#: The protocol: every backend provides each of these parts (tests/test_backends.py checks it).
PROTOCOL: dict[str, str] = {
    # what Warp's `Device` reports
    "properties": "(device) -> DeviceProperties",
    # launches
    "prepared": "(kernel, variant, device) -> the kernel's entry of that variant, loaded on the "
                "device: `admit(args)`, `adapt(args)`, `with_gradients(args, adj)`, "
                "`protect_writes(args)`, `begin(tape, kernel, dims, args, max_blocks, block_dim)`, "
                "`run(dims, args, stream, max_blocks, block_dim)`",
    "command": "(kernel, dims, args, adj, device, stream, max_blocks, block_dim, record_tape) -> "
               "a recorded launch (`wp.launch(..., record_cmd=True)`)",
    # memory behind arrays
    "init_array": "(array, device, data, dtype, shape, strides, ptr, capacity, ndim, "
                  "requires_grad, deleter, copy) -> None: allocate or wrap the array's memory",
    "copy_arrays": "(dest, src) -> None: copy elements between arrays of one shape (the "
                   "backend `transfer_backend` picks)",
    "copy_flat": "(dest, src, dest_offset, src_offset, count) -> None: a flat range copy "
                 "between contiguous arrays (ranges checked by the caller)",
    "write_host": "(array, values) -> None: store host values (numpy, the array's shape) into "
                  "the array's memory",
    # the Tape's gradient steps of array operations, run in the device's memory (False: not
    # handled there; the caller runs the step on host views, runtime/recording.on_host)
    "overwrite_step": "(grad, where) -> bool",
    "copy_step": "(dest_grad, src_grad, where) -> bool",
    "range_step": "(dest_grad, src_grad, dest_offset, src_offset, count) -> bool",
    # streams and events (None: the device runs work as it is issued)
    "new_stream": "(device, priority, external) -> the native stream of a `wp.Stream`, or None",
    "new_event": "(device, enable_timing, interprocess, external) -> a native event, or None",
    "default_stream": "(device) -> the device's default `wp.Stream`",
    # graph capture
    "begin_capture": "(device, stream, capture_mode, apic) -> None: the capture becomes the "
                     "context's (runtime/capturing.ACTIVE_CAPTURE)",
    "end_capture": "(capture) -> the graph `wp.capture_launch` runs",
    "synchronize": "(device) -> None: wait for all of the device's queued work",
}


@dataclass(frozen=True)
class DeviceProperties:
    """Warp's facts about a device (`Device.name`, `arch`, `sm_count`, ...), as its backend
    reports them."""

    name: str
    #: compute capability as an int (90 for sm_90); 0 where there is none
    arch: int = 0
    sm_count: int = 0
    max_threads_per_sm: int = 0
    total_memory: int = 0
    is_mempool_supported: bool = False
    is_uva: bool = False
    max_shared_memory_per_block: int = 0


class Backend:
    """One device kind's implementation: its parts become attributes when its registration
    module (loaded by name on first use) calls `provide`."""

    def __init__(self, kind: str, module: str, host_memory: bool) -> None:
        self.kind, self.module = kind, module
        #: an array's memory is host memory (its numpy() is that memory, not a copy)
        self.host_memory = host_memory

    def provide(self, **parts: Any) -> None:
        """Register parts (the backend's registration module calls this once)."""
        self.__dict__.update(parts)

    def get(self, part: str) -> Any:
        """A part, the backend loaded by name on first use."""
        return getattr(self, part)

    def __getattr__(self, part: str) -> Any:
        # reached only for a part not provided yet: load the backend, then look again
        if part.startswith("__") or self.__dict__.get("_loaded"):
            raise AttributeError(f"the {self.kind} backend provides no part {part!r}")
        self.__dict__["_loaded"] = True  # before the import: a part asked for meanwhile fails
        try:
            importlib.import_module(self.module)
        except BaseException:
            del self.__dict__["_loaded"]
            raise
        return getattr(self, part)

    def __repr__(self) -> str:
        return f"<gradloom {self.kind} backend>"


#: The host's cores: runtime/cpu/backend.py registers the parts
CPU_BACKEND = Backend("cpu", "gradloom.runtime.cpu.backend", host_memory=True)
#: NVIDIA GPUs: runtime/cuda/backend.py registers the parts
CUDA = Backend("cuda", "gradloom.runtime.cuda.backend", host_memory=False)


def transfer_backend(dest: Backend, src: Backend) -> Backend:
    """The backend that moves data between memory of `dest`'s and `src`'s kinds: a device
    backend for any copy that touches device memory (it knows the way to and from the host)."""
    return dest if not dest.host_memory else src
