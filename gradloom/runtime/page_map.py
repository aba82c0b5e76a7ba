"""The process's page map (/proc/PID/pagemap): which pages of a buffer the kernel holds. The
native sums of private buffers read it to skip pages no thread wrote (codegen/native_sums.py);
it is used only after it told a written page from an unwritten one on a probe."""

from __future__ import annotations

import ctypes
import functools
import mmap
import os
import struct


def descriptor() -> int:
    """A descriptor of this process's page map (/proc/PID/pagemap), or -1 where it cannot be
    read; a forked child opens its own."""
    return _open(os.getpid())


@functools.cache
def _open(pid: int) -> int:
    try:
        fd = os.open(f"/proc/{pid}/pagemap", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1
    if pages_in_use(fd, _probe()) != (True, False):
        os.close(fd)  # a page map that does not tell written pages apart would lose sums
        return -1
    return fd


def _probe() -> mmap.mmap:
    """Two fresh pages, the first written."""
    probe = mmap.mmap(-1, 2 * mmap.PAGESIZE)
    probe[0] = 1
    return probe


def pages_in_use(fd: int, memory: mmap.mmap) -> tuple[bool, ...]:
    """Per page of `memory`: whether the page map says it is present or swapped out."""
    address = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    pages = len(memory) // mmap.PAGESIZE
    try:
        raw = os.pread(fd, 8 * pages, address // mmap.PAGESIZE * 8)
    except OSError:
        return ()
    entries = struct.unpack(f"<{len(raw) // 8}Q", raw)
    return tuple(bool(e >> 62) for e in entries)
