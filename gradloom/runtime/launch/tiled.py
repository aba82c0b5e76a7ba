"""`wp.launch_tiled`: a launch over a grid of tiles, each handled by a block of `block_dim`
threads. As in Warp, the block is the launch's last dimension (`i, lane = wp.tid()`); gradloom
runs a tile's operations in one thread (docs/design.md §3b), as Warp does on the CPU, where it
forces block_dim to 1: the launch is `dim + [1]` and `wp.block_dim()` is 1."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import GradloomError
from .launch import launch


def launch_tiled(kernel: Any, dim: Any, inputs: Sequence[Any] = (),
                 outputs: Sequence[Any] = (), *args: Any, block_dim: int = 256,
                 **kwargs: Any) -> Any:
    """Launch kernel over the tile grid dim plus a block dimension of extent 1 (Warp's
    `launch_tiled`); block_dim is checked and otherwise has no effect (one thread per tile)."""
    if (type(block_dim) is not int and (not isinstance(block_dim, int)
                                       or isinstance(block_dim, bool))) or block_dim < 1:
        raise GradloomError(f"launch_tiled: block_dim must be a positive int, got {block_dim!r}")
    # a tuple of the grid and the block: launch's quick path for grids (µs per launch)
    grid = (dim, 1) if isinstance(dim, int) else (*dim, 1)
    if len(grid) > 4:
        raise GradloomError(f"launch_tiled: dim has {len(grid) - 1} dimensions; at most 3 (the "
                            "block takes the fourth)")
    return launch(kernel, grid, inputs, outputs, *args, **kwargs)
