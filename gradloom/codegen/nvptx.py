"""The NVPTX target's compiler: LLVM IR text to PTX, with libdevice linked in, in-process.

No CUDA toolkit is needed: llvmlite's NVPTX backend emits PTX and the driver compiles it to
machine code when the module is loaded. Math that NVPTX cannot select (sin, exp, pow, ...) is
called as libdevice `__nv_*` functions; this module links libdevice into each kernel module,
internalises it and drops what the kernel does not call (otherwise ~1 MB of PTX per kernel).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

import llvmlite.binding as llvm

TRIPLE = "nvptx64-nvidia-cuda"
#: the PTX ISA every module is emitted in: it sets the oldest driver that can load it
#: (PTX 7.8: CUDA 11.8 drivers and newer), whatever architecture is targeted
PTX_ISA = "+ptx78"
DEFAULT_ARCH = "sm_80"
#: the compute capabilities kernels are compiled for (`wp.get_cuda_supported_archs()`): PTX 7.8
#: reaches sm_90, and CUDA 13's ptxas assembles sm_75 and newer; tests/ptx_check.py assembles
#: every corpus, tile and benchmark kernel for each of them
SUPPORTED_ARCHS: tuple[int, ...] = (75, 80, 86, 87, 89, 90)


class LibdeviceNotFound(RuntimeError):
    """libdevice.10.bc is needed to compile GPU kernels and none was found."""


def _candidates() -> list[Path]:
    found: list[Path] = []
    if os.environ.get("GRADLOOM_LIBDEVICE"):
        found.append(Path(os.environ["GRADLOOM_LIBDEVICE"]))
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        found.extend(sorted(Path(root).glob("cu*/nvvm/libdevice/libdevice.10.bc")))
        found.extend(sorted(Path(root).glob("cuda_nvcc/nvvm/libdevice/libdevice.10.bc")))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            found.append(Path(home) / "nvvm" / "libdevice" / "libdevice.10.bc")
    found.extend(sorted(Path("/usr/local").glob("cuda-*/nvvm/libdevice/libdevice.10.bc")))
    return found


@functools.cache
def libdevice_path() -> Path:
    """Where libdevice is: $GRADLOOM_LIBDEVICE, the `nvidia-nvvm` wheel (`pip install
    gradloom[cuda]`), or a CUDA toolkit ($CUDA_HOME, /usr/local/cuda*)."""
    for path in _candidates():
        if path.is_file():
            return path
    raise LibdeviceNotFound(
        "compiling for the GPU needs libdevice.10.bc: `pip install gradloom[cuda]` (the "
        "nvidia-nvvm wheel), or set GRADLOOM_LIBDEVICE to its path")


@functools.cache
def _init() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def target_machine(arch: str = DEFAULT_ARCH, opt: int = 3) -> Any:
    _init()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features=PTX_ISA, opt=opt)


@functools.cache
def datalayout() -> str:
    return str(target_machine().target_data)


_LIBDEVICE_LOCK = threading.Lock()


@functools.cache
def _libdevice_bitcode() -> bytes:
    return libdevice_path().read_bytes()


def _libdevice_module() -> Any:
    with _LIBDEVICE_LOCK:
        lib = llvm.parse_bitcode(_libdevice_bitcode())
    lib.triple = TRIPLE
    lib.data_layout = datalayout()
    return lib


def compile_to_ptx(ir_text: str, entries: tuple[str, ...], arch: str = DEFAULT_ARCH,
                   opt: int = 3) -> str:
    """PTX for one module: libdevice linked when the module calls into it, everything but the
    entry kernels internalised (after linking: before, the calls would stay unresolved), unused
    functions dropped first (which also halves O3's time), then optimised and emitted."""
    tm = target_machine(arch, opt)
    module = llvm.parse_assembly(ir_text)
    module.verify()
    if any(fn.is_declaration and fn.name.startswith("__nv_") for fn in module.functions):
        module.link_in(_libdevice_module())
    for fn in module.functions:
        if not fn.is_declaration and fn.name not in entries:
            fn.linkage = "internal"
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=opt))
    dce = llvm.create_new_module_pass_manager()
    dce.add_global_dead_code_eliminate_pass()
    dce.run(module, pb)
    if opt > 0:
        pb.getModulePassManager().run(module, pb)
    return str(tm.emit_assembly(module))
