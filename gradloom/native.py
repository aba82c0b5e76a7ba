"""Native support code shared by every kernel, compiled once per process and cached on disk like
a kernel: the signal handlers of codegen/signals.py, installed by runtime/signals.py."""

from __future__ import annotations

import ctypes
import functools
import hashlib

from .codegen import cpu
from .codegen import signals as native_signals
from .runtime import cache
from .runtime import signals as runtime_signals


@functools.cache
def install_signal_handlers() -> None:
    """Compile (or load) the SIGINT and fatal-signal handlers and install them (once)."""
    target = cpu.host_target()
    words = native_signals.shared_words()
    runtime_signals.share_words(words)
    if not native_signals.supported(target.triple):
        return
    text = native_signals.support_module(target.triple, target.datalayout)
    key = hashlib.sha256(f"signals|{target.key}|{text}".encode()).hexdigest()
    entry = cache.load(key)
    if entry is None:
        entry = {"object": cpu.compile_to_object(text, 2)}
        cache.store(key, entry)
    on_sigint, on_fatal, tick = cpu.object_loader().load_symbols(
        entry["object"], ("gl_on_sigint", "gl_on_fatal", "gl_tick"))
    base = ctypes.addressof(words)
    shared = native_signals.SharedWords
    runtime_signals.install(runtime_signals.Handlers(
        on_sigint, on_fatal, base + shared.gl_sigint_next.offset,
        base + shared.gl_fatal_next.offset, tick, base + shared.gl_tick_fn.offset))
