"""Render the compatibility results as docs/compat.md (and a one-screen summary)."""

from __future__ import annotations

import datetime
import math
import subprocess
from typing import Any

from . import catalog
from .classify import FileScore, causes, score_file
from .examples import RTOL, ExampleResult
from .notes import note_for
from .results import FileRun
from .runner import REPO_ROOT
from .shimlib import HARNESS_CONFIG_DEFAULTS

Baseline = tuple[dict[str, Any], dict[str, FileRun]]
TOP_CAUSES = 40

_HEAD = """# Warp 1.19 compatibility: Warp's own tests and examples on gradloom

Regenerate this page (from the repository root; needs `pip install -e '.[compat]'`):

    python -m tools.warp_compat

It runs each covered test file of the installed warp-lang wheel in its own process (one at a
time, a timeout each) through `python -m gradloom.as_warp`, gradloom's own way of running a
program written for `import warp` (CPU only), runs the listed examples unchanged on gradloom and
on warp-lang, and rewrites this page. warp-lang's own results are cached in
`tools/warp_compat/warp_baseline.json` (`--refresh-baseline` re-runs them); `--files test_vec ...`
or `--examples wave ...` run a subset and print a summary instead. Per-test details (messages,
tracebacks) go to `build/warp_compat/gradloom_results.json`, child logs to `build/warp_compat/`.

Only tests that pass on warp-lang's CPU are counted. *Not applicable*: tests of Warp-private
internals (they reach `warp._src`, which the runner leaves to placeholders, or read Warp's codegen
objects) and the CUDA-only ones listed in `tools/warp_compat/not_applicable.py`. A test that
warp-lang runs but gradloom does not register (e.g. parametrised over a type gradloom lacks)
counts as errored. A Warp module gradloom lacks fails to import (`ModuleNotFoundError` naming it).

`warp.X` is the very module `gradloom.X` (`gradloom/as_warp/__init__.py` lists them); `warp.tests`
and `warp.examples` are the wheel's own directories, `warp._src` the runner's placeholders
(`tools/warp_compat/shim.py`, `shimlib.py`).
Warp's test harness (`warp/tests/unittest_utils.py`) is loaded from the wheel with the CPU as the
only device; `suppress_native_error_output` is a no-op (gradloom has no native error printing) and
gradloom's config gets these harness-only options when it lacks them: {harness}. The few
`warp._src.types` names that tests use as parameters are given their public meaning (the scalar
and vector type lists, `np_dtype_to_warp_type`, and `Vector[dtype, n]`, `Matrix[dtype, r, c]`,
`Quaternion[dtype]`, `Transformation[dtype]`, `vector`, `matrix`, `quaternion`, `transformation`
as the public type factories).
"""


def git_revision() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "gradloom"], cwd=REPO_ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + (" (with uncommitted changes to gradloom/)" if dirty else "")


def score_all(runs: dict[str, FileRun], base: Baseline) -> list[FileScore]:
    """Scores of every file the baseline has and this run covered."""
    _, warp = base
    return [score_file(m, warp[m], runs.get(m)) for m in catalog.TEST_FILES if m in warp and m in runs]


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "–"


def totals(scores: list[FileScore]) -> dict[str, int]:
    t = {s: sum(f.count(s) for f in scores) for s in ("passed", "failed", "errored", "n/a")}
    t["counted"] = sum(len(f.tests) for f in scores)
    t["applicable"] = t["counted"] - t["n/a"]
    return t


def summary(runs: dict[str, FileRun], base: Baseline) -> str:
    scores = score_all(runs, base)
    t = totals(scores)
    lines = [f"{f.module:36s} passed {f.count('passed'):4d}/{len(f.tests):4d}  failed "
             f"{f.count('failed'):4d}  errored {f.count('errored'):4d}  n/a {f.count('n/a'):3d}"
             for f in scores]  # fmt: skip
    lines.append(f"TOTAL passed {t['passed']} of {t['applicable']} applicable "
                 f"({_pct(t['passed'], t['applicable'])}); n/a {t['n/a']}")  # fmt: skip
    lines += [f"  {n:5d}  {c}" for c, n, _ in causes(scores)[:15]]
    return "\n".join(lines)


def _file_table(scores: list[FileScore]) -> list[str]:
    rows = ["| file | warp-lang CPU tests | pass on warp-lang | passed | failed | errored | n/a "
            "| gradloom run |", "|---|--:|--:|--:|--:|--:|--:|---|"]  # fmt: skip
    for f in scores:
        rows.append(f"| {f.module} | {f.warp_total} | {len(f.tests)} | {f.count('passed')} | "
                    f"{f.count('failed')} | {f.count('errored')} | {f.count('n/a')} | "
                    f"{f.run_status} |")  # fmt: skip
    t = totals(scores)
    rows.append(f"| **total** | {sum(f.warp_total for f in scores)} | {t['counted']} | "
                f"**{t['passed']}** | {t['failed']} | {t['errored']} | {t['n/a']} | |")  # fmt: skip
    return rows


