"""Imports point downward only (docs/design.md §3): checked from each module's import statements."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "gradloom"

# package -> the gradloom packages/modules it may import
ALLOWED = {
    "ir": {"types", "errors", "ir"},
    "builtins": {"types", "errors", "config", "ir", "builtins"},
    "frontend": {"types", "errors", "config", "ir", "builtins", "frontend"},
    "codegen": {"types", "errors", "config", "ir", "codegen"},
    "runtime": {"types", "errors", "config", "runtime"},
}


def _gradloom_imports(path: Path) -> set[str]:
    """First component under gradloom of every gradloom import in the file."""
    pkg_parts = path.relative_to(ROOT).parts[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg_parts[: len(pkg_parts) - node.level + 1])
                mod = base + (node.module.split(".") if node.module else [])
                names = [mod[0]] if mod else [a.name for a in node.names]
                out.update(names)
            elif node.module and node.module.startswith("gradloom."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("gradloom."):
                    out.add(a.name.split(".")[1])
    return out


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_point_downward(package: str) -> None:
    for path in sorted((ROOT / package).glob("*.py")):
        bad = _gradloom_imports(path) - ALLOWED[package]
        assert not bad, f"{path.name} imports {sorted(bad)}, not allowed for {package}/"


def test_the_checker_sees_relative_imports() -> None:
    assert "types" in _gradloom_imports(ROOT / "ir" / "builder.py")
    assert "frontend" in _gradloom_imports(ROOT / "kernel.py")
