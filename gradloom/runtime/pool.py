"""Persistent pools of worker threads that help run the chunks of one launch.

`NativePool` runs a chunked launch's job on threads that live in native code
(codegen/native_pool.py: they spin for a while, then sleep on a futex), so a split launch costs
one ctypes call and a few microseconds. `WorkerPool` is the portable fallback: Python threads that
call the entry through ctypes (which releases the GIL); waking one through a lock costs ~30 µs on
a virtual machine. runtime/cpu/parallel.py decides when a launch is worth splitting. `share` hands
pieces of any work to the Python threads from one counter (chunks without a native pool, the
pieces of large host copies: runtime/memops.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import os
import threading
from collections.abc import Callable, Sequence

import numpy as np

from ..types import POOL_CONTROL_BYTES

Task = Callable[[], None]


class _Worker:
    """One daemon thread that runs one task each time `go` is released."""

    def __init__(self) -> None:
        self.go = threading.Lock()
        self.go.acquire()
        self.done = threading.Lock()
        self.done.acquire()
        self.task: Task | None = None
        self.error: BaseException | None = None
        threading.Thread(target=self._loop, name="gradloom-worker", daemon=True).start()

    def _loop(self) -> None:
        _idle_class()
        while True:
            self.go.acquire()
            try:
                if self.task is not None:
                    self.task()
            except BaseException as exc:  # handed to the launching thread, which re-raises
                self.error = exc
            self.task = None
            self.done.release()


class WorkerPool:
    """`size - 1` workers; the launching thread runs the first task itself."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._busy = threading.Lock()
        self._workers = [_Worker() for _ in range(size - 1)]

    def run(self, tasks: Sequence[Task]) -> None:
        """Run every task, at the same time where workers are free; return when all are done.
        A launch from a second Python thread while the pool is busy runs its tasks in turn."""
        if len(tasks) > self.size or not self._busy.acquire(blocking=False):
            for task in tasks:
                task()
            return
        try:
            self._run(tasks)
        finally:
            self._busy.release()

    def _run(self, tasks: Sequence[Task]) -> None:
        helpers = self._workers[: len(tasks) - 1]
        for worker, task in zip(helpers, tasks[1:], strict=True):
            worker.task, worker.error = task, None
            worker.go.release()
        first: BaseException | None = None
        try:
            tasks[0]()
        except BaseException as exc:
            first = exc
        for worker in helpers:
            worker.done.acquire()
            first = first or worker.error
        if first is not None:
            raise first


def share(threads: int, pieces: int, part: Callable[[int, int], None]) -> None:
    """Run part(k, w) for k in [0, pieces), each piece claimed from one counter by whichever of
    `threads` threads is free (w = 0 the calling thread, 1.. the pool's workers), so a late
    worker costs at most the piece it holds. The first error (or Ctrl-C) stops the claims and
    is raised once every thread has let go of its piece."""
    claims = itertools.count()  # next() is atomic under the GIL
    stop: list[bool] = []

    def claim_loop(w: int) -> Task:
        def run() -> None:
            while not stop:
                k = next(claims)
                if k >= pieces:
                    return
                try:
                    part(k, w)
                except BaseException:
                    stop.append(True)
                    raise
        return run

    if min(threads, pieces) < 2:
        claim_loop(0)()
        return
    worker_pool(threads).run([claim_loop(w) for w in range(min(threads, pieces))])


_WORKER_CTYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_RUN_CTYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)


class NativePool:
    """`size - 1` threads that each enter the native worker loop once and stay there; a launch
    posts its job (runtime/cpu/parallel.py) and takes part itself, all in one ctypes call."""

    def __init__(self, size: int, functions: tuple[int, int]) -> None:
        worker, run = functions
        self.size = size
        self._busy = threading.Lock()
        # the control words (each on its own cache line), then one (control, index) pair per
        # worker
        self._memory = np.zeros(POOL_CONTROL_BYTES + 64 + 16 * size, np.uint8)
        self._control = -(-self._memory.ctypes.data // 64) * 64
        self._run = native_run(run)
        self._worker = _WORKER_CTYPE(worker)
        for k in range(1, size):
            arg = self._control + POOL_CONTROL_BYTES + 16 * k
            ctypes.c_uint64.from_address(arg).value = self._control
            ctypes.c_uint64.from_address(arg + 8).value = k
            threading.Thread(target=_idle_worker, args=(self._worker, arg),
                             name="gradloom-worker", daemon=True).start()

    def run(self, job: int) -> int | None:
        """Run a job (abi.JOB) with the workers' help; the number of chunks that stopped
        early, or None (nothing run) when another Python thread's launch holds the pool."""
        if not self._busy.acquire(blocking=False):
            return None
        try:
            return int(self._run(self._control, job))
        finally:
            self._busy.release()


def _idle_class() -> None:
    """Put the calling thread in the idle scheduling class (Linux's SCHED_IDLE) where the
    system allows it: a worker then only ever runs on a core nothing else wants, never preempts
    the launching thread or another program, and a launch whose workers find no free core runs
    all its chunks on the caller (runtime/cpu/parallel.py) at serial speed."""
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def _idle_worker(loop: Callable[[int], None], arg: int) -> None:
    """A native worker thread: the idle class, then the native worker loop for good."""
    _idle_class()
    loop(arg)


@functools.cache
def native_run(run: int) -> Callable[[int | None, int], int]:
    """`gl_pool_run(ctl, job)` as a Python callable: with a null `ctl` (a job without
    JOB.WAKE) the calling thread runs every chunk itself."""
    return _RUN_CTYPE(run)  # type: ignore[no-any-return]


@functools.cache
def worker_pool(size: int) -> WorkerPool:
    """The process's pool of `size` Python threads (started on first use)."""
    return WorkerPool(size)


@functools.cache
def native_pool(size: int, functions: tuple[int, int]) -> NativePool:
    """The process's native pool of `size` threads (started on first use)."""
    return NativePool(size, functions)


def _forget_pools() -> None:
    worker_pool.cache_clear()
    native_pool.cache_clear()


# a forked child has none of its parent's threads: it starts its own pools
os.register_at_fork(after_in_child=_forget_pools)
