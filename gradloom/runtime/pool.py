"""A persistent pool of worker threads that run the slices of one launch at the same time.

A slice is one call of a compiled entry through ctypes, which releases the GIL for the call, so
the workers' slices run in parallel with the caller's. Threads are started once per pool size and
sleep on a lock between launches; waking one costs a few microseconds, which is why small
launches never come here (runtime/parallel.py decides).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence

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


@functools.cache
def worker_pool(size: int) -> WorkerPool:
    """The process's pool of `size` threads (started on first use)."""
    return WorkerPool(size)


# a forked child has none of its parent's threads: it starts its own pools
os.register_at_fork(after_in_child=worker_pool.cache_clear)
