"""CPU launches whose block's threads exchange tile values (`config.enable_cpu_blocks`,
builtins/tile_block.py): each block's threads run at once, one system thread each.

The threads of a block wait for each other at every exchange (codegen/llvm_blocks.py), so they
cannot run one after another as the launch's chunks do: each gets a launch block of its own for
its one thread index, and all of them run together (ctypes releases the GIL for the foreign
call), one block after another. Their shared state is a zeroed buffer whose address the launch
blocks carry in the adjoint-stack word, which a forward kernel does not use; the count of
threads still running starts at the block's width (a partial last block: fewer).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...abi import BLOCK_SHARED_RECORDS, CLEAR_STATUS, ERROR_WORD, NO_ERROR, dims4

_LIVE = 3  # the state's int32 word counting the threads still running


def run_block_threads(prep: Any, dims: tuple[int, ...], args: Sequence[Any], width: int,
                      exchange_bytes: int) -> None:
    """Run the launch `dims` of `prep`'s kernel block by block, each block's `width` threads at
    once; raise the first error a thread reports."""
    total = math.prod(dims)
    state = np.zeros((BLOCK_SHARED_RECORDS + 2 * exchange_bytes + 63) // 4, dtype=np.int32)
    values = prep._values(args)
    lanes = [prep.block() for _ in range(min(width, total))]
    try:
        for start in range(0, total, width):
            active = min(width, total - start)
            state[:] = 0
            state[_LIVE] = active
            for k, (buf, _) in enumerate(lanes[:active]):
                prep._pack_whole(buf, 0, *dims4(dims), *CLEAR_STATUS, state.ctypes.data, 0,
                                 start + k, start + k + 1, *values)
            threads = [threading.Thread(target=prep.entry, args=(base,))
                       for _, base in lanes[:active]]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for k, (buf, base) in enumerate(lanes[:active]):
                if buf[ERROR_WORD] != NO_ERROR:
                    prep.recover(buf, base, start + k, start + k + 1, None)
    finally:
        for lane in lanes:
            prep.release(lane)
