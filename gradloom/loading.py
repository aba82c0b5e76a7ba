"""Compiling kernels ahead of their first launch, several at once (`wp.load_module`, `wp.force_load`).

Kernels compile lazily, at their first launch. A program that wants the compile cost up front
(a benchmark, a server warming up) asks for it here. Kernels found in the cache load at once; the
rest are lowered to LLVM IR here (cheap: ~2 ms a kernel) and their LLVM optimisation and code
generation (~30 ms a kernel, and most of a cold compile) run in `config.num_threads` forked
worker processes when forking is safe (`fork_is_safe`). Threads would not help: llvmlite
serialises every call into LLVM behind one lock.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
import types
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from . import config
from .codegen.cpu import compile_to_object
from .errors import user_facing
from .kernel import CompiledKernel, Kernel, PendingBuild
from .modules import COMPILE_KERNELS, Module, get_module, has_module


def kernels_of(module: Any) -> list[Kernel]:
    """The kernels of a Python module (a module object or its name): those defined at its top
    level and those registered in the kernel module of its name; or a `Module`'s kernels."""
    if isinstance(module, Module):
        return list(module.kernels.values())
    if isinstance(module, str):
        module = sys.modules[module]
    if not isinstance(module, types.ModuleType):
        raise TypeError(f"expected a module or a module name, got {type(module).__name__}")
    found = [v for v in vars(module).values() if isinstance(v, Kernel)]
    return list(dict.fromkeys(found + list(get_module(module.__name__).kernels.values())))


@COMPILE_KERNELS.fill
@user_facing
def compile_kernels(kernels: Iterable[Kernel], adjoint: bool = False,
                    threads: int | None = None) -> None:
    """Compile (or load from the cache) each kernel's forward entry — and its adjoint when
    asked — with up to `threads` processes (default `config.num_threads`). A compile error is
    raised as the kernel's own error, for the first kernel that fails, before any compiling."""
    pending: list[PendingBuild] = []
    concrete = [o for k in kernels for o in (k.overloads.values() if k.is_generic else [k])]
    for k in dict.fromkeys(concrete):  # each once, in order
        variants = ["forward"] + (["adjoint"] if adjoint and k.enable_backward is not False
                                  else [])
        for variant in variants:
            if k.built(variant):
                continue
            built = k.start_build(variant)
            if isinstance(built, CompiledKernel):
                k.set_compiled(variant, built)
            else:
                pending.append(built)
    objects = _objects([p.text for p in pending], [p.kernel.opt_level for p in pending], threads)
    for p, obj in zip(pending, objects, strict=True):
        p.kernel.set_compiled(p.variant, p.kernel.finish_build(p, obj))


def _objects(texts: list[str], levels: list[int], threads: int | None) -> list[bytes]:
    """Object code for each LLVM module (at its optimisation level), compiled in forked
    processes when there are several and forking is safe."""
    n = min(threads or config.num_threads, len(texts))
    if n < 2 or not fork_is_safe():
        return [compile_to_object(t, level) for t, level in zip(texts, levels, strict=True)]
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(compile_to_object, texts, levels))


def fork_is_safe() -> bool:
    """A forked child gets only the calling thread; a lock another thread held at the fork stays
    held there for ever. The child here only runs LLVM through llvmlite, so what matters is that
    no other Python thread can be inside llvmlite: every other Python thread must be one of
    gradloom's idle pool workers. Native threads (BLAS pools) hold no lock the child needs. JAX,
    whose runtime warns at every fork, is left undisturbed: with it loaded, compile serially."""
    if "fork" not in multiprocessing.get_all_start_methods() or "jax" in sys.modules:
        return False
    me = threading.current_thread()
    return all(t is me or t.name == "gradloom-worker" for t in threading.enumerate())


@user_facing
def load_module(module: Any = None, device: Any = None, recursive: bool = False,
                block_dim: Any = None, max_workers: int | None = None) -> None:
    """Warp's `wp.load_module`: compile every kernel of `module` (default: the caller's) now.
    `recursive` also compiles kernels of its submodules; `max_workers` as in `force_load`."""
    if module is None:
        module = sys.modules[_caller_module()]
    elif isinstance(module, str) and module not in sys.modules:
        if not has_module(module):
            raise RuntimeError(f"Module '{module}' does not contain any Warp kernels, "
                               "functions, or structs")
        module = get_module(module)
    elif isinstance(module, str):
        module = sys.modules[module]
    found = kernels_of(module)
    if recursive:
        prefix = (module.name if isinstance(module, Module) else module.__name__) + "."
        for name, sub in list(sys.modules.items()):
            if name.startswith(prefix) and sub is not None:
                found += kernels_of(sub)
    if not found and isinstance(module, types.ModuleType) and not _defines_warp_content(module):
        raise RuntimeError(f"Module '{module.__name__}' does not contain any Warp kernels, "
                           "functions, or structs")
    compile_kernels(found, threads=_workers(max_workers))


def _caller_module() -> str:
    """The name of the first module outside gradloom on the stack (the program calling)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "gradloom":
        frame = frame.f_back  # type: ignore[assignment]
    return str(frame.f_globals["__name__"]) if frame is not None else "__main__"


def _defines_warp_content(module: types.ModuleType) -> bool:
    """Whether a Python module defines a @wp.func or a @wp.struct (its kernels were asked)."""
    def warp_object(v: Any) -> bool:
        is_func = type(v).__name__ == "Function" and hasattr(v, "overloads")
        return is_func or bool(getattr(v, "__gl_struct__", False))

    return any(warp_object(v) for v in vars(module).values())


@user_facing
def force_load(device: Any = None, modules: Any = None, block_dim: Any = None,
               max_workers: int | None = None) -> None:
    """Warp's `wp.force_load`: compile the kernels of the given modules (default: of every
    imported module that defines any) now, on `max_workers` workers (0: serially; None:
    `config.load_module_max_workers`, whose 0 means `config.num_threads` here)."""
    chosen = modules if modules is not None else list(sys.modules.values())
    found: list[Kernel] = []
    for m in chosen:
        if isinstance(m, (str, types.ModuleType, Module)):
            found += kernels_of(m)
    compile_kernels(found, threads=_workers(max_workers))


def _workers(max_workers: int | None) -> int | None:
    """Compile processes for Warp's `max_workers` (None: the default; 0: one, serially)."""
    if max_workers is None:
        return None
    if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 0:
        raise ValueError(f"max_workers must be a non-negative int or None, got {max_workers!r}")
    return max(1, max_workers)
