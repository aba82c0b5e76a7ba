"""glibc's allocator set up by the CPU backend (runtime/host_malloc.py): a 2 MiB array made and
dropped in a loop is served from the heap (no page faults after the first), unless the user set
glibc's own environment variables. Each case runs in a fresh process that first forces glibc to
mmap every block of 128 KiB or more (the state some processes are in by their history)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")

_PROBE = """
import ctypes, resource, sys
libc = ctypes.CDLL("libc.so.6")
libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD: mmap from 128 KiB up, no dynamic raise
import numpy as np
import gradloom as wp
wp.zeros(1, dtype=float)  # loads the CPU backend
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
np.ones(512 * 1024, dtype=np.float32)  # 2 MiB: below numpy's huge-page advice
before = faults()
for _ in range(20):
    a = np.ones(512 * 1024, dtype=np.float32)
    del a
print(faults() - before)
"""


def _faults(env: dict[str, str]) -> int:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         env=env, check=True).stdout
    return int(out.split()[-1])


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    return {**env, **extra}


def test_arrays_made_in_a_loop_reuse_heap_memory() -> None:
    # 20 fresh mappings of 2 MiB would fault 20 * 512 pages in
    assert _faults(_env()) < 20 * 512 // 4


def test_the_users_glibc_settings_win() -> None:
    assert _faults(_env(MALLOC_MMAP_THRESHOLD_="131072")) >= 20 * 512 // 2
