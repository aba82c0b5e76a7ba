"""The CUDA backend's registration: imports the CUDA modules and gives generic code their parts.

Loaded by name (runtime/backend.py) the first time generic code needs something of CUDA; no
generic module imports it or any module of this package (but the driver loader, which the
device layer asks which devices exist), so their dependencies point this way only.
"""

from __future__ import annotations

from ..backend import CUDA, DeviceProperties
from ..device import Device
from . import array, command, driver, foreign, grads, graph, launch, stream, tape


def properties(device: Device) -> DeviceProperties:
    """What the driver reports of the device (read once, runtime/cuda/driver.py)."""
    info = driver.current().info(device.ordinal)
    return DeviceProperties(name=info.name, arch=info.arch, sm_count=info.sm_count,
                            max_threads_per_sm=info.max_threads_per_sm,
                            total_memory=info.total_memory, is_mempool_supported=info.mempool,
                            is_uva=info.uva,
                            max_shared_memory_per_block=info.max_shared_memory_per_block)


CUDA.provide(
    properties=properties,
    # arrays in device memory
    init_array=array.init_device_array, copy_arrays=array.copy_arrays,
    copy_flat=array.copy_flat, write_host=array.write_host,
    wrap_torch_cuda=foreign.wrap_torch_cuda, from_capsule=foreign.from_capsule,
    from_dlpack_producer=foreign.from_dlpack_producer,
    # the Tape's gradient steps of array operations
    overwrite_step=grads.overwrite_step, copy_step=grads.copy_step,
    range_step=grads.range_step,
    # launches, recorded commands and tape records
    prepared=launch.prepared, command=command.CudaLaunch,
    tape_record=tape.CudaLaunchRecord,
    # streams and events
    new_stream=stream.new_stream, new_event=stream.new_event,
    default_stream=stream.default_stream, synchronize=stream.synchronize,
    # CUDA graph capture
    begin_capture=graph.begin, end_capture=graph.end,
)
