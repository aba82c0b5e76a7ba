"""Splitting one launch into contiguous slices of its thread range, run by the worker pool.

Whether a launch is split: it needs more than one configured thread (`config.num_threads`), a
measured cost worth the wake-up (`config.parallel_min_ns`), and a kernel whose slices give what
one serial loop gives (passes/threads.py). A kernel whose threads read or overwrite what other
threads write always runs serially — recorded or not, so a Tape's replay sees what the launch
did and a forward value never depends on whether a Tape was recording. Slice k always covers the
same threads for a given launch size and thread count, so results do not depend on timing —
except the last bits of float atomics, which docs/differences.md lists.

Memory that threads only add into at shared addresses (the plan's `scatter`: `wp.atomic_add`
targets, and an adjoint's gradient scatters) goes, for workers 1..n-1, to private zeroed buffers
with the array's layout, added into the real array in worker order after the launch: no
contention, no locked instructions in the hot loop, and one answer for a given thread count.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from .. import config
from ..types import BLOCK_ARGS, STATUS_STACK_FULL
from .array import NDArray, array, zeros_same_layout
from .packing import error_word
from .pool import native_pool, worker_pool
from .structs import field_value

#: launches of at least this many threads are timed, to learn what a thread costs
TIMED_THREADS = 64
#: a launch this large is split before anything is known about its cost
_UNTIMED_SPLIT = 1 << 16


def workers_for(prepared: Any, total: int, args: Sequence[Any]) -> int:
    """How many slices this launch runs as (1: serially on the calling thread)."""
    n = min(config.num_threads, total)
    if n < 2:
        return 1
    plan = prepared.compiled.threads
    if plan.serial is not None:
        return 1
    if plan.float_atomics and config.deterministic:
        return 1
    cost, least = prepared.ns_per_thread, config.parallel_min_ns
    if least > 0 and ((total < _UNTIMED_SPLIT) if cost is None else (cost * total < least)):
        return 1
    if _overlapping(args) or not _scatter_ok(prepared, args, total):
        return 1
    return n


def _overlapping(args: Sequence[Any]) -> bool:
    """An array view that reaches one element through two indices (a zero stride) defeats the
    thread-own proof of passes/threads.py."""
    for a in args:
        if isinstance(a, array) and any(s == 0 and n > 1 for s, n in zip(a.strides, a.shape)):
            return True
    return False


def _scatter_ok(prepared: Any, args: Sequence[Any], total: int) -> bool:
    """Private gradient buffers pay only when they are small next to the launch's work."""
    size = 0
    for key, grad in prepared.compiled.scatter:
        target = _scatter_target(args, key, grad)
        if target is not None:
            if target is False:
                return False
            size += target.nbytes
    return size <= (1 << 20) + 64 * total


def _scatter_target(args: Sequence[Any], key: tuple[int, str | None], grad: bool) -> Any:
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


def run_split(prepared: Any, block: tuple[bytearray, int], dims: tuple[int, ...], total: int,
              args: Sequence[Any], n: int, restart: Callable[[], None] | None) -> None:
    """Run the packed launch in `block` as n slices on the pool, then finish what stopped early
    and sum the private gradients."""
    bounds = [(total * k // n, total * (k + 1) // n) for k in range(n)]
    blocks = [block] + [prepared.block() for _ in range(n - 1)]
    try:
        privates = _fill_blocks(prepared, blocks, dims, bounds, args)
        t0 = time.perf_counter_ns()
        _run_slices(prepared, [base for _, base in blocks])
        prepared.ns_per_thread = (time.perf_counter_ns() - t0) * n / total
        stopped = any(error_word(buf) for buf, _ in blocks)
        if stopped and _finish(prepared, blocks, dims, bounds, total, restart):
            return  # restarted serially: the private buffers are void
        for grad, bufs in privates:
            for p in bufs:
                grad += p
    finally:
        for b in blocks[1:]:
            prepared.release(b)


def _run_slices(prepared: Any, bases: list[int]) -> None:
    """entry(block) for every block, at once: on the native pool where there is one."""
    compiled = prepared.compiled
    if compiled.pool_functions is not None:
        if native_pool(len(bases), compiled.pool_functions).run(compiled.address, bases):
            return
        for base in bases:  # the pool is busy with another Python thread's launch
            prepared.entry(base)
        return
    worker_pool(len(bases)).run([_task(prepared.entry, base) for base in bases])


def _task(entry: Any, base: int) -> Callable[[], None]:
    return lambda: entry(base)


def _fill_blocks(prepared: Any, blocks: list[tuple[bytearray, int]], dims: tuple[int, ...],
                 bounds: list[tuple[int, int]], args: Sequence[Any]
                 ) -> list[tuple[NDArray, list[NDArray]]]:
    """Each worker's block: the same arguments, its own slice and stack, and (workers 1..n-1)
    private buffers in place of the gradients threads add into at shared addresses."""
    first = blocks[0][0]
    for k, ((buf, _), (lo, hi)) in enumerate(zip(blocks, bounds, strict=True)):
        if k:
            buf[BLOCK_ARGS:] = first[BLOCK_ARGS:]
        prepared.set_header(buf, dims, lo, hi, k)
    privates = []
    for (key, grad), offset in zip(prepared.compiled.scatter,
                                   prepared.compiled.threads.scatter, strict=True):
        target = _scatter_target(args, key, grad)
        if target is None:
            continue
        bufs = [zeros_same_layout(target) for _ in blocks[1:]]
        for (buf, _), p in zip(blocks[1:], bufs, strict=True):
            buf[BLOCK_ARGS + offset:BLOCK_ARGS + offset + 8] = p.ctypes.data.to_bytes(8, "little")
        privates.append((target, bufs))
    return privates


def _finish(prepared: Any, blocks: list[tuple[bytearray, int]], dims: tuple[int, ...],
            bounds: list[tuple[int, int]], total: int,
            restart: Callable[[], None] | None) -> bool:
    """Slices that stopped early (an error, or a full adjoint stack): raise, or resume each
    slice where it stopped. With `restart`, undo everything and run the launch serially instead
    (True)."""
    full = [k for k, (buf, _) in enumerate(blocks) if error_word(buf) == STATUS_STACK_FULL]
    if restart is not None and full:
        for k in full:
            prepared.grow_stack(k)
        restart()
        buf, base = blocks[0]
        prepared.set_stack(0, max(prepared.stacks, key=lambda s: s.size))
        prepared.set_header(buf, dims, 0, total)
        prepared.entry(base)
        if error_word(buf):
            prepared.recover(buf, base, 0, total, restart)
        return True
    for k, ((buf, base), (lo, hi)) in enumerate(zip(blocks, bounds, strict=True)):
        if error_word(buf):
            prepared.recover(buf, base, lo, hi, None, k)
    return False
