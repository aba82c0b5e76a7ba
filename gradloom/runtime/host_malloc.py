"""glibc's allocator set up for arrays made and dropped at every step (`wp.zeros` in a loop,
a Tape's gradients): blocks up to 32 MiB come from the heap, not from a fresh mmap each time.

glibc serves a block of 128 KiB or more with its own mmap and unmaps it when freed, until a
freed block raises that threshold (up to 32 MiB) — a rule of the process's history: in one
process an array of 4 MiB came from the heap, in another from mmap at every call. A fresh
mapping is zeroed by the kernel page by page on first touch, and unmapping it interrupts every
core that ran one of the process's threads (the worker pool's) to flush its TLB; on a virtual
machine both are slow. Measured here (benchmarks/bench_forward_mode.py, warm kernel cache,
idle machine): the HVP 46-65 ms with mmap per array against 8 ms from the heap; the plain
forward 3.0 against 1.9 ms. The settings are where glibc's own rule ends up after one large
free; a user's MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ (glibc's environment
variables) win, and other C libraries are left alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

#: mallopt's parameter numbers (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

#: glibc's largest dynamic mmap threshold on 64-bit systems, and its trim threshold then
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD


def tune_for_large_arrays() -> bool:
    """Set glibc's thresholds (once per process is enough; calling again changes nothing);
    whether they were set."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    return mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and ok
