"""Compiling kernels ahead of their first launch, several at once (`wp.load_module`, `wp.force_load`).

Kernels compile lazily, at their first launch. A program that wants the compile cost up front
(a benchmark, a server warming up) asks for it here; independent kernels then compile on
`config.num_threads` threads. That overlaps well because LLVM does most of the work and
llvmlite calls into it through ctypes, which releases the GIL.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import config
from .kernel import Kernel


def kernels_of(module: Any) -> list[Kernel]:
    """The kernels defined at the top level of a Python module (a module object or its name)."""
    if isinstance(module, str):
        module = sys.modules[module]
    if not isinstance(module, types.ModuleType):
        raise TypeError(f"expected a module or a module name, got {type(module).__name__}")
    return [v for v in vars(module).values() if isinstance(v, Kernel)]


def compile_kernels(kernels: Iterable[Kernel], adjoint: bool = False,
                    threads: int | None = None) -> None:
    """Compile (or load from the cache) each kernel's forward entry — and its adjoint when
    asked — on up to `threads` threads (default `config.num_threads`). Errors are raised as the
    kernel's own compile error, for the first kernel that fails."""
    jobs: list[Any] = []
    for k in dict.fromkeys(kernels):  # each once, in order
        jobs.append(k.compiled)
        if adjoint and k.enable_backward is not False:
            jobs.append(k.adjoint_compiled)
    n = max(1, min(threads or config.num_threads, len(jobs)))
    if n == 1:
        for job in jobs:
            job()
        return
    with ThreadPoolExecutor(n, thread_name_prefix="gradloom-compile") as pool:
        for future in [pool.submit(job) for job in jobs]:
            future.result()


def load_module(module: Any = None, device: Any = None, recursive: bool = False,
                block_dim: Any = None) -> None:
    """Warp's `wp.load_module`: compile every kernel of `module` (default: the caller's) now.
    `recursive` also compiles kernels of its submodules."""
    if module is None:
        module = sys.modules[sys._getframe(1).f_globals["__name__"]]
    elif isinstance(module, str):
        module = sys.modules[module]
    found = kernels_of(module)
    if recursive:
        prefix = module.__name__ + "."
        for name, sub in list(sys.modules.items()):
            if name.startswith(prefix) and sub is not None:
                found += kernels_of(sub)
    compile_kernels(found)


def force_load(device: Any = None, modules: Any = None) -> None:
    """Warp's `wp.force_load`: compile the kernels of the given modules (default: of every
    imported module that defines any) now, in parallel."""
    chosen = modules if modules is not None else list(sys.modules.values())
    found: list[Kernel] = []
    for m in chosen:
        if isinstance(m, (str, types.ModuleType)):
            found += kernels_of(m)
    compile_kernels(found)
