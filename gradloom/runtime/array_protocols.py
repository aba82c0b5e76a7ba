"""What `wp.array` offers other frameworks: DLPack export and 64-byte-aligned allocation.

The DLPack protocol (`__dlpack__`, `__dlpack_device__`) is a mixin, so that array.py stays
within its size budget; the memory is the array's numpy storage, so the export is zero-copy
and numpy's own DLPack implementation does the work. Allocations are 64-byte aligned: JAX
shares (rather than copies) only buffers aligned like that, and wide vector loads like it too.
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


class ArrayProtocols:
    """DLPack export for `wp.array` (CPU memory, zero-copy)."""

    def numpy(self) -> Any:  # provided by `array`
        raise NotImplementedError

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule sharing this array's memory (vector/matrix components trail)."""
        if stream is not None and stream != -1:
            raise BufferError("gradloom arrays live on the CPU: __dlpack__ takes no stream")
        kwargs: dict[str, Any] = {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        data = self.numpy()
        if data.dtype.names is not None:
            raise GradloomError(
                f"cannot export an array of structs (dtype {data.dtype}) through DLPack: "
                "DLPack has no struct types"
            )
        try:
            return data.__dlpack__(**kwargs)
        except TypeError:  # numpy < 2 knows only `stream`
            if copy:
                return data.copy().__dlpack__()
            return data.__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (DLPACK_CPU, 0)
