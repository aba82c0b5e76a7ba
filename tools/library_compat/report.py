"""Score a library's test files on gradloom against warp-lang's results and write docs/libraries.md."""

from __future__ import annotations

import collections
import re
from pathlib import Path

from .suites import FILE_ERROR, FileResult

DOC = Path(__file__).resolve().parents[2] / "docs" / "libraries.md"


def score(warp: FileResult, gradloom: FileResult | None) -> tuple[int, int]:
    """(tests passing on warp-lang, of those passing on gradloom)."""
    passing = [t for t, o in warp.tests.items() if o == "pass"]
    if gradloom is None:
        return len(passing), 0
    return len(passing), sum(1 for t in passing if gradloom.tests.get(t) == "pass")


def _cause(message: str) -> str:
    """A failure message with its numbers and quoted names blanked, for grouping."""
    return re.sub(r"\d+", "N", message)[:140] or "(no message)"


def causes(pairs: list[tuple[FileResult, FileResult | None]]) -> list[tuple[str, int]]:
    counter: collections.Counter[str] = collections.Counter()
    for warp, gl in pairs:
        for test, outcome in warp.tests.items():
            if outcome == "pass" and gl is not None and gl.tests.get(test) != "pass":
                why = gl.messages.get(test) or gl.messages.get(FILE_ERROR) or f"not run ({gl.status})"
                counter[_cause(why)] += 1
    return counter.most_common(25)


def table(title: str, command: str, pairs: list[tuple[FileResult, FileResult | None]]) -> str:
    total_w = total_g = 0
    rows = []
    for warp, gl in pairs:
        w, g = score(warp, gl)
        total_w, total_g = total_w + w, total_g + g
        status = "–" if gl is None else gl.status
        seconds = "–" if gl is None else f"{gl.seconds:.0f}"
        rows.append(f"| `{warp.file}` | {w} | {g} | {status} | {warp.seconds:.0f} | {seconds} |")
    pct = f"{100 * total_g / total_w:.1f}%" if total_w else "–"
    out = [f"## {title}", "", f"Command: `{command}`", "",
           f"**{total_g} of the {total_w} tests that pass on warp-lang's CPU pass on gradloom ({pct}).**",
           "", "| file | pass on warp-lang | of those, pass on gradloom | gradloom run | s (warp) | s (gradloom) |",
           "|---|---|---|---|---|---|", *rows, "", "Most common causes (tests blocked):", ""]  # fmt: skip
    out += [f"- {n} × `{c}`" for c, n in causes(pairs)]
    return "\n".join(out) + "\n"
