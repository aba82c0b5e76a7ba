"""The cached warp-lang baseline: which Warp tests pass on warp-lang's CPU (warp_baseline.json)."""

from __future__ import annotations

import datetime
import json
import platform
from pathlib import Path
from typing import Any

from .results import CaseResult, FileRun

BASELINE_PATH = Path(__file__).with_name("warp_baseline.json")
_MESSAGE_CHARS = 300


def _compact(result: CaseResult) -> str | dict[str, str]:
    """A passing test is stored as its outcome alone; others keep a short message."""
    if result.outcome == "pass":
        return "pass"
    short = {"outcome": result.outcome, "exc_type": result.exc_type,
             "message": result.message.split("\n", 1)[0][:_MESSAGE_CHARS]}  # fmt: skip
    return {k: v for k, v in short.items() if v}


def file_to_json(run: FileRun) -> dict[str, Any]:
    data = run.to_json()
    data["tests"] = {name: _compact(r) for name, r in sorted(run.tests.items())}
    data["file_errors"] = [
        {k: str(v)[:_MESSAGE_CHARS] for k, v in e.items() if k != "traceback"}
        for e in run.file_errors
    ]
    return data


def load(path: Path = BASELINE_PATH) -> tuple[dict[str, Any], dict[str, FileRun]]:
    """(metadata, per-file runs); empty when there is no baseline yet."""
    if not path.exists():
        return {}, {}
    data = json.loads(path.read_text(encoding="utf-8"))
    files = {m: FileRun.from_json(m, d) for m, d in data.get("files", {}).items()}
    return data.get("meta", {}), files


def save(runs: dict[str, FileRun], warp_version: str, path: Path = BASELINE_PATH) -> None:
    """Merge ``runs`` into the baseline file (other files' entries are kept)."""
    _, files = load(path)
    files.update(runs)
    meta = {
        "warp_version": warp_version,
        "updated": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "device": "cpu",
        "note": "warp-lang's own results for its tests on the CPU; regenerate with "
        "`python -m tools.warp_compat --refresh-baseline`",
    }
    body = {"meta": meta, "files": {m: file_to_json(files[m]) for m in sorted(files)}}
    path.write_text(json.dumps(body, indent=1, sort_keys=False) + "\n", encoding="utf-8")


def passing_tests(run: FileRun) -> list[str]:
    """Tests of one file that pass on warp-lang (the ones the compatibility score counts)."""
    return sorted(name for name, r in run.tests.items() if r.outcome in ("pass", "xfail"))
