"""Splitting a launch into chunks of its thread range, which the calling thread and the worker
pool claim one at a time; and deciding when that pays.

A split launch posts a job to the pool and runs chunks itself from the same counter
(codegen/native_pool.py), so a worker that is descheduled or late costs nothing: the caller takes
the chunks nobody has started. Whether to ask the workers at all: the launch needs more than one
configured thread (`config.num_threads`), a measured cost worth a wake-up
(`config.parallel_min_ns`, against `Prepared.ns_per_thread`), and a kernel whose chunks give what
one serial loop gives (passes/threads.py; a kernel whose threads read or overwrite what other
threads write always runs serially, and one whose plan relies on a permutation runs serially
where the launch finds it missing or too short: `conditions_hold`, or whose launch is larger
than the plan's `limits`: `limits_hold`). After each split the
caller compares the time it took with what its own chunks say the whole launch costs serially;
a split that did not gain (the other core was busy) makes the next 1, 3, 7, ... launches of that
kernel run serially, so a busy machine pays for one probe now and then.

Memory that threads only add into at shared addresses (the plan's `scatter`: `wp.atomic_add`
targets, an adjoint's gradient scatters) goes, for chunks 1..k-1, to private zeroed buffers
summed into the array in chunk order after the launch. The chunks of such a launch depend only on
its size and the bytes it adds into (`scatter_chunks`), and the launch is cut into them whether
or not workers help, so its result does not depend on timing, nor on the thread count (2 or
more). The sums cost memory traffic, so the chunk count is bounded by the launch's size.
"""

from __future__ import annotations

import ctypes
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from ... import config
from ...abi import BLOCK_ARGS, JOB, STATUS_BYTES, STATUS_RECORD, STATUS_STACK_FULL
from ..array.array import array
from ..launch.checks import status_error
from .chunking import Chunking, bounds, scatter_target

#: launches of at least this many threads are timed, to learn what a thread costs
TIMED_THREADS = 64
#: a launch this large is split before anything is known about its cost
_UNTIMED_SPLIT = 1 << 16
#: a split launch without shared additions: chunks per pool thread, and their least length (ns)
CHUNKS_PER_THREAD = 4
CHUNK_NS = 4000
#: a launch with shared additions: chunks of at least SCATTER_CHUNK_WORK operations (the
#: threads' ThreadPlan.work summed: a chunk's fixed cost is a few µs), at most
#: SCATTER_MAX_CHUNKS of them, and private buffers of at most SCATTER_BYTES_PER_WORK bytes per
#: thread for each operation a thread does (ThreadPlan.work). Each chunk zeroes its buffer and
#: the launch sums them: a cost in bytes that the threads' work must outweigh even when no
#: worker helps (a busy core), so cheap threads adding into a large buffer stay serial (a
#: random scatter of vec3s: 19 operations, 3 bytes per thread), while cloth springs split
#: (55 operations, 2-3 bytes per thread; 7.4 -> 4.2 ms per 128² frame on 2 cores). Kernels whose
#: threads run loops (their cost has no bound: an n-body loop) use the _LOOPS values.
SCATTER_CHUNK_WORK, SCATTER_MIN_CHUNK_LOOPS = 1 << 18, 64
SCATTER_BYTES_PER_WORK, SCATTER_BYTES_PER_THREAD_LOOPS = 0.1, 64.0
SCATTER_MAX_CHUNKS = 8
#: a thread loop in SIMD lanes does each operation for 8 or 16 threads at once, so for the
#: least chunk length its work counts 1/LANE_WORK_SHARE (neo-Hookean: 86 operations, 2.4 ns per
#: thread in lanes, 5.6 one thread at a time; a 3x3 matrix product into 16 sums: 57 operations,
#: 0.64 ns, whose 16k-thread launch split in 2 chunks took 1.30x its serial time). The private
#: buffers' budget keeps the whole work: counting lanes there too left the cloth step's adjoint
#: serial (fwd+bwd 12 -> 17 ms at 512², benchmarks/bench_core.py)
LANE_WORK_SHARE = 8
#: a split that takes longer than this fraction of the serial estimate did not pay
GAIN = 0.95
#: after a split that did not pay, the next 1, 3, 7, ... (at most MAX_BACKOFF) launches of the
#: kernel run serially — or fewer, once RETRY_NS have passed
MAX_BACKOFF = 255
RETRY_NS = 50_000_000
_SERIAL: tuple[int, bool, list[Any]] = (1, False, [])


