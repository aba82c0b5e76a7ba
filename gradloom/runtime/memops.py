"""Large host copies and fills: cut into pieces that the calling thread and the pool's Python
threads claim one at a time, the largest written with streamed stores.

One thread does not reach the memory bandwidth of this machine's cores: a 64 MiB float32 copy
takes 7 ms on one thread and 3 ms on two, and a plain store reads each line before writing it,
which streamed stores (codegen/native_memory.py) do not: zeroing 64 MiB of gradient after a
backward pass took 8.6 ms with numpy, 1.8 ms streamed on two threads (benchmarks/README.md). A
Tape's backward copies every seed into its gradient and `tape.zero()` clears every gradient.
Pieces are claimed from one counter, so a helper that is late (a busy core: pool threads run
in the idle class) costs at most the piece it holds. Small arrays, overlapping source and
destination and one configured thread take one numpy call as before (or one streamed call).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .. import config
from ..abi import STREAM_LINE as LINE
from .pool import share

NDArray = npt.NDArray[Any]

#: below this many bytes written, one numpy call (a helper's wake-up costs tens of µs); at most
#: STREAM_BYTES
SPLIT_BYTES = 1 << 22
#: the bytes of one piece (~0.1 ms of copying); a multiple of LINE
PIECE_BYTES = 1 << 20
#: from this many bytes on, a C-contiguous destination is written with streamed stores; a
#: smaller one is likely read again while the cache still holds it
STREAM_BYTES = 1 << 24
#: a fill streams a pattern of lcm(element row bytes, LINE) bytes, at most this long
MAX_PATTERN = 1 << 12


class Streams(NamedTuple):
    """The native streaming functions (codegen/native_memory.py), as ctypes callables."""

    fill: Callable[[int, int, int, int], None]  # (dst, nbytes, pattern, pattern bytes)
    copy: Callable[[int, int, int], None]  # (dst, src, nbytes)


#: how to get the Streams (or None): set by gradloom.native, which runtime/ cannot import
_STREAMS: list[Callable[[], Streams | None]] = []


def use_streams(loader: Callable[[], Streams | None]) -> None:
    _STREAMS[:] = [loader]


def copy_into(dst: NDArray, src: Any) -> None:
    """dst[...] = src (numpy's broadcasting and casting rules), split where that pays."""
    if dst.nbytes < SPLIT_BYTES:  # first: small copies are the common case (~1 µs each)
        dst[...] = src
        return
    if isinstance(src, np.ndarray) and np.may_share_memory(dst, src):
        dst[...] = src  # numpy copies through a temporary where the two overlap
        return
    if _streamed(dst, src):
        return
    rows = _rows(dst)
    if rows is None:
        dst[...] = src
        return
    step = piece_rows(dst.nbytes // rows)
    if isinstance(src, np.ndarray) and src.shape == dst.shape:
        def part(k: int, _: int) -> None:
            dst[k * step:(k + 1) * step] = src[k * step:(k + 1) * step]
    else:
        value = np.asarray(src)
        if value.ndim >= dst.ndim:  # a value that does not broadcast along the first axis
            dst[...] = src
            return

        def part(k: int, _: int) -> None:
            dst[k * step:(k + 1) * step] = value
    share(config.num_threads, -(-rows // step), part)


#: dst[...] = value, an element broadcast over the trailing axes (one call less than a wrapper:
#: `zero_` on small arrays is hot in simulation loops)
fill = copy_into


def zero_all(dsts: list[NDArray]) -> None:
    """Zero every array: each large one as `fill` zeroes it, the others together, in pieces
    the threads share once they add up to SPLIT_BYTES (a Tape's gradients after a backward
    pass: tens of arrays of a few MiB each, each below what one `fill` would split)."""
    small = []
    for d in dsts:
        if d.nbytes >= SPLIT_BYTES:
            fill(d, 0)
        else:
            small.append(d)
    if config.num_threads < 2 or sum(d.nbytes for d in small) < SPLIT_BYTES:
        for d in small:
            d[...] = 0
        return
    pieces = []
    for d in small:
        rows = _rows(d) or 1
        step = piece_rows(d.nbytes // rows)
        pieces += [(d, lo, lo + step) for lo in range(0, rows, step)] if rows > 1 else [(d, 0, 0)]

    def part(k: int, _: int) -> None:
        d, lo, hi = pieces[k]
        if hi:
            d[lo:hi] = 0
        else:
            d[...] = 0

    share(config.num_threads, len(pieces), part)


def _rows(dst: NDArray) -> int | None:
    """How many rows (first-axis entries) a split copy into dst cuts into pieces; None where
    it is not split."""
    if dst.ndim == 0 or config.num_threads < 2:
        return None
    return int(dst.shape[0]) if dst.shape[0] >= 2 else None


def piece_rows(row_bytes: int) -> int:
    """Rows per piece: about PIECE_BYTES each, at least one row."""
    return max(1, PIECE_BYTES // max(row_bytes, 1))


# ---- streamed stores ------------------------------------------------------------------------


def _streamed(dst: NDArray, src: Any) -> bool:
    """Write dst with streamed stores: a large C-contiguous destination, from a C-contiguous
    array of its dtype and shape or from one element row; False (nothing written) otherwise."""
    flags = dst.flags
    if dst.nbytes < STREAM_BYTES or not (flags.c_contiguous and flags.writeable):
        return False  # (numpy raises for a read-only destination)
    if dst.dtype.hasobject:
        return False
    streams = _STREAMS[0]() if _STREAMS else None
    if streams is None:
        return False
    flat = dst.reshape(-1).view(np.uint8)
    if isinstance(src, np.ndarray) and (src.shape, src.dtype) == (dst.shape, dst.dtype):
        if not src.flags.c_contiguous:
            return False
        source = src.reshape(-1).view(np.uint8)
        apart = source.ctypes.data - flat.ctypes.data
        _stream_bytes(flat, lambda a, b: flat[a:b].__setitem__(..., source[a:b]),
                      lambda at, n: streams.copy(at, at + apart, n))
        return True
    row = _row_bytes(dst, src)
    if row is None:
        return False
    period = math.lcm(row.size, LINE)
    if period > MAX_PATTERN:
        return False
    tiled = np.resize(row, period + row.size)  # the row repeated: any phase, one period long
    base = flat.ctypes.data

    def edge(a: int, b: int) -> None:
        flat[a:b] = tiled[a % row.size:a % row.size + b - a]

    def body(at: int, n: int) -> None:
        streams.fill(at, n, tiled.ctypes.data + (at - base) % row.size, period)

    _stream_bytes(flat, edge, body)
    return True


def _row_bytes(dst: NDArray, value: Any) -> NDArray | None:
    """The bytes of one first-axis row of dst filled with value (numpy's casting), or None
    where value is not one row broadcast along the first axis."""
    row_shape = dst.shape[1:]
    try:
        if np.broadcast_shapes(np.shape(value), row_shape) != row_shape:
            return None
        row = np.empty(row_shape, dst.dtype)
        row[...] = value
    except (ValueError, TypeError):
        return None
    return row.reshape(-1).view(np.uint8)


def _stream_bytes(flat: NDArray, edge: Callable[[int, int], None],
                  body: Callable[[int, int], None]) -> None:
    """Write the bytes of flat: edge(a, b) for the bytes before the first and after the last
    whole LINE, body(address, n) for the lines between, in pieces shared out by `pool.share`."""
    head = min(-flat.ctypes.data % LINE, flat.size)
    lines = (flat.size - head) // LINE * LINE
    edge(0, head)
    edge(head + lines, flat.size)
    start = flat.ctypes.data + head

    def part(k: int, _: int) -> None:
        lo = k * PIECE_BYTES
        body(start + lo, min(PIECE_BYTES, lines - lo))

    share(config.num_threads, -(-lines // PIECE_BYTES), part)


def stream_functions(fill_address: int, copy_address: int) -> Streams:
    """Streams over the native functions at these addresses."""
    fill_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                                 ctypes.c_int64)
    copy_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    return Streams(fill_type(fill_address), copy_type(copy_address))
