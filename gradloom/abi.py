"""The launch ABI: the block of bytes every compiled entry (CPU and CUDA) takes as its one
argument, word by word — what the runtime packs and the codegen entries read.

The host side (runtime/launch/packing.py, runtime/launch/launch.py, runtime/cuda/launch.py,
runtime/cpu/chunking.py, runtime/cpu/parallel.py, runtime/launch/checks.py) and the kernel side
(codegen/entry_cpu.py, codegen/entry_nvptx.py, codegen/llvm_ops.py, codegen/native_pool.py,
the gradient slot autodiff/reverse.py reads) take every offset from here, so the two sides
cannot drift apart (tests/test_abi.py checks the packed block against what both entries read).

A block is, in order:

- the launch's dims (4 × int64, padded with 1s);
- the error record (STATUS_BYTES): the int32 error word, then the fields a failing thread
  leaves (STATUS_*). Only the thread that claims the word writes the fields (on the GPU with an
  atomic compare-and-swap on the word), and no entry reads any of it: it is the runtime's;
- the adjoint stack's words (base pointer, capacity in bytes per thread): read by every
  thread, written only by the host, so no failure can clobber them;
- start and end, the linear thread range the call runs;
- the kernel arguments, each at its `arg_offsets` offset. An array argument is ARRAY_WORDS:
  {data, grad, shape[ndim], strides[ndim]} (byte strides), plus one int32 index pointer per
  dimension for an indexed array.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

# --------------------------------------------------------------------------------------------
# the header

BLOCK_DIMS = 0  # 4 x int64: the launch's dims, padded with 1s
MAX_DIMS = 4
BLOCK_STATUS = 32  # the error record (below)
BLOCK_STACK = 64  # the adjoint stack's words (below)
BLOCK_START = 80  # int64: the first linear thread index this call runs
BLOCK_END = 88  # int64: one past the last
BLOCK_ARGS = 96  # the kernel arguments

# the error record's fields, as offsets from BLOCK_STATUS
STATUS_CODE = 0  # int32: 0, 1 + the failed bounds check's source location, or STATUS_*
STATUS_WHERE = 4  # int32: argument-block offset of the failed extent's word (-1: not one)
STATUS_INDEX = 8  # int64: the index that failed its bounds check
STATUS_EXTENT = 16  # int64: the extent it failed against
STATUS_THREAD = 24  # int64: the thread that failed, or found its stack full
STATUS_BYTES = 32
#: the error word's code for "the adjoint stack is full" (other nonzero codes: 1 + the index of
#: the source location whose bounds check failed)
STATUS_STACK_FULL = -1
#: the error word's code for "a SIGINT arrived while the launch ran" (codegen/signals.py)
STATUS_INTERRUPTED = -2

# the adjoint stack's words, as offsets from BLOCK_STACK
STACK_BASE = 0  # ptr: the stack buffer
STACK_CAPACITY = 8  # int64: bytes per thread
STACK_BYTES = 16

#: a CPU block's shared state, whose address a cooperative launch puts in the STACK_BASE word
#: (codegen/llvm_blocks.py, runtime/cpu/block_threads.py): lock, threads arrived, the barrier's
#: generation, threads running (int32 each); the exchanged records from this offset
BLOCK_SHARED_RECORDS = 64

#: the whole header: dims, the error record (code, where, index, extent, thread), the stack's
#: base and capacity, start, end
HEAD = struct.Struct("<4qiiqqqQqqq")
#: the error record's values in a fresh header
CLEAR_STATUS = (0, 0, 0, 0, 0)
#: the error word's bytes in a block
ERROR_WORD = slice(BLOCK_STATUS + STATUS_CODE, BLOCK_STATUS + STATUS_CODE + 4)
NO_ERROR = bytes(4)
#: the error record's bytes in a block
STATUS_RECORD = slice(BLOCK_STATUS, BLOCK_STATUS + STATUS_BYTES)
_THREAD = struct.Struct("<q")


def dims4(dims: Sequence[int]) -> tuple[int, ...]:
    """A launch's dims as the header holds them: padded with 1s to MAX_DIMS."""
    return (*dims, *(1,) * (MAX_DIMS - len(dims)))


def header(dims: Sequence[int], stack: tuple[int, int], start: int, end: int
           ) -> tuple[int, ...]:
    """The values HEAD packs: dims, a clear error record, the stack's (base, capacity), the
    thread range."""
    return (*dims4(dims), *CLEAR_STATUS, *stack, start, end)


def error_word(buf: bytes | bytearray) -> int:
    """The status a launch block's entry left: 0, a bounds-check location + 1, or one of the
    STATUS_* codes."""
    return int.from_bytes(buf[ERROR_WORD], "little", signed=True)


def failed_thread(buf: bytes | bytearray) -> int:
    """The thread an error record names (the one that failed, or found its stack full)."""
    return int(_THREAD.unpack_from(buf, BLOCK_STATUS + STATUS_THREAD)[0])


# --------------------------------------------------------------------------------------------
# arguments

