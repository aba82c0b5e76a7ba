"""`wp.ScopedTimer` and Warp's timing helpers (the CUDA activity timeline is empty on the CPU)."""

from __future__ import annotations

import contextvars
import cProfile
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from .recording import ACTIVE_TAPES

TIMING_KERNEL = 1
TIMING_KERNEL_BUILTIN = 2
TIMING_MEMCPY = 4
TIMING_MEMSET = 8
TIMING_GRAPH = 16
TIMING_ALL = 0xFFFFFFFF

#: How many printing timers are open around the current code (their output is indented).
_depth: contextvars.ContextVar[int] = contextvars.ContextVar("gradloom_timer_depth", default=0)


class TimingResult:
    """One timed device activity (Warp's CUDA timeline; never produced on the CPU)."""

    def __init__(self, device: Any, name: str, filter: int, elapsed: float) -> None:
        self.device, self.name, self.filter, self.elapsed = device, name, filter, elapsed


def timing_begin(cuda_filter: int = TIMING_ALL, synchronize: bool = True) -> None:
    """Begin collecting CUDA activity timings: there is no CUDA activity on the CPU."""


def timing_end(synchronize: bool = True) -> list[TimingResult]:
    """The activities timed since `timing_begin`: none on the CPU."""
    return []


def timing_print(results: list[TimingResult], indent: str = "") -> None:
    """Print timing results, one line per activity."""
    if not results:
        print("No activity")
        return
    for r in results:
        print(f"{indent}{r.elapsed:12.6f} ms | {r.device} | {r.name}")


class ScopedTimer:
    """`with wp.ScopedTimer("name"):` times the block; `elapsed` holds milliseconds after it.

    print: print "name took X.XX ms" at exit (nested printing timers indent by four spaces).
    dict: a dict of lists; each timing is appended under `name`. detailed: profile the block
    with cProfile and print its statistics. synchronize: wait for outstanding device work
    before and after (CPU work is already finished). cuda_filter / use_nvtx / color: accepted;
    there is no CUDA timeline or NVTX range on the CPU. An active Tape gets a named scope
    (`record_scope_begin/end`) unless `skip_tape`.
    """

    enabled = True

    def __init__(self, name: str, active: bool = True, print: bool = True,
                 detailed: bool = False, dict: dict[str, list[float]] | None = None,
                 use_nvtx: bool = False, color: int | str = "rapids",
                 synchronize: bool = False, cuda_filter: int = 0,
                 report_func: Callable[[list[TimingResult], str], None] | None = None,
                 skip_tape: bool = False) -> None:
        self.name = name
        self.active = active and self.enabled
        self.print = print
        self.detailed = detailed
        self.dict = dict
        self.use_nvtx, self.color = use_nvtx, color
        self.synchronize = synchronize
        self.cuda_filter = cuda_filter
        self.report_func = report_func or timing_print
        self.skip_tape = skip_tape
        self.elapsed = 0.0
        self.extra_msg = ""
        self.timing_results: list[TimingResult] = []
        self._start = 0
        self._profile: cProfile.Profile | None = None
        self._depth_token: contextvars.Token[int] | None = None
        self._tape: Any = None
        if dict is not None and name not in dict:
            dict[name] = []

    def __enter__(self) -> ScopedTimer:
        if self.active:
            if self.detailed:
                self._profile = cProfile.Profile()
                self._profile.enable()
            if self.print:
                self._depth_token = _depth.set(_depth.get() + 1)
            self._start = time.perf_counter_ns()
        tapes = ACTIVE_TAPES.get()
        if not self.skip_tape and tapes and hasattr(tapes[-1], "record_scope_begin"):
            self._tape = tapes[-1]
            self._tape.record_scope_begin(self.name)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._tape is not None:
            self._tape.record_scope_end()
            self._tape = None
        if not self.active:
            return
        self.elapsed = (time.perf_counter_ns() - self._start) / 1e6
        if self._profile is not None:
            self._profile.disable()
            self._profile.print_stats(sort="tottime")
            self._profile = None
        self.timing_results = []
        if self.dict is not None:
            self.dict[self.name].append(self.elapsed)
        if self.print and self._depth_token is not None:
            indent = "    " * (_depth.get() - 1)
            _depth.reset(self._depth_token)
            self._depth_token = None
            extra = f" {self.extra_msg}" if self.extra_msg else ""
            print(f"{indent}{self.name} took {self.elapsed:.2f} ms{extra}", flush=True)
