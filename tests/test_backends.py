"""The backend protocol (gradloom/runtime/backend.py): every backend provides every part, and
generic runtime code reaches a backend only through a device's backend (no static import)."""

from __future__ import annotations

import importlib

import pytest
from import_graph import graph

from gradloom.runtime.backend import CPU_BACKEND, CUDA, PROTOCOL, Backend, transfer_backend

#: the backends' packages: generic code reaches them only through a device's backend
BACKENDS = ("runtime.cpu", "runtime.cuda")
#: modules that may name a backend module: the composition root (the public `wp.Launch`, the
#: driver's error class) and the command line
MAY_IMPORT_BACKENDS = {"", "__main__"}
#: the CUDA driver loader, which the device layer asks which CUDA devices exist (it imports
#: nothing of gradloom but its errors)
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


def _in_backend(module: str) -> bool:
    return any(module.startswith(b + ".") for b in BACKENDS)


def test_generic_modules_import_no_backend() -> None:
    for module, imported in sorted(graph().items()):
        if module in MAY_IMPORT_BACKENDS or _in_backend(module):
            continue
        bad = {m for m in imported if _in_backend(m)} - BELOW_THE_DEVICE_LAYER
        assert not bad, f"{module or 'gradloom'} imports backend modules {sorted(bad)}"


def test_the_checker_sees_backend_imports() -> None:
    edges = graph()
    assert "runtime.cuda.launch" in edges["runtime.cuda.backend"]
    assert "runtime.cpu.command" in edges[""]  # the composition root: wp.Launch
