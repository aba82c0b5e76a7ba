"""Host allocations other frameworks can share: 64-byte-aligned numpy storage.

Allocations are 64-byte aligned: JAX shares (rather than copies) only buffers aligned like
that, and wide vector loads like it too. (DLPack export of host arrays: runtime/array/host.py.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradloom.errors import GradloomError
from gradloom.runtime.layout import packed_strides

#: DLPack's device type code for CPU memory (kDLCPU).
DLPACK_CPU = 1

#: Byte alignment of array allocations.
ALIGNMENT = 64


def aligned_zeros(shape: tuple[int, ...], dtype: Any) -> Any:
    """A zeroed C-contiguous numpy array whose data starts on an ALIGNMENT-byte boundary."""
    dt = np.dtype(dtype)
    nbytes = math.prod(shape) * dt.itemsize
    try:
        if nbytes >= 1 << 62:
            raise MemoryError
        buf = np.zeros(nbytes + ALIGNMENT, dtype=np.uint8)
    except MemoryError:
        raise GradloomError(f"cannot allocate an array of shape {shape} ({nbytes:,} bytes): "
                            "not enough memory") from None
    start = -buf.ctypes.data % ALIGNMENT
    if nbytes == 0:  # packed strides that count the empty dims, as Warp's: (1, 0) vec2f is (0, 8, 4)
        return np.ndarray(shape, dtype=dt, buffer=buf, offset=start,
                          strides=packed_strides(shape, dt.itemsize))
    return buf[start : start + nbytes].view(dt).reshape(shape)


def bytes_like(size: int, address: int, zero: bool = True) -> Any:
    """`size` bytes (uint8) starting at an address congruent to `address` modulo ALIGNMENT, so
    that views at the same offsets as into memory starting at `address` are aligned as those
    are; zeroed, or left as they come (`zero` False: the caller writes every byte it uses)."""
    buf = (np.zeros if zero else np.empty)(size + ALIGNMENT, dtype=np.uint8)
    start = (address - buf.ctypes.data) % ALIGNMENT
    return buf[start:start + size]


def aligned_copy(data: Any) -> Any:
    """`data` (a C-contiguous numpy array), or an aligned copy of it when it is not aligned
    (an empty one: one with the packed strides numpy does not give it)."""
    if data.size == 0:
        return aligned_zeros(data.shape, data.dtype)
    if data.ctypes.data % ALIGNMENT == 0:
        return data
    out = aligned_zeros(data.shape, data.dtype)
    out[...] = data
    return out
