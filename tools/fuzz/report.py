"""Write failures to a directory: the kernel source, the pickled case, the result, a summary.

For each failure ``<out>/<class>/<tag>.py`` is the (shrunk) case as a gradloom module, with the
classification and the message in its docstring, and ``<tag>.pkl`` the case itself, which
``python -m tools.fuzz --replay <tag>.pkl`` runs again. ``<out>/summary.txt`` lists the counts
and every distinct failure.
"""

from __future__ import annotations

import json
import os
import pickle
import re
from typing import Any

import numpy as np

from .classify import CLASSES
from .model import Case
from .render import case_module

_NAME = re.compile(r"\b(fn|kern|xv|xm|xq|sl|f|v|m|q|i|j|k|p|n|c|x)(\d+)\b")


def canonical(case: Case) -> str:
    """The case's source with names renumbered in order of appearance (for deduplication)."""
    text = case_module(case).split('"""', 2)[2]
    seen: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        key = m.group(0)
        if key not in seen:
            seen[key] = f"{m.group(1)}{sum(1 for s in seen if s.startswith(m.group(1)))}"
        return seen[key]

    return _NAME.sub(sub, text)


def summary_line(counts: dict[str, int], total: int, seconds: float, extra: str = "") -> str:
    parts = [f"{c}={counts.get(c, 0)}" for c in CLASSES]
    return f"fuzz: {total} kernels in {seconds:.0f}s: " + " ".join(parts) + extra


def _inputs_comment(case: Case) -> str:
    lines = ["# inputs (initial array values) and int arguments:"]
    for a in case.arrays:
        vals = np.array2string(np.asarray(a.values), precision=17, separator=", ",
                               max_line_width=95, threshold=10_000)
        lines.append(f"# {a.name} ({a.ty}) = " + vals.replace("\n", "\n#   "))
    lines.append(f"# ints: {case.ints}")
    return "\n".join(lines)


def write_failure(out: str, case: Case, cls: str, detail: str, result: dict[str, Any],
                  original: Case | None = None) -> str:
    d = os.path.join(out, cls)
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, case.tag)
    src = case_module(case)
    head, rest = src.split('"""', 2)[1:]
    doc = (f'"""{head}\n\nclass: {cls}\n{detail}\n\nreplay: python -m tools.fuzz --replay '
           f'{stem}.pkl\n"""')
    with open(stem + ".py", "w") as fh:
        fh.write(doc + rest + "\n\n" + _inputs_comment(case) + "\n")
    with open(stem + ".pkl", "wb") as fh:
        pickle.dump(case, fh)
    with open(stem + ".json", "w") as fh:
        json.dump({"class": cls, "detail": detail, "origin": case.origin,
                   "result": {k: v for k, v in result.items() if k not in ("trace", "forward")}},
                  fh, indent=1, default=str)
    if original is not None:
        with open(stem + ".original.py", "w") as fh:
            fh.write(case_module(original))
    return stem + ".py"
