"""`wp.print_diagnostics()`: what this installation is made of (software versions, build
options, devices), printed and returned as a dict with Warp's keys. gradloom has no native
library or host compiler: `warp_native` is the package's own version, the compiler entries
are None, and `llvm` is the LLVM inside llvmlite."""

from __future__ import annotations

import contextlib
import importlib.metadata
import platform
import sys
from typing import Any

import numpy as np

from . import config
from .runtime.device import get_cuda_driver_version, get_devices

_OPTIONAL = ("torch", "jax", "jaxlib")


def _version() -> str:
    try:
        return importlib.metadata.version("gradloom")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


def _llvm() -> str | None:
    try:
        from llvmlite import binding
    except ImportError:
        return None
    return ".".join(str(v) for v in binding.llvm_version_info)


def _device(d: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"alias": d.alias, "name": d.name, "is_cuda": bool(d.is_cuda)}
    if d.is_cuda:
        out["arch"] = f"sm_{d.arch}"
        out["sm_count"] = int(getattr(d, "sm_count", 0))
        out["memory_gb"] = float(getattr(d, "total_memory", 0)) / 2**30
    return out


def diagnostics() -> dict[str, Any]:
    """The facts `print_diagnostics` prints, under Warp's key names."""
    driver = get_cuda_driver_version()
    info: dict[str, Any] = {
        "warp_python": _version(), "warp_native": _version(), "warp_clang": None,
        "llvm": _llvm(), "numpy": np.__version__, "python": sys.version.split()[0],
        "platform": platform.platform(), "cuda_enabled": driver is not None,
        "cuda_toolkit": None, "cuda_driver": driver, "nvrtc": None,
        "cuda_compatibility": None, "mathdx_enabled": False, "libmathdx": None,
        "cubql_enabled": False, "nanovdb": None, "host_compiler": None,
        "debug": config.mode == "debug", "verify_fp": bool(config.verify_fp),
        "fast_math": False, "devices": [_device(d) for d in get_devices()],
    }
    for pkg in _OPTIONAL:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            info[pkg] = importlib.metadata.version(pkg)
    return info


def print_diagnostics() -> dict[str, Any]:
    """Print the installation's software, build options and devices; return them as a dict."""
    info = diagnostics()
    print("Software")
    for key in ("warp_python", "llvm", "numpy", "python", "platform", "cuda_driver",
                *(_ for _ in _OPTIONAL if _ in info)):
        print(f"  {key}: {info[key]}")
    print("Build options")
    for key in ("debug", "verify_fp", "fast_math"):
        print(f"  {key}: {info[key]}")
    print("Devices")
    for d in info["devices"]:
        print("  " + ", ".join(f"{k}: {v}" for k, v in d.items()))
    return info
