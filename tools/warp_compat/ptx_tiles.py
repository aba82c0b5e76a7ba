"""The PTX check of Warp's tile tests and tile examples: every kernel they build, through NVPTX and ptxas.

    python -m tools.warp_compat.ptx_tiles [--archs sm_80 sm_90] [--files MODULE ...]
                                          [--examples NAME ...] [--no-examples] [--no-tests]

Runs each file of warp-lang's ``tests/tile`` (and ``test_cpu_block_dim``, whose kernels use
blocks) and each tile example (small options: one frame, one iteration) on gradloom through the
compatibility shim; ptx_child.py compiles every kernel the run builds for the CPU, forward and
adjoint, to PTX for each architecture, and this process assembles each with ``ptxas``. Prints
one line per file and a JSON summary ``{"kernels", "ptx", "failures": [[label, stage,
message]], "run_errors"}`` (also written to build/warp_compat/ptx_tiles.json); a run error is a
run that stopped (an example that needs CUDA: its module-level kernels are then compiled as they
are). Needs warp-lang (its files are run, never copied), ptxas and libdevice.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from . import catalog, shim
from .runner import REPO_ROOT, child_env, run_process

BUILD_DIR = REPO_ROOT / "build" / "warp_compat"
TILE_FILES = (*(m for m in catalog.TEST_FILES if m.startswith("tile.")), "test_cpu_block_dim")
#: each tile example with options that keep its run short (one frame, one iteration, few pixels)
EXAMPLES: dict[str, tuple[str, ...]] = {
    "example_tile_block_cholesky": ("--headless", "-N", "1"),
    "example_tile_cholesky": ("--headless",),
    "example_tile_convolution": ("--headless",),
    "example_tile_fft": ("--headless",),
    "example_tile_filtering": ("--headless",),
    "example_tile_matmul": ("--headless",),
    "example_tile_mcgp": ("--headless", "--height", "16", "--slices", "1",
                          "--sphere-resolution", "8"),
    "example_tile_mlp": ("--headless", "--train-iters", "1"),
    "example_tile_nbody": ("--headless", "--num-frames", "1", "-N", "128"),
    "example_tile_stream_compaction": (),
}


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tools.warp_compat.ptx_tiles", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--archs", nargs="+", default=["sm_80", "sm_90"])
    p.add_argument("--files", nargs="+", metavar="MODULE", help="default: every tile test file")
    p.add_argument("--examples", nargs="+", metavar="NAME", help="default: every tile example")
    p.add_argument("--no-tests", action="store_true")
    p.add_argument("--no-examples", action="store_true")
    p.add_argument("--timeout", type=float, default=1200.0, help="seconds per file (default 1200)")
    p.add_argument("--out", type=Path, default=BUILD_DIR / "ptx_tiles.json")
    p.add_argument("--work", type=Path, default=BUILD_DIR / "ptx_tiles",
                   help="the children's logs and kernel lists (emptied first)")
    return p.parse_args(argv)


def _runs(args: argparse.Namespace, root: Path) -> list[tuple[str, list[str]]]:
    """(label, the child's arguments before OUT_DIR is known) for each file and example."""
    runs: list[tuple[str, list[str]]] = []
    if not args.no_tests:
        runs += [(m, ["test", m, "@"]) for m in (args.files or TILE_FILES)]
    if not args.no_examples:
        for name in args.examples or EXAMPLES:
            path = root / "examples" / "tile" / f"{name}.py"
            runs.append((name, ["example", str(path), "@", "--", *EXAMPLES[name]]))
    return runs


def _child(label: str, child_args: list[str], shim_dir: Path, work: Path,
           args: argparse.Namespace) -> tuple[list[dict[str, Any]], Path, str]:
    """Run one child; its kernels.jsonl lines, its output folder, and how it ended."""
    out = work / label
    at = child_args.index("@")  # where OUT_DIR and the archs go
    cmd = [*shim.command_prefix(shim_dir), "-m", "tools.warp_compat.ptx_child",
           *child_args[:at], str(out), *args.archs, *child_args[at + 1:]]
    rc, timed_out = run_process(cmd, child_env(shim_dir), work / f"{label}.log", args.timeout)
    lines = []
    if (out / "kernels.jsonl").exists():
        lines = [json.loads(s) for s in (out / "kernels.jsonl").read_text().splitlines() if s]
    ended = "timeout" if timed_out else ("ok" if rc == 0 else f"exit {rc}")
    return lines, out, ended


def _ptxas(path: Path, arch: str) -> str | None:
    r = subprocess.run(["ptxas", f"-arch={arch}", str(path), "-o", os.devnull],
                       capture_output=True, text=True, timeout=300)
    return None if r.returncode == 0 else (r.stderr.strip() or f"exit {r.returncode}")[-400:]


def check(lines: list[dict[str, Any]], out: Path, ended: str, label: str,
          ) -> tuple[int, list[tuple[str, str, Path]], list[list[str]]]:
    """Kernels compiled, the ptxas jobs, and the failures found so far in one child's lines."""
    failures: list[list[str]] = []
    jobs: list[tuple[str, str, Path]] = []
    done = {(d["label"], d["variant"]) for d in lines if "label" in d}
    kernels = 0
    for d in lines:
        if "skipped" in d:
            continue  # refused by gradloom on the CPU too (a test expecting an error)
        if "run_error" in d:  # (an example that needs CUDA: its kernels are still compiled)
            failures.append([label, "run", d["run_error"]])
        elif "start" in d and (d["start"], d["variant"]) not in done:
            failures.append([f"{d['start']} ({d['variant']})", "codegen", f"process ended: {ended}"])
        elif "error" in d:
            failures.append([f"{d['label']} ({d['variant']})", "codegen", d["error"]])
        elif "ptx" in d:
            kernels += 1
            jobs += [(f"{d['label']} ({d['variant']})", arch, out / f) for arch, f in d["ptx"].items()]
    if ended != "ok":
        failures.append([label, "run", ended])
    return kernels, jobs, failures


def main(argv: list[str]) -> int:
    args = _parse(argv)
    root = catalog.warp_root()
    if root is None or shutil.which("ptxas") is None:
        print("needs warp-lang and ptxas", file=sys.stderr)
        return 2
    summary: dict[str, Any] = {"kernels": 0, "ptx": 0, "failures": [], "run_errors": [],
                               "files": {}}
    with tempfile.TemporaryDirectory(prefix="ptx_tiles_") as tmp:
        shim_dir = shim.generate(Path(tmp) / "shim", root)
        work = args.work  # the children's logs stay here
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        for label, child_args in _runs(args, root):
            lines, out, ended = _child(label, child_args, shim_dir, work, args)
            kernels, jobs, failures = check(lines, out, ended, label)
            with ThreadPoolExecutor(max_workers=2) as pool:
                errors = list(pool.map(lambda j: _ptxas(j[2], j[1]), jobs))
            failures += [[name, f"ptxas {arch}", e] for (name, arch, _), e in zip(jobs, errors)
                         if e is not None]
            for _, _, path in jobs:
                path.unlink()
            summary["kernels"] += kernels
            summary["ptx"] += len(jobs)
            summary["run_errors"] += [f for f in failures if f[1] == "run"]
            failures = [f for f in failures if f[1] != "run"]
            summary["failures"] += failures
            skipped = [[d["label"], d["variant"], d["skipped"]] for d in lines if "skipped" in d]
            summary["files"][label] = {"kernels": kernels, "ptx": len(jobs),
                                       "failures": len(failures), "skipped": skipped}
            print(f"  {label:40s} {kernels:4d} kernels {len(jobs):5d} ptx "
                  f"{len(failures):3d} failures ({ended})", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: summary[k] for k in ("kernels", "ptx", "failures", "run_errors")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
