"""Score gradloom against the warp-lang baseline: per-test status, per-file counts, failure causes."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .not_applicable import reason_for, reason_for_error
from .results import PASSING, CaseResult, FileRun

STATUSES = ("passed", "failed", "errored", "n/a")


@dataclass
class Scored:
    """One warp-lang-passing test, scored on gradloom."""

    test: str
    status: str  # passed, failed, errored, n/a
    cause: str = ""  # grouped cause (failed/errored) or reason (n/a)
    detail: str = ""  # the first line of the actual message


@dataclass
class FileScore:
    module: str
    run_status: str  # gradloom process: ok, import_error, crash, timeout, not run
    warp_total: int  # tests of the file on warp-lang's CPU (any outcome)
    tests: list[Scored] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for t in self.tests if t.status == status)


_PATH_LINE = re.compile(r"(?:[\w./\\-]+[/\\])?[\w.-]+\.py(?::\d+)+|line \d+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"(?<![\w.])[-+]?\d+\.\d*(?:[eE][-+]?\d+)?|(?<![\w.])[-+]?\d+[eE][-+]?\d+")
_SPACES = re.compile(r"\s+")


def first_line(message: str) -> str:
    """The first non-empty line of a message; for a gradloom compile error laid out as
    `file:line:col in f:`, caret excerpt, message, the location and the message's last line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return ""
    if len(lines) > 2 and lines[0].endswith(":") and lines[2].startswith("^"):
        return f"{lines[0]} {lines[-1]}"
    return lines[0]


def cause_key(result: CaseResult) -> str:
    """``ExceptionType: message`` with locations, addresses and float values blanked out."""
    line = first_line(result.message)
    line = _PATH_LINE.sub("<loc>", line)
    line = _HEX.sub("0x…", line)
    line = _FLOAT.sub("<num>", line)
    line = _SPACES.sub(" ", line)[:160]
    return f"{result.exc_type or result.outcome}: {line}" if line else (result.exc_type or result.outcome)


def _private_reason(result: CaseResult) -> str:
    """Why a gradloom error means "not applicable" (Warp-private internals), or ''."""
    return reason_for_error(result.exc_type, result.message)


def score_test(module: str, name: str, gl: CaseResult | None, run: FileRun | None) -> Scored:
    """Status of one test that passes on warp-lang."""
    if gl is not None and gl.outcome in PASSING:
        return Scored(name, "passed")
    curated = reason_for(module, name)
    if curated:
        return Scored(name, "n/a", curated)
    if gl is None:
        return _score_absent(name, run)
    private = _private_reason(gl)
    if private:
        return Scored(name, "n/a", private)
    if gl.outcome == "skip":
        return Scored(name, "failed", "skipped on gradloom", first_line(gl.message))
    if gl.outcome in ("fail", "upass"):
        return Scored(name, "failed", cause_key(gl), first_line(gl.message))
    return Scored(name, "errored", cause_key(gl), first_line(gl.message))


def _score_absent(name: str, run: FileRun | None) -> Scored:
    """The test did not run on gradloom: blame the file's import error or crash if there was one."""
    if run is None:
        return Scored(name, "errored", "file not run on gradloom")
    for err in run.file_errors:
        res = CaseResult("error", err.get("exc_type", ""), err.get("message", ""))
        private = _private_reason(res)
        if private and err.get("where") == "import":
            return Scored(name, "n/a", private)
        return Scored(name, "errored", cause_key(res), f"({err.get('where', 'file')}) {first_line(res.message)}")
    return Scored(name, "errored", "not registered on gradloom (test list differs)")


def score_file(module: str, warp: FileRun, gl: FileRun | None) -> FileScore:
    """Score every test of ``module`` that passes on warp-lang."""
    score = FileScore(module, gl.status if gl else "not run", len(warp.tests))
    for name in sorted(n for n, r in warp.tests.items() if r.outcome in PASSING):
        score.tests.append(score_test(module, name, gl.tests.get(name) if gl else None, gl))
    return score


def causes(scores: list[FileScore]) -> list[tuple[str, int, list[str]]]:
    """(cause, tests blocked, files) for failed/errored tests, most common first."""
    counts: Counter[str] = Counter()
    files: dict[str, set[str]] = {}
    for fs in scores:
        for t in fs.tests:
            if t.status in ("failed", "errored"):
                counts[t.cause] += 1
                files.setdefault(t.cause, set()).add(fs.module)
    return [(c, n, sorted(files[c])) for c, n in counts.most_common()]
