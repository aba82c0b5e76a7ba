"""What a compiled entry keeps for its chunked launches: the job, a launch block per pool thread,
the pointer rows that send each chunk's shared additions to a buffer of its own, those private
buffers, and their sums; and the chunks run on Python threads where there is no native pool.

Private buffers are zero between launches: the sum that adds one into its array also clears it
(codegen/native_pool.py, or `sum_slow` here), and a launch that stops early clears them all.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import struct
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...abi import (
    BLOCK_ARGS,
    BLOCK_STACK,
    JOB,
    PAGED_SUM_BYTES,
    STATUS_BYTES,
    STATUS_RECORD,
    error_word,
)
from .. import page_map
from ..array.array import NDArray, array
from ..array.storage import zeros_same_layout
from ..array.structs import field_value
from ..pool import NativePool, native_pool, native_run, share

_SUM_CODES = {np.dtype(np.float32): JOB.SUM_F32, np.dtype(np.float64): JOB.SUM_F64,
              np.dtype(np.int32): JOB.SUM_I32, np.dtype(np.uint32): JOB.SUM_I32,
              np.dtype(np.int64): JOB.SUM_I64, np.dtype(np.uint64): JOB.SUM_I64}
_WORD = struct.Struct("<Q")
_ONE, _TWO, _THREE = (struct.Struct(f"<{n}q") for n in (1, 2, 3))
_STACK = struct.Struct("<Qq")  # the adjoint stack's words: base, capacity
#: when the pages a launch's sums looked up were at least this share in use, the next
#: WHOLE_AFTER_DENSE launches sum their buffers whole, without looking (the look-ups cost
#: 1.5-3% of a cloth step whose buffers are all written; a sparse launch keeps looking)
DENSE_SHARE = 0.75
WHOLE_AFTER_DENSE = 31


def bounds(total: int, chunks: int, c: int) -> tuple[int, int]:
    """Threads [lo, hi) of chunk c, cut as codegen/native_pool.py cuts them: the first
    total % chunks chunks one thread longer."""
    q, r = divmod(total, chunks)
    lo = c * q + min(c, r)
    return lo, lo + q + (c < r)


def scatter_target(args: Sequence[Any], key: tuple[int, str | None], grad: bool) -> Any:
    """The memory (numpy) a scatter entry names: the array, or its gradient; None when there
    is none; False when a gradient's layout is not the data's (the kernel addresses both with
    the data's strides)."""
    i, field = key
    value = args[i] if field is None else field_value(args[i], field)
    if not isinstance(value, array):
        return None
    if not grad:
        return value.numpy()
    if value.grad is None:
        return None
    return value.grad.numpy() if value.grad.strides == value.strides else False


def private_zeros(target: NDArray) -> NDArray:
    """A zeroed private buffer with the target's layout. Large contiguous ones are fresh
    anonymous memory, in 4 KiB pages, so the pages no thread writes stay out of the page table
    and the native sum skips them (codegen/native_sums.py)."""
    if target.nbytes < PAGED_SUM_BYTES or not target.flags.c_contiguous:
        return zeros_same_layout(target)
    memory = mmap.mmap(-1, target.nbytes)
    with contextlib.suppress(AttributeError, OSError):  # a huge page would count 2 MiB written
        memory.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(memory, dtype=target.dtype).reshape(target.shape)


class Chunking:
    """The memory one chunked launch at a time works with (a Python thread launching the same
    kernel meanwhile takes another: runtime/cpu/parallel.py keeps a free list)."""

    def __init__(self, prepared: Any, threads: int, max_chunks: int) -> None:
        compiled = prepared.compiled
        self.threads, self.max_chunks = threads, max_chunks
        self._functions = compiled.pool_functions
        #: gl_pool_run (codegen/native_pool.py), or None: the chunks run on Python threads
        self.run = None if self._functions is None else native_run(self._functions[1])
        self._job = np.zeros(JOB.BYTES + 64, np.uint8)
        self.job = -(-self._job.ctypes.data // 64) * 64
        self.mem = (ctypes.c_char * JOB.BYTES).from_address(self.job)
        self.blocks = [prepared.block() for _ in range(threads - 1)]  # threads 1..n-1
        self.table = (ctypes.c_uint64 * threads)(0, *(base for _, base in self.blocks))
        self.stack_changes = -1
        self.follow_stacks(prepared)
        offsets = [BLOCK_ARGS + off for off in compiled.threads.scatter]
        self.nscatter = ns = len(offsets)
        self.offsets = (ctypes.c_int64 * max(ns, 1))(*offsets)
        self.ptrs = (ctypes.c_uint64 * max(max_chunks * ns, 1))()
        self.records = np.zeros(max_chunks * JOB.RECORD, np.uint8)
        self.sums = (ctypes.c_int64 * max(3 * ns, 1))()
        #: per scatter slot: (layout, private buffers, their addresses)
        self.privates: list[tuple[Any, list[NDArray], list[int]]] = [(None, [], [])] * ns
        #: targets summed here rather than natively (another dtype, not contiguous)
        self.slow: list[tuple[NDArray, list[NDArray]]] = []
        self._last: Any = None
        self._slow_bufs: list[list[NDArray] | None] = []
        self._chunk_blocks: list[tuple[bytearray, int]] = []
        #: launches left that sum their private buffers whole (`_follow_density`)
        self.whole = 0
        for offset, value in ((JOB.FN, compiled.address), (JOB.BLOCKS, ctypes.addressof(self.table)),
                              (JOB.THREADS, threads), (JOB.NSCATTER, ns),
                              (JOB.OFFSETS, ctypes.addressof(self.offsets)),
                              (JOB.PTRS, ctypes.addressof(self.ptrs)),
                              (JOB.RECORDS, self.records.ctypes.data),
                              (JOB.BLOCK_BYTES, BLOCK_ARGS + prepared.packer.size),
                              (JOB.REDUCE, ctypes.addressof(self.sums))):
            _WORD.pack_into(self.mem, offset, value)

    @property
    def pool(self) -> NativePool:
        """The process's native pool for this thread count (started on first use)."""
        assert self._functions is not None
        return native_pool(self.threads, self._functions)

    def post(self, chunks: int, total: int, flags: int, spin_ns: int, block: int) -> None:
        """This launch's words of the job: its chunks, threads, flags, the caller's spin, and
        the caller's launch block."""
        _TWO.pack_into(self.mem, JOB.CHUNKS, chunks, total)
        _TWO.pack_into(self.mem, JOB.FLAGS, flags, spin_ns)
        self._follow_density()
        _ONE.pack_into(self.mem, JOB.PAGEMAP, -1 if self.whole else page_map.descriptor())
        self.table[0] = block

    def _follow_density(self) -> None:
        """After the last launch's sums: sum whole for a while if the pages they looked up
        were nearly all in use; clear the tally for this launch."""
        looked, used = _TWO.unpack_from(self.mem, JOB.PAGES_LOOKED_UP)
        if self.whole:
            self.whole -= 1
        elif looked and used >= DENSE_SHARE * looked:
            self.whole = WHOLE_AFTER_DENSE
        _TWO.pack_into(self.mem, JOB.PAGES_LOOKED_UP, 0, 0)

    def set_flags(self, flags: int) -> None:
        _ONE.pack_into(self.mem, JOB.FLAGS, flags)
        _ONE.pack_into(self.mem, JOB.STOPPED, 0)

    def caller_stats(self) -> tuple[int, int, int]:
        """(chunks, threads, nanoseconds) the calling thread ran in the last run."""
        return _THREE.unpack_from(self.mem, JOB.CALLER_CHUNKS)  # type: ignore[return-value]

    def follow_stacks(self, prepared: Any) -> None:
        """Point the workers' launch blocks at their adjoint stacks, if any changed (grew)
        since the last look: the old ones are freed."""
        if self.stack_changes == prepared.stack_changes:
            return
        for w in range(1, self.threads):
            base, cap = prepared.stack_words(w)
            _STACK.pack_into(self.blocks[w - 1][0], BLOCK_STACK, base, cap)
        self.stack_changes = prepared.stack_changes

    def set_targets(self, targets: list[Any], chunks: int) -> None:
        """Rows 1.. of the pointer table (private buffers of the arrays threads add into) and
        the table of sums, for this launch's targets; unchanged since the last launch, only
        checked."""
        layout = [chunks, *((None if t is None else (t.shape, t.strides, t.dtype))
                            for t in targets)]
        if layout == self._last:
            if self.slow:
                self.slow = [(t, b) for t, b in zip(targets, self._slow_bufs, strict=True)
                             if b is not None]
            return
        self._fill(targets, chunks, self.run is not None)
        self._last = layout

    def _fill(self, targets: list[Any], chunks: int, native: bool) -> None:
        ns, sums = self.nscatter, 0
        slow_bufs: list[list[NDArray] | None] = []
        for s, target in enumerate(targets):
            addrs = [0] * (chunks - 1)
            slow_bufs.append(None)
            if target is not None:
                bufs, addrs = self._buffers(s, target, chunks - 1)
                code = _SUM_CODES.get(target.dtype) if target.flags.c_contiguous else None
                if native and code is not None:
                    self.sums[3 * sums:3 * sums + 3] = [s, target.size, code]
                    sums += 1
                else:
                    slow_bufs[-1] = bufs
            for c in range(1, chunks):
                self.ptrs[c * ns + s] = addrs[c - 1]
        _ONE.pack_into(self.mem, JOB.NREDUCE, sums)
        self._slow_bufs = slow_bufs
        self.slow = [(t, b) for t, b in zip(targets, slow_bufs, strict=True) if b is not None]

    def _buffers(self, s: int, target: NDArray, n: int) -> tuple[list[NDArray], list[int]]:
        """n zeroed buffers with the target's layout (kept for the next launch)."""
        layout = (target.shape, target.strides, target.dtype)
        kept, bufs, addrs = self.privates[s]
        if kept != layout:
            bufs, addrs = [], []
        while len(bufs) < n:
            bufs.append(private_zeros(target))
            addrs.append(bufs[-1].ctypes.data)
        self.privates[s] = (layout, bufs, addrs)
        return bufs[:n], addrs[:n]

    def clear(self) -> None:
        """Zero every private buffer (after a launch that stopped early)."""
        for _, bufs, _ in self.privates:
            for b in bufs:
                b[...] = 0

    def sum_slow(self) -> None:
        """Add the private buffers the native sum does not cover into their arrays, in chunk
        order, and clear them (floats skip zeros, as the native sum does)."""
        for target, bufs in self.slow:
            for p in bufs:
                if p.dtype.kind in "fc":
                    np.add(target, p, out=target, where=p != 0)
                else:
                    target += p
                p[...] = 0

    def read_row0(self, buf: bytearray) -> None:
        """Row 0 of the pointer table: what the caller's block adds into (the real arrays)."""
        for s in range(self.nscatter):
            self.ptrs[s] = _WORD.unpack_from(buf, self.offsets[s])[0]

    def stopped_chunks(self, chunks: int) -> list[tuple[int, bytes]]:
        """(chunk, record) of each chunk that stopped early, in chunk order; the records are
        cleared."""
        errs = self.records.view(np.int32)[: chunks * JOB.RECORD // 4 : JOB.RECORD // 4]
        out = [(int(c), self.records[c * JOB.RECORD:(c + 1) * JOB.RECORD].tobytes())
               for c in np.flatnonzero(errs)]
        self.records[: chunks * JOB.RECORD] = 0
        return out

    def patch(self, buf: bytearray, c: int) -> None:
        """Point a launch block's scatter slots at chunk c's row."""
        ns = self.nscatter
        for s in range(ns):
            _WORD.pack_into(buf, self.offsets[s], self.ptrs[c * ns + s])

    def run_python(self, prepared: Any, block: tuple[bytearray, int], dims: tuple[int, ...],
                   total: int, chunks: int, wake: bool) -> int:
        """The job on Python threads (no native pool on this platform): the same chunks and
        rows, claimed from one counter. Returns the chunks that stopped early."""
        self.read_row0(block[0])
        while len(self._chunk_blocks) < chunks:
            self._chunk_blocks.append(prepared.block())
        stats = [0, 0, 0, 0]  # caller's chunks, threads, ns; chunks stopped
        share(self.threads if wake else 1, chunks,
              lambda c, w: self._python_chunk(prepared, block[0], dims, total, chunks, c, w,
                                              stats))
        _THREE.pack_into(self.mem, JOB.CALLER_CHUNKS, *stats[:3])
        return stats[3]

    def _python_chunk(self, prepared: Any, first: bytearray, dims: tuple[int, ...], total: int,
                      chunks: int, c: int, w: int, stats: list[int]) -> None:
        buf, base = self._chunk_blocks[c]
        buf[BLOCK_ARGS:] = first[BLOCK_ARGS:]
        lo, hi = bounds(total, chunks, c)
        prepared.set_header(buf, dims, lo, hi, w)
        self.patch(buf, c)
        t0 = time.perf_counter_ns()
        prepared.entry(base)
        if w == 0:
            stats[0:3] = [stats[0] + 1, stats[1] + hi - lo,
                          stats[2] + time.perf_counter_ns() - t0]
        if error_word(buf):
            at = c * JOB.RECORD
            self.records[at:at + STATUS_BYTES] = np.frombuffer(buf[STATUS_RECORD], np.uint8)
            self.records[at + STATUS_BYTES:at + STATUS_BYTES + 8] = np.frombuffer(
                w.to_bytes(8, "little"), np.uint8)
            stats[3] += 1
