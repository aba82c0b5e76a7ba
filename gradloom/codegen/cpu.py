"""The CPU target: LLVM IR text to optimised object code, and object code to callable entries."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import threading
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm

from .. import config
from . import llvm_tiles
from .objfile import undefined_symbols
from .signals import shared_words

#: the GCC runtime library: helpers LLVM's code generator calls on its own (e.g. `__udivti3`
#: for 128-bit division in a loop's closed form); glibc systems always have it
_RUNTIME_LIBRARY = "libgcc_s.so.1"

#: entry(block): see codegen/llvm.py for the block's layout. ctypes releases the GIL for the
#: call, which is what lets worker threads run slices of one launch at the same time.
ENTRY_CTYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@dataclass(frozen=True)
class HostTarget:
    """What generated code is specialised for; part of every cache key."""

    triple: str
    cpu: str
    features: str
    datalayout: str

    @property
    def key(self) -> str:
        return f"{self.triple}|{self.cpu}|{self.features}"


@functools.cache
def _init_llvm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


def _target_machine(opt: int) -> Any:
    _init_llvm()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=opt, codemodel="jitdefault", jit=True)


@functools.cache
def host_target() -> HostTarget:
    tm = _target_machine(2)
    return HostTarget(llvm.get_process_triple(), llvm.get_host_cpu_name(),
                      llvm.get_host_cpu_features().flatten(), str(tm.target_data))


def lane_width() -> int:
    """Threads per SIMD vector of the CPU thread loop (codegen/lanes.py), 0 for none: the
    config's `simd_width`, else 16 on AVX-512, 8 on AVX2; 0 when `config.simd` is off."""
    if not config.simd:
        return 0
    if config.simd_width:
        return config.simd_width
    return _host_lanes()


@functools.cache
def _host_lanes() -> int:
    features = set(llvm.get_host_cpu_features().flatten().split(","))
    if "+avx512f" in features:
        return 16
    return 8 if "+avx2" in features else 0


def _optimize(module: Any, tm: Any, opt: int, loops: bool = True) -> None:
    if opt > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt)
        pto.loop_vectorization = loops
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(module, pb)


def compile_to_object(ir_text: str, opt: int) -> bytes:
    """Parse, verify, optimise and emit object code for one module."""
    tiles = llvm_tiles.MARK in ir_text  # see llvm_tiles.MARK
    opt = min(opt, 2) if tiles else opt
    tm = _target_machine(opt)
    module = llvm.parse_assembly(ir_text)
    module.verify()
    _optimize(module, tm, opt, loops=not tiles)
    return bytes(tm.emit_object(module))


def optimized_ir(ir_text: str, opt: int) -> str:
    """The module after the optimisation compile_to_object runs, as text."""
    tm = _target_machine(opt)
    module = llvm.parse_assembly(ir_text)
    _optimize(module, tm, opt)
    return str(module)


class ObjectLoader:
    """One MCJIT engine for the process; object files are added to it, never removed, so the
    function pointers handed out stay valid as long as the loader lives."""

    def __init__(self) -> None:
        _init_llvm()
        shared_words()  # kernels link against these symbols
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _target_machine(2))
        with contextlib.suppress(RuntimeError):  # if absent, _check_links refuses what needs it
            llvm.load_library_permanently(_RUNTIME_LIBRARY)
        self._lock = threading.Lock()
        self._loaded: dict[str, int] = {}

    def load(self, obj: bytes, symbol: str) -> int:
        """Address of `symbol` after adding the object code (once per symbol)."""
        return self.load_symbols(obj, (symbol,))[0]

    def load_symbols(self, obj: bytes, symbols: tuple[str, ...]) -> list[int]:
        """Addresses of the symbols one object defines (the object is added once)."""
        with self._lock:
            if symbols[0] not in self._loaded:
                _check_links(obj, symbols[0])
                self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
                self._engine.finalize_object()
                for symbol in symbols:
                    addr = self._engine.get_function_address(symbol)
                    if not addr:
                        raise RuntimeError(f"symbol {symbol} missing from its object code")
                    self._loaded[symbol] = addr
            return [self._loaded[s] for s in symbols]


def _check_links(obj: bytes, symbol: str) -> None:
    """Raise if the object needs a symbol this process lacks (the JIT linker would bind it
    to address 0, and the code would crash on its first use)."""
    missing = [name for name in undefined_symbols(obj) if not llvm.address_of_symbol(name)]
    if missing:
        raise RuntimeError(
            f"the compiled code of {symbol} needs {', '.join(missing)}, which this process "
            f"cannot find (for __*ti3 helpers: is {_RUNTIME_LIBRARY} installed?)")


@functools.cache
def object_loader() -> ObjectLoader:
    """The process's loader (an engine must outlive every pointer it handed out)."""
    return ObjectLoader()
