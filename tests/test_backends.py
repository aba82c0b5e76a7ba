"""The backend protocol (gradloom/runtime/backend.py): every backend provides every part, and
generic runtime code reaches a backend only through a device's backend (no static import)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from gradloom.runtime.backend import CPU_BACKEND, CUDA, PROTOCOL, Backend, transfer_backend

ROOT = Path(__file__).resolve().parent.parent / "gradloom"
#: the backends' packages: generic code reaches them only through a device's backend
BACKENDS = ("runtime/cpu", "runtime/cuda")
#: modules that may name a backend module: the composition root (the public `wp.Launch`, the
#: driver's error class), the command line, and the CUDA driver loader, which the device layer
#: asks which CUDA devices exist (it imports nothing of gradloom but its errors)
MAY_IMPORT_BACKENDS = {"__init__.py", "__main__.py"}
BELOW_THE_DEVICE_LAYER = {"runtime.cuda.driver"}


@pytest.mark.parametrize("backend", [CPU_BACKEND, CUDA], ids=lambda b: b.kind)
def test_backend_provides_every_part(backend: Backend) -> None:
    importlib.import_module(backend.module)  # registers the parts (no GPU needed)
    missing = [part for part in PROTOCOL if part not in vars(backend)]
    assert not missing, f"the {backend.kind} backend lacks {missing}"
    assert all(callable(vars(backend)[part]) for part in PROTOCOL)


def test_a_missing_part_is_a_clear_error() -> None:
    with pytest.raises(AttributeError, match="cpu backend provides no part 'no_such_part'"):
        CPU_BACKEND.get("no_such_part")


def test_copies_touching_device_memory_go_to_the_device_backend() -> None:
    assert transfer_backend(CPU_BACKEND, CPU_BACKEND) is CPU_BACKEND
    assert transfer_backend(CPU_BACKEND, CUDA) is CUDA
    assert transfer_backend(CUDA, CPU_BACKEND) is CUDA


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The gradloom modules (dotted, without `gradloom.`) a file imports, function-local
    imports too; `from pkg import name` counts as pkg.name."""
    mod = [p for p in _module(path).split(".") if p]
    pkg = mod if path.name == "__init__.py" else mod[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - node.level + 1] + (node.module.split(".")
                                                           if node.module else [])
            elif node.module and node.module.split(".")[0] == "gradloom":
                base = node.module.split(".")[1:]
            else:
                continue
            out.update(".".join([*base, a.name]) for a in node.names)
            out.add(".".join(base))
        elif isinstance(node, ast.Import):
            out.update(a.name.partition(".")[2] for a in node.names
                       if a.name.startswith("gradloom."))
    return out


def test_generic_modules_import_no_backend() -> None:
    backend_mods = {_module(p) for b in BACKENDS for p in (ROOT / b).rglob("*.py")}
    backend_mods -= BELOW_THE_DEVICE_LAYER | {b.replace("/", ".") for b in BACKENDS}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if str(rel) in MAY_IMPORT_BACKENDS or any(rel.is_relative_to(b) for b in BACKENDS):
            continue
        bad = _imports(path) & backend_mods
        assert not bad, f"{rel} imports backend modules {sorted(bad)}"


def test_the_checker_sees_backend_imports() -> None:
    assert "runtime.cuda.launch" in _imports(ROOT / "runtime" / "cuda" / "backend.py")
    assert "runtime.cpu.command" in _imports(ROOT / "__init__.py")
