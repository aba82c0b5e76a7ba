"""Recorded launches (`record_cmd=True` → `Launch`) and compiling ahead of time
(`wp.load_module`, `wp.force_load`, `wp.compile_kernels`)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import gradloom as wp
from gradloom import config

f64 = wp.float64


@wp.kernel
def add_scaled(a: f64, x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = y[i] + a * x[i]


@wp.kernel
def square(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_recorded_launch_runs_only_when_launched() -> None:
    x, y = wp.array([1.0, 2.0], dtype=f64), wp.zeros(2, dtype=f64)
    cmd = wp.launch(add_scaled, 2, inputs=[3.0, x, y], record_cmd=True)
    assert isinstance(cmd, wp.Launch)
    np.testing.assert_array_equal(y.numpy(), [0.0, 0.0])
    cmd.launch()
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [6.0, 12.0])


def test_set_params_by_index_name_and_dim() -> None:
    x, y = wp.array([1.0, 2.0, 3.0], dtype=f64), wp.zeros(3, dtype=f64)
    cmd = wp.launch(add_scaled, 2, inputs=[1.0, x, y], record_cmd=True)
    cmd.set_param_at_index(0, 10.0)
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [10.0, 20.0, 0.0])
    y2 = wp.zeros(3, dtype=f64)
    cmd.set_param_by_name("y", y2)
    cmd.set_dim(3)
    cmd.launch()
    np.testing.assert_array_equal(y2.numpy(), [10.0, 20.0, 30.0])
    cmd.set_params([2.0, x, y2])
    cmd.launch()
    np.testing.assert_array_equal(y2.numpy(), [12.0, 24.0, 36.0])
    with pytest.raises(wp.LaunchError, match="no parameter 'z'.*a, x, y"):
        cmd.set_param_by_name("z", 1.0)
    with pytest.raises(wp.LaunchError, match="argument 'a'"):
        cmd.set_param_at_index(0, "nope")


def test_recorded_launch_under_a_tape_is_recorded() -> None:
    xv = np.array([0.5, -1.5, 2.0])
    x = wp.array(xv, dtype=f64, requires_grad=True)
    y = wp.zeros(3, dtype=f64, requires_grad=True)
    cmd = wp.launch(square, 3, inputs=[x, y], record_cmd=True)
    tape = wp.Tape()
    with tape:
        cmd.launch()
    tape.backward(grads={y: wp.array(np.ones(3), dtype=f64)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * xv, rtol=1e-15)


def test_recorded_launch_keeps_copy_on_write() -> None:
    """A tape that read x keeps x's old contents when a replayed launch overwrites x."""
    xv = np.array([1.0, 2.0])
    x = wp.array(xv, dtype=f64, requires_grad=True)
    y = wp.zeros(2, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 2, inputs=[x, y])
    overwrite = wp.launch(add_scaled, 2, inputs=[1.0, wp.array([5.0, 5.0], dtype=f64), x],
                          record_cmd=True)
    overwrite.launch()
    tape.backward(grads={y: wp.array(np.ones(2), dtype=f64)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * xv, rtol=1e-15)


def test_recorded_launch_reports_bounds_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "mode", "debug")

    @wp.kernel
    def reach(n: int, y: wp.array(dtype=f64)):
        i = wp.tid()
        y[i + n] = f64(1.0)

    y = wp.zeros(4, dtype=f64)
    cmd = wp.launch(reach, 4, inputs=[1, y], record_cmd=True)
    with pytest.raises(wp.KernelRuntimeError, match="out of bounds"):
        cmd.launch()
    cmd.set_param_at_index(0, 0)
    cmd.launch()  # the error state was cleared
    np.testing.assert_array_equal(y.numpy(), [1.0, 1.0, 1.0, 1.0])


def test_recorded_adjoint_launch() -> None:
    xv = np.array([1.0, 3.0])
    x, y = wp.array(xv, dtype=f64), wp.zeros(2, dtype=f64)
    gx, gy = wp.zeros(2, dtype=f64), wp.array([1.0, 1.0], dtype=f64)
    cmd = wp.launch(square, 2, inputs=[x, y], adj_inputs=[gx, gy], adjoint=True,
                    record_cmd=True)
    cmd.launch()
    np.testing.assert_allclose(gx.numpy(), 2 * xv)


def _module(tmp_path: Path, name: str, body: str) -> object:
    path = tmp_path / f"{name}.py"
    path.write_text("import gradloom as wp\n" + textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


KERNELS = """
@wp.kernel
def k{n}(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * {n}.0 + wp.sin(x[i])
"""


def test_load_module_compiles_every_kernel(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(config, "cache_enabled", False)
    mod = _module(tmp_path, "gl_loadmod", "".join(KERNELS.format(n=n) for n in range(4)))
    kernels = wp.loading.kernels_of(mod)
    assert len(kernels) == 4 and all(k._compiled is None for k in kernels)
    wp.load_module(mod)
    assert all(k._compiled is not None for k in kernels)
    x = wp.array(np.ones(3, dtype=np.float32))
    wp.launch(mod.k2, 3, inputs=[x])  # type: ignore[attr-defined]
    np.testing.assert_allclose(x.numpy(), 2 + np.sin(1.0), rtol=1e-6)


def test_force_load_in_parallel_with_adjoints(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(config, "cache_enabled", False)
    mod = _module(tmp_path, "gl_forceload", "".join(KERNELS.format(n=n) for n in range(4, 8)))
    wp.force_load(modules=[mod])
    kernels = wp.loading.kernels_of(mod)
    assert all(k._compiled is not None and k._adjoint is None for k in kernels)
    wp.compile_kernels(kernels, adjoint=True, threads=2)
    assert all(k._adjoint is not None for k in kernels)


def test_compile_errors_surface(tmp_path: Path) -> None:
    mod = _module(tmp_path, "gl_badmod", """
@wp.kernel
def bad(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = wp.no_such_builtin(x[i])
""")
    with pytest.raises(wp.CompileError, match="no_such_builtin"):
        wp.compile_kernels(wp.loading.kernels_of(mod), threads=2)


def test_compile_in_forked_processes_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """With no foreign threads, LLVM runs in forked processes; the kernels then work."""
    import subprocess
    (tmp_path / "gl_fresh.py").write_text(
        "import gradloom as wp\n" + "".join(KERNELS.format(n=n) for n in range(10, 14)))
    script = textwrap.dedent("""
        import numpy as np, gradloom as wp, gl_fresh
        from gradloom import loading
        assert loading.fork_is_safe()
        used = []
        real = loading.ProcessPoolExecutor
        loading.ProcessPoolExecutor = lambda *a, **k: used.append(1) or real(*a, **k)
        wp.compile_kernels(loading.kernels_of(gl_fresh), adjoint=True, threads=2)
        assert used == [1]
        x = wp.array(np.ones(3, dtype=np.float32))
        wp.launch(gl_fresh.k11, 3, inputs=[x])
        np.testing.assert_allclose(x.numpy(), 11 + np.sin(1.0), rtol=1e-6)
        print("ok")
    """)
    env = {**__import__("os").environ, "GRADLOOM_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": f"{tmp_path}:{Path(__file__).resolve().parent.parent}"}
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
