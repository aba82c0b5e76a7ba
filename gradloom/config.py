"""The one place gradloom's options live; environment variables are read here, once, at import.

Only options are public here (`dir(wp.config)` lists them). Assigning an option checks its value;
changing one that shapes compiled code (`mode`, `opt_level`, `verify_fp`, `simd`, `simd_width`,
`deterministic`) makes kernels built before use a new build at their next launch (a `wp.Launch` recorded earlier
keeps its build).
"""

from __future__ import annotations

import difflib as _difflib
import os as _os
import sys as _sys
import types as _types
import warnings as _warnings
from collections.abc import Callable as _Callable
from enum import IntEnum as _IntEnum
from pathlib import Path as _Path
from typing import Any as _Any


def _env_flag(name: str, default: bool) -> bool:
    raw = _os.environ.get(name)
    if raw is None:
        return default
    return raw.strip().lower() not in ("", "0", "false", "no", "off")


def _env_int(name: str, default: int, least: int) -> int:
    raw = _os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        value = least - 1
    if value < least:
        _warnings.warn(f"gradloom: ignoring {name}={raw!r} (expected an integer >= {least}); "
                       f"using {default}", stacklevel=2)
        return default
    return value


def _env_mode() -> str:
    raw = _os.environ.get("GRADLOOM_MODE", "release").strip().lower() or "release"
    if raw not in _MODES:
        _warnings.warn(f"gradloom: ignoring GRADLOOM_MODE={raw!r} (expected 'release' or "
                       "'debug'); using 'release'", stacklevel=2)
        return "release"
    return raw


def _default_cache_dir() -> _Path:
    raw = _os.environ.get("GRADLOOM_CACHE_DIR")
    if raw:
        return _Path(raw)
    base = _os.environ.get("XDG_CACHE_HOME") or str(_Path.home() / ".cache")
    return _Path(base) / "gradloom"


