"""Tile types: `TileType` (a tile's element type and constant shape, what kernels compute with:
docs/design.md "Tiles") and Warp's annotation `wp.tile[float, 8, 4]`, which resolves to one."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

from .layout import RESOLVE


def _size(s: Any) -> Any:
    if typing.get_origin(s) is typing.Literal:
        return typing.get_args(s)[0]
    return s


@dataclass(frozen=True)
class TileType:
    """A tile's type: a scalar element type and a shape of constant positive sizes."""

    dtype: Any
    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def count(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self) -> str:
        return f"tile(dtype={self.dtype!r}, shape={self.shape})"


@dataclass(frozen=True)
class TileAnnotation:
    """`wp.tile[dtype, m, n]` or `wp.tile[dtype, (m, n)]`: a tile's element type and shape."""

    dtype: Any
    shape: tuple[Any, ...] = ()

    def __repr__(self) -> str:
        return f"tile(dtype={self.dtype!r}, shape={self.shape})"


@dataclass(frozen=True)
class StackType(TileType):
    """A tile stack's type (`wp.tile_stack(capacity=64, dtype=int)`): its elements' type and its
    capacity as the shape (capacity,); builtins/tile_stack.py keeps its count beside it."""

    def __repr__(self) -> str:
        return f"tile_stack(capacity={self.shape[0]}, dtype={self.dtype!r})"


def tile_stack(capacity: Any, dtype: Any = None) -> StackType:
    """Warp's tile stack type in annotations (`s: wp.tile_stack(capacity=64, dtype=int)`); in
    kernels `wp.tile_stack(...)` is the builtin (builtins/tile_stack.py)."""
    if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity <= 0:
        raise ValueError(f"tile_stack: capacity must be a positive integer, got {capacity!r}")
    return StackType(RESOLVE.get()(int if dtype is None else dtype), (capacity,))


tile_stack.__gl_kernel_builtin__ = "tile_stack"  # type: ignore[attr-defined]


class tile:
    """Warp's tile type in annotations (`wp.tile[float, 8, 4]`); in kernels `wp.tile(x)` is the
    builtin (builtins/tiles.py)."""

    #: in a kernel, `wp.tile(x)` calls the builtin of this name (frontend/expr.py)
    __gl_kernel_builtin__ = "tile"

    def __class_getitem__(cls, params: Any) -> TileAnnotation:
        args = params if isinstance(params, tuple) else (params,)
        dims = args[1] if len(args) == 2 and isinstance(args[1], tuple) else args[1:]
        return TileAnnotation(args[0], tuple(_size(d) for d in dims))

    def __new__(cls, *args: Any, dtype: Any = None, shape: Any = None, **kwargs: Any) -> Any:
        if not args and not kwargs and dtype is not None and shape is not None:
            # `wp.tile(dtype=float, shape=(2, 2))`: the annotation, as Warp's tile type makes
            dims = shape if isinstance(shape, tuple) else (shape,)
            return TileAnnotation(dtype, tuple(_size(d) for d in dims))
        raise TypeError("wp.tile(x) builds a tile inside a kernel or @wp.func; outside one, "
                        "wp.tile[...] (or wp.tile(dtype=..., shape=...)) is an annotation")
