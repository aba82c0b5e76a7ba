"""The one place gradloom's options live; environment variables are read here, once, at import."""

from __future__ import annotations

import os
from pathlib import Path


def _env_flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return raw.strip().lower() not in ("", "0", "false", "no", "off")


def _default_cache_dir() -> Path:
    raw = os.environ.get("GRADLOOM_CACHE_DIR")
    if raw:
        return Path(raw)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gradloom"


#: "release" compiles without bounds checks (like Warp); "debug" checks every array index and
#: turns a violation into a KernelRuntimeError after the launch.
mode: str = os.environ.get("GRADLOOM_MODE", "release")

#: Print each kernel's IR and LLVM IR when it is compiled.
print_ir: bool = _env_flag("GRADLOOM_PRINT_IR", False)

#: Where compiled object code is cached between processes.
cache_dir: Path = _default_cache_dir()

#: Disable the on-disk kernel cache (compile every kernel afresh in each process).
cache_enabled: bool = _env_flag("GRADLOOM_CACHE", True)

#: LLVM optimisation level used for kernels (0-3).
opt_level: int = int(os.environ.get("GRADLOOM_OPT_LEVEL", "3"))

#: Print one line per kernel compile or cache load (Warp's `verbose`).
verbose: bool = _env_flag("GRADLOOM_VERBOSE", False)

def _default_threads() -> int:
    raw = os.environ.get("GRADLOOM_NUM_THREADS")
    if raw:
        return max(1, int(raw))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


#: Worker threads a CPU launch may be split across (default: the cores this process may use).
num_threads: int = _default_threads()

#: A launch is split only when its measured cost is at least this many nanoseconds: a split
#: launch costs ~10 µs more than a serial one, so shorter launches run on the calling thread.
parallel_min_ns: int = int(os.environ.get("GRADLOOM_PARALLEL_MIN_NS", "40000"))

#: Run launches whose kernels add floats atomically on one thread, so their results are
#: bit-for-bit the same from run to run (float addition is not associative).
deterministic: bool = _env_flag("GRADLOOM_DETERMINISTIC", False)

#: Warp-compatible switches that gradloom accepts; they change nothing here yet.
quiet: bool = True
verify_fp: bool = False
