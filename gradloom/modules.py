"""Kernel modules (Warp's `Module`): kernels grouped by name, with per-module compile options.

A Python module's kernels belong to the kernel module of the same name (`wp.get_module(name)`);
`@wp.kernel(module="unique")` gives a kernel a module of its own. Modules are not compile units
here (each kernel compiles on its own); they carry options and let `load()` compile a group.
"""

from __future__ import annotations

import hashlib
import numbers
import re
import sys
import types
from dataclasses import dataclass, field
from typing import Any

from . import config
from .hooks import Hook

#: compiles kernels now, in parallel (loading.py fills it: it builds on kernels, which live in
#: modules)
COMPILE_KERNELS: Hook[Any] = Hook("Module.load()", "gradloom.loading")

#: Options every module starts with (Warp's names). Honoured here: `enable_backward` (a kernel
#: that does not set its own follows its module's) and `optimization_level` (LLVM's -O level;
#: None: `config.opt_level`). The rest are accepted and kept for Warp code that reads them back.
DEFAULT_OPTIONS: dict[str, Any] = {
    "enable_backward": True, "optimization_level": None, "max_unroll": 16,
    "fast_math": False, "fuse_fp": True, "lineinfo": False, "cuda_output": None,
    "block_dim": 256, "strip_hash": False, "compile_time_trace": False,
    "cpu_compiler_flags": None, "extra_build_options": None, "default_grid_stride": None,
    "enable_mathdx_gemm": None, "enable_mathdx_solver": None, "enable_mathdx_fft": None,
}


