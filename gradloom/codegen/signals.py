"""What kernels share with the process's signal handlers: the interrupt counter their loops poll,
the name of the kernel running, and the handlers themselves (LLVM IR, installed by
runtime/signals.py).

The shared words live in memory allocated here and are published to the JIT linker with
`llvm.add_symbol` before any kernel object is loaded (codegen/cpu.py), so cached object code
links against them in every process:

- `gl_interrupts` (i64): how many SIGINTs arrived. Every `POLL_TRIPS` trips of each loop and
  every `POLL_THREADS` threads an entry compares it with `gl_launch_base`; a difference stops
  the launch with `types.STATUS_INTERRUPTED` in the error word.
- `gl_launch_base` (i64): `gl_interrupts` as the runtime saw it when the launch began (in
  Python, right after the call that starts it: a SIGINT before that raises KeyboardInterrupt
  there, one after it stops the kernel). An entry reads it once, at its start. Reading
  `gl_interrupts` itself at the start lost a Ctrl-C that landed while Python prepared the
  launch: Python raised it only when the launch ended, and a runaway one never did.
- `gl_running` (ptr): the name of the kernel whose entry is running (set at its start, cleared
  at its end; the slices of a split launch share it, so the first to finish clears it): a fatal
  signal (a release-mode out-of-bounds access) prints it.
- `gl_block_state` (ptr): the shared state of the CPU block whose threads are running together
  (codegen/llvm_blocks.py, runtime/cpu/block_threads.py; one such launch at a time).
- `gl_sigint_next` (ptr) and `gl_fatal_next` ([32 x ptr], by signal number): the handlers that
  were installed before ours, which ours call after doing their part.
- `gl_tick_fn` (ptr): `gl_tick`, a function each poll calls (null until the handlers are
  installed). Every `GUARD_TICKS` calls it checks that our SIGINT handler is still installed,
  and puts it back in front if Python code replaced it since (Jupyter does for every cell,
  IPython at every prompt): so a long launch stays interruptible, and a short one never pays
  for the check.
"""

from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm

#: how many threads the thread loop runs between two polls of `gl_interrupts`
POLL_THREADS = 1 << 15
#: how many trips a kernel's own loop makes between two polls (codegen/llvm.py strip-mines it)
POLL_TRIPS = 1 << 14
#: how many polls (process-wide) between two checks that the SIGINT handler is still ours
GUARD_TICKS = 64
#: struct sigaction on Linux (x86-64 and aarch64; glibc and musl): handler at 0, flags at 136
_SIGACTION_BYTES, _SA_FLAGS_AT = 152, 136
_SA_ADD, _SA_DROP = 0x4 | 0x08000000 | 0x10000000, 0x80000000  # SIGINFO|ONSTACK|RESTART, RESETHAND

_WORDS = ("gl_interrupts", "gl_running", "gl_sigint_next", "gl_tick_fn", "gl_launch_base",
          "gl_block_state")
_FATAL_SLOTS = 32


class SharedWords(ctypes.Structure):
    """The memory behind the symbols above (allocated once per process, never freed)."""

    _fields_ = [*((name, ctypes.c_uint64) for name in _WORDS),
                ("gl_fatal_next", ctypes.c_uint64 * _FATAL_SLOTS)]


@functools.cache
def shared_words() -> SharedWords:
    """The process's shared words, published to the JIT linker on first use."""
    words = SharedWords()
    base = ctypes.addressof(words)
    for name in (*_WORDS, "gl_fatal_next"):
        llvm.add_symbol(name, base + getattr(SharedWords, name).offset)
    return words


#: external globals every kernel module declares
KERNEL_DECLARES = ("@gl_interrupts = external global i64",
                   "@gl_launch_base = external global i64",
                   "@gl_running = external global ptr",
                   "@gl_tick_fn = external global ptr",
                   "define private void @gl.noop() nounwind {\n  ret void\n}")

_HEADER = """
@gl_interrupts = external global i64
@gl_running = external global ptr
@gl_sigint_next = external global ptr
@gl_fatal_next = external global [32 x ptr]
@gl.ticks = private global i64 0
declare i32 @sigaction(i32, ptr, ptr)
declare i64 @write(i32, ptr, i64)
declare i64 @strlen(ptr)
declare ptr @signal(i32, ptr)
"""

