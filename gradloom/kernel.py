"""`@wp.kernel`: compiles on first use (frontend → IR → LLVM → object code), cached on disk."""

from __future__ import annotations

import functools
import hashlib
import sys
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import config
from .autodiff.access import analyze
from .autodiff.reverse import adjoint_kernel
from .codegen import cpu, native_pool
from .codegen.llvm import emit_module
from .errors import CompileError, KernelTypeError, SourceLoc
from .frontend.func import annotated_params
from .frontend.lower import lower_kernel
from .frontend.source import SourceInfo, parse_function, source_digest
from .ir.nodes import walk_ops
from .ir.printer import format_kernel
from .ir.verify import verify
from .native import install_signal_handlers
from .passes.custom import inline_custom
from .passes.invariant import drop_invariant_params
from .passes.threads import ThreadPlan, thread_plan
from .runtime import cache
from .runtime.structs import type_key
from .types import ArrayType, StructType, arg_offsets

VERSION = "0.1.0"


@dataclass(frozen=True)
class CompiledKernel:
    """A loaded entry point and the facts launches need about it."""

    entry: Any
    params: tuple[tuple[str, Any], ...]
    launch_ndim: int
    #: per array argument, keyed (param index, struct field or None): how the kernel touches it
    #: ('loads', 'stores', 'minmax', 'result_used', 'working'); None if it cannot be analysed
    access: dict[tuple[int, str | None], frozenset[str]] | None = None
    uses_stack: bool = False
    reverse_threads: bool = False
    #: how a launch may be split across worker threads (passes/threads.py)
    threads: ThreadPlan = field(default_factory=ThreadPlan)
    #: what workers of a split launch add into privately: (array key like `access`, True for
    #: the array's gradient / False for its data), one per `threads.scatter` offset
    scatter: tuple[tuple[tuple[int, str | None], bool], ...] = ()
    #: the entry's machine address, and the native worker pool's (worker loop, run) functions
    #: (codegen/native_pool.py; None where unsupported) that run its slices
    address: int = 0
    pool_functions: tuple[int, int] | None = None


@dataclass(frozen=True)
class PendingBuild:
    """A kernel entry generated but not yet compiled to object code."""

    kernel: Kernel
    variant: str
    key: str
    symbol: str
    text: str
    facts: dict[str, Any]


