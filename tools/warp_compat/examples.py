"""Run Warp's examples on warp-lang and on gradloom (one process each) and compare final arrays."""

from __future__ import annotations

import json
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import catalog, shim
from .classify import first_line
from .runner import child_env, run_process

RTOL = 1e-3
TIMEOUT = 900.0


@dataclass
class Side:
    """One backend's run of one example."""

    status: str  # ok, error, crash, timeout
    seconds: float = 0.0
    error: str = ""
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    losses: list[float] = field(default_factory=list)


@dataclass
class ExampleResult:
    name: str
    warp: Side
    gradloom: Side
    worst: float = float("nan")  # largest relative difference over compared arrays
    worst_name: str = ""
    compared: int = 0
    missing: list[str] = field(default_factory=list)  # arrays warp-lang has and gradloom lacks
    loss_error: float = float("nan")
    note: str = ""

    @property
    def matches(self) -> bool:
        ok = self.warp.status == self.gradloom.status == "ok" and self.compared > 0
        return ok and not self.missing and self.worst <= RTOL and not self.loss_error > RTOL


def rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| / max |b| (b: warp-lang's); NaN in the same places counts as equal."""
    if a.shape != b.shape:
        return float("inf")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(a64) & np.isnan(b64)
    diff = np.where(both_nan, 0.0, np.abs(a64 - b64))
    if np.isnan(diff).any():
        return float("inf")
    scale = float(np.max(np.abs(np.where(np.isnan(b64), 0.0, b64)), initial=0.0))
    worst = float(np.max(diff, initial=0.0))
    return 0.0 if worst == 0.0 else worst / max(scale, 1e-30)


def _losses(name: str, log: Path) -> list[float]:
    """Loss values the example printed, one per optimisation iteration (if it has a pattern)."""
    pattern = catalog.example_spec(name).loss_pattern
    if not pattern or not log.exists():
        return []
    return [float(m) for m in re.findall(pattern, log.read_text(errors="replace"))]


def _run_once(name: str, shim_dir: Path | None, workdir: Path, trajectory: bool) -> Side:
    workdir.mkdir(parents=True, exist_ok=True)
    stem = f"{name}.trajectory" if trajectory else name
    out = workdir / f"{stem}.npz"
    for stale in (out, out.with_suffix(".json")):
        stale.unlink(missing_ok=True)
    cmd = [*shim.command_prefix(shim_dir), "-m", "tools.warp_compat.example_child", name, str(out)]
    cmd += ["--trajectory"] if trajectory else []
    start = time.monotonic()
    log = workdir / f"{stem}.log"
    rc, timed_out = run_process(cmd, child_env(shim_dir), log, TIMEOUT)
    side = _read_side(out, rc, timed_out)
    side.seconds = time.monotonic() - start
    side.losses = _losses(name, log)
    return side


def _run_side(name: str, shim_dir: Path | None, workdir: Path) -> Side:
    """Run one example on one backend; optimisation examples also run for their trajectory."""
    side = _run_once(name, shim_dir, workdir, trajectory=False)
    if catalog.example_spec(name).trajectory_argv and side.status == "ok":
        traj = _run_once(name, shim_dir, workdir, trajectory=True)
        side.losses = traj.losses
        side.seconds += traj.seconds
        if traj.status != "ok":
            side.status, side.error = traj.status, f"(loss trajectory run) {traj.error}"
    return side


def _read_side(out: Path, rc: int | None, timed_out: bool) -> Side:
    meta_path = out.with_suffix(".json")
    if timed_out:
        return Side("timeout", error=f"timed out after {TIMEOUT:.0f} s")
    if not meta_path.exists():
        return Side("crash", error=f"process died (exit status {rc})")
    meta = json.loads(meta_path.read_text())
    if not meta.get("ok"):
        return Side("error", error=f"{meta['exc_type']}: {first_line(meta['message'])}")
    with np.load(out) as data:
        return Side("ok", arrays={k: data[k] for k in data.files})


def compare(name: str, warp: Side, gradloom: Side) -> ExampleResult:
    """Compare every array warp-lang produced with gradloom's, and the loss trajectories."""
    spec = catalog.example_spec(name)
    res = ExampleResult(name, warp, gradloom, note=spec.note)
    if warp.status != "ok" or gradloom.status != "ok":
        return res
    worst, worst_name = 0.0, ""
    for key, ref in warp.arrays.items():
        if key in spec.ignore:
            continue
        if key not in gradloom.arrays:
            res.missing.append(key)
            continue
        d = rel_diff(gradloom.arrays[key], ref)
        res.compared += 1
        if d > worst or not worst_name:
            worst, worst_name = d, key
    res.worst, res.worst_name = worst, worst_name
    if warp.losses or gradloom.losses:
        n = min(len(warp.losses), len(gradloom.losses))
        if n == 0 or len(warp.losses) != len(gradloom.losses):
            res.loss_error = float("inf")
        else:
            res.loss_error = rel_diff(np.array(gradloom.losses[:n]), np.array(warp.losses[:n]))
    return res


def run_all(names: list[str] | None, workdir: Path, rerun_warp: bool = False,
            experiment: str = "") -> list[ExampleResult]:  # fmt: skip
    """Run the examples (all, or ``names``); warp-lang's outputs are reused from ``workdir``."""
    root = catalog.warp_root()
    assert root is not None
    specs = [catalog.example_spec(n) for n in names] if names else list(catalog.EXAMPLES)
    results = []
    with tempfile.TemporaryDirectory(prefix="warp_shim_") as tmp:
        shim_dir = shim.generate(Path(tmp), root, experiment)
        for spec in specs:
            warp = _cached_warp(spec.name, workdir / "warp", rerun_warp)
            gl = _run_side(spec.name, shim_dir, workdir / "gradloom")
            res = compare(spec.name, warp, gl)
            results.append(res)
            print(f"  example {spec.name:34s} warp={warp.status:7s} gradloom={gl.status:7s} "
                  f"{'match' if res.matches else 'differs'}", flush=True)  # fmt: skip
    return results


def _cached_warp(name: str, workdir: Path, rerun: bool) -> Side:
    """warp-lang's run of ``name``, reused from ``workdir`` unless ``rerun`` or absent."""
    stem = f"{name}.trajectory" if catalog.example_spec(name).trajectory_argv else name
    meta = workdir / f"{name}.json"
    fresh = meta.exists() and json.loads(meta.read_text()).get("spec") == catalog.example_spec(name).key()
    if rerun or not fresh or not (workdir / f"{stem}.log").exists():
        return _run_side(name, None, workdir)
    side = _read_side(workdir / f"{name}.npz", 0, False)
    side.losses = _losses(name, workdir / f"{stem}.log")
    return side


def to_json(results: list[ExampleResult]) -> list[dict[str, Any]]:
    """Summary rows (no arrays) for the results file."""
    rows = []
    for r in results:
        rows.append({"name": r.name, "warp": r.warp.status, "gradloom": r.gradloom.status,
                     "gradloom_error": r.gradloom.error, "warp_error": r.warp.error,
                     "worst": r.worst, "worst_array": r.worst_name, "compared": r.compared,
                     "missing": r.missing, "loss_error": r.loss_error,
                     "matches": r.matches})  # fmt: skip
    return rows