# SIGINT: count it, then let the handler that was there (CPython's) do its part, so that
# Python raises KeyboardInterrupt once the launch returns
_SIGINT = """
define void @gl_on_sigint(i32 %sig, ptr %info, ptr %uctx) nounwind {
entry:
  %n = atomicrmw add ptr @gl_interrupts, i64 1 seq_cst, align 8
  %next = load atomic ptr, ptr @gl_sigint_next monotonic, align 8
  %addr = ptrtoint ptr %next to i64
  %isfn = icmp ugt i64 %addr, 1
  br i1 %isfn, label %chain, label %done
chain:
  call void %next(i32 %sig, ptr %info, ptr %uctx)
  br label %done
done:
  ret void
}
"""


# every GUARD_TICKS polls: is our SIGINT handler still installed? If a handler other than
# SIG_DFL/SIG_IGN replaced it, chain to that one and install ours again
_TICK = f"""
define void @gl_tick() nounwind {{
entry:
  %n = atomicrmw add ptr @gl.ticks, i64 1 monotonic, align 8
  %k = and i64 %n, {GUARD_TICKS - 1}
  %due = icmp eq i64 %k, {GUARD_TICKS - 1}
  br i1 %due, label %look, label %done
look:
  %act = alloca [{_SIGACTION_BYTES + 8} x i8], align 16
  %r1 = call i32 @sigaction(i32 2, ptr null, ptr %act)
  %cur = load ptr, ptr %act, align 8
  %addr = ptrtoint ptr %cur to i64
  %ours = icmp eq ptr %cur, @gl_on_sigint
  %plain = icmp ule i64 %addr, 1
  %leave = or i1 %ours, %plain
  br i1 %leave, label %done, label %retake
retake:
  store atomic ptr %cur, ptr @gl_sigint_next seq_cst, align 8
  store ptr @gl_on_sigint, ptr %act, align 8
  %flagsp = getelementptr i8, ptr %act, i64 {_SA_FLAGS_AT}
  %flags = load i32, ptr %flagsp, align 4
  %more = or i32 %flags, {_SA_ADD}
  %fewer = and i32 %more, {~_SA_DROP & 0xFFFFFFFF}
  store i32 %fewer, ptr %flagsp, align 4
  %r2 = call i32 @sigaction(i32 2, ptr %act, ptr null)
  br label %done
done:
  ret void
}}
"""


def _fatal(prefix: int, middle: int, suffix: int) -> str:
    return f"""
define void @gl_on_fatal(i32 %sig, ptr %info, ptr %uctx) nounwind {{
entry:
  %name = load atomic ptr, ptr @gl_running monotonic, align 8
  %running = icmp ne ptr %name, null
  br i1 %running, label %report, label %chain
report:
  %w1 = call i64 @write(i32 2, ptr @.prefix, i64 {prefix})
  %len = call i64 @strlen(ptr %name)
  %w2 = call i64 @write(i32 2, ptr %name, i64 %len)
  %w3 = call i64 @write(i32 2, ptr @.middle, i64 {middle})
  %w4 = call i64 @write(i32 2, ptr @.suffix, i64 {suffix})
  br label %chain
chain:
  %slot = getelementptr [32 x ptr], ptr @gl_fatal_next, i64 0, i32 %sig
  %next = load ptr, ptr %slot, align 8
  %addr = ptrtoint ptr %next to i64
  %isfn = icmp ugt i64 %addr, 1
  br i1 %isfn, label %call, label %default
call:
  call void %next(i32 %sig, ptr %info, ptr %uctx)
  ret void
default:
  %old = call ptr @signal(i32 %sig, ptr null)
  ret void
}}
"""


_PREFIX = b"\ngradloom: fatal signal while kernel "
_MIDDLE = b" was running.\n"
_SUFFIX = (b"gradloom: release mode does not check array indices; run again with "
           b"GRADLOOM_MODE=debug (or wp.config.mode = \"debug\") to find an out-of-bounds "
           b"access.\n")


def _bytes_global(name: str, data: bytes) -> str:
    body = "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:02X}" for c in data)
    return f'@{name} = private unnamed_addr constant [{len(data)} x i8] c"{body}", align 1'


def support_module(triple: str, datalayout: str) -> str:
    """The LLVM module with `gl_on_sigint` and `gl_on_fatal(sig, info, ucontext)`, and
    `gl_tick()`."""
    lines = [f'target triple = "{triple}"', f'target datalayout = "{datalayout}"', _HEADER,
             _bytes_global(".prefix", _PREFIX), _bytes_global(".middle", _MIDDLE),
             _bytes_global(".suffix", _SUFFIX), _SIGINT, _TICK,
             _fatal(len(_PREFIX), len(_MIDDLE), len(_SUFFIX))]
    return "\n".join(lines) + "\n"


def supported(triple: str) -> bool:
    """Handlers are installed through Linux's `struct sigaction` layout (runtime/signals.py)."""
    return "linux" in triple and triple.split("-")[0] in ("x86_64", "aarch64")
