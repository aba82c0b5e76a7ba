"""The CPU backend's registration: imports the CPU's modules and provides their parts.

Loaded by name (runtime/backend.py) the first time generic code needs the CPU backend; generic
modules never import it, so their dependencies point this way only. An array's memory here is
host memory: numpy views of it are the memory itself.
"""

from __future__ import annotations

import functools
from typing import Any

from ..array.array import array
from ..array.ops import copy_flat_host
from ..array.storage import copy_host
from ..backend import CPU_BACKEND, DeviceProperties
from ..device import CPU, Device
from ..host_malloc import tune_for_large_arrays
from ..launch import capture
from ..stream import Stream, StreamError
from . import command, launch

# arrays made at every step come from the heap, not a fresh mapping each (host_malloc.py)
tune_for_large_arrays()


def init_array(obj: array, device: Device, data: Any, dtype: Any,
               dims: tuple[int, ...] | None, strides: Any, ptr: int | None,
               capacity: int | None, ndim: int | None, requires_grad: bool, deleter: Any,
               copy: bool) -> None:
    """`array.__init__` in host memory (`deleter`: of memory given by `ptr`)."""
    obj._init_host(device, data, dtype, dims, strides, ptr, capacity, ndim, requires_grad, copy,
                   deleter)


def write_host(a: array, values: Any) -> None:
    """Store host values into a host array (nothing to do when they are its own memory)."""
    mem = a.numpy()
    if values is not mem:
        mem[...] = values


def on_host_only(*args: Any) -> bool:
    """A gradient step 'in device memory': host memory has no other place; the caller runs
    the step on the array's own numpy view."""
    return False


def new_stream(device: Device, priority: int, external: Any) -> None:
    """A CPU stream has no native stream: work runs as it is issued."""
    if external is not None:
        raise StreamError("Stream(cuda_stream=...) wraps a CUDA stream: pass a CUDA device")


def new_event(device: Device, enable_timing: bool, interprocess: bool, external: Any) -> None:
    """A CPU event has no native event: it is complete once recorded."""
    if external is not None:
        raise StreamError("Event(cuda_event=...) wraps a CUDA event: pass a CUDA device")


@functools.cache
def default_stream(device: Device) -> Stream:
    """The CPU's default stream (it holds no state, so one object serves every context)."""
    return Stream(CPU)


def properties(device: Device) -> DeviceProperties:
    """The CPU as Warp's `Device` describes it: its alias, no compute capability or SMs."""
    return DeviceProperties(name=device.alias)


def synchronize(device: Device) -> None:
    """CPU work has always finished when its call returns."""


CPU_BACKEND.provide(
    properties=properties,
    # launches and recorded launches
    prepared=launch.prepared, command=command.command,
    # memory
    init_array=init_array, copy_arrays=copy_host, copy_flat=copy_flat_host,
    write_host=write_host,
    # the Tape's gradient steps of array operations
    overwrite_step=on_host_only, copy_step=on_host_only, range_step=on_host_only,
    # streams and events
    new_stream=new_stream, new_event=new_event, default_stream=default_stream,
    synchronize=synchronize,
    # graph capture: a Graph of recorded operations (runtime/launch/capture.py)
    begin_capture=capture.begin_host_capture, end_capture=capture.end_host_capture,
)
