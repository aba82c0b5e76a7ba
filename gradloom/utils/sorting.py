"""`array_scan`, `radix_sort_pairs`, `segmented_sort_pairs`, `runlength_encode`, with numpy.

Arguments, supported dtypes, in-place semantics and errors follow Warp 1.19 (`keys` and
`values` of the sorts must hold 2 * count elements; the second half is scratch space there,
unused here). Sorts are stable; float keys order as radix sorts order them (-0.0 before 0.0).
Inside a graph capture each call is recorded and runs when the graph runs.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np

from ..runtime.array.array import NDArray, array
from ..runtime.array.ops import empty
from ..runtime.array.watch import before_write
from ..runtime.capturing import recording_graph
from ..runtime.recording import record_op
from ..types import float32, float64, int32, int64, size_of, uint32, uint64
from ..types.query import scalar_of, type_name
from ._common import (
    UtilsCaptureError,
    UtilsRuntimeError,
    UtilsTypeError,
    UtilsValueError,
    captured,
    check_array,
    check_same_device,
    flat,
    flat_index,
    taping,
    write,
)

_SCAN_TYPES = (int32, int64, float32, float64)
_KEY_BITS = {int32: 32, uint32: 32, float32: 32, int64: 64, uint64: 64, float64: 64}


# --------------------------------------------------------------------------------------------
# Scan


def array_scan(in_array: array, out_array: array, inclusive: bool = True) -> None:
    """Prefix sums of `in_array` into `out_array` (per component for vectors); an exclusive
    scan starts at zero. Differentiable under a Tape for float arrays."""
    check_array(in_array, "in_array")
    check_array(out_array, "out_array")
    check_same_device(in_array, out_array, message=f"In and out array storage devices do not "
                      f"match ({in_array.device} vs {out_array.device})")
    if in_array.size != out_array.size:
        raise UtilsRuntimeError(f"In and out array storage sizes do not match ({in_array.size} "
                                f"vs {out_array.size})")
    if in_array.dtype != out_array.dtype:
        raise UtilsRuntimeError(f"In and out array data types do not match "
                                f"({type_name(in_array.dtype)} vs {type_name(out_array.dtype)})")
    if in_array.size == 0:
        return
    for a, what in ((in_array, "Input"), (out_array, "Output")):
        if not a.is_contiguous and a.ndim != 1:
            raise UtilsRuntimeError(f"{what} array must be contiguous or one-dimensional")
    if scalar_of(in_array.dtype) not in _SCAN_TYPES or getattr(in_array.dtype, "kind",
                                                                 "") == "mat":
        raise UtilsRuntimeError(f"Unsupported data type: {type_name(in_array.dtype)}")
    if captured(functools.partial(array_scan, in_array, out_array, inclusive), "wp.utils.array_scan()"):
        return
    st = scalar_of(in_array.dtype)
    assert st is not None
    sums = np.cumsum(flat(in_array), axis=0, dtype=st.np_dtype)
    if not inclusive:
        sums = np.concatenate([np.zeros_like(sums[:1]), sums[:-1]])
    write(out_array, flat_index(out_array, out_array.size), sums)
    if taping() and in_array.grad is not None and out_array.grad is not None:
        _record_scan(in_array, out_array, inclusive)


def _record_scan(in_array: array, out_array: array, inclusive: bool) -> None:
    ig, og = in_array.grad, out_array.grad
    assert ig is not None and og is not None

    def backward() -> None:
        where = flat_index(out_array, out_array.size)
        g = og.numpy()[where]
        # d out[j] / d in[i] = 1 for i <= j (inclusive) or i < j (exclusive)
        suffix = np.cumsum(g[::-1], axis=0)[::-1]
        if not inclusive:
            suffix = np.concatenate([suffix[1:], np.zeros_like(suffix[:1])])
        ig.numpy()[flat_index(in_array, in_array.size)] += suffix
        og.numpy()[where] = 0

    record_op(backward, [in_array, out_array])


# --------------------------------------------------------------------------------------------
# Sorting


def _radix_keys(keys: NDArray, begin_bit: int, end_bit: int) -> NDArray:
    """Unsigned integers that order as a radix sort orders `keys` over bits [begin, end):
    signed integers with the sign bit flipped, floats with the usual sign twiddle."""
    bits = keys.dtype.itemsize * 8
    u = np.dtype(f"u{keys.dtype.itemsize}")
    raw = keys.view(u).copy()
    sign = u.type(1 << (bits - 1))
    if keys.dtype.kind == "i":
        raw ^= sign
    elif keys.dtype.kind == "f":
        negative = (raw & sign) != 0
        raw = np.where(negative, ~raw, raw | sign)
    if end_bit - begin_bit < bits:
        raw = (raw >> u.type(begin_bit)) & u.type((1 << (end_bit - begin_bit)) - 1)
    return raw


def _permute(data: NDArray, order: NDArray, lo: int, hi: int) -> None:
    data[lo:hi] = data[lo:hi][order]


def _no_tape_through(what: str, *arrays: array) -> None:
    """A sort moves values around: it is not differentiable here, so refuse to let a Tape
    silently drop the gradient of float values that need one."""
    if taping() and any(a.grad is not None and scalar_of(a.dtype) in (float32, float64)
                        for a in arrays):
        raise UtilsRuntimeError(f"{what} is not differentiable: sort arrays without "
                                "requires_grad=True, or outside the Tape")


def radix_sort_pairs(keys: array, values: array, count: int, begin_bit: int = 0,
                     end_bit: int | None = None) -> None:
    """Sort keys[:count] in place (stable), moving values[:count] with them; only key bits
    [begin_bit, end_bit) decide the order."""
    check_array(keys, "keys")
    check_array(values, "values")
    check_same_device(keys, values, message=f"Keys and values array storage devices do not "
                      f"match ({keys.device} vs {values.device})")
    if count == 0:
        return
    if keys.size < 2 * count or values.size < 2 * count:
        raise UtilsRuntimeError("Keys and values array storage must be large enough to contain "
                                "2*count elements")
    pair = f"{type_name(keys.dtype)}, {type_name(values.dtype)}"
    if size_of(values.dtype) not in (4, 8):
        raise UtilsRuntimeError(f"Unsupported keys and values data types: {pair}")
    for a, what in ((keys, "keys"), (values, "values")):
        if not a.is_contiguous:
            raise UtilsRuntimeError(f"radix_sort_pairs() requires a contiguous {what} array, got "
                                    f"non-contiguous {what} with data types: {pair}")
    width = _KEY_BITS.get(keys.dtype)
    if width is None:
        raise UtilsRuntimeError(f"Unsupported keys and values data types: {pair}")
    end = width if end_bit is None else end_bit
    if not isinstance(begin_bit, int) or not isinstance(end, int):
        raise UtilsRuntimeError("begin_bit and end_bit must be integers")
    if not 0 <= begin_bit <= end <= width:
        raise UtilsRuntimeError(f"Invalid radix sort bit range [{begin_bit}, {end}) for "
                                f"{width}-bit keys")
    if begin_bit == end:
        return
    _no_tape_through("wp.utils.radix_sort_pairs()", keys, values)
    if captured(functools.partial(radix_sort_pairs, keys, values, count, begin_bit, end_bit),
                "wp.utils.radix_sort_pairs()"):
        return
    k, v = flat(keys), flat(values)  # views: both are contiguous
    order = np.argsort(_radix_keys(k[:count], begin_bit, end), kind="stable")
    _store(keys, k, k[:count][order])
    _store(values, v, v[:count][order])


def _store(a: array, view: NDArray, data: NDArray) -> None:
    """Write `data` over the first elements of a contiguous array through its flat view."""
    before_write(a)
    view[: len(data)] = data


def _segment_bounds(starts: array, ends: array | None, count: int) -> list[tuple[int, int]]:
    s = starts.numpy().astype(np.int64)
    e = s[1:] if ends is None else ends.numpy().astype(np.int64)
    if ends is None:
        s = s[:-1]
    bounds = list(zip(s.tolist(), e.tolist(), strict=True))
    for i, (lo, hi) in enumerate(bounds):
        if not 0 <= lo <= hi <= count:
            raise UtilsValueError(f"Invalid segment range at index {i}: [{lo}, {hi}) is not "
                                  f"within [0, {count}]")
    return bounds


def _check_segments(starts: array, ends: array | None) -> None:
    for a, what in ((starts, "segment_start_indices"), (ends, "segment_end_indices")):
        if a is None:
            continue
        if a.dtype != int32:
            raise UtilsRuntimeError(f"{what} array must be of type int32")
        if a.ndim != 1:
            raise UtilsRuntimeError(f"{what} must be one-dimensional")
        if not a.is_contiguous:
            raise UtilsRuntimeError(f"segmented_sort_pairs() requires a contiguous {what} array")
    if ends is not None and starts.size != ends.size:
        raise UtilsRuntimeError(f"segment_start_indices and segment_end_indices must have the "
                                f"same size ({starts.size} vs {ends.size})")


def segmented_sort_pairs(keys: array, values: array, count: int, segment_start_indices: array,
                         segment_end_indices: array | None = None) -> None:
    """Sort each segment [start, end) of keys[:count] in place (stable), moving values with
    them. Without `segment_end_indices`, consecutive starts delimit the segments."""
    if isinstance(count, bool):
        raise UtilsTypeError("count must be an integer")
    try:
        count = operator.index(count)
    except TypeError as e:
        raise UtilsTypeError("count must be an integer") from e
    if count < 0:
        raise UtilsValueError(f"count must be non-negative, got {count}")
    if count > (1 << 31) - 1:
        raise UtilsValueError(f"count must not exceed {(1 << 31) - 1}, got {count}")
    starts, ends = segment_start_indices, segment_end_indices
    for a in (keys, values, starts, *(() if ends is None else (ends,))):
        check_array(a, "an argument")
    check_same_device(keys, values, starts, *(() if ends is None else (ends,)),
                      message="Keys, values, and segment index array storage devices must match")
    if count == 0:
        return
    if keys.size < 2 * count or values.size < 2 * count:
        raise UtilsRuntimeError("Array storage must be large enough to contain 2*count elements")
    for a, what in ((keys, "keys"), (values, "values")):
        if not a.is_contiguous:
            raise UtilsRuntimeError(f"segmented_sort_pairs() requires a contiguous {what} array")
    _check_segments(starts, ends)
    if (ends is None and starts.size < 2) or (ends is not None and ends.size == 0):
        return
    if keys.dtype not in (int32, float32) or values.dtype != int32:
        raise UtilsRuntimeError(f"Unsupported data type: {type_name(keys.dtype)}")
    _no_tape_through("wp.utils.segmented_sort_pairs()", keys, values)
    if captured(functools.partial(segmented_sort_pairs, keys, values, count, starts, ends),
                "wp.utils.segmented_sort_pairs()"):
        return
    bounds = _segment_bounds(starts, ends, count)  # all checked before anything moves
    k, v = flat(keys), flat(values)
    kk, vv = k[:count].copy(), v[:count].copy()
    for lo, hi in bounds:
        order = np.argsort(_radix_keys(kk[lo:hi], 0, 32), kind="stable")
        _permute(kk, order, lo, hi)
        _permute(vv, order, lo, hi)
    _store(keys, k, kk)
    _store(values, v, vv)


# --------------------------------------------------------------------------------------------
# Run-length encoding


def runlength_encode(values: array, run_values: array, run_lengths: array,
                     run_count: array | None = None, value_count: int | None = None) -> Any:
    """Compress runs of equal consecutive int32 values: run_values[i] repeats run_lengths[i]
    times. Returns the number of runs (or `run_count`, holding it, when given)."""
    for a, what in ((values, "values"), (run_values, "run_values"), (run_lengths, "run_lengths")):
        check_array(a, what)
    check_same_device(values, run_values, run_lengths,
                      message="run_values, run_lengths and values storage devices do not match")
    n = values.size if value_count is None else operator.index(value_count)
    if n < 0:
        raise UtilsRuntimeError(f"value_count must be non-negative, got {n}")
    if run_values.size < n or run_lengths.size < n:
        raise UtilsRuntimeError(f"Output array storage sizes must be at least equal to "
                                f"value_count ({n})")
    if values.dtype != run_values.dtype:
        raise UtilsRuntimeError(f"values and run_values data types do not match "
                                f"({type_name(values.dtype)} vs {type_name(run_values.dtype)})")
    if run_lengths.dtype != int32:
        raise UtilsRuntimeError("run_lengths array must be of type int32")
    if run_count is None:
        if n == 0:
            return 0
        if recording_graph() is not None:
            raise UtilsCaptureError("APIC capture requires runlength_encode() to receive an "
                                    "explicit run_count array")
        holder = empty((1,), dtype=int32, device=values.device)
        _encode(values, run_values, run_lengths, holder, n)
        return int(holder.numpy()[0])
    check_array(run_count, "run_count")
    check_same_device(values, run_count,
                      message="run_count storage device does not match other arrays")
    if run_count.dtype != int32:
        raise UtilsRuntimeError("run_count array must be of type int32")
    if n == 0:
        run_count.zero_()
        return run_count
    if not captured(functools.partial(_encode, values, run_values, run_lengths, run_count, n),
                    "wp.utils.runlength_encode()"):
        _encode(values, run_values, run_lengths, run_count, n)
    return run_count


def _encode(values: array, run_values: array, run_lengths: array, run_count: array,
            n: int) -> None:
    if values.dtype != int32:
        raise UtilsRuntimeError(f"Unsupported data type: {type_name(values.dtype)}")
    v = flat(values)[:n]
    starts = np.flatnonzero(np.concatenate([[True], v[1:] != v[:-1]]))
    lengths = np.diff(np.append(starts, n))
    runs = starts.size
    write(run_values, flat_index(run_values, runs), v[starts])
    write(run_lengths, flat_index(run_lengths, runs), lengths.astype(np.int32))
    write(run_count, 0, runs)
