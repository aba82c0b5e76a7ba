"""Warp's tile annotations (`wp.tile[float, 8, 4]`), accepted so that code which mentions tiles
in signatures imports; gradloom has no tiles, so a kernel or func that uses one does not
compile (resolve_annotation refuses it with a message that says so)."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any


def _size(s: Any) -> Any:
    if typing.get_origin(s) is typing.Literal:
        return typing.get_args(s)[0]
    return s


@dataclass(frozen=True)
class TileAnnotation:
    """`wp.tile[dtype, m, n]` or `wp.tile[dtype, (m, n)]`: a tile's element type and shape."""

    dtype: Any
    shape: tuple[Any, ...] = ()

    def __repr__(self) -> str:
        return f"tile(dtype={self.dtype!r}, shape={self.shape})"


class tile:
    """Warp's tile type, for annotations only: gradloom has no tile programming model."""

    def __class_getitem__(cls, params: Any) -> TileAnnotation:
        args = params if isinstance(params, tuple) else (params,)
        dims = args[1] if len(args) == 2 and isinstance(args[1], tuple) else args[1:]
        return TileAnnotation(args[0], tuple(_size(d) for d in dims))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("gradloom has no tiles (Warp's tile programming model is not "
                        "implemented); wp.tile[...] is accepted in annotations only")
