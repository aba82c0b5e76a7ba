"""The import graph of gradloom's files, from every import statement (module level, inside
functions, under `TYPE_CHECKING`, `from .. import x`, `import gradloom`): what the layering
tests check (tests/test_import_cycles.py, tests/test_layers.py, tests/test_backends.py)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "gradloom"
Edges = dict[str, dict[str, int]]  # module -> {imported module: line of the first import}


def modules() -> dict[str, Path]:
    """Module name under gradloom ("" for the package itself, "runtime" for its __init__) ->
    file."""
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _targets(mods: dict[str, Path], current: str, node: ast.AST) -> list[str]:
    """The gradloom modules an import statement imports (a name imported from a package counts
    as its submodule where it is one, else as the package)."""
    is_package = mods[current].name == "__init__.py"
    package = current if is_package else current.rpartition(".")[0]
    if isinstance(node, ast.Import):
        return [_strip(a.name) for a in node.names
                if a.name.split(".")[0] == "gradloom" and _strip(a.name) in mods]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = package.split(".") if package else []
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
        module = ".".join(base + ([node.module] if node.module else []))
    elif node.module and node.module.split(".")[0] == "gradloom":
        module = _strip(node.module)
    else:
        return []
    out = []
    for alias in node.names:
        sub = f"{module}.{alias.name}" if module else alias.name
        out.append(sub if sub in mods else module)
    return [m for m in out if m in mods]


def _strip(dotted: str) -> str:
    return dotted.partition(".")[2]


def graph() -> Edges:
    mods = modules()
    edges: Edges = {m: {} for m in mods}
    for m, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _targets(mods, m, node):
                    if t != m:
                        edges[m].setdefault(t, node.lineno)
    return edges
