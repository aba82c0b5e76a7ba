"""`wp.launch_tiled`: a launch over a grid of tiles, each handled by a block of `block_dim`
threads. As in Warp, the block is the launch's last dimension (`i, lane = wp.tid()`); gradloom
runs a tile's operations in one thread (docs/design.md §3b), as Warp does on the CPU, where it
forces block_dim to 1: the launch is `dim + [1]` and `wp.block_dim()` is 1. With
`wp.config.enable_cpu_blocks`, a CPU launch of a kernel without tiles is `dim + [block_dim]`
and `wp.block_dim()` is block_dim (blocks.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import GradloomError
from ..device import current_device, get_device
from .blocks import cpu_block_dim
from .launch import launch

_DEVICE_ARG = 2  # launch's positional arguments after outputs: adj_inputs, adj_outputs, device


def launch_tiled(kernel: Any, dim: Any, inputs: Sequence[Any] = (),
                 outputs: Sequence[Any] = (), *args: Any, block_dim: int = 256,
                 **kwargs: Any) -> Any:
    """Launch kernel over the tile grid dim plus a block dimension (Warp's `launch_tiled`): of
    extent 1 (one thread per tile), or block_dim on the CPU with `config.enable_cpu_blocks`
    for a kernel without tiles."""
    if (type(block_dim) is not int and (not isinstance(block_dim, int)
                                       or isinstance(block_dim, bool))) or block_dim < 1:
        raise GradloomError(f"launch_tiled: block_dim must be a positive int, got {block_dim!r}")
    width, extra = _cpu_block(kernel, block_dim, [*inputs, *outputs], args, kwargs)
    if extra is not None:
        kernel, kwargs = extra, {**kwargs, "block_dim": width}
    # a tuple of the grid and the block: launch's quick path for grids (µs per launch)
    grid = (dim, width) if isinstance(dim, int) else (*dim, width)
    if len(grid) > 4:
        raise GradloomError(f"launch_tiled: dim has {len(grid) - 1} dimensions; at most 3 (the "
                            "block takes the fourth)")
    return launch(kernel, grid, inputs, outputs, *args, **kwargs)


def _cpu_block(kernel: Any, block_dim: int, values: list[Any], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> tuple[int, Any]:
    """The block's extent and, where it is not 1, the kernel variant that runs it."""
    if block_dim == 1:
        return 1, None
    device = kwargs.get("device", args[_DEVICE_ARG] if len(args) > _DEVICE_ARG else None)
    dev = current_device() if device is None else get_device(device)
    if not dev.is_cpu:
        return 1, None
    width = cpu_block_dim(block_dim)  # checked (at most 1024) with CPU blocks on or off
    if width == 1:
        return 1, None
    if getattr(kernel, "is_generic", False):
        kernel = kernel.specialize(values)
    variant = kernel.block_variant(width)
    return (1, None) if variant.cpu_block_dim == 1 else (width, variant)
