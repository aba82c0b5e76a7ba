"""Ctrl-C and crash reports for running kernels: installs the native handlers of
codegen/signals.py with sigaction, keeps the SIGINT one in place, and turns an interrupted
launch into KeyboardInterrupt.

Python's own SIGINT handler only runs between bytecodes, so while a kernel runs (in native code,
GIL released) it cannot stop it. Ours counts the signal in a word every kernel loop polls, then
calls the handler that was there before (CPython's, which makes Python raise KeyboardInterrupt
once the launch returns). Frameworks re-install CPython's handler now and then (Jupyter for each
cell, IPython at each prompt); a launch that runs long puts ours back in front of it from native
code (codegen/signals.py's `gl_tick`), so launches pay nothing for this in Python. Where Python's
SIGINT handler is SIG_DFL or SIG_IGN nothing is installed (Ctrl-C then kills the process, or is
ignored, as Python would have it).

Fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE) get a handler once, at the first kernel load: it
prints which kernel was running and how to find the bad access, then hands over to the handler
that was there (faulthandler's, if enabled) or to the default action.

Linux only (the `struct sigaction` layout is Linux's); elsewhere kernels still poll, and nothing
is installed. The handler addresses are process-wide state, set once by `install`.
"""

from __future__ import annotations

import ctypes
import signal
import sys
from dataclasses import dataclass
from typing import Any

_SA_SIGINFO, _SA_ONSTACK, _SA_RESTART = 0x4, 0x08000000, 0x10000000
_SA_RESETHAND = 0x80000000
_SIG_DFL, _SIG_IGN = 0, 1
_FATAL = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE)


class _Sigaction(ctypes.Structure):
    """Linux's `struct sigaction` (x86-64 and aarch64 glibc/musl)."""

    _fields_ = [("handler", ctypes.c_size_t), ("mask", ctypes.c_uint64 * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_size_t)]


@dataclass(frozen=True)
class Handlers:
    """Addresses of the native handlers and of the words they read (codegen/signals.py)."""

    on_sigint: int
    on_fatal: int
    sigint_next: int  # address of the word holding the SIGINT handler ours chains to
    fatal_next: int  # address of the 32-word table of fatal handlers ours chain to
    tick: int  # gl_tick, and the address of the word kernels call it through
    tick_word: int


_installed: list[Handlers] = []  # at most one: the process's handlers, once installed


class _NoWords:
    """Stands in for the shared words before any kernel is loaded (nothing reads them then)."""

    gl_interrupts = 0
    gl_launch_base = 0


#: the words kernels share with the handlers (codegen/signals.py `SharedWords`), one per process
_words: list[Any] = [_NoWords()]


def share_words(words: Any) -> None:
    """Called by native.py, which may import codegen/ (runtime/ may not)."""
    _words[0] = words


def launch_words() -> Any:
    """The shared words: a launch sets `gl_launch_base = gl_interrupts` as it begins, so that a
    Ctrl-C from then on stops its kernel (codegen/signals.py)."""
    return _words[0]


def _libc() -> ctypes.CDLL:
    lib = ctypes.CDLL(None, use_errno=True)
    lib.sigaction.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
    return lib


_LIBC = _libc() if sys.platform.startswith("linux") else None


def _current(sig: int) -> _Sigaction:
    act = _Sigaction()
    assert _LIBC is not None
    _LIBC.sigaction(sig, None, ctypes.byref(act))
    return act


def _take_over(sig: int, ours: int, next_word: int) -> None:
    """Install ours for sig, remembering the handler there now in next_word (ours calls it)."""
    assert _LIBC is not None
    act = _current(sig)
    # Python's SIGINT handler at SIG_DFL or SIG_IGN: leave Ctrl-C alone; a fatal signal at
    # SIG_DFL gets ours, which restores SIG_DFL when it is done
    if act.handler in ((ours, _SIG_DFL, _SIG_IGN) if sig == signal.SIGINT else (ours, _SIG_IGN)):
        return
    ctypes.c_size_t.from_address(next_word).value = act.handler
    act.handler = ours
    act.flags = (act.flags | _SA_SIGINFO | _SA_ONSTACK | _SA_RESTART) & ~_SA_RESETHAND
    _LIBC.sigaction(sig, ctypes.byref(act), None)


def install(handlers: Handlers) -> None:
    """Install the handlers (once per process; later calls do nothing)."""
    if _LIBC is None or _installed:
        return
    _installed.append(handlers)
    for sig in _FATAL:
        _take_over(sig, handlers.on_fatal, handlers.fatal_next + 8 * sig)
    guard()
    ctypes.c_size_t.from_address(handlers.tick_word).value = handlers.tick


def guard() -> None:
    """Put our SIGINT handler back in front if someone re-installed another since."""
    if _installed:
        h = _installed[0]
        _take_over(signal.SIGINT, h.on_sigint, h.sigint_next)


def raise_interrupt(kernel: str) -> None:
    """A launch stopped for a SIGINT: run Python's handlers now (normally raising
    KeyboardInterrupt), and raise KeyboardInterrupt if they did not."""
    ctypes.pythonapi.PyErr_CheckSignals()
    raise KeyboardInterrupt(f"kernel '{kernel}' was interrupted; the arrays it writes hold "
                            "partial results")
