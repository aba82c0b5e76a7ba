"""Turn a case's gradloom result (and warp-lang's, when run) into one class and a signature.

Failure classes: ``grad`` (Tape gradient != float64 finite differences), ``jvp`` (with
``--jvp``: a forward-mode tangent != float64 finite differences, or jvp raised), ``forward`` (forward
values differ from warp-lang's; not compared where a branch follows rounding), ``refused``
(gradloom raised on a kernel warp-lang compiles and runs, or raised an internal error such as
TypeError), ``crash``, ``hang``. Not failures: ``ok``, ``rejected`` (the sample could not be
checked: a kink or branch within the step, values out of range), ``invalid`` (warp-lang rejects
the kernel too, so the generator made something outside the language), ``documented`` (gradloom
refuses the kernel's gradient with an error that docs/differences.md documents: where a right
gradient is not defined, a clear error is the promised outcome).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .evaluate import TOL

FAILURES = ("grad", "jvp", "forward", "refused", "crash", "hang")
CLASSES = ("ok", "rejected", "invalid", "documented", *FAILURES)

#: backward errors docs/differences.md documents (each names the array or the user's line)
DOCUMENTED_REFUSALS = (
    "that other threads overwrite, so the adjoint cannot know which value each thread read",
    "on a float array is not differentiable",
    "returns on a float array: it depends on the order threads run in",
    "are the same array (or views of one), and the kernel writes",
    "that other threads overwrite, whose gradients need the reverse order",
    "whose gradient belongs to the last store",
)


def forward_mismatch(dtype: str, mine: dict[str, Any], theirs: dict[str, Any],
                     labels: tuple[str, str] = ("gradloom", "warp-lang")) -> str | None:
    """A description of the first array whose values differ, or None."""
    rtol = TOL[dtype].fwd_rtol
    for name, ref in theirs.items():
        a, b = np.asarray(mine.get(name), np.float64), np.asarray(ref, np.float64)
        if a.shape != b.shape:
            return f"{name}: shape {a.shape} != {labels[1]}'s {b.shape}"
        scale = 1.0 + np.max(np.abs(b), initial=0.0)
        bad = ~(np.abs(a - b) <= rtol * scale)
        if np.any(bad):
            i = tuple(int(k) for k in np.argwhere(bad)[0])
            return f"{name}{list(i)}: {labels[0]} {float(a[i])!r}, {labels[1]} {float(b[i])!r}"
    return None


def classify(dtype: str, g: dict[str, Any], w: dict[str, Any] | None) -> tuple[str, str]:
    """(class, one-line detail)."""
    s = g.get("status")
    if s in ("crash", "hang"):
        if s == "hang":
            return s, "timed out"
        return s, f"exit status {g.get('returncode')}: {first_line(g.get('stderr', ''))}"
    if w is not None and w.get("status") == "ok" and "forward" in g and not g.get("unstable"):
        diff = forward_mismatch(dtype, g["forward"], w["forward"])
        if diff:
            return "forward", diff
    if s == "error":
        what = f"{g['stage']}: {g['exc']}: {first_line(g['message'])}"
        if not g.get("gradloom_error"):
            return "refused", "internal error at " + what
        if w is not None and w.get("status") == "rejected":
            return "invalid", "warp-lang rejects it too: " + first_line(w.get("message", ""))
        if g["stage"] == "backward" and any(d in g["message"] for d in DOCUMENTED_REFUSALS):
            return "documented", what
        return "refused", what + ("" if w is not None else " (warp-lang not run)")
    if s == "grad":
        d = g["directions"][0]
        return "grad", f"directional derivative: reverse {d['reverse']:.10g}, fd {d['fd']:.10g}"
    j = g.get("jvp")
    if j is not None and j.get("status") in ("mismatch", "error"):
        return _jvp_class(j)
    if s == "rejected":
        return "rejected", g.get("reason", "")
    return "ok", ""


def _jvp_class(j: dict[str, Any]) -> tuple[str, str]:
    """A forward-mode failure: tangents != finite differences, or jvp raised."""
    if j["status"] == "mismatch":
        return "jvp", "tangent: " + j["detail"]
    return "jvp", f"jvp raised {j['exc']}: {first_line(j['message'])}"


def first_line(msg: str) -> str:
    for line in msg.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def signature(cls: str, g: dict[str, Any]) -> str:
    """What two failures must share to be 'the same' while shrinking."""
    if cls == "crash":  # a segfault and an LLVM abort are different bugs
        return f"crash:{g.get('returncode')}:{first_line(g.get('stderr', ''))}"
    if cls == "refused" and g.get("status") == "error":
        msg = first_line(g.get("message", ""))
        msg = re.sub(r"^\S+\.py:\d+(:\d+)?( in \w+)?:\s*", "", msg)  # drop file:line prefix
        msg = re.sub(r"'[^']*'|\"[^\"]*\"|\b\d+\b", "_", msg)
        return f"refused:{g['stage'] if g['stage'] != 'import' else 'forward'}:{g['exc']}:{msg}"
    if cls == "jvp":
        j = g.get("jvp", {})
        return f"jvp:{j.get('status')}:{j.get('exc', '')}"
    return cls
