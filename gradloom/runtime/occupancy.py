"""`wp.get_suggested_block_size`: the block size and minimum grid a kernel's launch should use."""

from __future__ import annotations

from typing import Any

from ..errors import LaunchError
from .device import get_device

#: the threads per block gradloom's CUDA launches use unless told otherwise (wp.launch's default)
CUDA_BLOCK = 256


def get_suggested_block_size(kernel: Any, device: Any = None) -> tuple[int, int]:
    """(block size, minimum number of blocks that fills the device), as Warp reports them.

    On the CPU both are 1, as in Warp (a block is one thread there). On a CUDA device:
    gradloom's default block of 256 threads, and enough blocks to give every multiprocessor
    its full complement of resident threads.
    """
    if not hasattr(kernel, "compiled"):
        raise TypeError(f"get_suggested_block_size() needs a @wp.kernel, got {type(kernel).__name__}")
    dev = get_device(device)
    if dev.is_cpu:
        return 1, 1
    if getattr(kernel, "is_generic", False):
        raise LaunchError(f"get_suggested_block_size({kernel.key}): a generic kernel has no "
                          "code for a CUDA device; pass an overload (wp.overload)")  # fmt: skip
    per_sm = max(1, dev.properties.max_threads_per_sm // CUDA_BLOCK)
    return CUDA_BLOCK, dev.sm_count * per_sm
