"""Renders docs/builtins.md from the registry: `python -m gradloom.builtins.docs [--check]`."""

from __future__ import annotations

import sys
from pathlib import Path

from . import catalog  # noqa: F401  (registers every builtin)
from .registry import GROUPS, REGISTRY, Builtin

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "builtins.md"

_HEADER = """# Kernel builtins

Generated from the builtin registry (`gradloom/builtins/registry.py`) by
`python -m gradloom.builtins.docs`; do not edit by hand. A test fails when this file and the
registry disagree.

Each builtin is called as `wp.<name>(...)` inside a `@wp.kernel` or `@wp.func`. Signatures use
`Float` (float16/32/64), `Int`, `Scalar` (either), `Vector`/`Matrix` (any size, one float dtype),
`Quat`, `Transform`, `SpatialVector`, `SpatialMatrix`, `Array`; one line per overload.
**Differentiable** builtins pass gradients through reverse mode; each of their overloads is
checked against central finite differences in float32 and float64
(tests/test_builtin_grads.py). Gradients at special points (sqrt at 0, acos at ±1, ...) follow
docs/gradient-conventions.md.
"""


def _entry(b: Builtin) -> list[str]:
    flag = "differentiable" if b.differentiable else "not differentiable"
    lines = [f"### `{b.name}`", "", f"{b.doc} ({flag})", ""]
    if b.signatures:
        lines += ["```", *(f"{b.name}{sig}" for sig in b.signatures), "```", ""]
    return lines


def render() -> str:
    """The whole of docs/builtins.md."""
    out = [_HEADER]
    by_group = {g: sorted((b for b in REGISTRY.values() if b.group == g), key=lambda b: b.name)
                for g in GROUPS}
    out.append("| group | builtins |\n|---|---|")
    out += [f"| {g} | {len(bs)} |" for g, bs in by_group.items() if bs]
    out.append(f"| **total** | {len(REGISTRY)} |\n")
    for g, bs in by_group.items():
        if not bs:
            continue
        out.append(f"## {g}\n")
        for b in bs:
            out.append("\n".join(_entry(b)))
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = DOC_PATH.read_text() if DOC_PATH.exists() else ""
        if current != text:
            print(f"{DOC_PATH} is out of date: run python -m gradloom.builtins.docs",
                  file=sys.stderr)
            return 1
        return 0
    DOC_PATH.write_text(text)
    print(f"wrote {DOC_PATH} ({len(REGISTRY)} builtins)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
