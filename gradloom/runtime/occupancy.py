"""`wp.get_suggested_block_size`: the block size and minimum grid a kernel's launch should use;
`wp.get_cuda_kernel_properties` and `wp.get_cuda_max_cluster_dim`: what a compiled CUDA kernel
uses and allows."""

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


def _concrete_kernel(what: str, kernel: Any) -> Any:
    """The kernel a CUDA query is about: a @wp.kernel (TypeError otherwise), not generic."""
    if not hasattr(kernel, "compiled") or not hasattr(kernel, "module"):
        raise TypeError(f"{what}() expected a wp.Kernel, got {type(kernel).__name__}: {kernel!r}")
    if getattr(kernel, "is_generic", False):
        raise RuntimeError(f"{what}({kernel.key}): a generic kernel requires a concrete overload; "
                           "pass one made by wp.overload()")
    return kernel


def _block_dim(what: str, block_dim: Any) -> None:
    if block_dim is not None and (isinstance(block_dim, bool) or not isinstance(block_dim, int)
                                  or block_dim < 1):
        raise ValueError(f"{what}(): block_dim must be a positive int, got {block_dim!r}")


def get_cuda_kernel_properties(kernel: Any, device: Any = None,
                               block_dim: int | None = None) -> dict[str, int]:
    """Warp's query of a compiled CUDA kernel: {"register_count": registers per thread,
    "local_memory_size": bytes of local memory per thread}, compiling and loading the kernel
    on the device first. A CPU device is refused (RuntimeError), as a generic kernel is; the
    values belong to gradloom's PTX for the kernel (block_dim does not change it here)."""
    what = "get_cuda_kernel_properties"
    kernel = _concrete_kernel(what, kernel)
    _block_dim(what, block_dim)
    dev = get_device(device)
    if not dev.is_cuda:
        raise RuntimeError(f"{what}({kernel.key}) requires a CUDA device, got {dev}")
    return dict(dev.backend.prepared(kernel, "forward", dev).attributes())


def get_cuda_max_cluster_dim(kernel: Any, device: Any = None, block_dim: int | None = None) -> int:
    """Warp's largest `cluster_dim` a kernel could launch with on a device: 1 where clusters
    cannot form (the CPU; CUDA devices before sm_90). gradloom's CUDA launches do not form
    clusters, so it is 1 on every device."""
    what = "get_cuda_max_cluster_dim"
    kernel = _concrete_kernel(what, kernel)
    _block_dim(what, block_dim)
    get_device(device)
    return 1
