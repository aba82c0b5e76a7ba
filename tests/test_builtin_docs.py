"""The registry is the single source: docs/builtins.md matches it, and it covers Warp's core."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gradloom")

import gradloom as gl  # noqa: E402
from gradloom.builtins import docs  # noqa: E402
from gradloom.builtins.registry import REGISTRY  # noqa: E402

CORE_LIST = Path(__file__).parent / "data" / "warp_core_names.txt"


def warp_core_names() -> list[str]:
    lines = CORE_LIST.read_text().splitlines()
    return [ln.split("\t")[1] for ln in lines if ln and not ln.startswith("#")]


# names the kernel frontend itself handles (Python builtins and wp.static), not the registry
LANGUAGE_NAMES = {"int", "float", "bool", "len", "static"}


def covered(name: str) -> bool:
    """A Warp name works in gradloom kernels: a registered builtin, a name the frontend handles,
    or a scalar type gradloom exports under Warp's name (callable in kernels as a cast)."""
    if name in REGISTRY or name in LANGUAGE_NAMES:
        return True
    return isinstance(gl.__dict__.get(name), gl.types.ScalarType)


def test_docs_file_matches_the_registry() -> None:
    assert docs.DOC_PATH.read_text() == docs.render(), (
        "docs/builtins.md is out of date: run `python -m gradloom.builtins.docs`")


def test_every_builtin_has_a_doc_line_and_signature() -> None:
    bad = [b.name for b in REGISTRY.values() if not b.doc or not b.signatures]
    assert not bad, f"builtins without a doc line or signature: {bad}"


def test_warp_core_coverage_is_at_least_95_percent() -> None:
    names = warp_core_names()
    assert len(names) > 150  # the list file is intact
    missing = [n for n in names if not covered(n)]
    share = 1 - len(missing) / len(names)
    assert share >= 0.95, f"{share:.1%} of {len(names)} Warp core names; missing: {missing}"
