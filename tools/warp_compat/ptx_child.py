"""Child process: run one Warp tile test file or tile example on gradloom and write the PTX of every kernel it builds.

Usage (through ``python -m gradloom.as_warp``, as the compatibility children):

    python -m tools.warp_compat.ptx_child test MODULE OUT_DIR ARCH [ARCH ...]
    python -m tools.warp_compat.ptx_child example PATH OUT_DIR ARCH [ARCH ...] -- [ARGS ...]

Every kernel the run builds for the CPU (each overload and variant: forward, adjoint, ...) is
compiled to PTX for each ARCH right after its CPU build, with the forward build also giving
the adjoint's PTX, backward enabled or not (an adjoint gradloom refuses to compile is left
out, as tests/ptx_check.py does). After a test file, its module-level kernels no CPU test built
(CUDA-only tests; every kernel of a file whose import stops part way, as tile.test_tile_cholesky
and test_tile_solve do at a Warp-private call) are compiled as they are. OUT_DIR gets one ``.ptx`` file per kernel, variant and arch,
and ``kernels.jsonl``: one line per kernel and variant, ``{"label", "variant", "ptx": {arch:
file}}``, ``{..., "error": message}`` or ``{..., "skipped": why}`` (refused on the CPU too); a
``"start"`` line is written before each compile, so a compile that ends the process is pinned
to its kernel. ptxas runs in the parent.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any, TextIO


class Recorder:
    """Wraps ``Kernel.start_build``: after each CPU build, the kernel's PTX for every arch."""

    def __init__(self, out_dir: Path, archs: list[str], log: TextIO) -> None:
        self.out_dir, self.archs, self.log = out_dir, archs, log
        self.seen: set[str] = set()

    def install(self) -> None:
        kernel_module = importlib.import_module("gradloom.kernel")  # (gradloom.kernel: the decorator)
        original = kernel_module.Kernel.start_build
        recorder = self

        def start_build(kernel: Any, variant: str = "forward") -> Any:
            built = original(kernel, variant)  # a kernel the CPU refuses raises here, unrecorded
            recorder.record(kernel, variant)
            if variant == "forward":  # the adjoint too, even where the run needs none
                recorder.record(kernel, "adjoint", optional=True)
            return built

        kernel_module.Kernel.start_build = start_build  # type: ignore[method-assign]

    def record(self, kernel: Any, variant: str, optional: bool = False, note: str = "") -> None:
        from gradloom.errors import CompileError

        pipeline = importlib.import_module("gradloom.pipeline")

        label = f"{getattr(kernel.func, '__module__', '?')}.{kernel.key}{note}"
        line: dict[str, Any] = {"label": label, "variant": variant}
        try:
            key = f"{kernel.cache_key(variant)}:{variant}"
        except CompileError as exc:  # its parameters do not resolve (a `str` parameter)
            self._write({**line, "skipped": f"{type(exc).__name__}: {exc}"[:600]})
            return
        if key in self.seen:
            return
        self.seen.add(key)
        self._write({"start": label, "variant": variant})
        adjoint: bool | str = {"forward": False, "adjoint": True}.get(variant, variant)
        try:
            files = {}
            for arch in self.archs:
                path = self.out_dir / f"k{len(self.seen)}_{arch}.ptx"
                path.write_text(pipeline.ptx(kernel, arch, adjoint))
                files[arch] = path.name
            line["ptx"] = files
        except Exception as exc:
            if optional and isinstance(exc, CompileError):  # refused the same way on the CPU
                self._write({**line, "skipped": f"{type(exc).__name__}: {exc}"[:600]})
                return
            line["error"] = f"{type(exc).__name__}: {exc}"[:600]
            line["traceback"] = traceback.format_exc()[-1500:]
        self._write(line)

    def _write(self, line: dict[str, Any]) -> None:
        self.log.write(json.dumps(line) + "\n")
        self.log.flush()


def run_test(module: str, recorder: Recorder) -> None:
    from . import child

    out = io.StringIO()  # test outcomes are not this tool's business
    child.run(module, out)
    unlaunched(f"warp.tests.{module}", recorder)


def unlaunched(module: str, recorder: Recorder) -> None:
    """The kernels of a test file that no CPU test built (those of CUDA-only tests, or all of a
    file whose import stopped part way: a Warp-private call after its kernels), each compiled
    here as it is, labelled so; one gradloom refuses to compile (a CompileError: the kernels of
    tests that expect an error) is left out, as refused adjoints are."""
    kernel_module = importlib.import_module("gradloom.kernel")
    for kernel in list(kernel_module._KERNELS):
        if getattr(kernel.func, "__module__", None) == module and not kernel.is_generic:
            recorder.record(kernel, "forward", optional=True, note=" [not launched on the CPU]")
            recorder.record(kernel, "adjoint", optional=True, note=" [not launched on the CPU]")


def run_example(path: str, argv: list[str]) -> None:
    import warp

    from . import shimlib

    shimlib.prepare_child(warp)
    sys.argv = [path, *argv]
    sys.path.insert(0, str(Path(path).parent))
    runpy.run_path(path, run_name="__main__")


def main(argv: list[str]) -> int:
    what, target, out_dir = argv[0], argv[1], Path(argv[2])
    rest = argv[3:]
    archs = rest[: rest.index("--")] if "--" in rest else rest
    args = rest[rest.index("--") + 1:] if "--" in rest else []
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    out_dir.mkdir(parents=True, exist_ok=True)
    importlib.import_module("warp")
    with open(out_dir / "kernels.jsonl", "w", encoding="utf-8") as log:
        recorder = Recorder(out_dir, archs, log)
        recorder.install()
        try:
            run_test(target, recorder) if what == "test" else run_example(target, args)
        except (Exception, SystemExit) as exc:  # the kernels built so far are still checked
            log.write(json.dumps({"run_error": f"{type(exc).__name__}: {exc}"[:600]}) + "\n")
        if what == "example":  # one that needs CUDA (fft, convolution, ...) stops before any
            unlaunched("__main__", recorder)  # launch: its module-level kernels, as they are
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