# An array argument's 8-byte words, as offsets from the argument's own offset: the host packs
# them in this order (runtime/launch/packing.py, runtime/array/indexed.py, runtime/cuda/launch.py) and
# the kernel reads them in it (types.leaves, builtins/values.ArrayVal.from_words).
ARRAY_DATA = 0  # ptr: the first element (null: Warp's empty array)
ARRAY_GRAD = 8  # ptr: the gradient's first element (null: no gradient)
ARRAY_SHAPE = 16  # ndim x int64
#: where an adjoint finds an array's gradient pointer: this many bytes after its data pointer
#: (autodiff/reverse.py reads gradients through it; kernel.py maps such slots back to arrays)
GRAD_SLOT = ARRAY_GRAD - ARRAY_DATA


def array_strides(ndim: int) -> int:
    """Offset of an array argument's byte strides (ndim x int64), after its shape."""
    return ARRAY_SHAPE + 8 * ndim


def array_indices(ndim: int) -> int:
    """Offset of an indexed array's index pointers (ndim x ptr to int32, null: a dimension that
    is not indexed), after its strides."""
    return ARRAY_SHAPE + 16 * ndim


def array_words(ndim: int, indexed: bool = False) -> list[tuple[int, str]]:
    """(offset, "ptr" | "int64") of each word of an array (or indexed array) argument."""
    words = [(ARRAY_DATA, "ptr"), (ARRAY_GRAD, "ptr")]
    words += [(ARRAY_SHAPE + 8 * k, "int64") for k in range(ndim)]
    words += [(array_strides(ndim) + 8 * k, "int64") for k in range(ndim)]
    if indexed:
        words += [(array_indices(ndim) + 8 * k, "ptr") for k in range(ndim)]
    return words


def array_bytes(ndim: int, indexed: bool = False) -> int:
    """The size of an array (or indexed array) argument."""
    return (array_indices(ndim) + (8 * ndim if indexed else 0))


def arg_offsets(arg_types: Sequence[Any]) -> tuple[list[int], int]:
    """Byte offset of each kernel argument in the argument block (after BLOCK_ARGS) and the
    block's size: C layout, each type's `size` at its `alignment`, the total rounded to 8."""
    offsets = []
    pos = 0
    for t in arg_types:
        align = int(t.alignment)
        pos = (pos + align - 1) // align * align
        offsets.append(pos)
        pos += int(t.size)
    return offsets, (pos + 7) // 8 * 8


# The job of a chunked launch: the thread range cut into chunks that the calling thread and the
# pool's workers claim one at a time (codegen/native_pool.py runs it, runtime/cpu/parallel.py fills
# it). 8-byte words at these offsets:
class JOB:
    """Byte offsets of the job's words, the record size, the flags and the sum codes."""

    FN = 0  # the entry function
    CHUNKS = 8  # how many chunks
    TOTAL = 16  # threads in the launch
    BLOCKS = 24  # pointer to one launch block per pool thread (index 0: the caller's)
    THREADS = 32  # how many blocks there
    NSCATTER = 40  # pointer slots that threads add through (passes/threads.py `scatter`)
    OFFSETS = 48  # pointer to their byte offsets in a launch block
    PTRS = 56  # pointer to chunks x nscatter pointers: row c is what chunk c adds into
    RECORDS = 64  # pointer to one RECORD-byte record per chunk: its status if it stopped
    BLOCK_BYTES = 72  # size of a launch block (what is copied from the caller's)
    NREDUCE = 80  # entries in the reduce table
    REDUCE = 88  # pointer to (slot, count, SUM_* code) triples: what the run sums
    FLAGS = 96  # WAKE | RUN | SUM
    SPIN_NS = 104  # how long the caller spins for a worker's last chunk before sleeping
    CALLER_CHUNKS = 112  # out: chunks the calling thread ran,
    CALLER_THREADS = 120  # the threads in them,
    CALLER_NS = 128  # and the nanoseconds they took
    STOPPED = 136  # out: chunks that stopped early (an error, a full stack, Ctrl-C)
    PAGEMAP = 160  # a descriptor of /proc/self/pagemap, or -1 (codegen/native_sums.py)
    PAGES_LOOKED_UP = 168  # out: pages the sums looked up in it,
    PAGES_IN_USE = 176  # and how many of them were in use
    BYTES = 192  # (the words after STOPPED are the native run's own)
    RECORD = 64  # a record: the block's error record (abi.STATUS_BYTES), then the pool thread
    WAKE, RUN, SUM = 1, 2, 4
    SUM_F32, SUM_F64, SUM_I32, SUM_I64 = 1, 2, 3, 4


#: private buffers of at least this many bytes are summed page by page, skipping pages never
#: written (codegen/native_sums.py), and so are made of fresh anonymous pages (runtime/cpu/chunking.py)
PAGED_SUM_BYTES = 1 << 20

#: the line of the native streamed fill and copy (codegen/native_memory.py, used by
#: runtime/memops.py): each store writes this many bytes; destinations and lengths are multiples
STREAM_LINE = 64