@dataclass(kw_only=True)
class ModuleBuildOptions:
    """Warp's `wp.ModuleBuildOptions` (the `extra_build_options` module option): extra include
    directories, preambles and dependencies of Warp's C++/CUDA builds. gradloom compiles through
    LLVM and has no C++ step: they are accepted and kept, and change nothing."""

    extra_cuda_include_dirs: list[Any] = field(default_factory=list)
    extra_cpu_include_dirs: list[Any] = field(default_factory=list)
    extra_cuda_preamble: str = ""
    extra_cpu_preamble: str = ""
    extra_build_dependencies: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name in ("extra_cuda_preamble", "extra_cpu_preamble"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {type(getattr(self, name)).__name__}")
        for name in ("extra_cuda_include_dirs", "extra_cpu_include_dirs",
                     "extra_build_dependencies"):
            setattr(self, name, list(getattr(self, name) or []))

    def merged(self, *others: ModuleBuildOptions) -> ModuleBuildOptions:
        """These options followed by others': lists keep each entry's first occurrence,
        preambles are joined by newlines."""
        def union(name: str) -> list[Any]:
            seen = [x for o in (self, *others) for x in getattr(o, name)]
            return list(dict.fromkeys(seen))

        def joined(name: str) -> str:
            return "\n".join(p for o in (self, *others) if (p := getattr(o, name)))

        return ModuleBuildOptions(
            extra_cuda_include_dirs=union("extra_cuda_include_dirs"),
            extra_cpu_include_dirs=union("extra_cpu_include_dirs"),
            extra_cuda_preamble=joined("extra_cuda_preamble"),
            extra_cpu_preamble=joined("extra_cpu_preamble"),
            extra_build_dependencies=union("extra_build_dependencies"))


def qualified_key(func: Any) -> str:
    """Warp's default kernel key: the qualified name with `.` as `__`, other symbols dropped
    (`make.<locals>.k` gives `make__locals__k`)."""
    return re.sub("[^0-9a-zA-Z_]+", "", func.__qualname__.replace(".", "__"))


class Module:
    """A named group of kernels and its options (`kernel.module`, `wp.get_module(name)`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        # new modules start from the config's deterministic settings, as in Warp
        self.options: dict[str, Any] = {
            **DEFAULT_OPTIONS, "mode": config.mode,
            "deterministic": config.deterministic,
            "deterministic_max_records": config.deterministic_max_records,  # type: ignore[attr-defined]
        }
        #: the latest kernel registered under each key
        self.kernels: dict[str, Any] = {}
        self._hashes: dict[Any, bytes] = {}
        #: the latest `@wp.func` defined under each key (Warp's `Module.functions`): a new
        #: definition of a key takes its other overloads
        self.functions: dict[str, Any] = {}
        #: the latest `@wp.struct` class defined under each qualified name (`Module.structs`)
        self.structs: dict[str, Any] = {}
        #: modules whose functions this module's kernels call (Warp's), and the modules whose
        #: kernels call this one's: a function defined again rebuilds its dependents' kernels
        self.references: set[Module] = set()
        self.dependents: set[Module] = set()

    @property
    def deterministic(self) -> bool:
        """Whether its kernels must give bit-identical results run to run: asked by the module's
        option or by `config.deterministic` (either suffices; the price is only speed)."""
        return bool(self.options.get("deterministic")) or bool(config.deterministic)

    def set_options(self, options: dict[str, Any]) -> None:
        """Update options (checked where gradloom acts on them); kernels compile again."""
        if "deterministic" in options:
            check_deterministic(options["deterministic"])
        if "deterministic_max_records" in options:
            check_max_records(options["deterministic_max_records"])
        self.options.update(options)

    def check_option_names(self, options: Any) -> None:
        """`module_options` of `@wp.kernel`: a dict of this module's option names, as Warp
        checks them (TypeError for another type, ValueError naming an unknown key)."""
        if not isinstance(options, dict):
            raise TypeError(f"module_options must be a dict, got {type(options).__name__}")
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise ValueError(f"unknown module option(s) {', '.join(map(repr, unknown))}. Valid "
                             f"options are: {', '.join(map(repr, sorted(self.options)))}.")

    def register_kernel(self, kernel: Any) -> None:
        self.kernels[kernel.key] = kernel

    def find_kernel(self, fn: Any) -> Any:
        """The kernel defined by the Python function named like fn (for `@wp.overload` stubs)."""
        found = self.kernels.get(qualified_key(fn))
        if found is not None and found.func.__qualname__ == fn.__qualname__:
            return found
        matches = [k for k in self.kernels.values() if k.func.__qualname__ == fn.__qualname__]
        if len(matches) > 1:
            keys = ", ".join(repr(k.key) for k in matches)
            raise RuntimeError(f"Ambiguous kernel lookup for '{fn.__qualname__}': several kernels "
                               f"({keys}) come from it; pass the kernel object to wp.overload()")
        return matches[0] if matches else None

    def live_kernels(self) -> list[Any]:
        """The module's kernels, generic ones replaced by their overloads."""
        out: list[Any] = []
        for k in self.kernels.values():
            out.extend(k.overloads.values() if k.is_generic else [k])
        return out

    def hash_module(self) -> bytes:
        """Warp's module content hash (a SHA-256 digest): it changes when the source of any
        kernel of the module, or anything its names resolve to (functions, constants, struct
        layouts, `wp.static` values), a kernel's own options (`launch_bounds`, ...), the
        overloads a generic kernel has, the module's options resolved against the config
        (`mode`, `optimization_level`: None stays a level of its own) or `config.verify_fp`
        change; kernels redefined identically keep it."""
        options = self.resolve_options(block_dim=self.options.get("block_dim"))
        options["verify_fp"] = config.verify_fp
        h = hashlib.sha256(_sorted_repr(options).encode())
        for key in sorted(self.kernels):
            k = self.kernels[key]
            h.update(f"{key}:{k.content_hash()}:{_sorted_repr(k.options)};".encode())
            if k.is_generic:
                h.update(f"overloads:{sorted(k.overloads)!r};".encode())
        digest = h.digest()
        self.hashers[options["block_dim"]] = digest
        return digest

    @property
    def execs(self) -> dict[tuple[Any, int], Module]:
        """Warp's loaded executables by (CUDA context, block_dim): here the CPU's (context None)
        once every kernel of the module has its forward entry loaded (kernels compile one by
        one; a module is not a compile unit)."""
        live = self.live_kernels()
        loaded = bool(live) and all(k.built("forward") for k in live)
        return {(None, int(self.options.get("block_dim") or 1)): self} if loaded else {}

    def get_module_identifier(self, block_dim: int | None = None) -> str:
        """Warp's name of the module's ahead-of-time files: `wp_<name>_<7 hex digits of the
        module hash and the config that shapes code>`, or `wp_<name>` with the `strip_hash`
        option (`block_dim`, Warp's per-block-size variant, names the same CPU code here)."""
        if self.options.get("strip_hash"):
            return f"wp_{self.name}"
        h = hashlib.sha256(self.hash_module())
        h.update(f"{config.mode};{config.verify_fp};{config.opt_level}".encode())
        return f"wp_{self.name}_{h.hexdigest()[:7]}"

    def get_module_hash(self, block_dim: int | None = None) -> bytes:
        """Warp's name for `hash_module()` (`block_dim` is a CUDA launch fact: ignored)."""
        return self.hash_module()

    @property
    def hashers(self) -> dict[Any, bytes]:
        """The latest hash computed, by block_dim (Warp keeps its module hashers there and
        reuses them until cleared; here every `hash_module()` computes afresh, so clearing this
        only forgets the record)."""
        return self._hashes

    def resolve_options(self, config_: Any = None, block_dim: int | None = None) -> dict[str, Any]:
        """Warp's `Module.resolve_options(wp.config)`: a copy of the module's options with the
        ones left at None (inherit) taken from the config (`mode`, `optimization_level`: still
        None when the config's is, meaning the default level, `config.opt_level` here), and
        block_dim replaced when given."""
        cfg = config if config_ is None else config_
        options = dict(self.options)
        if block_dim is not None:
            options["block_dim"] = block_dim
        if options.get("mode") is None:
            options["mode"] = cfg.mode
        if options.get("optimization_level") is None:
            options["optimization_level"] = getattr(cfg, "optimization_level", None)
        return options

    def load(self, device: Any = None, block_dim: Any = None) -> bool:
        """Compile (or load from the cache) every kernel of the module now. Kernels compile on
        their own here, so one that fails does not stop the others: it raises its error when
        launched, and `load` returns False. A module of one kernel (`module="unique"`) raises
        that kernel's error, as Warp's `load` raises its module's build error."""
        compile_kernels = COMPILE_KERNELS.get()
        if len(self.live_kernels()) == 1:
            compile_kernels(self.live_kernels())
            return True
        try:
            compile_kernels(self.live_kernels())
            return True
        except Exception:  # the failing kernel reports its error when launched
            pass
        ok = True
        for k in self.live_kernels():
            try:
                compile_kernels([k])
            except Exception:
                ok = False
        return ok

    def unload(self) -> None:
        """Forget the compiled code; kernels compile (or load from the cache) again when used."""
        for k in self.live_kernels():
            k.unload()

    def mark_modified(self) -> None:
        """Options changed: compile again on next use."""
        self.unload()

    def add_references(self, modules: Any) -> None:
        """This module's kernels call functions of `modules` (both sides remember it)."""
        for m in modules:
            if m is not self:
                self.references.add(m)
                m.dependents.add(self)

    def detach_references(self) -> None:
        """Forget this module's references (a module being discarded)."""
        for m in self.references:
            m.dependents.discard(self)
        self.references.clear()

    def function_redefined(self) -> None:
        """A function of this module was defined again (a reloaded module, a re-run cell):
        kernels that may call it, here and in dependent modules, build again at next use."""
        self.unload()
        for m in list(self.dependents):
            m.unload()

    def __repr__(self) -> str:
        return f"<gradloom module {self.name!r}>"


def register_struct(cls: Any) -> None:
    """Record a `@wp.struct` class in its Python module's kernel module."""
    get_module(cls.__module__).structs[cls.__qualname__] = cls


def _sorted_repr(options: dict[str, Any]) -> str:
    return repr(sorted(options.items(), key=lambda kv: kv[0]))


# The registry of kernel modules by name: like `sys.modules`, part of the program's state (the
# kernels a program defined), not an option.
_MODULES: dict[str, Module] = {}


def get_module(name: str) -> Module:
    """Warp's `wp.get_module(name)`: the kernel module of that name, created when first asked."""
    module = _MODULES.get(name)
    if module is None:
        module = _MODULES[name] = Module(name)
    return module


def has_module(name: str) -> bool:
    """Whether a kernel module of that name exists (asking creates none)."""
    return name in _MODULES


def discard_module(module: Module) -> None:
    """Forget a module no kernel is kept in (a duplicate `module="unique"` kernel's)."""
    module.detach_references()
    if _MODULES.get(module.name) is module:
        del _MODULES[module.name]


def unique_module(key: str, func: Any) -> Module:
    """A fresh module for one kernel (`@wp.kernel(module="unique")`)."""
    code = getattr(func, "__code__", None)
    text = f"{func.__module__}.{func.__qualname__}:{getattr(code, 'co_firstlineno', 0)}:{id(func)}"
    return get_module(f"{key}_{hashlib.sha256(text.encode()).hexdigest()[:8]}")


def module_for(module: Any, key: str, func: Any) -> Module:
    """The module a kernel joins: given (a Module, a name or "unique") or its function's own."""
    if isinstance(module, Module):
        return module
    if module == "unique":
        return unique_module(key, func)
    if isinstance(module, str):
        return get_module(module)
    if isinstance(module, types.ModuleType):
        return get_module(module.__name__)
    if module is not None:
        raise TypeError(f"module must be a Module, a module name or 'unique', got {module!r}")
    return get_module(func.__module__)


def _named(module: Any, depth: int) -> Module:
    if isinstance(module, Module):
        return module
    if module is None:
        return get_module(sys._getframe(depth + 1).f_globals.get("__name__", "__main__"))
    if isinstance(module, str):
        return get_module(module)
    return get_module(module.__name__)


def get_module_options(module: Any = None) -> dict[str, Any]:
    """Warp's `wp.get_module_options()`: the options of the caller's module (or the one given)."""
    return _named(module, 1).options


def set_module_options(options: dict[str, Any], module: Any = None) -> None:
    """Warp's `wp.set_module_options({...})`: update the caller's module's options (or the given
    module's); its kernels compile again on next use."""
    m = _named(module, 1)
    m.set_options(options)
    m.mark_modified()


#: the most CTAs a CUDA thread-block cluster may have (Hopper's non-portable limit)
MAX_CLUSTER_DIM = 16


def check_cluster_dim(value: Any) -> int:
    """A `cluster_dim` (CTAs per cluster): an int from 1 to 16; Warp's launches are 1-D, so a
    shape tuple is refused (TypeError), as are bools."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"cluster_dim must be an int count of CTAs (launch grids are 1-D, so "
                        f"not a cluster shape), got {type(value).__name__}: {value!r}")
    if not 1 <= value <= MAX_CLUSTER_DIM:
        raise ValueError(f"cluster_dim must be from 1 to {MAX_CLUSTER_DIM}, got {value!r}")
    return value


def kernel_options(given: dict[str, Any]) -> dict[str, Any]:
    """The options `@wp.kernel(...)` keeps of its CUDA keywords (None: not given), checked as
    Warp checks them when the kernel is declared: `cuda_max_registers` a positive int and not
    with `launch_bounds`, `enable_cuda_smem_spilling` a bool (False is the default, so it is
    not kept: such a kernel is the default kernel), `cluster_dim` as `check_cluster_dim`."""
    options = {k: v for k, v in given.items() if v is not None}
    regs = options.get("cuda_max_registers")
    if regs is not None:
        if "launch_bounds" in options:
            raise ValueError("cuda_max_registers and launch_bounds cannot be given together")
        if isinstance(regs, bool) or not isinstance(regs, int):
            raise TypeError(f"cuda_max_registers must be a positive int, got {regs!r}")
        if regs < 1:
            raise ValueError(f"cuda_max_registers must be >= 1, got {regs!r}")
    spill = options.get("enable_cuda_smem_spilling")
    if spill is not None and not isinstance(spill, bool):
        raise TypeError(f"enable_cuda_smem_spilling must be a bool, got {spill!r}")
    if spill is False:
        del options["enable_cuda_smem_spilling"]
    if "cluster_dim" in options:
        check_cluster_dim(options["cluster_dim"])
    if "grid_stride" in options:
        options["grid_stride"] = bool(options["grid_stride"])
    return options


def check_module_cluster_dim(module: Module) -> None:
    """A module's `cluster_dim` option set by hand is checked when its kernels are built."""
    value = module.options.get("cluster_dim", 1)
    if value != 1:
        check_cluster_dim(value)


def check_max_records(value: Any) -> None:
    """`deterministic_max_records` is a non-negative integer (a NumPy one too, as MuJoCo Warp
    passes; bool refused), as in Warp."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"the 'deterministic_max_records' option takes a non-negative int, got "
                        f"{value!r}")
    if value < 0:
        raise ValueError(f"the 'deterministic_max_records' option must be >= 0, got {value}")


def check_deterministic(value: Any) -> None:
    """A `deterministic` option is a wp.DeterministicMode (or a bool); anything else is refused."""
    if not isinstance(value, (bool, config.DeterministicMode)):
        raise ValueError(f"the 'deterministic' option takes a wp.DeterministicMode value (or a "
                         f"bool), got {value!r}")  # fmt: skip
