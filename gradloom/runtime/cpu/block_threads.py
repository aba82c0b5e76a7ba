"""CPU launches whose block's threads exchange tile values (`config.enable_cpu_blocks`,
builtins/tile_block.py): each block's threads run at once, one system thread each.

The threads of a block wait for each other at every exchange (codegen/llvm_blocks.py), so they
cannot run one after another as the launch's chunks do: each gets a launch block of its own for
its one thread index, and all of them run together (ctypes releases the GIL for the foreign
call), one block after another, the same system threads for every block. Their shared state
is a zeroed buffer whose address the process's `gl_block_state` word holds while the launch
runs (so one such launch runs at a time); the count of threads still running starts at the
block's width (a partial last block: fewer). An adjoint's threads each have their own adjoint
stack, made large up front: a thread cannot stop and resume alone while the others wait.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...abi import (
    BLOCK_SHARED_RECORDS,
    CLEAR_STATUS,
    ERROR_WORD,
    NO_ERROR,
    STATUS_STACK_FULL,
    dims4,
    error_word,
)
from ...errors import KernelRuntimeError
from ..signals import launch_words

_LIVE = 3  # the state's int32 word counting the threads still running
#: each thread's adjoint stack in an adjoint's launch (bytes)
_STACK = 1 << 22
#: held while a launch's blocks run (the state's address is one word of the process)
_ONE_AT_A_TIME = threading.Lock()


class _Blocks:
    """The blocks of a launch in order, and the shared state of the one running."""

    def __init__(self, total: int, width: int, exchange_bytes: int) -> None:
        self.total, self.width = total, width
        self.starts = range(0, total, width)
        self.state = np.zeros((BLOCK_SHARED_RECORDS + 2 * exchange_bytes + 63) // 4, np.int32)
        self.next = 0
        self.advance()

    def advance(self) -> None:
        """Make the next block's state (run while every thread waits between blocks)."""
        if self.next < len(self.starts):
            self.state[:] = 0
            self.state[_LIVE] = min(self.width, self.total - self.starts[self.next])
        self.next += 1


def run_block_threads(prep: Any, dims: tuple[int, ...], args: Sequence[Any], width: int,
                      exchange_bytes: int) -> None:
    """Run the launch `dims` of `prep`'s kernel block by block, each block's `width` threads at
    once (the same system threads for every block); raise the first error a thread reports."""
    blocks = _Blocks(math.prod(dims), width, exchange_bytes)
    values = prep._values(args)
    lanes = [prep.block() for _ in range(min(width, blocks.total))]
    if prep.compiled.uses_stack:
        for k in range(len(lanes)):
            if prep.stack_for(k).size < _STACK:
                prep.set_stack(k, np.empty(_STACK, np.uint8))
    step = threading.Barrier(len(lanes), action=blocks.advance)
    failed: list[tuple[int, int]] = []  # (lane, thread) of each error

    def lane_thread(lane: int) -> None:
        buf, base = lanes[lane]
        for start in blocks.starts:
            if start + lane < blocks.total and not failed:
                prep._pack_whole(buf, 0, *dims4(dims), *CLEAR_STATUS, *prep.stack_words(lane),
                                 start + lane, start + lane + 1, *values)
                prep.entry(base)
                if buf[ERROR_WORD] != NO_ERROR:
                    failed.append((lane, start + lane))
            step.wait()

    threads = [threading.Thread(target=lane_thread, args=(k,)) for k in range(len(lanes))]
    with _ONE_AT_A_TIME:
        launch_words().gl_block_state = blocks.state.ctypes.data
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            launch_words().gl_block_state = 0
            for lane_block in lanes:
                prep.release(lane_block)
    if failed:
        _raise(prep, lanes[failed[0][0]], failed[0][1])


def _raise(prep: Any, lane: tuple[bytearray, int], thread: int) -> None:
    """The error of a thread (a full adjoint stack: the launch cannot resume one thread)."""
    buf, base = lane
    if error_word(buf) == STATUS_STACK_FULL:
        raise KernelRuntimeError(
            f"kernel '{prep.kernel.key}': thread {thread} of a CPU block (config."
            f"enable_cpu_blocks) filled its adjoint stack ({_STACK} bytes); launch with a "
            "smaller block_dim or without enable_cpu_blocks")
    prep.recover(buf, base, thread, thread + 1, None)
