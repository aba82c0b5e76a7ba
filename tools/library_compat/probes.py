"""Whole-program checks of the libraries: MuJoCo Warp's humanoid steps, newton's diffsim examples.

Each runs in a child process on one backend and writes what it measured to a JSON file, so the
two backends' runs are compared outside either.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import env

#: the child of `mujoco_step`: put_model + put_data of the humanoid in MuJoCo Warp's test data,
#: then steps, timing the first (compiles included) and the rest
STEP_CHILD = """
import json, sys, time
import mujoco, numpy as np
import warp as wp
import mujoco_warp as mjw
from importlib.resources import files
out, steps = sys.argv[1], int(sys.argv[2])
mjm = mujoco.MjModel.from_xml_path(str(files("mujoco_warp") / "test_data" / "humanoid" / "humanoid.xml"))
mjd = mujoco.MjData(mjm)
if mjm.nkey:
    mujoco.mj_resetDataKeyframe(mjm, mjd, 0)
t0 = time.perf_counter()
with wp.ScopedDevice("cpu"):
    m, d = mjw.put_model(mjm), mjw.put_data(mjm, mjd)
    times, cpu = [], []
    for _ in range(steps):
        t, c = time.perf_counter(), time.process_time()
        mjw.step(m, d)
        wp.synchronize()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    json.dump({"qpos": d.qpos.numpy().tolist(), "qvel": d.qvel.numpy().tolist(), "step_s": times,
               "step_cpu_s": cpu, "total_s": time.perf_counter() - t0}, open(out, "w"))
"""

#: the child of `newton_step`: one diffsim example built (its forward and backward captured in a
#: graph) and trained for a few iterations, each timed; the first includes every compile
NEWTON_STEP_CHILD = """
import importlib, json, sys, time
t0 = time.perf_counter()
import warp as wp
import newton, newton.examples
out, name, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
module = importlib.import_module(f"newton.examples.diffsim.example_diffsim_{name}")
sys.argv = ["example", "--viewer", "null", "--device", "cpu"]
parser = module.Example.create_parser()
viewer, args = newton.examples.init(parser)
t1, c1 = time.perf_counter(), time.process_time()
example = module.Example(viewer, args)
build, build_cpu = time.perf_counter() - t1, time.process_time() - c1
times, cpu = [], []
for _ in range(steps):
    t, c = time.perf_counter(), time.process_time()
    example.step()
    wp.synchronize()
    times.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
json.dump({"import_s": t1 - t0, "build_s": build, "step_s": times, "step_cpu_s": cpu, "build_cpu_s": build_cpu,
           "loss": [float(x) for x in getattr(example, "loss_history", [])]}, open(out, "w"))
"""

DIFFSIM = ("ball", "bear", "cloth", "drone", "soft_body", "spring_cage")
#: the options newton's own test suite runs each example with on the CPU
#: (newton/tests/test_examples.py, `test_options_cpu`): two training iterations each; with fewer
#: frames spring_cage's check compares the first iteration's gradients, and fails on warp-lang too
DIFFSIM_OPTIONS: dict[str, tuple[str, ...]] = {
    "ball": ("--num-frames", "72"),
    "bear": ("--num-frames", "2", "--sim-steps", "10"),
    "cloth": ("--num-frames", "240"),
    "drone": ("--num-frames", "10"),
    "soft_body": ("--num-frames", "120"),
    "spring_cage": ("--num-frames", "60"),
}


def _child(cmd: list[str], log: Path, timeout: float, cold: bool = False) -> tuple[str, float]:
    """Run one child; `cold`: with empty kernel caches of both backends (fresh directories for
    WARP_CACHE_PATH and GRADLOOM_CACHE_DIR), so its first step compiles everything."""
    start = time.monotonic()
    env_vars = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    with contextlib.ExitStack() as stack, open(log, "w", encoding="utf-8") as out:
        if cold:
            caches = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="libcompat-")))
            env_vars.update(WARP_CACHE_PATH=str(caches / "warp"),
                            GRADLOOM_CACHE_DIR=str(caches / "gradloom"))  # fmt: skip
        try:
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                                env=env_vars).returncode  # fmt: skip
        except subprocess.TimeoutExpired:
            return "timeout", time.monotonic() - start
    return ("ok" if rc == 0 else f"exit {rc}"), time.monotonic() - start


def mujoco_step(python: Path, backend: str, work: Path, steps: int, timeout: float,
                cold: bool = False) -> dict:  # fmt: skip
    work.mkdir(parents=True, exist_ok=True)
    script, out = work / "step_child.py", work / f"step.{backend}.json"
    script.write_text(STEP_CHILD)
    out.unlink(missing_ok=True)
    status, seconds = _child([*env.command(python, backend), str(script), str(out), str(steps)],
                             work / f"step.{backend}.log", timeout, cold)  # fmt: skip
    result = json.loads(out.read_text()) if out.exists() else {}
    return {"status": status, "seconds": seconds, **result}


def newton_step(python: Path, backend: str, name: str, work: Path, steps: int,
                timeout: float, cold: bool = False) -> dict:  # fmt: skip
    """One diffsim example built and trained `steps` iterations in one process, each timed."""
    work.mkdir(parents=True, exist_ok=True)
    script, out = work / "newton_step_child.py", work / f"newton_step.{name}.{backend}.json"
    script.write_text(NEWTON_STEP_CHILD)
    out.unlink(missing_ok=True)
    status, seconds = _child([*env.command(python, backend), str(script), str(out), name,
                              str(steps)], work / f"newton_step.{name}.{backend}.log", timeout,
                             cold)  # fmt: skip
    result = json.loads(out.read_text()) if out.exists() else {}
    return {"status": status, "seconds": seconds, **result}


def newton_example(python: Path, backend: str, name: str, work: Path, frames: int | None,
                   timeout: float) -> dict:  # fmt: skip
    """One diffsim example in test mode with the null viewer (newton's own test options, or
    `frames` frames), verbose; its printed losses."""
    work.mkdir(parents=True, exist_ok=True)
    log = work / f"diffsim_{name}.{backend}.log"
    module = f"newton.examples.diffsim.example_diffsim_{name}"
    options = DIFFSIM_OPTIONS[name] if frames is None else ("--num-frames", str(frames))
    cmd = [*env.command(python, backend), "-m", module, "--viewer", "null", "--device", "cpu",
           *options, "--test", "--verbose"]  # fmt: skip
    status, seconds = _child(cmd, log, timeout)
    text = log.read_text(errors="replace")
    losses = [float(x) for x in _LOSS.findall(text)]
    last = text.strip().splitlines()[-1] if text.strip() else ""
    return {"status": status, "seconds": seconds, "losses": losses, "last_line": last[:300]}


#: a printed loss: "Loss: [0.239]", "loss=0.5", bear's "Iteration 3: [9.4]"
_LOSS = re.compile(
    r"(?:\b[Ll]oss[^0-9\-]{0,12}|^Iteration \d+: \[?)(-?\d+\.\d+(?:[eE][-+]?\d+)?)", re.M)


def loss_difference(a: list[float], b: list[float]) -> float | None:
    """The largest relative difference of two loss trajectories (None: lengths differ)."""
    if len(a) != len(b) or not a:
        return None
    return max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a, b, strict=True))


def python_default() -> Path:
    venv_python = env.python_of(env.DEFAULT_VENV)
    return venv_python if venv_python.exists() else Path(sys.executable)