def plan(prepared: Any, total: int, args: Sequence[Any], buf: bytearray | None = None,
         dims: tuple[int, ...] = ()) -> tuple[int, bool, list[Any]]:
    """(chunks, wake, targets): how many chunks this launch runs as (1: the plain serial loop),
    whether the pool's workers are asked to help, and the memory (numpy, or None) each of the
    kernel's scatter entries adds into. `buf`: the packed launch block, over `dims` (without
    it, a plan with conditions is taken to fail them)."""
    n = config.num_threads
    compiled = prepared.compiled
    threads = compiled.threads
    if n < 2 or threads.serial is not None or \
            (threads.float_atomics and (compiled.ordered or config.deterministic)) or \
            (threads.conditions and not conditions_hold(threads.conditions, buf, dims)) or \
            (threads.limits and not limits_hold(threads.limits, dims)):
        return _SERIAL
    targets: list[Any] = []
    if compiled.scatter:
        # least_chunk(threads.loops, chunk_work(threads)), inline: this runs at every launch
        work = threads.work // LANE_WORK_SHARE if threads.lanes else threads.work
        least = (SCATTER_MIN_CHUNK_LOOPS if threads.loops
                 else SCATTER_CHUNK_WORK // (work if work > 1 else 1) or 1)
        if total < 2 * least:
            return _SERIAL
        targets = [scatter_target(args, key, grad) for key, grad in compiled.scatter]
        nbytes = 0
        for t in targets:
            if t is False:
                return _SERIAL  # a gradient laid out unlike its data: the adds stay serial
            if t is not None:
                nbytes += t.nbytes
        if overlapping(args):
            return _SERIAL
        if nbytes:
            chunks = scatter_chunks(total, nbytes, threads.loops, threads.work, least)
            return (chunks, _wake(prepared, total), targets) if chunks > 1 else _SERIAL
    if not _wake(prepared, total) or overlapping(args):
        return _SERIAL
    return _free_chunks(prepared, total, n), True, targets


def conditions_hold(conditions: Sequence[tuple[int, int, int, int]], buf: bytearray | None,
                    dims: tuple[int, ...]) -> bool:
    """Whether every permutation a thread plan relies on (passes/threads.py `conditions`)
    exists and covers the launch's extent, read from the descriptors the launch block names."""
    if buf is None:
        return False
    for offset, dim, count, ready in conditions:
        at = BLOCK_ARGS + offset
        desc = int.from_bytes(buf[at:at + 8], "little")
        if not desc or not ctypes.c_int32.from_address(desc + ready).value \
                or ctypes.c_int32.from_address(desc + count).value < dims[dim]:
            return False
    return True


def limits_hold(limits: Sequence[tuple[int, int, int]], dims: tuple[int, ...]) -> bool:
    """Whether each `wp.tid()` component a thread plan limits stays within its limit over the
    launch's extents (passes/threads.py `limits`; a component of a tid unpacked to fewer
    components than the launch has dimensions counted up to the launch's size); without the
    extents, not."""
    if not dims:
        return not limits
    total = math.prod(dims)
    return all((dims[c] if n == len(dims) else total) <= most for c, n, most in limits)


def chunk_work(threads: Any) -> int:
    """The work (ThreadPlan.work, at least 1) a thread of the entry counts for in the least
    length of its chunks."""
    return max(1, threads.work // LANE_WORK_SHARE if threads.lanes else threads.work)


def least_chunk(loops: bool, work: int) -> int:
    """The fewest threads a chunk of a launch with shared additions may have."""
    return SCATTER_MIN_CHUNK_LOOPS if loops else max(1, SCATTER_CHUNK_WORK // max(work, 1))


def scatter_chunks(total: int, nbytes: int, loops: bool, work: int,
                   least: int | None = None) -> int:
    """The chunks of a launch of `total` threads that adds into `nbytes` of shared memory (its
    threads running loops or not, doing `work` operations each, chunks of at least `least`
    threads: least_chunk's by default): from these alone, so that its result does not depend on
    timing nor on the machine. A power of two, so that the chunks share out evenly over 2, 4 or
    8 cores (3 chunks on 2 cores take 2/3 of the serial time)."""
    if least is None:
        least = least_chunk(loops, work)
    budget = SCATTER_BYTES_PER_THREAD_LOOPS if loops else SCATTER_BYTES_PER_WORK * work
    chunks = min(SCATTER_MAX_CHUNKS, total // least, 1 + int(budget * total / max(nbytes, 1)))
    return 1 << (max(chunks, 1).bit_length() - 1)


def _wake(prepared: Any, total: int) -> bool:
    """Whether the launch's measured cost is worth the workers' help (and no recent split of
    this kernel failed to gain)."""
    least = config.parallel_min_ns
    if least <= 0:
        return True
    cost = prepared.ns_per_thread
    if (total < _UNTIMED_SPLIT) if cost is None else (cost * total < least):
        return False
    return prepared.backoff.ready()


class Backoff:
    """When a kernel's launches may try the workers again after splits that did not gain."""

    __slots__ = ("last", "skip", "until")

    def __init__(self) -> None:
        self.skip = self.last = self.until = 0

    def ready(self) -> bool:
        if not self.skip:
            return True
        if time.perf_counter_ns() >= self.until:
            # a fresh start: a launch after a pause finds the workers asleep and gains nothing
            # (waking one on a VM takes longer than a short launch), so failures only count
            # towards a longer back-off while they come one after another
            self.skip = self.last = 0
            return True
        self.skip -= 1
        return False

    def record(self, gained: bool) -> None:
        if gained:
            self.last = 0
            return
        self.last = self.skip = min(2 * self.last + 1, MAX_BACKOFF)
        self.until = time.perf_counter_ns() + RETRY_NS


def _free_chunks(prepared: Any, total: int, n: int) -> int:
    """Chunks of a split launch whose chunking does not change its result: enough for the
    caller to take over a late worker's share, none shorter than ~CHUNK_NS."""
    cost = prepared.ns_per_thread
    most = CHUNKS_PER_THREAD * n
    chunks = most if cost is None else int(cost * total // CHUNK_NS)
    return max(min(chunks, most, total), n)


def overlapping(args: Sequence[Any]) -> bool:
    """An array view that reaches one element through two indices (a zero stride) defeats the
    thread-own proof of passes/threads.py."""
    for a in args:
        if (isinstance(a, array) and 0 in a.strides
                and any(s == 0 and n > 1 for s, n in zip(a.strides, a.shape))):
            return True
    return False


def run_split(prepared: Any, block: tuple[bytearray, int], dims: tuple[int, ...], total: int,
              args: Sequence[Any], chunks: int, wake: bool, targets: list[Any],
              restart: Callable[[], None] | None) -> None:
    """Run the packed launch in `block` as `chunks` chunks (with the workers' help if `wake`),
    finish chunks that stopped early, and sum the private buffers into `targets`."""
    t0 = time.perf_counter_ns()
    state = _take_state(prepared, chunks)
    try:
        while True:
            state.follow_stacks(prepared)
            state.set_targets(targets, chunks)
            stopped = _execute(prepared, state, block, dims, total, chunks, wake)
            _learn(prepared, state, total, chunks, wake, time.perf_counter_ns() - t0)
            if stopped and _recover(prepared, state, block, dims, total, chunks, restart):
                continue  # restarted: run the whole launch again
            if state.slow:
                state.sum_slow()
            return
    finally:
        prepared.chunkings.append(state)


def _take_state(prepared: Any, chunks: int) -> Chunking:
    """This launch's Chunking: a free one made for the current thread count, or a new one."""
    n = config.num_threads
    while prepared.chunkings:
        state: Chunking = prepared.chunkings.pop()
        if state.threads == n and state.max_chunks >= chunks:
            return state
    return Chunking(prepared, n, max(chunks, CHUNKS_PER_THREAD * n, SCATTER_MAX_CHUNKS))


def _execute(prepared: Any, state: Chunking, block: tuple[bytearray, int],
             dims: tuple[int, ...], total: int, chunks: int, wake: bool) -> int:
    """Run every chunk (and the native sums); the number of chunks that stopped early."""
    cost = prepared.ns_per_thread or 0.0
    spin = int(min(max(2 * cost * total / chunks, 5000), 200_000))
    state.post(chunks, total, JOB.RUN | JOB.SUM | (JOB.WAKE if wake else 0), spin, block[1])
    if state.run is None:
        return state.run_python(prepared, block, dims, total, chunks, wake)
    if wake:
        stopped = state.pool.run(state.job)
        if stopped is not None:
            return stopped
        state.set_flags(JOB.RUN | JOB.SUM)  # the pool is busy: run every chunk here
    return state.run(None, state.job)


def _learn(prepared: Any, state: Chunking, total: int, chunks: int, wake: bool,
           elapsed: int) -> None:
    """What the caller's own chunks say a thread costs; after a split, whether it gained."""
    ran, threads, ns = state.caller_stats()
    if threads:
        prepared.ns_per_thread = ns / threads
    if not wake or config.parallel_min_ns <= 0:
        return
    prepared.backoff.record(ran < chunks and elapsed <= GAIN * (prepared.ns_per_thread or 0.0)
                            * total)


def _recover(prepared: Any, state: Chunking, block: tuple[bytearray, int],
             dims: tuple[int, ...], total: int, chunks: int,
             restart: Callable[[], None] | None) -> bool:
    """Chunks that stopped early: raise the first error in chunk order, or resume each chunk
    where its stack filled up, then sum. With `restart` (which undoes the launch), grow the
    stacks and return True: the caller runs the whole launch again."""
    stopped = state.stopped_chunks(chunks)
    for _, record in stopped:
        err = int.from_bytes(record[:4], "little", signed=True)
        if err != STATUS_STACK_FULL:
            state.clear()
            buf = bytearray(block[0])
            buf[STATUS_RECORD] = record[:STATUS_BYTES]
            raise status_error(prepared, err, buf)
    for w in sorted({int.from_bytes(r[STATUS_BYTES:STATUS_BYTES + 8], "little")
                     for _, r in stopped}):
        if w:  # the caller's stack grows as its chunks resume below
            prepared.grow_stack(w)
    buf, base = block
    if restart is not None:
        prepared.grow_stack(0)
        prepared.set_header(buf, dims, 0, total)  # the caller's block: its new stack
        state.clear()
        restart()
        return True
    for c, record in stopped:
        lo, hi = bounds(total, chunks, c)
        state.patch(buf, c)
        prepared.set_header(buf, dims, lo, hi)
        buf[STATUS_RECORD] = record[:STATUS_BYTES]  # the code, and the thread that found it full
        prepared.recover(buf, base, lo, hi, None)
    if state.run is not None:
        state.set_flags(JOB.SUM)
        state.run(None, state.job)
    return False
