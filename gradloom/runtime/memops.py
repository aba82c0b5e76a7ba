"""Large host copies and fills, cut into pieces that the calling thread and the pool's Python
threads claim one at a time (numpy releases the GIL while it copies or fills a piece).

One thread does not reach the memory bandwidth of this machine's cores: a 64 MiB float32 copy
takes 7 ms on one thread and 3 ms on two (benchmarks/README.md), and a Tape's backward copies
every seed into its gradient, `tape.zero()` clears every gradient. Pieces are claimed from one
counter, so a helper that is late (a busy core: pool threads run in the idle class) costs at
most the piece it holds; small arrays, overlapping source and destination, and one configured
thread take one numpy call as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import config
from .pool import worker_pool

NDArray = npt.NDArray[Any]

#: below this many bytes written, one numpy call (a helper's wake-up costs tens of µs)
SPLIT_BYTES = 1 << 22
#: the bytes of one piece (~0.1 ms of copying)
PIECE_BYTES = 1 << 20


def copy_into(dst: NDArray, src: Any) -> None:
    """dst[...] = src (numpy's broadcasting and casting rules), split where that pays."""
    if isinstance(src, np.ndarray) and np.may_share_memory(dst, src):
        dst[...] = src  # numpy copies through a temporary where the two overlap
        return
    rows = _rows(dst)
    if rows is None:
        dst[...] = src
        return
    if isinstance(src, np.ndarray) and src.shape == dst.shape:
        _run_pieces(dst, rows, lambda a, b: dst[a:b].__setitem__(..., src[a:b]))
    else:
        value = np.asarray(src)
        if value.ndim >= dst.ndim:  # a value that does not broadcast along the first axis
            dst[...] = src
            return
        _run_pieces(dst, rows, lambda a, b: dst[a:b].__setitem__(..., value))


def fill(dst: NDArray, value: Any) -> None:
    """dst[...] = value (an element, broadcast over the trailing axes), split where that pays."""
    copy_into(dst, value)


def _rows(dst: NDArray) -> int | None:
    """How many rows (first-axis entries) a split copy into dst cuts into pieces; None where
    it is not split."""
    if dst.ndim == 0 or dst.nbytes < SPLIT_BYTES or config.num_threads < 2:
        return None
    return int(dst.shape[0]) if dst.shape[0] >= 2 else None


def piece_rows(row_bytes: int) -> int:
    """Rows per piece: about PIECE_BYTES each, at least one row."""
    return max(1, PIECE_BYTES // max(row_bytes, 1))


def _run_pieces(dst: NDArray, rows: int, copy_rows: Callable[[int, int], None]) -> None:
    """Run copy_rows(a, b) over [0, rows) in pieces claimed from one counter by the caller and
    the pool's threads; the first error (or Ctrl-C) stops the claims and is raised once every
    thread has let go of its piece."""
    step = piece_rows(dst.nbytes // rows)
    claims = itertools.count()  # next() is atomic under the GIL
    stop: list[bool] = []

    def claim_loop() -> None:
        while not stop:
            start = next(claims) * step
            if start >= rows:
                return
            try:
                copy_rows(start, min(start + step, rows))
            except BaseException:
                stop.append(True)
                raise

    worker_pool(config.num_threads).run([claim_loop] * config.num_threads)
