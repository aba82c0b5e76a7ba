"""Forward values of time-indexed cases (timeline.py) on warp-lang, one module per batch.

warp-lang compiles a Python module as a unit, so a batch's kernels go into one module
(`step_<n>` / `program_<n>`): one compile per batch instead of one per case. A module that does
not build is split until the kernel warp-lang rejects is found; that case is reported as
rejected, the others still run.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

import numpy as np

from .timeline import PARAMS, TimeCase, initial_values, kernel_lines

_WARP: Any = None


def available() -> bool:
    return importlib.util.find_spec("warp") is not None


def _warp(cache: str) -> Any:
    """warp-lang, initialised once per process with a scratch kernel cache."""
    global _WARP
    if _WARP is None:
        import warp

        # no banner and no line per module load: they would interleave with the progress lines
        warp.config.log_level = getattr(warp, "LOG_WARNING", 30)
        warp.config.kernel_cache_dir = cache
        warp.init()
        _WARP = warp
    return _WARP


def _module(cases: list[TimeCase], directory: str, stem: str) -> Any:
    lines = ["import warp as wp", "", "f64 = wp.float64",
             "wp.set_module_options({'enable_backward': False})", "", ""]
    for n, c in enumerate(cases):
        lines += kernel_lines(c, f"_{n}")
    path = os.path.join(directory, f"{stem}.py")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    spec = importlib.util.spec_from_file_location(stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module  # warp-lang looks kernels' modules up by name
    spec.loader.exec_module(module)
    return module


def _run(wp: Any, program: Any, c: TimeCase, seed: int) -> dict[str, Any]:
    dtype = wp.vec3d if c.kind == "vec" else wp.float64
    arrays = {n: wp.array(v, dtype=wp.float64 if n in PARAMS else dtype, device="cpu")
              for n, v in initial_values(c, seed).items()}
    outs = program(arrays)
    return {"status": "ok",
            "forward": {n: np.array(o.numpy()) for n, o in zip(c.states, outs)}}


def forward(cases: dict[int, TimeCase], seeds: dict[int, int], directory: str, cache: str,
            stem: str) -> dict[int, dict[str, Any]]:
    """warp-lang's result per case index: {"status": "ok", "forward": {state: values}}, or
    {"status": "rejected" | "error", "message": ...}. `stem` names the module (one per batch:
    warp-lang keys modules by name)."""
    wp = _warp(cache)
    order = sorted(cases)
    try:
        module = _module([cases[i] for i in order], directory, stem)
        wp.load_module(module, device="cpu")
    except Exception as exc:
        if len(order) == 1:
            return {order[0]: {"status": "rejected", "message": str(exc).splitlines()[0]}}
        half = len(order) // 2  # find the kernel it rejects; the others still run
        return {**forward({i: cases[i] for i in order[:half]}, seeds, directory, cache,
                          stem + "a"),
                **forward({i: cases[i] for i in order[half:]}, seeds, directory, cache,
                          stem + "b")}
    out: dict[int, dict[str, Any]] = {}
    for n, i in enumerate(order):
        try:
            out[i] = _run(wp, getattr(module, f"program_{n}"), cases[i], seeds[i])
        except Exception as exc:
            out[i] = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
    return out
