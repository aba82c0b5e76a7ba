"""The backend protocol (gradloom/runtime/backend.py): every backend provides every part, and
generic runtime code reaches a backend only through a device's backend (no static import)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from gradloom.runtime.backend import CPU_BACKEND, CUDA, PROTOCOL, Backend, transfer_backend

RUNTIME = Path(__file__).resolve().parent.parent / "gradloom" / "runtime"
#: the modules that make up each backend (everything else in runtime/ is generic)
BACKEND_MODULES = {
    "cpu": {"cpu_backend", "cpu_launch", "cpu_command"},
    "cuda": {"cuda_backend", "cuda_array", "cuda_command", "cuda_driver", "cuda_graph",
             "cuda_stream", "cuda_tape", "device_grads", "foreign_cuda", "launch_cuda",
             "storage"},
}


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


def _runtime_imports(path: Path) -> set[str]:
    """runtime/ modules a file imports (any depth: function-local too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[:2] == ["gradloom", "runtime"] and len(parts) > 2:
                out.add(parts[2])
    return out


def test_generic_runtime_modules_import_no_backend() -> None:
    backends = set().union(*BACKEND_MODULES.values())
    for path in sorted(RUNTIME.glob("*.py")):
        if path.stem in backends:
            continue
        bad = _runtime_imports(path) & backends
        assert not bad, f"runtime/{path.name} imports backend modules {sorted(bad)}"
