"""Child process: run one Warp example unchanged and save its final arrays.

Usage: ``python -m tools.warp_compat.example_child NAME OUT.npz [--trajectory]`` (``warp`` is
warp-lang or gradloom's `warp` (gradloom.as_warp), chosen by the parent's command line). Writes OUT.npz (array name -> values)
and OUT.json ({"ok": true} or the exception). The example's own stdout goes to the parent's log.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from . import shimlib
from .catalog import ExampleSpec, example_spec

_MAX_DEPTH = 2


def to_numpy(value: Any) -> np.ndarray | None:
    """Values of a Warp/gradloom array or a torch tensor; None for anything else."""
    if not all(hasattr(value, a) for a in ("shape", "dtype", "numpy")):
        return None
    if hasattr(value, "detach"):  # torch
        return np.asarray(value.detach().cpu().numpy())
    try:
        return np.asarray(value.numpy())
    except Exception:
        return None


def collect(value: Any, name: str, out: dict[str, np.ndarray], home: str, depth: int = 0) -> None:
    """Add every array reachable from ``value`` (attributes of the example's own objects, lists)."""
    arr = to_numpy(value)
    if arr is not None:
        out[name] = arr
        grad = getattr(value, "grad", None)
        garr = to_numpy(grad) if grad is not None else None
        if garr is not None:
            out[name + ".grad"] = garr
        return
    if depth >= _MAX_DEPTH:
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            collect(item, f"{name}[{i}]", out, home, depth + 1)
    elif isinstance(value, dict) and depth == 0:
        for key, item in value.items():
            if isinstance(key, str) and not key.startswith("__"):
                collect(item, f"{name}{key}", out, home, depth + 1)
    elif depth == 0 or type(value).__module__ == home:  # the example object and its helpers
        for key, item in list(vars(value).items()) if hasattr(value, "__dict__") else []:
            collect(item, f"{name}.{key}" if name else key, out, home, depth + 1)


def run_main(spec: ExampleSpec, module: str, argv: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Run the example as a script with its own command-line options; arrays of ``example``."""
    path = importlib.util.find_spec(module)
    sys.argv = [path.origin if path and path.origin else module, *argv]
    env = runpy.run_module(module, run_name="__main__", alter_sys=True)
    out: dict[str, np.ndarray] = {}
    if "example" in env:
        collect(env["example"], "", out, type(env["example"]).__module__)
    return out


def run_call(spec: ExampleSpec, module: str) -> dict[str, np.ndarray]:
    """Call ``module.<function>(device="cpu")`` and keep the arrays among its locals at return."""
    func_name = spec.driver.split(":", 1)[1]
    mod = importlib.import_module(module)
    func = getattr(mod, func_name)
    captured: dict[str, Any] = {}

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code is func.__code__:
            captured.update(frame.f_locals)

    sys.setprofile(profiler)
    try:
        func(device="cpu")
    finally:
        sys.setprofile(None)
    out: dict[str, np.ndarray] = {}
    collect(captured, "", out, module)
    return out


class SmallCloth:
    """A flat grid of particles joined by springs to its right and lower neighbours (pinned corners)."""

    def __init__(self, dim: int = 16, spacing: float = 0.1, stiffness: float = 1000.0) -> None:
        ij = [(i, j) for j in range(dim) for i in range(dim)]
        self.positions = np.array([(i * spacing, 0.0, j * spacing) for i, j in ij], np.float32)
        inv = np.full(dim * dim, 10.0, np.float32)
        inv[[0, dim - 1]] = 0.0
        self.inv_masses = inv
        pairs = [(j * dim + i, j * dim + i + 1) for j in range(dim) for i in range(dim - 1)]
        pairs += [(j * dim + i, (j + 1) * dim + i) for j in range(dim - 1) for i in range(dim)]
        self.spring_indices = np.array(pairs, np.int32).reshape(-1)
        self.spring_lengths = np.full(len(pairs), spacing, np.float32)
        self.spring_stiffness = np.full(len(pairs), stiffness, np.float32)
        self.spring_damping = np.full(len(pairs), 10.0, np.float32)
        self.num_particles = dim * dim
        self.num_springs = len(pairs)
        self.num_tris = 0


def run_cloth(spec: ExampleSpec, module: str) -> dict[str, np.ndarray]:
    """Drive the cloth benchmark's ``WpIntegrator`` (the benchmark script itself needs USD)."""
    mod = importlib.import_module(module)
    integrator = mod.WpIntegrator(SmallCloth(), "cpu")
    for _ in range(10):
        integrator.simulate(1.0 / 60.0, 16)
    out: dict[str, np.ndarray] = {}
    collect(integrator, "", out, type(integrator).__module__)
    return out


def run(name: str, trajectory: bool = False) -> dict[str, np.ndarray]:
    """Run example ``name`` (with its ``trajectory_argv`` if ``trajectory``); its arrays."""
    spec = example_spec(name)
    module = f"warp.examples.{spec.module}"
    if spec.driver == "main":
        return run_main(spec, module, spec.trajectory_argv if trajectory else spec.argv)
    if spec.driver.startswith("call:"):
        return run_call(spec, module)
    if spec.driver == "cloth":
        return run_cloth(spec, module)
    raise ValueError(f"unknown driver {spec.driver!r}")


def _flatten_fields(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Structured arrays (struct dtypes) become one plain array per field."""
    flat: dict[str, np.ndarray] = {}
    for key, arr in arrays.items():
        if arr.dtype.names:
            for field in arr.dtype.names:
                flat[f"{key}.{field}"] = np.ascontiguousarray(arr[field])
        elif arr.dtype != object:
            flat[key] = arr
    return flat


def main(argv: list[str]) -> int:
    name, out, trajectory = argv[0], Path(argv[1]), "--trajectory" in argv[2:]
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    meta: dict[str, Any] = {"ok": True, "spec": example_spec(name).key()}
    try:
        shimlib.prepare_child(importlib.import_module("warp"))
        arrays = _flatten_fields(run(name, trajectory))
        np.savez(out, **arrays)  # type: ignore[arg-type]
        meta["arrays"] = sorted(arrays)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        meta = {"ok": False, "spec": example_spec(name).key(), "exc_type": type(e).__name__,
                "message": str(e)[:2000], "traceback": traceback.format_exc()[-4000:]}  # fmt: skip
    out.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
