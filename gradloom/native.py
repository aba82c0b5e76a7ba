"""Native support code shared by every kernel, compiled once per process and cached on disk like
a kernel: the signal handlers of codegen/signals.py, installed by runtime/signals.py; gradloom's
own float32 math functions (codegen/float32_math.py) for Python-scope calls; the streamed fill
and copy of large host arrays (codegen/native_memory.py, used by runtime/memops.py)."""

from __future__ import annotations

import ctypes
import functools
import hashlib
from collections.abc import Callable

from .codegen import cpu, float32_math, native_memory, native_pool
from .codegen import signals as native_signals
from .ir import hostops
from .runtime import cache, memops
from .runtime import signals as runtime_signals


def compiled_symbols(tag: str, text: str, names: tuple[str, ...]) -> tuple[int, ...]:
    """The addresses of `names` in the LLVM module `text`, compiled (or loaded from the disk
    cache under `tag` and the text) and loaded into this process."""
    key = hashlib.sha256(f"{tag}|{text}".encode()).hexdigest()
    entry = cache.load(key)
    if entry is None:
        entry = {"object": cpu.compile_to_object(text, 2)}
        cache.store(key, entry)
    return tuple(cpu.object_loader().load_symbols(entry["object"], names))


@functools.cache
def install_signal_handlers() -> None:
    """Compile (or load) the SIGINT and fatal-signal handlers and install them (once)."""
    target = cpu.host_target()
    words = native_signals.shared_words()
    runtime_signals.share_words(words)
    if not native_signals.supported(target.triple):
        return
    text = native_signals.support_module(target.triple, target.datalayout)
    on_sigint, on_fatal, tick = compiled_symbols(f"signals|{target.key}", text,
                                                 ("gl_on_sigint", "gl_on_fatal", "gl_tick"))
    base = ctypes.addressof(words)
    shared = native_signals.SharedWords
    runtime_signals.install(runtime_signals.Handlers(
        on_sigint, on_fatal, base + shared.gl_sigint_next.offset,
        base + shared.gl_fatal_next.offset, tick, base + shared.gl_tick_fn.offset))


@functools.cache
def own_float32_functions() -> dict[str, Callable[[float], float]]:
    """gradloom's own float32 exp/log/sin/cos as the scalar thread loop computes them, callable
    from Python (compiled once per process, cached on disk)."""
    target = cpu.host_target()
    text = float32_math.host_module(target.triple, target.datalayout)
    names = float32_math.OWN_FLOAT32
    addresses = compiled_symbols(f"float32-math|{target.key}", text,
                                 tuple(f"gl_host_{b}f" for b in names))
    proto = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)
    return {b: proto(a) for b, a in zip(names, addresses, strict=True)}


@functools.cache
def stream_functions() -> memops.Streams:
    """The streamed fill and copy (compiled once per process, cached on disk)."""
    target = cpu.host_target()
    text = native_memory.memory_module(target.triple, target.datalayout)
    fill, copy = compiled_symbols(f"memory|{target.key}", text, native_memory.FUNCTIONS)
    return memops.stream_functions(fill, copy)


hostops.use_own_float32(own_float32_functions)
memops.use_streams(stream_functions)


@functools.cache
def native_pool_functions() -> tuple[int, int] | None:
    """Addresses of `gl_pool_worker` and `gl_pool_run` (codegen/native_pool.py), compiled once
    per process and cached on disk like a kernel; None where the native pool is unsupported."""
    target = cpu.host_target()
    if not native_pool.supported(target.triple):
        return None
    text = native_pool.pool_module(target.triple, target.datalayout)
    worker, run = compiled_symbols(f"pool|{target.key}", text, ("gl_pool_worker", "gl_pool_run"))
    return worker, run
