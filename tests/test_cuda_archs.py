"""wp.get_cuda_supported_archs(): the compute capabilities gradloom's PTX compiler targets, each
one checked by assembling a kernel's PTX with ptxas (skipped without ptxas or libdevice)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from cuda_env import have_libdevice as _libdevice

import gradloom as wp
from gradloom.codegen import nvptx


@wp.kernel
def scaled_sum(x: wp.array(dtype=float), y: wp.array(dtype=float), s: float):
    i = wp.tid()
    wp.atomic_add(y, 0, wp.sin(x[i]) * s)


def test_list_is_sorted_ints_or_empty_without_libdevice() -> None:
    archs = wp.get_cuda_supported_archs()
    assert isinstance(archs, list) and archs == sorted(archs)
    assert all(isinstance(a, int) for a in archs)
    assert (archs != []) == _libdevice()


@pytest.mark.skipif(shutil.which("ptxas") is None or not _libdevice(),
                    reason="needs ptxas and libdevice")
@pytest.mark.parametrize("arch", nvptx.SUPPORTED_ARCHS)
def test_every_listed_arch_assembles(arch: int, tmp_path: Path) -> None:
    for adjoint in (False, True):
        ptx = wp.codegen_ptx(scaled_sum, f"sm_{arch}", adjoint=adjoint)
        assert f".target sm_{arch}" in ptx
        path = tmp_path / f"k{int(adjoint)}.ptx"
        path.write_text(ptx)
        r = subprocess.run(["ptxas", f"-arch=sm_{arch}", str(path), "-o", str(tmp_path / "k.o")],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
