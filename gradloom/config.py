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

#: Warp-compatible switches that gradloom accepts; they change nothing here yet.
quiet: bool = True
verify_fp: bool = False