def _default_threads() -> int:
    try:
        cores = len(_os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = _os.cpu_count() or 1
    return _env_int("GRADLOOM_NUM_THREADS", cores, 1)


_MODES = ("release", "debug")

#: "release" compiles without bounds checks (like Warp); "debug" checks every array index and
#: turns a violation into a KernelRuntimeError after the launch, leaving the launch's arrays as
#: they were before it.
mode: str = _env_mode()

#: Print each kernel's IR and LLVM IR when it is compiled.
print_ir: bool = _env_flag("GRADLOOM_PRINT_IR", False)

#: Where compiled object code is cached between processes (`python -m gradloom` shows its size).
cache_dir: _Path = _default_cache_dir()

#: Disable the on-disk kernel cache (compile every kernel afresh in each process).
cache_enabled: bool = _env_flag("GRADLOOM_CACHE", True)

#: LLVM optimisation level used for kernels (0-3).
opt_level: int = min(_env_int("GRADLOOM_OPT_LEVEL", 3, 0), 3)

#: Warp's name for the kernels' optimisation level: None (the default) means `opt_level`; 0-3
#: overrides it for modules whose own `optimization_level` option is None. Module hashes tell
#: None from an explicit level, as Warp's do.
optimization_level: int | None = None

#: Print one line per kernel compile or cache load (Warp's `verbose`).
verbose: bool = _env_flag("GRADLOOM_VERBOSE", False)

#: Worker threads a CPU launch may be split across (default: the cores this process may use).
num_threads: int = _default_threads()

#: A launch asks the worker threads to help only when its measured cost is at least this many
#: nanoseconds: a split launch costs a few µs more, so shorter launches run on the calling thread.
parallel_min_ns: int = _env_int("GRADLOOM_PARALLEL_MIN_NS", 40000, 0)


#: Run each CPU kernel's thread loop in SIMD vector lanes, one thread per lane, where the kernel
#: allows it (docs/performance.md): results are bit for bit those of the scalar loop. False: one
#: thread at a time.
simd: bool = _env_flag("GRADLOOM_SIMD", True)

#: Threads per SIMD vector: 0 picks the host CPU's (16 with AVX-512, 8 with AVX2, else none);
#: 4, 8 or 16 force a width.
simd_width: int = _env_int("GRADLOOM_SIMD_WIDTH", 0, 0)
if simd_width not in (0, 4, 8, 16):
    _warnings.warn(f"gradloom: ignoring GRADLOOM_SIMD_WIDTH={simd_width} (expected 0, 4, 8 or "
                   "16); using 0", stacklevel=1)
    simd_width = 0


class DeterministicMode(_IntEnum):
    """Warp's values for `deterministic` (any but NOT_GUARANTEED means True here)."""

    NOT_GUARANTEED = 0
    RUN_TO_RUN = 1
    GPU_TO_GPU = 2


#: Run launches whose kernels add floats atomically on one thread, and in the scalar loop's
#: order inside SIMD lanes (no tree sums of the lanes' additions into one element), so their
#: results are bit-for-bit those of one thread, thread after thread (float addition is not
#: associative). Warp's `DeterministicMode` values are accepted too.
#: Warp's default is `DeterministicMode.NOT_GUARANTEED`, and libraries check the type (newton's
#: SolverSteel: `isinstance(wp.config.deterministic, wp.DeterministicMode)`); it is false as a bool
deterministic: bool | DeterministicMode = (
    DeterministicMode.RUN_TO_RUN if _env_flag("GRADLOOM_DETERMINISTIC", False)
    else DeterministicMode.NOT_GUARANTEED)

#: While a Tape records, print a warning to stderr when a launch or an array copy writes an
#: array that a recorded launch has read (Warp's check; gradloom's own gradients stay right
#: either way, see docs/autodiff.md). `backward()` and `reset()` clear the read marks.
verify_autograd_array_access: bool = False

#: After every launch, check the floating-point arrays it wrote for NaN and Inf, and raise a
#: KernelRuntimeError naming the kernel, the array and the first bad element (as Warp's option:
#: slow, for debugging).
verify_fp: bool = _env_flag("GRADLOOM_VERIFY_FP", False)

#: Before each launch, log its kernel, dim, arguments and device to the active logger's info
#: (Warp's option; the basic logger prints it).
print_launches: bool = False

#: Accepted for Warp compatibility; gradloom prints nothing it would silence.
quiet: bool = True

#: Warp's opt-in CPU blocks: a CPU launch's block_dim (2 to 1024) becomes the `wp.block_dim()` of
#: a kernel without tiles (and `wp.launch_tiled`'s block extent); tile kernels keep one thread
#: per block (runtime/launch/blocks.py, docs/differences.md). Off: every CPU block is one thread.
enable_cpu_blocks: bool = False

#: option name -> (check, what it accepts); assignments are checked against these
_CHECKS: dict[str, tuple[_Callable[[_Any], bool], str]] = {
    "mode": (lambda v: v in _MODES, "'release' or 'debug'"),
    "print_ir": (lambda v: isinstance(v, bool), "a bool"),
    "cache_dir": (lambda v: isinstance(v, (str, _os.PathLike)), "a path"),
    "cache_enabled": (lambda v: isinstance(v, bool), "a bool"),
    "opt_level": (lambda v: type(v) is int and 0 <= v <= 3, "an int from 0 to 3"),
    "optimization_level": (lambda v: v is None or (type(v) is int and 0 <= v <= 3),
                           "None or an int from 0 to 3"),
    "verbose": (lambda v: isinstance(v, bool), "a bool"),
    "num_threads": (lambda v: type(v) is int and v >= 1, "an int >= 1"),
    "parallel_min_ns": (lambda v: type(v) is int and v >= 0, "an int >= 0"),
    "simd": (lambda v: isinstance(v, bool), "a bool"),
    "simd_width": (lambda v: v in (0, 4, 8, 16) and type(v) is int, "0, 4, 8 or 16"),
    "deterministic": (lambda v: isinstance(v, (bool, DeterministicMode)),
                      "a bool or a DeterministicMode"),
    "verify_autograd_array_access": (lambda v: isinstance(v, bool), "a bool"),
    "verify_fp": (lambda v: isinstance(v, bool), "a bool"),
    "quiet": (lambda v: isinstance(v, bool), "a bool"),
    "enable_cpu_blocks": (lambda v: isinstance(v, bool), "a bool"),
}

#: options whose change makes existing kernels build again (see `_on_rebuild`)
_REBUILD = frozenset({"mode", "opt_level", "optimization_level", "verify_fp", "simd", "simd_width",
                      "deterministic"})

#: Warp's options that gradloom accepts and ignores (so ported code runs unchanged), with Warp
#: 1.19's defaults: reading one gives its value, assigning one changes nothing else.
_WARP_DEFAULTS: dict[str, _Any] = {
    "launch_array_access_mode": 0, "verify_cuda": False,
    "verbose_warnings": False,
    "log_level": 20, "verify_autograd_array_access": False,
    "enable_vector_component_overwrites": False, "legacy_scalar_return_types": False,
    "cache_kernels": True, "kernel_cache_dir": None, "cuda_output": None,
    "ptx_target_arch": None, "cuda_arch_suffix": None, "lineinfo": False,
    "line_directives": True, "compile_time_trace": False, "enable_backward": True,
    "default_grid_stride": True, "enable_mathdx_gemm": True,
    "enable_mathdx_solver": True, "enable_mathdx_fft": True, "cpu_compiler_flags": None,
    "llvm_cuda": False, "enable_graph_capture_module_load_by_default": True,
    "enable_mempools_at_init": True, "track_memory": False, "max_unroll": 16,
    "enable_tiles_in_stack_memory": True, "use_precompiled_headers": True,
    "legacy_cpu_linker": False, "load_module_max_workers": 0, "deterministic_max_records": 0,
    "deterministic_debug": False,
}
globals().update(_WARP_DEFAULTS)
_WARP_ONLY = frozenset(_WARP_DEFAULTS)

#: called after an option in _REBUILD changes (kernel.py and runtime/launch/launch.py drop their builds)
_on_rebuild: list[_Callable[[], None]] = []


def _add_rebuild_hook(hook: _Callable[[], None]) -> None:
    """Internal: call hook whenever an option that shapes compiled code changes."""
    _on_rebuild.append(hook)


class _ConfigModule(_types.ModuleType):
    """The module's class: checks assignments, and lists only options in dir()."""

    def __setattr__(self, name: str, value: _Any) -> None:
        if name.startswith("_"):
            super().__setattr__(name, value)
            return
        if name in _CHECKS:
            ok, accepts = _CHECKS[name]
            if not ok(value):
                raise ValueError(f"gradloom.config.{name} must be {accepts}, got {value!r}")
            if name == "cache_dir":
                value = _Path(value)
        elif name not in _WARP_ONLY:
            near = _difflib.get_close_matches(name, _CHECKS, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            _warnings.warn(f"gradloom.config has no option '{name}'{hint}; setting it changes "
                           "nothing", stacklevel=2)
        changed = name in _REBUILD and getattr(self, name, None) != value
        super().__setattr__(name, value)
        if changed:
            for hook in _on_rebuild:
                hook()

    def __dir__(self) -> list[str]:
        return sorted(_CHECKS)


_sys.modules[__name__].__class__ = _ConfigModule
