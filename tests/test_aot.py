"""Ahead-of-time module files (wp.compile_aot_module / wp.load_aot_module, gradloom/aot.py)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import GradloomError

BODY = """
import gradloom as wp

@wp.kernel
def step(a: wp.array(dtype={dtype}), out: wp.array(dtype={dtype})):
    i = wp.tid()
    out[i] = {expr}
"""


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A Python module of the user's in a folder on sys.path: (its file, its name)."""
    name = f"aot_user_{tmp_path.name}"
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / f"{name}.py", name
    sys.modules.pop(name, None)


def _write(where: tuple[Path, str], expr: str, dtype: str = "float") -> ModuleType:
    path, name = where
    path.write_text(BODY.format(expr=expr, dtype=dtype))
    importlib.invalidate_caches()
    if name in sys.modules:
        return importlib.reload(sys.modules[name])
    return importlib.import_module(name)


def _run(mod: ModuleType, values: list[float]) -> np.ndarray:
    a = wp.array(values, dtype=float)
    out = wp.zeros(len(values), dtype=float)
    wp.launch(mod.step, len(values), [a, out])
    return out.numpy()


def test_stripped_file_keeps_the_compiled_code(user_module: tuple[Path, str],
                                               tmp_path: Path) -> None:
    mod = _write(user_module, "a[i] * 2.0")
    (path,) = wp.compile_aot_module(mod, "cpu", module_dir=tmp_path / "aot", strip_hash=True)
    assert path.name == f"wp_{mod.__name__}.o" and path.stat().st_size > 0
    mod = _write(user_module, "a[i] * 3.0")  # the source changes; the file does not
    wp.load_aot_module(mod, "cpu", module_dir=tmp_path / "aot", strip_hash=True)
    np.testing.assert_array_equal(_run(mod, [1.0, 2.0]), [2.0, 4.0])


def test_hashed_file_follows_the_source(user_module: tuple[Path, str], tmp_path: Path) -> None:
    mod = _write(user_module, "a[i] + 1.0")
    (path,) = wp.compile_aot_module(mod, "cpu", module_dir=tmp_path / "aot")
    assert path.name.startswith(f"wp_{mod.__name__}_") and len(path.stem.rsplit("_", 1)[1]) == 7
    wp.load_aot_module(mod.__name__, "cpu", module_dir=tmp_path / "aot")
    np.testing.assert_array_equal(_run(mod, [1.0]), [2.0])
    mod = _write(user_module, "a[i] + 5.0")
    with pytest.raises(FileNotFoundError, match="no module file"):
        wp.load_aot_module(mod, "cpu", module_dir=tmp_path / "aot")


def test_changed_parameters_are_an_error_not_a_crash(user_module: tuple[Path, str],
                                                     tmp_path: Path) -> None:
    mod = _write(user_module, "a[i]")
    wp.compile_aot_module(mod, "cpu", module_dir=tmp_path, strip_hash=True)
    mod = _write(user_module, "a[i]", dtype="wp.float64")
    with pytest.raises(GradloomError, match="now takes"):
        wp.load_aot_module(mod, "cpu", module_dir=tmp_path, strip_hash=True)


def test_loaded_adjoint_gives_the_derivative(user_module: tuple[Path, str],
                                             tmp_path: Path) -> None:
    mod = _write(user_module, "a[i] * a[i] * a[i]")
    wp.compile_aot_module(mod, "cpu", module_dir=tmp_path, strip_hash=True)
    wp.load_aot_module(mod, "cpu", module_dir=tmp_path, strip_hash=True)
    a = wp.array([0.5, -2.0], dtype=float, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(mod.step, 2, [a, out])
    tape.backward(grads={out: wp.ones(2, dtype=float)})
    np.testing.assert_allclose(a.grad.numpy(), 3.0 * np.array([0.5, -2.0]) ** 2)


def test_module_without_concrete_kernels_is_refused(user_module: tuple[Path, str],
                                                    tmp_path: Path) -> None:
    path, name = user_module
    path.write_text("import typing\nimport gradloom as wp\n\n@wp.kernel\ndef g(a: wp.array(dtype=typing.Any)):\n"
                    "    pass\n")
    importlib.invalidate_caches()
    mod = importlib.import_module(name)
    with pytest.warns(UserWarning, match="without overloads"), \
            pytest.raises(RuntimeError, match="No compilable kernels"):
        wp.compile_aot_module(mod, "cpu", module_dir=tmp_path)


def test_cuda_artifacts_are_a_clear_error(user_module: tuple[Path, str], tmp_path: Path) -> None:
    mod = _write(user_module, "a[i]")
    with pytest.raises(GradloomError, match="CPU module files only"):
        wp.compile_aot_module(mod, arch=90, module_dir=tmp_path, use_ptx=True)
