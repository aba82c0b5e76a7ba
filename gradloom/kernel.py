"""`@wp.kernel`: compiles on first use (frontend → IR → LLVM → object code), cached on disk."""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import sys
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import config
from .abi import GRAD_SLOT
from .argtypes import launch_arg_type
from .codegen import cpu
from .errors import CompileError, GradloomError, KernelTypeError, LaunchError, SourceLoc
from .frontend.func import (
    MODULE_OF,
    annotated_params,
    referenced_functions,
)
from .frontend.generic import is_generic
from .frontend.source import SourceInfo, source_digest
from .frontend.static import parse_declared
from .ir.nodes import KernelIR
from .kernel_params import (
    ParamsView,
    ParamView,
    annotations_generic,
    concrete_param,
    holds_float_arrays,
)
from .modules import (
    check_module_cluster_dim,
    module_for,
    qualified_key,
    register_struct,
)
from .native import install_signal_handlers, native_pool_functions
from .passes.threads import ThreadPlan
from .runtime import cache
from .runtime.array.structs import REGISTER_STRUCT, array_fields, type_key
from .types import (
    ArrayType,
    FabricArrayType,
    IndexedArrayType,
    StructType,
    arg_offsets,
    resolve_annotation,
)

VERSION = "0.1.0"

MODULE_OF.fill(module_for)  # a function's kernel module (frontend/func.py: Function.module)
REGISTER_STRUCT.fill(register_struct)  # a struct's kernel module (runtime/array/structs.py)


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
    #: adjoints: what each launch checks of its threads' addresses before it runs
    #: (passes/overlap.py `LaunchCheck`), or None
    launch_check: Any = None
    #: compiled for bit-identical results (its module's or the config's deterministic mode):
    #: additions in thread order, so a launch with float atomics is never split
    ordered: bool = False
    #: an adjoint that runs its threads in launch order because its thread plan says their
    #: order cannot matter (pipeline.thread_order): the variant keeping the reverse order,
    #: which a launch that defeats the plan's proof runs instead
    reversed: str | None = None


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
    """A Warp-style kernel. Launch it with `wp.launch(kernel, dim, inputs=[...])`.

    `Kernel(func, key=None, module=None, options=None)` as in Warp: `key` names it (default: its
    qualified name), `module` is a `Module`, a module name or "unique", `options` may set
    `enable_backward`. A kernel with `Any` parameters is generic: `wp.overload` or a launch makes
    a concrete overload per argument-type signature.
    """

    #: forward mode: the kernel this one is the tangent kernel of (`tangent_kernel`), and the
    #: (parameter, its tangent parameter) index pairs
    dual_of: Kernel | None = None
    dual_pairs: tuple[tuple[int, int], ...] = ()
    #: what `wp.block_dim()` gives in this kernel: 1, or the CPU block width of a
    #: `block_variant` (Warp's `config.enable_cpu_blocks`)
    cpu_block_dim: int = 1
    #: a block variant's kernel (`block_variant`); None for others
    block_base: Kernel | None = None

    def __init__(self, func: Any, key: str | None = None, module: Any = None,
                 options: dict[str, Any] | None = None, code_transformers: Any = None,
                 source: Any = None, enable_backward: bool | None = None) -> None:
        self.func = func
        self.key = qualified_key(func) if key is None else key
        self.options: dict[str, Any] = dict(options or {})
        if enable_backward is not None:
            self.options["enable_backward"] = enable_backward
        self.module = module_for(module, self.key, func)
        #: the overloads of a generic kernel by signature; the generic kernel of an overload
        self.overloads: dict[str, Kernel] = {}
        self.generic_parent: Kernel | None = None
        self.is_generic = annotations_generic(func)
        self._info: SourceInfo | None = None
        self._params: tuple[tuple[str, Any], ...] | None = None
        self._compiled: CompiledKernel | None = None
        self._adjoint: CompiledKernel | None = None
        self._locs: tuple[SourceLoc, ...] | None = None
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__doc__ = func.__doc__
        self.__module__ = func.__module__
        self.code_transformers = list(code_transformers or ())
        with contextlib.suppress(GradloomError, SyntaxError):  # read the source now, as Warp
            self._info = parse_declared(func, self.code_transformers)  # does (and wp.static)
        self.module.register_kernel(self)
        self.scan_references()
        _KERNELS.add(self)

    def scan_references(self) -> None:
        """Record in its module the modules of the functions its code calls (at declaration
        and at each build: names may be bound after the kernel is declared)."""
        if self._info is None:
            return
        with contextlib.suppress(GradloomError, OSError, SyntaxError, TypeError):
            self.module.add_references({f.module for f in referenced_functions(self._info)})

    @property
    def enable_backward(self) -> bool | None:
        """The kernel's own `enable_backward` option, else its module's."""
        own = self.options.get("enable_backward")
        return own if own is not None else self.module.options.get("enable_backward")

    def forget_builds(self) -> None:
        """Drop the loaded entries (an option that shapes them changed: config.py)."""
        self._compiled = self._adjoint = None
        self.__dict__.pop("_gl_dual", None)
        self.__dict__.pop("_gl_fresh", None)
        self.__dict__.pop("_gl_zeroed", None)
        self.__dict__.pop("_gl_grad_reads", None)
        self.__dict__.pop("_gl_blocks", None)
        self._locs = None

    @property
    def info(self) -> SourceInfo:
        if self._info is None:
            self._info = parse_declared(self.func, self.code_transformers)
        return self._info

    @property
    def params(self) -> tuple[tuple[str, Any], ...]:
        """(name, type) per parameter; a generic kernel's generic ones are `Any` or
        `array(dtype=Any)`."""
        if self._params is None:
            params = annotated_params(self.info)
            for (name, _), node in zip(params, self.info.tree.args.args, strict=True):
                if node.annotation is None:
                    raise KernelTypeError(f"kernel argument '{name}' needs a type annotation",
                                          self.info.loc(node))
            self._params = tuple(params)
        return self._params

    @property
    def adj(self) -> ParamsView:
        """Warp's `kernel.adj` (its code generator), as far as libraries read it: `adj.args`, each
        parameter's `label` and `type`."""
        return ParamsView(tuple(ParamView(name, t) for name, t in self.params))

    # -- generic kernels ---------------------------------------------------------------------

    def add_overload(self, arg_types: list[Any]) -> Kernel:
        """The overload of this generic kernel for concrete `arg_types` (made once)."""
        names = [n for n, _ in self.params]
        if len(arg_types) != len(names):
            raise RuntimeError(f"kernel {self.key} takes {len(names)} arguments, "
                               f"{len(arg_types)} types given")
        types = [concrete_param(self.key, n, t, template)
                 for n, t, (_, template) in zip(names, arg_types, self.params, strict=True)]
        sig = ";".join(type_key(t) for t in types)
        ovl = self.overloads.get(sig)
        if ovl is None:
            ovl = self.overloads[sig] = copy.copy(self)
            ovl.overloads, ovl.generic_parent, ovl.is_generic = {}, self, False
            ovl._params = tuple(zip(names, types, strict=True))
            ovl._compiled = ovl._adjoint = ovl._locs = None
        return ovl

    def get_overload(self, arg_types: list[Any]) -> Kernel | None:
        sig = ";".join(type_key(resolve_annotation(t)) for t in arg_types)
        return self.overloads.get(sig)

    def specialize(self, args: list[Any]) -> Kernel:
        """The overload a launch with these arguments runs (types taken from the values)."""
        if len(args) != len(self.params):
            raise LaunchError(f"kernel '{self.key}' takes {len(self.params)} arguments, got "
                              f"{len(args)}")
        return self.add_overload([
            launch_arg_type(self.key, n, v, t) if is_generic(t) else t
            for (n, t), v in zip(self.params, args, strict=True)])

    def unload(self) -> None:
        """Forget the loaded entries (they load from the cache, or compile, on next use)."""
        self._compiled = self._adjoint = None
        for name in ("_gl_prepared", "_gl_adjoint_prepared", "_gl_dual"):
            self.__dict__.pop(name, None)

    @property
    def opt_level(self) -> int:
        """LLVM's optimisation level: the module's `optimization_level`, else the config's
        (Warp's `optimization_level`, else `opt_level`)."""
        level = self.module.options.get("optimization_level")
        if level is None:
            level = config.optimization_level
        return config.opt_level if level is None else int(level)

    def content_hash(self) -> str:
        """A hash of what the kernel's code depends on: its source, what its names resolve to,
        its parameter types (`Module.hash_module()` combines them)."""
        h = hashlib.sha256(source_digest(self.info, set()).encode())
        for name, t in self.params:
            h.update(f"{name}:{type_key(t)};".encode())
        return h.hexdigest()

    def cache_key(self, variant: str = "forward") -> str:
        h = hashlib.sha256()
        for part in (VERSION, variant, compiler_fingerprint(), source_digest(self.info, set()), config.mode,
                     str(self.opt_level), cpu.host_target().key, f"lanes={cpu.lane_width()}",
                     f"ordered={self.module.deterministic}",
                     ";".join(f"{n}:{type_key(t)}" for n, t in self.params),
                     *((f"block={self.cpu_block_dim}",) if self.cpu_block_dim != 1 else ())):
            h.update(part.encode() + b"\0")
        return h.hexdigest()

    def compiled(self) -> CompiledKernel:
        """The kernel's entry point, compiled or loaded from the cache on first use."""
        if self._compiled is None:
            if self.is_generic or any(is_generic(t) for _, t in self.params):
                raise KernelTypeError(f"kernel '{self.key}' is generic: launch it (its argument "
                                      "types choose an overload) or make one with wp.overload()",
                                      self.info.loc(self.info.tree))
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
            raise CompileError(f"kernel '{self.key}' was defined with enable_backward=False (on "
                               "the kernel or its module), so it has no adjoint; remove that "
                               "option to differentiate it")
        if self._adjoint is None:
            self._adjoint = self._build("adjoint")
        return self._adjoint

    def tangent_kernel(self) -> Kernel:
        """The kernel's tangent kernel (forward mode, autodiff/forward.py): this kernel's
        parameters, then a tangent of each parameter that holds float arrays (same type); it
        computes what this kernel does and the tangents of what it writes. A kernel of its own,
        so reverse mode differentiates it too (reverse-over-forward: Hessian-vector products)."""
        dual: Kernel | None = self.__dict__.get("_gl_dual")
        if dual is None:
            dual = copy.copy(self)
            dual.__dict__ = {k: v for k, v in self.__dict__.items() if not k.startswith("_gl_")}
            pairs = [(k, i) for i, k in enumerate(
                [k for k, (_, t) in enumerate(self.params) if holds_float_arrays(t)],
                start=len(self.params))]
            dual._params = (*self.params,
                            *((f"{self.params[k][0]}_tangent", self.params[k][1]) for k, _ in pairs))
            dual.dual_of, dual.dual_pairs = self, tuple(pairs)
            dual.key, dual.overloads = f"{self.key}_tangent", {}
            dual._compiled = dual._adjoint = dual._locs = None
            self._gl_dual = dual
        return dual

    def block_variant(self, block_dim: int) -> Kernel:
        """This kernel as a CPU launch with `block_dim` threads per block runs it (Warp's
        `config.enable_cpu_blocks`): a kernel of its own whose `wp.block_dim()` is block_dim, or
        this kernel where that is 1 or the kernel holds tiles that its block's threads do not
        feed with values of their own (builtins/tile_block.py)."""
        base = self.block_base
        if base is not None:  # a variant already
            return self if block_dim == self.cpu_block_dim else base.block_variant(block_dim)
        if block_dim == 1:
            return self
        known: dict[int, Kernel] = self.__dict__.setdefault("_gl_blocks", {})
        variant = known.get(block_dim)
        if variant is None:
            variant = copy.copy(self)
            variant.__dict__ = {k: v for k, v in self.__dict__.items() if not k.startswith("_gl_")}
            variant.cpu_block_dim, variant.overloads, variant.block_base = block_dim, {}, self
            variant._compiled = variant._adjoint = variant._locs = None
            known[block_dim] = variant
        # a tile kernel runs its blocks' threads together only where they exchange values
        # (builtins/tile_block.py); others keep one thread per block
        return variant if not variant.holds_tiles() or variant.block_exchange_bytes() else self

    def block_exchange_bytes(self) -> int:
        """The bytes of one exchange of its block's threads' records (the largest `bxchg`'s:
        codegen/llvm_blocks.py); 0: its threads exchange no values of their own."""
        held: int | None = self.__dict__.get("_gl_exchange")
        if held is None:
            from . import pipeline
            from .codegen.llvm_blocks import exchange_bytes, gathers

            ir, _ = pipeline.kernel_ir(self, False)
            held = self._gl_exchange = exchange_bytes(ir.body) if gathers(ir.body) else 0
        return held

    def printing_adjoint(self) -> Kernel | None:
        """The kernel an explicit adjoint launch runs where this one prints (None: the plain
        adjoint): pipeline.printing_kernel."""
        from . import pipeline

        return pipeline.printing_kernel(self)  # type: ignore[no-any-return]

    def holds_tiles(self) -> bool:
        """Whether the kernel's IR has tile memory (a `local` buffer: builtins/tile_loops.py)."""
        held: bool | None = self.__dict__.get("_gl_tiles")
        if held is None:
            from . import pipeline
            from .ir.nodes import walk_ops

            ir, _ = pipeline.kernel_ir(self, False)
            held = self._gl_tiles = any(op.prim == "local" for op in walk_ops(ir.body))
        return held

    def fresh_variant(self, pending: frozenset[int], seeds: frozenset[int] = frozenset(),
                      streamed: frozenset[int] = frozenset()
                      ) -> tuple[str, frozenset[int], frozenset[int]]:
        """The adjoint's variant that sets, each thread its own element, the gradients of
        those arrays at the positions in `pending` (to zero) and in `seeds` (to a seed passed
        as the array's data) whose gradient the adjoint touches only there
        (pipeline.fresh_candidates), and the positions it zeroes and seeds; ("adjoint", none,
        none) where none qualifies. A Tape runs it where it deferred those passes. Those also
        in `streamed` are stored bypassing the cache (pipeline.fresh_variant)."""
        from . import pipeline

        known: tuple[frozenset[int], frozenset[int]] | None = self.__dict__.get("_gl_fresh")
        if known is None:
            known = self._gl_fresh = (pipeline.fresh_candidates(self),
                                      pipeline.fresh_candidates(self, seeded=True))
        zeroed, seeded = pending & known[0], seeds & known[1]
        if not zeroed and not seeded:
            return "adjoint", zeroed, seeded
        return (pipeline.fresh_variant(tuple(sorted(zeroed | seeded)), seeded, streamed),
                zeroed, seeded)

    def zeroed_variant(self, params: frozenset[int]) -> str | None:
        """The forward variant whose threads first zero their own element of the arrays at
        `params` (pipeline.Variant.ZEROED: forward mode's unzeroed tangent buffers), None where
        the kernel touches one of them elsewhere too."""
        known: dict[frozenset[int], str | None] = self.__dict__.setdefault("_gl_zeroed", {})
        if params not in known:
            from . import pipeline

            known[params] = pipeline.zeroed_variant(self, params)
        return known[params]

    def gradient_reads(self) -> frozenset[int]:
        """Positions of the arrays whose gradient the adjoint only reads
        (pipeline.read_gradients): a Tape hands it their seeds where they are."""
        known: frozenset[int] | None = self.__dict__.get("_gl_grad_reads")
        if known is None:
            from . import pipeline

            known = self._gl_grad_reads = pipeline.read_gradients(self)
        return known

    def adjoint_reads(self) -> frozenset[tuple[int, str | None]] | None:
        """The arrays (keyed as `CompiledKernel.access`) whose contents before a launch the
        adjoint reads; a Tape keeps no copy of the others. None where the adjoint cannot be
        built (backward then says why): keep everything."""
        try:
            ir, _ = self._kernel_ir(adjoint=True)
        except Exception:  # backward builds it again and raises what it raises
            return None
        if ir.contents_read is None:
            return None
        where = self.array_offsets()
        return frozenset(where[off] for off in ir.contents_read if off in where)

    def _build(self, variant: str = "forward") -> CompiledKernel:
        pending = self.start_build(variant)
        if isinstance(pending, CompiledKernel):
            return pending
        return self.finish_build(pending, cpu.compile_to_object(pending.text, self.opt_level))

    def start_build(self, variant: str = "forward") -> CompiledKernel | PendingBuild:
        """The entry loaded from the cache, or what remains to compile: LLVM IR text (which
        loading.py may compile in another process) and the facts to store with its object."""
        check_module_cluster_dim(self.module)
        self.scan_references()
        key = self.cache_key(variant)
        symbol = self._symbol(key, variant)
        entry = None if config.print_ir else cache.load(key)
        if entry is None:
            text, facts = self._codegen(symbol, variant)
            return PendingBuild(self, variant, key, symbol, text, facts)
        if config.verbose:
            suffix = "" if variant == "forward" else f" {variant}"
            print(f"gradloom: loaded kernel {self.key} from cache{suffix}", file=sys.stderr)
        return self._load(entry, symbol)

    def _symbol(self, key: str, variant: str) -> str:
        return f"gl_{_symbol_safe(self.__name__)}_{variant[0]}{key[:20]}"

    def aot_record(self, variant: str = "forward") -> tuple[str, dict[str, Any]]:
        """The entry's symbol and cache record (launch facts and object code), compiled when the
        cache lacks it: what an ahead-of-time module file keeps (aot.py)."""
        key = self.cache_key(variant)
        entry = cache.load(key)
        if entry is None:
            text, facts = self._codegen(self._symbol(key, variant), variant)
            entry = {**facts, "object": cpu.compile_to_object(text, self.opt_level)}
            cache.store(key, entry)
        return self._symbol(key, variant), entry

    def load_record(self, variant: str, symbol: str, entry: dict[str, Any]) -> None:
        """Run this record's code for variant from now on (an ahead-of-time module file's)."""
        for name in ("_gl_prepared", "_gl_adjoint_prepared"):
            self.__dict__.pop(name, None)
        self.set_compiled(variant, self._load(entry, symbol))

    def finish_build(self, pending: PendingBuild, obj: bytes) -> CompiledKernel:
        """Store the compiled object code in the cache and load it."""
        if config.verbose:
            suffix = "" if pending.variant == "forward" else f" {pending.variant}"
            lanes = pending.facts.get("lanes")
            how = f" (one thread at a time: {lanes})" if lanes else ""
            print(f"gradloom: compiled kernel {self.key}{suffix}{how}", file=sys.stderr)
        entry = {**pending.facts, "object": obj}
        cache.store(pending.key, entry)
        return self._load(entry, pending.symbol)

    def _load(self, entry: dict[str, Any], symbol: str) -> CompiledKernel:
        install_signal_handlers()
        addr = cpu.object_loader().load(entry["object"], symbol)
        plan = ThreadPlan(*entry["threads"])
        where = self.array_offsets()
        if any(off not in where and off - GRAD_SLOT not in where for off in plan.scatter):
            # adds into memory no argument key names (an indexed array inside a struct): the
            # adds are plain load-add-stores, so the launch must stay serial
            plan = replace(plan, serial="threads add into an array held inside a struct",
                           scatter=())
        # an array's gradient pointer is GRAD_SLOT bytes after its data pointer (abi.py)
        scatter = tuple((where[off], False) if off in where else (where[off - GRAD_SLOT], True)
                        for off in plan.scatter)
        return CompiledKernel(cpu.ENTRY_CTYPE(addr), self.params, entry["launch_ndim"],
                              entry.get("access"), entry.get("uses_stack", False),
                              entry.get("reverse_threads", False), plan, scatter, addr,
                              native_pool_functions(), entry.get("launch_check"),
                              entry.get("ordered", False), entry.get("reversed"))

    def cuda_entry(self, arch: str, variant: str = "forward") -> dict[str, Any]:
        """The PTX of the forward or adjoint entry for a GPU architecture ("sm_90") and the
        facts a CUDA launch needs (cuda_build.py; cached on disk like CPU objects)."""
        from .cuda_build import ptx_entry

        return ptx_entry(self, arch, variant)

    def source_loc(self, index: int) -> SourceLoc:
        """The user's source location that a runtime error code refers to.

        Locations are not cached on disk (lines move when code above a kernel changes without
        changing the kernel); lowering again is deterministic and only happens on this error path.
        """
        if self._locs is None:
            from . import pipeline  # the compile pipeline, loaded at the first compile

            self._locs = pipeline.lowered(self).locs
        return self._locs[index]

    def _kernel_ir(self, adjoint: bool) -> tuple[KernelIR, Any]:
        """The IR of the forward kernel or its adjoint, verified, and the access facts."""
        from . import pipeline  # the compile pipeline, loaded at the first compile

        return pipeline.kernel_ir(self, adjoint)

    def _codegen(self, symbol: str, adjoint: bool | str) -> tuple[str, dict[str, Any]]:
        """LLVM IR text of the CPU entry, and the facts a launch needs about it."""
        from . import pipeline

        return pipeline.cpu_codegen(self, symbol, adjoint)

    def array_layouts(self) -> dict[int, tuple[int, int]]:
        """Argument-block offset of each array parameter's data pointer -> (ndim, element
        size): what the SIMD loop's run-time overlap check reads (codegen/lanes.py)."""
        offsets, _ = arg_offsets([t for _, t in self.params])
        return {off: (t.ndim, int(t.dtype.size)) for (_, t), off in
                zip(self.params, offsets, strict=True) if isinstance(t, ArrayType)}

    def array_offsets(self) -> dict[int, tuple[int, str | None]]:
        """Argument-block offset of each array's data pointer → (param index, dotted struct field
        path or None)."""
        offsets, _ = arg_offsets([t for _, t in self.params])
        where: dict[int, tuple[int, str | None]] = {}
        for i, ((_, t), off) in enumerate(zip(self.params, offsets, strict=True)):
            if isinstance(t, ArrayType):
                where[off] = (i, None)
            elif isinstance(t, FabricArrayType):
                continue
            elif isinstance(t, IndexedArrayType):
                where[off] = (i, "data")
            elif isinstance(t, StructType):
                where.update({off + o: (i, path) for path, o in array_fields(t)})
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


def _symbol_safe(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def codegen_ptx(kernel: Kernel, arch: str = "sm_90", adjoint: bool = False) -> str:
    """The PTX of a kernel (or of its adjoint) for an NVIDIA GPU architecture (`"sm_80"`,
    `"sm_90"`, ...), compiled in-process by LLVM's NVPTX backend with libdevice linked in
    (needs libdevice.10.bc: `pip install gradloom[cuda]` or a CUDA toolkit). The entry
    function is named `gl_<kernel>`; PTX ISA 7.8, so CUDA 11.8 drivers and newer load it."""
    from . import pipeline  # the compile pipeline, loaded at the first compile

    return pipeline.ptx(kernel, arch, adjoint)
