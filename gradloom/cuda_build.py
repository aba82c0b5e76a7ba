"""A kernel's CUDA entry for one GPU architecture: PTX compiled in-process, cached on disk.

`ptx_entry(kernel, "sm_90", "forward")` returns the PTX text, its entry symbol and the facts a
CUDA launch needs (runtime/cuda/launch.py reads them through `Kernel.cuda_entry`). Entries are
cached in the same on-disk cache as CPU objects (runtime/cache.py), keyed by the kernel's CPU
cache key (its source, types, options and gradloom's own source) plus the architecture and the
PTX ISA, so a changed compiler or another GPU never reuses an old entry.
"""

from __future__ import annotations

import hashlib
import sys
from typing import Any

from . import config
from .codegen import nvptx
from .codegen.entry_nvptx import nvptx_module
from .errors import CompileError, GradloomError
from .ir.nodes import walk_ops
from .ir.printer import format_kernel
from .passes.threads import thread_plan
from .runtime import cache


def get_cuda_supported_archs() -> list[int]:
    """Warp's list of the compute capabilities kernels can be compiled for (75 for sm_75),
    lowest first: those of gradloom's PTX compiler (LLVM's NVPTX target, in-process) when
    libdevice is installed, which it needs; empty otherwise. No GPU is needed."""
    try:
        nvptx.libdevice_path()
    except nvptx.LibdeviceNotFound:
        return []
    return list(nvptx.SUPPORTED_ARCHS)


def entry_key(kernel: Any, arch: str, variant: str) -> str:
    base = kernel.cache_key(variant)
    return hashlib.sha256(f"{base}|nvptx|{arch}|{nvptx.PTX_ISA}".encode()).hexdigest()


def symbol_for(name: str) -> str:
    """The PTX entry name of a kernel IR named `name` (as wp.codegen_ptx names it)."""
    return "gl_" + "".join(c if c.isalnum() else "_" for c in name)


def ptx_entry(kernel: Any, arch: str, variant: str = "forward") -> dict[str, Any]:
    """{"ptx", "symbol", "launch_ndim", "access", "uses_stack", "order_dependent", "threads"}
    for the kernel's forward or adjoint entry on `arch` ("sm_90"), from the cache or compiled
    now.

    `order_dependent` (adjoints): why the adjoint needs threads to run in order (threads read
    or overwrite elements that other threads write), or None. `threads`: the forward's
    (serial reason or None, scatter offsets) (passes/threads.py; a Tape's alias check)."""
    adjoint = variant == "adjoint"
    if adjoint and kernel.enable_backward is False:
        raise CompileError(f"kernel '{kernel.key}' was defined with enable_backward=False (on "
                           "the kernel or its module), so it has no adjoint; remove that "
                           "option to differentiate it")
    key = entry_key(kernel, arch, variant)
    entry = None if config.print_ir else cache.load(key)
    if entry is None:
        entry = _compile(kernel, arch, adjoint)
        cache.store(key, entry)
    elif config.verbose:
        print(f"gradloom: loaded {variant} PTX of kernel {kernel.key} ({arch}) from cache",
              file=sys.stderr)
    return entry


def _compile(kernel: Any, arch: str, adjoint: bool) -> dict[str, Any]:
    forward_ir, access = kernel._kernel_ir(False)
    ir = kernel._kernel_ir(True)[0] if adjoint else forward_ir
    symbol = symbol_for(ir.name)
    text = nvptx_module(ir, symbol)
    if config.print_ir:
        print(format_kernel(ir), file=sys.stderr)
        print(text, file=sys.stderr)
    try:
        ptx = nvptx.compile_to_ptx(text, (symbol,), arch, kernel.opt_level)
    except nvptx.LibdeviceNotFound as exc:
        raise GradloomError(str(exc)) from None
    if config.verbose:
        print(f"gradloom: compiled kernel {kernel.key} to PTX for {arch}"
              + (" (adjoint)" if adjoint else ""), file=sys.stderr)
    plan = thread_plan(forward_ir)
    # arrays each launch checks (no thread reads or writes an element another thread writes)
    # do not make the adjoint's threads depend on their order
    check = ir.launch_check if adjoint else None
    checked = frozenset(off for off, _ in check.kinds) if check is not None else frozenset()
    return {"ptx": ptx, "symbol": symbol, "launch_ndim": ir.launch_ndim, "access": access,
            "uses_stack": any(op.prim == "push" for op in walk_ops(ir.body)),
            "order_dependent": thread_plan(forward_ir, checked).serial if adjoint else None,
            "threads": (plan.serial, tuple(plan.scatter)), "launch_check": check}
