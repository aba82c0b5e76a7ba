"""Run test files one process each (one at a time), on warp-lang or on gradloom (gradloom.as_warp)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from . import shim
from .results import FileRun, parse_events

REPO_ROOT = Path(__file__).resolve().parents[2]
#: a file of Python code the child runs right after `import warp` (shim.generate's experiment)
EXPERIMENT_ENV = "WARP_COMPAT_EXPERIMENT"
#: the shim directory of a gradloom child, for the interpreters it starts (site/sitecustomize.py)
SHIM_ENV = "WARP_COMPAT_SHIM"
#: the directory of that start-up hook
SITE_DIR = Path(__file__).resolve().parent / "site"


def child_env(shim_dir: Path | None) -> dict[str, str]:
    """Environment of a child (the repository importable; an experiment named when given). On
    gradloom the Python processes a child starts (`sys.executable -c ...`, as some of Warp's
    tests do) import gradloom's `warp` too, through site/sitecustomize.py."""
    env = dict(os.environ)
    parts = [str(REPO_ROOT)] if shim_dir is None else [str(SITE_DIR), str(REPO_ROOT)]
    env.pop(SHIM_ENV, None)
    if shim_dir is not None:
        env[SHIM_ENV] = str(shim_dir)
    # keep what the caller had (e.g. a checkout's own PYTHONPATH)
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in parts]
    env["PYTHONPATH"] = os.pathsep.join(parts + extra)
    env.pop(EXPERIMENT_ENV, None)
    experiment = shim.experiment_file(shim_dir)
    if experiment is not None:
        env[EXPERIMENT_ENV] = str(experiment)
    env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU is the only device
    env.setdefault("PYTHONFAULTHANDLER", "1")
    return env


def run_process(cmd: list[str], env: dict[str, str], log: Path, timeout: float) -> tuple[int | None, bool]:
    """Run ``cmd`` in its own session; on timeout kill the whole group. Returns (rc, timed_out)."""
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        try:
            return proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return proc.returncode, True


def run_file(module: str, shim_dir: Path | None, workdir: Path, timeout: float) -> FileRun:
    """Run ``warp.tests.<module>`` in a fresh interpreter and read back its per-test results."""
    workdir.mkdir(parents=True, exist_ok=True)
    backend = "gradloom" if shim_dir is not None else "warp"
    events = workdir / f"{module}.{backend}.jsonl"
    log = workdir / f"{module}.{backend}.log"
    cmd = [*shim.command_prefix(shim_dir), "-m", "tools.warp_compat.child", module, str(events)]
    start = time.monotonic()
    rc, timed_out = run_process(cmd, child_env(shim_dir), log, timeout)
    lines = events.read_text(encoding="utf-8").splitlines() if events.exists() else []
    run = parse_events(module, lines, timed_out, rc)
    run.seconds = time.monotonic() - start
    return run


def run_files(modules: list[str], shim_dir: Path | None, workdir: Path, timeout: float,
              progress: Callable[[FileRun], None] | None = None) -> dict[str, FileRun]:  # fmt: skip
    """Run each module in turn (one worker: the machine is shared)."""
    runs: dict[str, FileRun] = {}
    for module in modules:
        runs[module] = run_file(module, shim_dir, workdir, timeout)
        if progress is not None:
            progress(runs[module])
    return runs
