"""Facts of a strided memory layout (shape, byte strides, element bytes), in one home: the byte
span its elements occupy and whether it is C-contiguous. Host and device arrays ask these alike."""

from __future__ import annotations

import math


def span(shape: tuple[int, ...], strides: tuple[int, ...], item_bytes: int) -> tuple[int, int]:
    """(lo, hi): the byte range [ptr + lo, ptr + hi) a layout's elements occupy (lo <= 0 where
    strides are negative); (0, 0) for no elements."""
    if math.prod(shape) == 0:
        return 0, 0
    lo = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0) + item_bytes
    return lo, hi


def is_c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...], item_bytes: int) -> bool:
    """Whether a layout is C-contiguous (strides of dimensions of length 1 do not matter, as in
    numpy's flag)."""
    if math.prod(shape) == 0:
        return True
    step = item_bytes
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n != 1 and s != step:
            return False
        step *= n
    return True
