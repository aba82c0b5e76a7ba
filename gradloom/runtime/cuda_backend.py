"""The CUDA backend's registration: imports the CUDA modules and gives generic code their parts.

Loaded by name (runtime/backend.py) the first time generic code needs something of CUDA; no
generic module imports it or any CUDA module, so their dependencies point this way only.
"""

from __future__ import annotations

from . import (
    cuda_array,
    cuda_command,
    cuda_graph,
    cuda_stream,
    cuda_tape,
    device_grads,
    foreign_cuda,
    launch_cuda,
)
from .backend import CUDA

CUDA.provide(
    # arrays in device memory
    init_array=cuda_array.init_device_array, copy_arrays=cuda_array.copy_arrays,
    copy_flat=cuda_array.copy_flat, write_host=cuda_array.write_host,
    wrap_torch_cuda=foreign_cuda.wrap_torch_cuda, from_capsule=foreign_cuda.from_capsule,
    from_dlpack_producer=foreign_cuda.from_dlpack_producer,
    # the Tape's gradient steps of array operations
    overwrite_step=device_grads.overwrite_step, copy_step=device_grads.copy_step,
    range_step=device_grads.range_step,
    # launches, recorded commands and tape records
    prepared=launch_cuda.prepared, command=cuda_command.CudaLaunch,
    tape_record=cuda_tape.CudaLaunchRecord,
    # streams and events
    new_stream=cuda_stream.new_stream, new_event=cuda_stream.new_event,
    default_stream=cuda_stream.default_stream, synchronize=cuda_stream.synchronize,
    # CUDA graph capture
    begin_capture=cuda_graph.begin, end_capture=cuda_graph.end,
)