def _md(text: str) -> str:
    """Plain text for a markdown table cell or list item."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("`", "'")


def _code(text: str) -> str:
    """A code span for a table cell (entities are not decoded inside code spans)."""
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def _cause_table(scores: list[FileScore]) -> list[str]:
    rows = ["| # | tests blocked | cause (exception: message) | files |", "|--:|--:|---|---|"]
    for i, (cause, n, files) in enumerate(causes(scores)[:TOP_CAUSES], 1):
        shown = ", ".join(files[:4]) + (f" +{len(files) - 4}" if len(files) > 4 else "")
        rows.append(f"| {i} | {n} | {_code(cause)} | {shown} |")
    return rows


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "–"
    return "inf" if math.isinf(x) else f"{x:.1e}"


def _example_table(results: list[ExampleResult]) -> list[str]:
    rows = ["| example | warp-lang | gradloom | arrays compared | max rel. diff (array) | "
            "loss trajectory rel. diff | result |", "|---|---|---|--:|---|---|---|"]  # fmt: skip
    for r in results:
        gl = r.gradloom.status + (f": {_code(r.gradloom.error[:150])}" if r.gradloom.error else "")
        wp = r.warp.status + (f": {_code(r.warp.error[:100])}" if r.warp.error else "")
        worst = f"{_fmt(r.worst)} ({r.worst_name})" if r.compared else "–"
        result = "**matches**" if r.matches else "differs" if r.compared else "–"
        if r.missing:
            result += f"; {len(r.missing)} arrays missing"
        note = f" ({r.note})" if r.note else ""
        rows.append(f"| {r.name}{note} | {wp} | {gl} | {r.compared} | {worst} | "
                    f"{_fmt(r.loss_error)} | {result} |")  # fmt: skip
    return rows


def _details(scores: list[FileScore], status: tuple[str, ...], title: str) -> list[str]:
    out = [f"## {title}", ""]
    for f in scores:
        rows = [t for t in f.tests if t.status in status]
        if not rows:
            continue
        out += [f"<details><summary>{f.module} ({len(rows)})</summary>", ""]
        for t in rows:
            detail = f" — {_md(t.detail[:200])}" if t.detail and t.detail not in t.cause else ""
            note = note_for(f.module, t.test) if t.status != "n/a" else ""
            why = f" — *why:* {_md(note)}" if note else ""
            out.append(f"- `{t.test}` [{t.status}]: {_md(t.cause)}{detail}{why}")
        out += ["", "</details>", ""]
    return out


def _summary_lines(scores: list[FileScore], examples: list[ExampleResult] | None) -> list[str]:
    t = totals(scores)
    out = [f"- Tests: **{t['passed']} of {t['applicable']}** applicable warp-lang-passing tests "
           f"pass on gradloom (**{_pct(t['passed'], t['applicable'])}**); {t['failed']} fail, "
           f"{t['errored']} error, {t['n/a']} not applicable, over {len(scores)} files."
           ] if scores else []  # fmt: skip
    if examples is not None:
        ok = sum(r.matches for r in examples)
        completed = sum(r.gradloom.status == "ok" for r in examples)
        broken = [r.name for r in examples if r.warp.status != "ok"]
        out.append(f"- Examples: **{ok} of {len(examples) - len(broken)}** comparable examples run "
                   f"unchanged and match warp-lang (max difference ≤ {RTOL:g} × the array's "
                   f"largest magnitude, loss trajectories likewise); {completed} of "
                   f"{len(examples)} run to completion on gradloom."
                   + (f" Not comparable (warp-lang itself fails): {', '.join(broken)}." if broken else ""))  # fmt: skip
    return out


def render(runs: dict[str, FileRun], base: Baseline, examples: list[ExampleResult] | None,
           full: bool = True, experiment: str = "", note: str = "") -> str:  # fmt: skip
    """The whole page (`note`: a line after the revision, e.g. which files a merge re-ran)."""
    meta, _ = base
    scores = score_all(runs, base)
    harness = ", ".join(f"`{k}={v!r}`" for k, v in HARNESS_CONFIG_DEFAULTS.items())
    out = [_HEAD.format(harness=harness)]
    if experiment:
        out.append(f"**EXPERIMENT**: the shim ran with `{experiment}` appended; not gradloom's score.\n")
    out.append(f"Generated {datetime.date.today().isoformat()} on gradloom {git_revision()}; "
               f"warp-lang {meta.get('warp_version', '?')} baseline of "
               f"{meta.get('updated', '?')}.{'' if full else ' (partial run)'}{note}")  # fmt: skip
    out += ["", "## Summary", "", *_summary_lines(scores, examples)]
    out += ["", "## What to fix next: most common failure causes", ""]
    out += ["Failed and errored tests grouped by exception type and message (locations and "
            "numbers blanked); the count is the number of warp-lang-passing tests it blocks.", ""]
    out += _cause_table(scores)
    out += ["", "## Per file", "", *_file_table(scores)]
    if examples is not None:
        out += ["", "## Examples", "", *_example_table(examples)]
    out += ["", *_details(scores, ("n/a",), "Not applicable (reason per test)")]
    failing = _details(scores, ("failed", "errored"), "Failing tests and their causes")
    out += [*failing[:2], "A *why* note (tools/warp_compat/notes.py) says why a known failure "
            "remains: most are deliberate differences (docs/differences.md) or Warp features "
            "gradloom does not have.", "", *failing[2:]]
    return "\n".join(out).rstrip() + "\n"
