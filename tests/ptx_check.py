"""Compile every kernel of the gradient corpus, the tile tests, warp-lang's tile examples and the
benchmarks to PTX, forward and adjoint, and assemble each with ptxas for the given
architectures: `python tests/ptx_check.py sm_80 sm_90` (`--tiles`: the tile kernels only).

Prints one JSON object: {"kernels": n, "compiled": n, "failures": [[kernel, stage, message]]}.
Run as a child process (tests/test_ptx.py): an NVPTX selection failure in LLVM ends the process,
and the parent then reports that instead of crashing with it.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
TILE_MODULES = ("test_tiles", "test_tiles_grad", "test_tiles_more", "test_tiles_fft",
                "test_tiles_struct", "test_tiles_branch", "test_tiles_gemm", "test_tiles_lanes",
                "test_tiles_arange", "test_tiles_bf16_grad", "test_tiles_cpu_blocks",
                "test_tiles_expand")
CORPUS_MODULES = ("test_grad_corpus", "test_grad_corpus_loops", "test_grad_corpus_fuzz",
                  *TILE_MODULES)


def corpus_kernels(modules: tuple[str, ...] = CORPUS_MODULES, benchmarks: bool = True) -> list:
    import gradloom as wp

    sys.path.insert(0, str(HERE))
    found = []
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        found += [(f"{name}.{k}", v) for k, v in vars(module).items()
                  if isinstance(v, wp.Kernel) and not v.is_generic]
    return found + tile_example_kernels() + (benchmark_kernels() if benchmarks else [])


def tile_example_kernels() -> list:
    """The module-level kernels of warp-lang's tile examples, read from the installed wheel with
    `wp` bound to gradloom (benchmarks/examples_src.py); none without warp-lang."""
    import gradloom as wp

    sys.path.insert(0, str(HERE.parent / "benchmarks"))
    import examples_src  # noqa: PLC0415

    try:
        tile_dir = examples_src.examples_dir() / "tile"
    except ModuleNotFoundError:
        return []
    work = Path(tempfile.mkdtemp(prefix="gl_ptx_tile_examples_"))
    found = []
    saved = wp.config.enable_backward  # mcgp sets it off at import: keep the process's own
    for path in sorted(tile_dir.glob("example_tile_*.py")):
        try:
            src = examples_src.bind(path.read_text(), "gradloom", str(path))
        except examples_src.ExampleChanged:  # imports more of warp (mlp: warp.optim)
            continue
        (work / f"glptx_{path.stem}.py").write_text(src)
        sys.path.insert(0, str(work))
        module = importlib.import_module(f"glptx_{path.stem}")
        found += [(f"examples.{path.stem}.{k}", v) for k, v in vars(module).items()
                  if isinstance(v, wp.Kernel) and not v.is_generic]
        wp.config.enable_backward = saved
    return found


def benchmark_kernels() -> list:
    import gradloom as wp

    bench = HERE.parent / "benchmarks"
    sys.path.insert(0, str(bench))
    from kernels_src import KERNELS_SRC  # noqa: PLC0415

    work = Path(tempfile.mkdtemp(prefix="gl_ptx_bench_"))
    (work / "bench_kernels_gl.py").write_text(KERNELS_SRC.replace("__BACKEND__", "gradloom"))
    shutil.copy(bench / "host_data.py", work / "host_data.py")
    sys.path.insert(0, str(work))
    module = importlib.import_module("bench_kernels_gl")
    return [(f"benchmarks.{k}", v) for k, v in vars(module).items() if isinstance(v, wp.Kernel)]


def ptxas(ptx_path: Path, arch: str) -> str | None:
    r = subprocess.run(["ptxas", f"-arch={arch}", str(ptx_path), "-o", os.devnull],
                       capture_output=True, text=True, timeout=300)
    return None if r.returncode == 0 else (r.stderr.strip() or f"exit {r.returncode}")[-400:]


def main(archs: list[str]) -> None:
    import gradloom as wp

    work = Path(tempfile.mkdtemp(prefix="gl_ptx_"))
    tiles = "--tiles" in archs
    archs = [a for a in archs if a != "--tiles"] or ["sm_80", "sm_90"]
    kernels = corpus_kernels(TILE_MODULES, False) if tiles else corpus_kernels()
    failures: list[list[str]] = []
    jobs = []
    for name, kernel in kernels:
        for adjoint in (False, True):
            label = f"{name}{' (adjoint)' if adjoint else ''}"
            try:
                ptx = wp.codegen_ptx(kernel, archs[0], adjoint=adjoint)
            except Exception as exc:  # a kernel that does not compile for the CPU either
                if adjoint and isinstance(exc, wp.CompileError):
                    continue  # not differentiable (refused the same way on the CPU)
                failures.append([label, "codegen", f"{type(exc).__name__}: {exc}"[:400]])
                continue
            path = work / f"k{len(jobs)}.ptx"
            path.write_text(ptx)
            jobs += [(label, arch, path) for arch in archs]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda j: ptxas(j[2], j[1]), jobs))
    failures += [[label, f"ptxas {arch}", err] for (label, arch, _), err in zip(jobs, results)
                 if err is not None]
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"kernels": len(kernels), "compiled": len(jobs) // len(archs),
                      "failures": failures}))


if __name__ == "__main__":
    main(sys.argv[1:] or ["sm_80", "sm_90"])
