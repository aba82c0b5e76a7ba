"""Memory for BVH trees: one mapping per tree, handed back to a small pool when the tree dies.

A 199k-triangle mesh's tree and walk records take ~24 MB. Fresh memory is zeroed by the kernel
page by page on first touch, which on these virtual machines made most of a build's time: a
build writing fresh memory took 48 ms where writing it again took a few (its refit alone 26.6
against 7.4 ms, one thread, load 8). So a tree's arrays are views of one anonymous mapping, and
when the tree is collected the mapping goes back to a pool the next tree of about that size
reuses (a program that rebuilds a mesh every step, or builds meshes of one size, touches fresh
pages once). The pool keeps at most `KEEP` mappings of `LIMIT` bytes in all.

The mapping asks for transparent huge pages: the nearest-first walk reads the pair and triangle
records at random, and with 4 KB pages its misses in the TLB cost the closest-point query ~30%
(measured before this module, benchmarks/README.md). With the kernel's `defrag=madvise` a
huge-page fault may stop to compact memory; the pool makes that a first-build cost.
"""

from __future__ import annotations

import contextlib
import mmap
import threading
import weakref
from typing import Any

import numpy as np
import numpy.typing as npt

NDArray = npt.NDArray[Any]

#: trees smaller than this take plain numpy memory (a mapping per small tree is not worth it)
MIN_BYTES = 1 << 20
#: the pool's bounds: mappings kept, and their bytes in all
KEEP, LIMIT = 4, 512 << 20
#: a kept mapping serves a request of at least this fraction of its size
FIT = 0.5
_ALIGN = 64

_lock = threading.Lock()
_free: list[mmap.mmap] = []


def _mapping(nbytes: int) -> mmap.mmap:
    """A kept mapping that fits nbytes (best fit), or a new one."""
    with _lock:
        fits = [m for m in _free if nbytes <= len(m) and nbytes >= FIT * len(m)]
        if fits:
            best = min(fits, key=len)
            _free.remove(best)
            return best
    size = -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE
    # private: a shared anonymous mapping is shared memory, which gets no transparent huge pages
    private = getattr(mmap, "MAP_PRIVATE", None)  # None on Windows
    m = (mmap.mmap(-1, size) if private is None
         else mmap.mmap(-1, size, flags=private | mmap.MAP_ANONYMOUS))
    if hasattr(mmap, "MADV_HUGEPAGE"):
        with contextlib.suppress(OSError):  # a kernel without transparent huge pages
            m.madvise(mmap.MADV_HUGEPAGE)
    return m


def _give_back(m: mmap.mmap) -> None:
    with _lock:
        _free.append(m)
        while len(_free) > KEEP or sum(len(x) for x in _free) > LIMIT:
            _free.pop(0)  # dropped: unmapped once no array views it


def arena(owner: object, sizes: list[int]) -> list[NDArray]:
    """Uninitialised uint8 arrays of these byte sizes, each 64-byte aligned, living as long as
    `owner` does (their memory goes back to the pool when owner is collected: no array may
    outlive it)."""
    offsets, total = [], 0
    for s in sizes:
        offsets.append(total)
        total += -(-s // _ALIGN) * _ALIGN
    if total < MIN_BYTES:
        raw = np.empty(total + _ALIGN, np.uint8)
        base = raw[-raw.ctypes.data % _ALIGN:]
    else:
        m = _mapping(total)
        base = np.frombuffer(m, np.uint8)
        weakref.finalize(owner, _give_back, m)
    return [base[o:o + s] for o, s in zip(offsets, sizes, strict=True)]
