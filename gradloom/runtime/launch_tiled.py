"""`wp.launch_tiled`: a launch over a grid of tiles, each handled by a block of `block_dim`
threads. gradloom runs a tile's operations in one thread (docs/design.md "Tiles"), as Warp does
on the CPU, where it forces block_dim to 1; the grid is `dim` and `wp.block_dim()` is 1."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import GradloomError
from .launch import launch


def launch_tiled(kernel: Any, dim: Any, inputs: Sequence[Any] = (),
                 outputs: Sequence[Any] = (), *args: Any, block_dim: int = 256,
                 **kwargs: Any) -> Any:
    """Launch kernel over the tile grid dim (Warp's `launch_tiled`); block_dim is checked and
    otherwise has no effect (one thread per tile: wp.block_dim() is 1)."""
    if not isinstance(block_dim, int) or isinstance(block_dim, bool) or block_dim < 1:
        raise GradloomError(f"launch_tiled: block_dim must be a positive int, got {block_dim!r}")
    return launch(kernel, dim, inputs, outputs, *args, **kwargs)
