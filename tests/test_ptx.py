"""CUDA code generation without a GPU: every corpus and benchmark kernel, forward and adjoint,
compiles to PTX that ptxas assembles for sm_80 and sm_90 (skipped without ptxas or libdevice)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gradloom as wp
from gradloom.codegen import nvptx

HERE = Path(__file__).resolve().parent


def _libdevice() -> bool:
    try:
        nvptx.libdevice_path()
    except nvptx.LibdeviceNotFound:
        return False
    return True


needs_toolchain = pytest.mark.skipif(
    shutil.which("ptxas") is None or not _libdevice(),
    reason="needs ptxas (CUDA toolkit or the nvidia-cuda-nvcc wheel) and libdevice")


@wp.kernel
def sample(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for _j in range(n):
        s = s * wp.sin(x[i]) + wp.exp(x[i]) * wp.pow(x[i], 2.5) + wp.atan2(x[i], 1.5)
    wp.atomic_add(y, 0, s)


@pytest.mark.skipif(not _libdevice(), reason="needs libdevice")
def test_codegen_ptx_forward_and_adjoint():
    forward = wp.codegen_ptx(sample, "sm_90")
    adjoint = wp.codegen_ptx(sample, "sm_90", adjoint=True)
    for ptx in (forward, adjoint):
        assert ".target sm_90" in ptx and ".version 7.8" in ptx
        assert ".entry gl_sample" in ptx
        assert "__nv_" not in ptx  # libdevice inlined, nothing left to link
        assert ".func" not in ptx or "call" in ptx
    atomic_add = re.compile(r"atom(\.global)?\.add\.f32")
    assert atomic_add.search(forward)  # wp.atomic_add
    assert "gl_sample_adjoint" in adjoint and atomic_add.search(adjoint)  # gradient scatter


@needs_toolchain
def test_every_corpus_and_benchmark_kernel_assembles():
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    r = subprocess.run([sys.executable, str(HERE / "ptx_check.py"), "sm_80", "sm_90"],
                       capture_output=True, text=True, timeout=1800, env=env, cwd=HERE.parent)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["kernels"] >= 100 and report["compiled"] >= 150, report
    assert report["failures"] == [], report["failures"][:10]


def _warp_lang() -> bool:
    from tools.warp_compat import catalog  # noqa: PLC0415

    return catalog.warp_root() is not None


@needs_toolchain
@pytest.mark.skipif(not _warp_lang(), reason="needs warp-lang (its tile tests are run, not copied)")
def test_warp_tile_tests_and_examples_assemble(tmp_path: Path) -> None:
    # a sample of tools/warp_compat/ptx_tiles.py, which runs every tile test file and example
    # (docs/gpu.md): each kernel the run builds, forward and adjoint, through NVPTX and ptxas
    out = tmp_path / "ptx_tiles.json"
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    r = subprocess.run([sys.executable, "-m", "tools.warp_compat.ptx_tiles", "--files",
                        "tile.test_tile_load_assign", "--examples", "example_tile_matmul",
                        "--out", str(out), "--work", str(tmp_path / "work")],
                       capture_output=True, text=True, timeout=1800, env=env, cwd=HERE.parent)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["files"]["tile.test_tile_load_assign"]["kernels"] >= 4, report["files"]
    assert report["files"]["example_tile_matmul"]["kernels"] >= 2, report["files"]
    assert report["failures"] == [], report["failures"][:10]