class Kernel:
    """A Warp-style kernel. Launch it with `wp.launch(kernel, dim, inputs=[...])`."""

    def __init__(self, pyfunc: Any, enable_backward: bool | None = None) -> None:
        self.func = pyfunc
        self.key = pyfunc.__qualname__
        self.enable_backward = enable_backward
        self._info: SourceInfo | None = None
        self._params: tuple[tuple[str, Any], ...] | None = None
        self._compiled: CompiledKernel | None = None
        self._adjoint: CompiledKernel | None = None
        self._locs: tuple[SourceLoc, ...] | None = None
        self.__name__ = pyfunc.__name__
        self.__doc__ = pyfunc.__doc__
        self.__module__ = pyfunc.__module__
        _KERNELS.add(self)

    def forget_builds(self) -> None:
        """Drop the loaded entries (an option that shapes them changed: config.py)."""
        self._compiled = self._adjoint = None
        self._locs = None

    @property
    def info(self) -> SourceInfo:
        if self._info is None:
            self._info = parse_function(self.func)
        return self._info

    @property
    def params(self) -> tuple[tuple[str, Any], ...]:
        if self._params is None:
            params = annotated_params(self.info)
            for (name, t), node in zip(params, self.info.tree.args.args, strict=True):
                if t is Any:
                    raise KernelTypeError(f"kernel argument '{name}' needs a type annotation",
                                          self.info.loc(node))
            self._params = tuple(params)
        return self._params

    def cache_key(self, variant: str = "forward") -> str:
        h = hashlib.sha256()
        for part in (VERSION, variant, compiler_fingerprint(), source_digest(self.info, set()), config.mode,
                     str(config.opt_level), cpu.host_target().key,
                     ";".join(f"{n}:{type_key(t)}" for n, t in self.params)):
            h.update(part.encode() + b"\0")
        return h.hexdigest()

    def compiled(self) -> CompiledKernel:
        """The kernel's entry point, compiled or loaded from the cache on first use."""
        if self._compiled is None:
            self._compiled = self._build()
        return self._compiled

    def built(self, variant: str) -> bool:
        """Whether the entry for variant ("forward" or "adjoint") is loaded already."""
        return (self._adjoint if variant == "adjoint" else self._compiled) is not None

    def set_compiled(self, variant: str, compiled: CompiledKernel) -> None:
        """Install an entry built elsewhere (loading.py compiles many at once)."""
        if variant == "adjoint":
            self._adjoint = compiled
        else:
            self._compiled = compiled

    def adjoint_compiled(self) -> CompiledKernel:
        """The adjoint kernel's entry point (same arguments; gradients flow to inputs' grads)."""
        if self.enable_backward is False:
            raise CompileError(f"kernel '{self.key}' was defined with enable_backward=False, so "
                               "it has no adjoint; remove that option to differentiate it")
        if self._adjoint is None:
            self._adjoint = self._build("adjoint")
        return self._adjoint

    def _build(self, variant: str = "forward") -> CompiledKernel:
        pending = self.start_build(variant)
        if isinstance(pending, CompiledKernel):
            return pending
        return self.finish_build(pending, cpu.compile_to_object(pending.text, config.opt_level))

    def start_build(self, variant: str = "forward") -> CompiledKernel | PendingBuild:
        """The entry loaded from the cache, or what remains to compile: LLVM IR text (which
        loading.py may compile in another process) and the facts to store with its object."""
        key = self.cache_key(variant)
        symbol = f"gl_{_symbol_safe(self.__name__)}_{variant[0]}{key[:20]}"
        entry = None if config.print_ir else cache.load(key)
        if entry is None:
            text, facts = self._codegen(symbol, variant == "adjoint")
            return PendingBuild(self, variant, key, symbol, text, facts)
        if config.verbose:
            suffix = "" if variant == "forward" else f" {variant}"
            print(f"gradloom: loaded kernel {self.key} from cache{suffix}", file=sys.stderr)
        return self._load(entry, symbol)

    def finish_build(self, pending: PendingBuild, obj: bytes) -> CompiledKernel:
        """Store the compiled object code in the cache and load it."""
        if config.verbose:
            suffix = "" if pending.variant == "forward" else f" {pending.variant}"
            print(f"gradloom: compiled kernel {self.key}{suffix}", file=sys.stderr)
        entry = {**pending.facts, "object": obj}
        cache.store(pending.key, entry)
        return self._load(entry, pending.symbol)

    def _load(self, entry: dict[str, Any], symbol: str) -> CompiledKernel:
        install_signal_handlers()
        addr = cpu.object_loader().load(entry["object"], symbol)
        plan = ThreadPlan(*entry["threads"])
        where = self._array_offsets()
        # the gradient pointer is the word after the array's data pointer
        scatter = tuple((where[off], False) if off in where else (where[off - 8], True)
                        for off in plan.scatter)
        return CompiledKernel(cpu.ENTRY_CTYPE(addr), self.params, entry["launch_ndim"],
                              entry.get("access"), entry.get("uses_stack", False),
                              entry.get("reverse_threads", False), plan, scatter, addr,
                              native_pool_functions())

    def source_loc(self, index: int) -> SourceLoc:
        """The user's source location that a runtime error code refers to.

        Locations are not cached on disk (lines move when code above a kernel changes without
        changing the kernel); lowering again is deterministic and only happens on this error path.
        """
        if self._locs is None:
            self._locs = lower_kernel(self.info, list(self.params)).locs
        return self._locs[index]

    def _codegen(self, symbol: str, adjoint: bool) -> tuple[str, dict[str, Any]]:
        """LLVM IR text of the entry, and the facts a launch needs about it."""
        ir = drop_invariant_params(lower_kernel(self.info, list(self.params)))
        verify(ir)
        self._locs = ir.locs
        access = self._access(ir)
        # access analysis above also sees each @wp.func_grad region's adjoint; the adjoint kernel
        # replaces regions itself, the forward kernel runs their bodies inline
        ir = adjoint_kernel(ir) if adjoint else inline_custom(ir)
        verify(ir)
        target = cpu.host_target()
        plan = thread_plan(ir)
        text = emit_module(ir, symbol, target.triple, target.datalayout, plan.scatter)
        if config.print_ir:
            print(format_kernel(ir), file=sys.stderr)
            print(text, file=sys.stderr)
        return text, {"launch_ndim": ir.launch_ndim, "access": access,
                      "uses_stack": any(op.prim == "push" for op in walk_ops(ir.body)),
                      "reverse_threads": ir.reverse_threads,
                      "threads": (plan.serial, plan.scatter, plan.float_atomics)}

    def _access(self, ir: Any) -> dict[tuple[int, str | None], frozenset[str]] | None:
        """How the kernel touches each array argument (what a Tape must keep for backward)."""
        try:
            arrays = analyze(ir).arrays
        except CompileError:
            return None
        where = self._array_offsets()
        return {where[off]: acc.flags for off, acc in arrays.items() if off in where}

    def _array_offsets(self) -> dict[int, tuple[int, str | None]]:
        """Argument-block offset of each array's data pointer → (param index, struct field)."""
        offsets, _ = arg_offsets([t for _, t in self.params])
        where: dict[int, tuple[int, str | None]] = {}
        for i, ((_, t), off) in enumerate(zip(self.params, offsets, strict=True)):
            if isinstance(t, ArrayType):
                where[off] = (i, None)
            elif isinstance(t, StructType):
                where.update({off + t.offsets[n]: (i, n) for n, ft in t.fields
                              if isinstance(ft, ArrayType)})
        return where

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"kernel {self.key} is launched with wp.launch(), not called")

    def __repr__(self) -> str:
        return f"<gradloom kernel {self.key}>"


