"""Run a library's own pytest files one process each, on either backend, and read the results."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import env

#: the key of `FileResult.messages` for an error that stopped the whole file (no per-test report)
FILE_ERROR = "(file)"


@dataclass
class FileResult:
    """One test file on one backend: per-test outcomes (pass, fail, error, skip)."""

    file: str
    backend: str
    status: str = "ok"  # ok, timeout, crash (no report written)
    seconds: float = 0.0
    tests: dict[str, str] = field(default_factory=dict)
    #: the first line of each failing or erroring test's message
    messages: dict[str, str] = field(default_factory=dict)

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.tests.values() if o == outcome)


def mujoco_files(site: Path) -> list[str]:
    """MuJoCo Warp's test files, relative to its package directory."""
    root = site / "mujoco_warp"
    return sorted(str(p.relative_to(root)) for p in (root / "_src").glob("*_test.py"))


def _outcomes(report: Path) -> tuple[dict[str, str], dict[str, str]]:
    tests: dict[str, str] = {}
    messages: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = "pass"
        for child in case:
            label = {"skipped": "skip", "error": "error", "failure": "fail"}.get(child.tag)
            if label is not None:
                outcome = label
                if label != "skip":
                    messages[name] = (child.get("message") or "").split("\n", 1)[0][:300]
        tests[name] = outcome
    return tests, messages


def run_file(python: Path, backend: str, package_dir: Path, test_file: str, out_dir: Path,
             timeout: float, extra: tuple[str, ...] = ("--cpu",)) -> FileResult:  # fmt: skip
    """pytest on one file in a fresh interpreter (its own session: killed whole on timeout)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = test_file.replace("/", "_").removesuffix(".py")
    report, log = out_dir / f"{stem}.{backend}.xml", out_dir / f"{stem}.{backend}.log"
    report.unlink(missing_ok=True)
    cmd = [*env.command(python, backend), "-m", "pytest", "-q", "-p", "no:cacheprovider",
           f"--junitxml={report}", *extra, test_file]  # fmt: skip
    result = FileResult(test_file, backend)
    start = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, cwd=package_dir, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))  # fmt: skip
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            result.status = "timeout"
    result.seconds = time.monotonic() - start
    if report.exists():
        result.tests, result.messages = _outcomes(report)
    else:
        result.status = "no report" if result.status == "ok" else result.status
        errors = [ln[1:].strip() for ln in log.read_text(errors="replace").splitlines()
                  if ln.startswith("E ")]  # fmt: skip
        result.messages[FILE_ERROR] = errors[-1][:300] if errors else f"({result.status})"
    return result


def cached_or_run(python: Path, backend: str, package_dir: Path, test_file: str, out_dir: Path,
                  timeout: float, rerun: bool = False,
                  extra: tuple[str, ...] = ("--cpu",)) -> FileResult:  # fmt: skip
    """A file's earlier result on this backend (kept beside its report), else a fresh run."""
    cache = out_dir / f"{test_file.replace('/', '_').removesuffix('.py')}.{backend}.json"
    if cache.exists() and not rerun:
        return FileResult(**json.loads(cache.read_text()))
    result = run_file(python, backend, package_dir, test_file, out_dir, timeout, extra)
    cache.write_text(json.dumps(asdict(result)))
    return result


def save(results: list[FileResult], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([asdict(r) for r in results], indent=1))


def load(path: Path) -> list[FileResult]:
    if not path.exists():
        return []
    return [FileResult(**r) for r in json.loads(path.read_text())]
