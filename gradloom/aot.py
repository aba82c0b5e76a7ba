"""Ahead-of-time module files (Warp's `wp.compile_aot_module` / `wp.load_aot_module`) on the CPU.

`compile_aot_module` compiles every concrete kernel of a module (its forward and adjoint entries)
and writes one file, `<module_dir>/<module identifier>.o`: gradloom's own container (the kernel
cache's checked format) holding each entry's object code and launch facts, the kernels'
parameter types and the CPU it was compiled for. `load_aot_module` installs those entries in
the module's kernels without compiling anything. With the `strip_hash` option the file name
carries no hash, so a program loads it even after the kernels' source changed (Warp's way of
shipping compiled modules); parameters that no longer match the file's are an error rather than
a crash. CUDA artifacts (PTX, cubin) are not written yet: asking for them is a clear error.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from . import config
from .codegen import cpu
from .errors import GradloomError, warn_caller
from .kernel import Kernel
from .modules import Module, get_module
from .runtime import cache
from .runtime.array.structs import type_key
from .runtime.device import get_device

#: the cache format's key for AOT files (its checksum covers key and payload)
_KEY = "gradloom-aot-module"


def _module(module: Any) -> Module:
    """The kernel module a `module` argument names: a Module, a Python module or its name."""
    if isinstance(module, Module):
        return module
    if isinstance(module, types.ModuleType):
        return get_module(module.__name__)
    if isinstance(module, str):
        return get_module(module)
    raise TypeError(f"expected a module, a module name or a wp.Module, got {type(module).__name__}")


def _setup(module: Any, device: Any, arch: Any, module_dir: Any, use_ptx: Any,
           strip_hash: bool | None, what: str) -> tuple[Module, Path]:
    mod = _module(module)
    if strip_hash is not None:  # an explicit argument becomes the module's option, as in Warp
        mod.options["strip_hash"] = bool(strip_hash)
    if arch is not None or use_ptx or (device is not None and get_device(device).is_cuda):
        raise GradloomError(f"{what}({mod.name!r}): gradloom writes and reads CPU module files "
                            "only; CUDA artifacts (arch=, use_ptx=, a CUDA device) are not "
                            "supported yet")
    folder = Path(module_dir) if module_dir is not None else Path(config.cache_dir) / "aot"
    return mod, folder / f"{mod.get_module_identifier()}.o"


def _concrete_kernels(mod: Module) -> list[Kernel]:
    """The kernels a module file holds: regular kernels and generic kernels' overloads."""
    strip = bool(mod.options.get("strip_hash"))
    out: list[Kernel] = []
    for k in mod.kernels.values():
        if not k.is_generic:
            out.append(k)
        elif not k.overloads:
            warn_caller(f"compile_aot_module({mod.name!r}): generic kernel '{k.key}' without "
                        "overloads is left out (declare its overloads with wp.overload)")
        elif strip and len(k.overloads) > 1:
            raise RuntimeError(f"compile_aot_module({mod.name!r}) with strip_hash=True: generic "
                               f"kernel '{k.key}' has multiple overloads, which only hash "
                               "suffixes tell apart; use strip_hash=False")
        else:
            out.extend(k.overloads.values())
    if not out:
        raise RuntimeError(f"No compilable kernels found in module {mod.name!r}: it needs a "
                           "regular kernel or a generic kernel with overloads (wp.overload)")
    return out


def _params(k: Kernel) -> list[str]:
    return [type_key(t) for _, t in k.params]


def _record(k: Kernel) -> dict[str, Any]:
    variants = {"forward": k.aot_record("forward")}
    if k.enable_backward is not False and k.module.options.get("enable_backward") is not False:
        # a kernel gradloom cannot differentiate: its adjoint stays lazy (and says why)
        with contextlib.suppress(Exception):
            variants["adjoint"] = k.aot_record("adjoint")
    return {"key": k.key, "params": _params(k), "variants": variants}


def compile_aot_module(module: Any, device: Any = None, arch: Any = None,
                       module_dir: str | os.PathLike[str] | None = None, use_ptx: Any = None,
                       strip_hash: bool | None = None) -> list[Path]:
    """Compile a module's kernels and write its module file; returns `[path]`. An existing
    file of that name is kept unless `wp.config.cache_kernels` is False."""
    mod, path = _setup(module, device, arch, module_dir, use_ptx, strip_hash, "compile_aot_module")
    kernels = _concrete_kernels(mod)
    if path.exists() and getattr(config, "cache_kernels", True):
        return [path]
    contents = {"module": mod.name, "target": cpu.host_target().key, "lanes": cpu.lane_width(),
                "kernels": [_record(k) for k in kernels]}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        fh.write(cache.encode(_KEY, contents))
    os.replace(tmp, path)
    return [path]


def load_aot_module(module: Any, device: Any = None, arch: Any = None,
                    module_dir: str | os.PathLike[str] | None = None, use_ptx: Any = None,
                    strip_hash: bool | None = None) -> None:
    """Run a module's kernels from its module file (FileNotFoundError when there is none for
    the module's current identifier)."""
    mod, path = _setup(module, device, arch, module_dir, use_ptx, strip_hash, "load_aot_module")
    if not path.exists():
        raise FileNotFoundError(f"load_aot_module({mod.name!r}): no module file {path} (compile "
                                "it with wp.compile_aot_module; without strip_hash its name "
                                "changes whenever the module's kernels do)")
    contents = cache.decode(_KEY, path.read_bytes())
    if contents is None:
        raise GradloomError(f"load_aot_module: {path} is not a gradloom module file of this "
                            "version, or it is damaged")
    if (contents["target"], contents["lanes"]) != (cpu.host_target().key, cpu.lane_width()):
        raise GradloomError(f"load_aot_module: {path} was compiled for another CPU or SIMD "
                            "setting; compile it on this machine")
    _install(mod, path, contents["kernels"])


def _install(mod: Module, path: Path, records: list[dict[str, Any]]) -> None:
    by_key: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_key.setdefault(r["key"], []).append(r)
    for k in mod.live_kernels():
        candidates = by_key.get(k.key, [])
        match = next((r for r in candidates if r["params"] == _params(k)), None)
        if match is None and candidates:
            raise GradloomError(f"load_aot_module: kernel '{k.key}' now takes "
                                f"({', '.join(_params(k))}), but {path} holds it for "
                                f"({', '.join(candidates[0]['params'])}); compile the module "
                                "file again")
        for variant, (symbol, entry) in (match or {"variants": {}})["variants"].items():
            k.load_record(variant, symbol, entry)
    if config.verbose:
        print(f"gradloom: loaded module {mod.name} from {path}", file=sys.stderr)
