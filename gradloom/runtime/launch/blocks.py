"""The block width a launch runs with (Warp 1.19's `_resolve_launch_block_dim`): on CUDA the
requested one (256 when none); on the CPU 1, or with `wp.config.enable_cpu_blocks` the requested
one (2 to 1024), given to the kernel as the `wp.block_dim()` of its `Kernel.block_variant`."""

from __future__ import annotations

from typing import Any

from ... import config

#: the widest CPU block (Warp's cap, the CUDA architectural maximum), with CPU blocks on or off
MAX_CPU_BLOCK_DIM = 1024
#: a CUDA launch's block width when none is requested
CUDA_DEFAULT = 256


def cpu_block_dim(requested: Any) -> int:
    """The CPU block width of a launch requesting `requested` (None or <= 0: the default, 1)."""
    if not isinstance(requested, int) or isinstance(requested, bool) or requested <= 1:
        return 1
    if requested > MAX_CPU_BLOCK_DIM:
        raise ValueError(f"block_dim must be at most {MAX_CPU_BLOCK_DIM} on CPU, got {requested}")
    return requested if config.enable_cpu_blocks else 1


def launch_blocks(kernel: Any, cpu: bool, requested: Any) -> tuple[Any, Any]:
    """The kernel a launch runs and its block width: on the CPU the kernel's `block_variant`
    (itself at width 1, or where it holds tiles: then width 1 too)."""
    if not cpu:
        none = requested is None or (isinstance(requested, int) and requested <= 0)
        return kernel, CUDA_DEFAULT if none else requested
    width = cpu_block_dim(requested)  # checked, whatever runs
    held = getattr(kernel, "cpu_block_dim", 1)
    if held != 1:  # a variant a Tape or a command recorded: its width stays, option on or off
        return kernel, held
    if width == 1:
        return kernel, 1
    variant = kernel.block_variant(width)
    return variant, variant.cpu_block_dim