#: every kernel, so that changing `wp.config.mode` (or another option that shapes compiled code)
#: makes each one build again at its next launch
_KERNELS: weakref.WeakSet[Kernel] = weakref.WeakSet()


def _forget_builds() -> None:
    for k in list(_KERNELS):
        k.forget_builds()


config._add_rebuild_hook(_forget_builds)


@functools.cache
def compiler_fingerprint() -> str:
    """A hash of gradloom's own source, so a changed compiler never reuses old object code."""
    h = hashlib.sha256()
    root = Path(__file__).parent
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


@functools.cache
def native_pool_functions() -> tuple[int, int] | None:
    """Addresses of `gl_pool_worker` and `gl_pool_run` (codegen/native_pool.py), compiled once
    per process and cached on disk like a kernel; None where the native pool is unsupported."""
    target = cpu.host_target()
    if not native_pool.supported(target.triple):
        return None
    text = native_pool.pool_module(target.triple, target.datalayout)
    key = hashlib.sha256(f"{VERSION}|pool|{target.key}|{text}".encode()).hexdigest()
    entry = cache.load(key)
    if entry is None:
        entry = {"object": cpu.compile_to_object(text, 2)}
        cache.store(key, entry)
    worker, run = cpu.object_loader().load_symbols(entry["object"],
                                                   ("gl_pool_worker", "gl_pool_run"))
    return worker, run


def _symbol_safe(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def kernel(f: Any = None, *, enable_backward: bool | None = None, module: Any = None) -> Any:
    """Decorator: `@wp.kernel` or `@wp.kernel(enable_backward=False)`."""
    if f is None:
        return lambda fn: Kernel(fn, enable_backward)
    return Kernel(f, enable_backward)

