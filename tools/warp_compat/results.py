"""Read a child's event stream into per-test results, pinning crashes and hangs to a test."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

PASSING = ("pass", "xfail")


@dataclass
class CaseResult:
    """One test's outcome on one backend."""

    outcome: str  # pass, fail, error, skip, xfail, upass
    exc_type: str = ""
    message: str = ""
    origin: str = ""
    traceback: str = ""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v}


@dataclass
class FileRun:
    """One test file run in its own process."""

    module: str
    status: str = "ok"  # ok, import_error, crash, timeout
    seconds: float = 0.0
    returncode: int | None = 0
    tests: dict[str, CaseResult] = field(default_factory=dict)
    file_errors: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "seconds": round(self.seconds, 1),
            "returncode": self.returncode,
            "tests": {k: v.to_json() for k, v in self.tests.items()},
            "file_errors": self.file_errors,
        }

    @classmethod
    def from_json(cls, module: str, data: dict[str, Any]) -> FileRun:
        tests = {}
        for name, value in data.get("tests", {}).items():
            if isinstance(value, str):  # compact baseline form: just the outcome
                value = {"outcome": value}
            tests[name] = CaseResult(**value)
        return cls(module, data.get("status", "ok"), data.get("seconds", 0.0),
                   data.get("returncode"), tests, data.get("file_errors", []))  # fmt: skip


def _result(event: dict[str, Any]) -> CaseResult:
    keys = ("outcome", "exc_type", "message", "origin", "traceback")
    return CaseResult(**{k: event[k] for k in keys if k in event})


def parse_events(module: str, lines: list[str], timed_out: bool, returncode: int | None) -> FileRun:
    """Turn a child's JSON lines into a FileRun; a missing ``done`` means crash or timeout."""
    run = FileRun(module, returncode=returncode)
    collected: list[str] = []
    running: str | None = None
    done = False
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
        kind = event.get("event")
        if kind == "start":
            running = event["test"]
        elif kind == "end":
            run.tests[event["test"]] = _result(event)
            running = None
        elif kind == "collected":
            collected = list(event["tests"])
        elif kind == "file_error":
            run.file_errors.append({k: v for k, v in event.items() if k != "event"})
            if event.get("where") == "import":
                run.status = "import_error"
        elif kind == "done":
            done = True
    if not done:
        _pin_abort(run, collected, running, timed_out, returncode)
    return run


def _pin_abort(run: FileRun, collected: list[str], running: str | None, timed_out: bool,
               returncode: int | None) -> None:  # fmt: skip
    """The process died or hung: blame the running test, mark the rest as not run."""
    run.status = "timeout" if timed_out else "crash"
    how = "timed out" if timed_out else f"crashed (exit status {returncode})"
    if running is not None:
        run.tests[running] = CaseResult(
            "error", "Timeout" if timed_out else "Crash", f"the test process {how} in this test"
        )
    where = f" in {running}" if running else ""
    for name in collected:
        if name not in run.tests:
            run.tests[name] = CaseResult("error", "NotRun", f"not run: the test process {how}{where}")
    if not collected:
        run.file_errors.append({"where": "process", "exc_type": "Crash", "message": how})
