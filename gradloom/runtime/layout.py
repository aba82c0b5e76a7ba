"""Facts of a strided memory layout (shape, byte strides, element bytes), in one home: the byte
span its elements occupy, the packed strides, whether a layout is contiguous, whether two
layouts address the same elements. Host storage (numpy) and device arrays ask these alike;
an element's bytes are its type's size (`types.size_of`)."""

from __future__ import annotations

import math
from typing import Protocol


class Strided(Protocol):
    """Anything with a shape and byte strides: a numpy array, a gradloom array."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def strides(self) -> tuple[int, ...]: ...


def span(shape: tuple[int, ...], strides: tuple[int, ...], item_bytes: int) -> tuple[int, int]:
    """(lo, hi): the byte range [ptr + lo, ptr + hi) a layout's elements occupy (lo <= 0 where
    strides are negative); (0, 0) for no elements."""
    if math.prod(shape) == 0:
        return 0, 0
    lo = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0) + item_bytes
    return lo, hi


def packed_strides(shape: tuple[int, ...], item_bytes: int) -> tuple[int, ...]:
    """The row-major strides of a new allocation of `shape` (Warp's `strides_from_shape`: a
    dimension of length 0 makes the strides before it 0)."""
    out, step = [0] * len(shape), item_bytes
    for i in range(len(shape) - 1, -1, -1):
        out[i] = step
        step *= shape[i]
    return tuple(out)


def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...], item_bytes: int) -> bool:
    """Whether the strides are exactly the packed ones, as Warp's `array.is_contiguous` decides:
    a dimension of length 1 or 0 counts too, so a view with a wider stride there is not
    contiguous (numpy's C-contiguous flag would ignore it)."""
    step = item_bytes
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if s != step:
            return False
        step *= n
    return True


def same_layout(a: Strided, b: Strided) -> bool:
    """Whether `a` and `b` address the same elements at the same byte offsets from their data
    pointers: the same shape, and the same strides where a dimension has more than one element
    (a gradient shares its array's layout, and the launch passes it the array's strides). Any
    two layouts of no elements are the same."""
    if a.shape != b.shape:
        return False
    return math.prod(a.shape) == 0 or all(n <= 1 or sa == sb for n, sa, sb in zip(a.shape, a.strides, b.strides, strict=True))
