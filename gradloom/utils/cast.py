"""`array_cast`: convert elements between dtypes (Warp 1.19's `warp.utils.array_cast`), with numpy.

Arrays of the same rank and element shape convert element by element; otherwise both are seen
as flat lists of scalars (`count` then counts elements of the input). Float-to-int conversion
truncates toward zero, as a C cast. Under a Tape a float-to-float cast passes gradients back
(Warp's cast kernel is differentiable too); inside a graph capture the cast is recorded.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..runtime.array.array import NDArray, array, elem_shape
from ..runtime.array.ops import copy
from ..runtime.array.watch import before_write
from ..runtime.recording import record_op
from ..types import float16, float32, float64
from ..types.query import scalar_of
from ._common import (
    UtilsRuntimeError,
    captured,
    check_array,
    check_same_device,
    taping,
    write,
)

_FLOATS = (float16, float32, float64)


def _scalars(a: array) -> tuple[NDArray, Any]:
    """A contiguous array's storage as a flat run of scalars, and that scalar type."""
    if not a.is_contiguous:
        raise UtilsRuntimeError("array_cast(): arrays of different ranks or element shapes must "
                                "be contiguous")
    return a.numpy().reshape(-1), scalar_of(a.dtype)


def array_cast(in_array: array, out_array: array, count: int | None = None) -> None:
    """Convert `in_array`'s elements into `out_array`'s dtype (the first `count`, or all)."""
    check_array(in_array, "in_array")
    check_array(out_array, "out_array")
    check_same_device(in_array, out_array, message=f"Array storage devices do not match "
                      f"({in_array.device} vs {out_array.device})")
    scalar_level = (in_array.ndim != out_array.ndim
                    or elem_shape(in_array.dtype) != elem_shape(out_array.dtype))
    if scalar_level:
        src, sst = _scalars(in_array)
        dst, dst_t = _scalars(out_array)
        src_t = sst
        n = src.size if count is None else count * max(1, int(np.prod(elem_shape(
            in_array.dtype), dtype=np.int64)))
        ndim, in_shape, out_shape = 1, src.shape, dst.shape
    else:
        src_t, dst_t = in_array.dtype, out_array.dtype
        n = in_array.size if count is None else count
        ndim, in_shape, out_shape = in_array.ndim, in_array.shape, out_array.shape
    if ndim > 1 and n < in_array.size:
        raise UtilsRuntimeError("Partial cast is not supported for arrays with more than one "
                                "dimension")
    if src_t == dst_t and not scalar_level:
        copy(out_array, in_array, count=n)
        return
    if ndim > 1 and in_shape != out_shape:
        raise UtilsRuntimeError(f"Array shapes do not match ({in_shape} vs {out_shape})")
    in_size, out_size = int(np.prod(in_shape)), int(np.prod(out_shape))
    if n > in_size or n > out_size:
        raise UtilsRuntimeError(f"Cast count ({n}) exceeds the input size ({in_size}) or output "
                                f"size ({out_size})")
    if captured(functools.partial(array_cast, in_array, out_array, count), "wp.utils.array_cast()"):
        return
    _convert(in_array, out_array, n, scalar_level)


def _convert(in_array: array, out_array: array, n: int, scalar_level: bool) -> None:
    st = scalar_of(out_array.dtype)
    assert st is not None
    if scalar_level:
        src, _ = _scalars(in_array)
        out_flat, _ = _scalars(out_array)  # a view: the array is contiguous
        before_write(out_array)
        out_flat[:n] = src[:n].astype(st.np_dtype)
    elif in_array.ndim == 1:
        write(out_array, slice(0, n), in_array.numpy()[:n].astype(st.np_dtype))
    else:
        write(out_array, ..., in_array.numpy().astype(st.np_dtype))
    if (taping() and in_array.grad is not None and out_array.grad is not None
            and scalar_of(in_array.dtype) in _FLOATS and st in _FLOATS):
        _record_cast(in_array, out_array, n, scalar_level)


def _record_cast(in_array: array, out_array: array, n: int, scalar_level: bool) -> None:
    ig, og = in_array.grad, out_array.grad
    assert ig is not None and og is not None

    def backward() -> None:
        if scalar_level:
            src, dst = ig.numpy().reshape(-1), og.numpy().reshape(-1)
            src[:n] += dst[:n].astype(src.dtype)
            dst[:n] = 0
        else:
            src, dst = ig.numpy()[:n], og.numpy()[:n]
            src += dst.astype(src.dtype)
            dst[...] = 0

    record_op(backward, [in_array, out_array])
