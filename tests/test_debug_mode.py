"""GRADLOOM_MODE=debug bounds checks and GRADLOOM_PRINT_IR, each in a fresh Python process.

Config is read at import, so a driver script (SCRIPT below) runs in a subprocess with the mode set.
It launches each scenario, records the outcome as JSON on stdout, and keeps going after an error:
the interpreter must survive every out-of-bounds access. Lines that must be reported carry a
`# <- name` marker; the tests look the line numbers up in the script text.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """\
import json
import numpy as np
import gradloom as wp
from gradloom.errors import KernelRuntimeError


@wp.kernel
def read_at_n(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i + 1]  # <- read_at_n


@wp.kernel
def read_negative(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i - 5]  # <- read_negative (Warp counts -4..-1 from the end)


@wp.kernel
def write_at_n(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i + 1] = x[i]  # <- write_at_n


@wp.kernel
def write_negative(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i - 5] = x[i]  # <- write_negative


@wp.kernel
def read_2d_second(g: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    # g[0, 3] of a 2x3 array lies inside the allocation: only a per-dimension check sees it
    y[i, j] = g[i, j + 1]  # <- read_2d_second


@wp.kernel
def write_2d_second(g: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    y[i, j + 1] = g[i, j]  # <- write_2d_second


@wp.func
def fetch(x: wp.array(dtype=float), k: int) -> float:
    return x[k]  # <- in_func


@wp.kernel
def read_in_func(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = fetch(x, i + 4)


@wp.kernel
def atomic_at_n(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(y, i + 1, x[i])  # <- atomic_at_n


@wp.kernel
def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i] + y[i]


@wp.kernel
def grid(g: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    y[i, j] = g[i, j] * 10.0 + float(j)


def vec():
    return wp.array(np.arange(4, dtype=np.float32), dtype=float, device="cpu")


def mat():
    return wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=float, device="cpu")


def attempt(kernel, dim, a, b):
    try:
        wp.launch(kernel, dim, inputs=[a, b], device="cpu")
        return {"error": None}
    except Exception as exc:
        return {"error": type(exc).__name__, "message": str(exc),
                "is_runtime_error": isinstance(exc, KernelRuntimeError)}


out = {}
for k in (read_at_n, read_negative, write_at_n, write_negative, read_in_func, atomic_at_n):
    out[k.key] = attempt(k, 4, vec(), vec())
for k in (read_2d_second, write_2d_second):
    out[k.key] = attempt(k, (2, 3), mat(), mat())
x, y = vec(), vec()
out["saxpy"] = attempt(saxpy, 4, x, y) | {"y": y.numpy().tolist()}
out["saxpy_again"] = attempt(saxpy, 4, x, y) | {"y": y.numpy().tolist()}
g, h = mat(), wp.zeros((2, 3), dtype=float, device="cpu")
out["grid"] = attempt(grid, (2, 3), g, h) | {"y": h.numpy().tolist()}
out["read_at_n_again"] = attempt(read_at_n, 4, vec(), vec())
out["read_at_n_in_bounds"] = attempt(read_at_n, 3, vec(), vec())
print(json.dumps(out))
"""

OOB = [
    "read_at_n",
    "read_negative",
    "write_at_n",
    "write_negative",
    "read_2d_second",
    "write_2d_second",
    "atomic_at_n",
]


def marker_lines(text):
    return {m.group(1): text[: m.start()].count("\n") + 1 for m in re.finditer(r"# <- (\w+)", text)}


def run_script(tmp_path, text, name="script.py", **env_extra):
    path = tmp_path / name
    path.write_text(text)
    env = {
        **os.environ,
        "GRADLOOM_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for var in ("GRADLOOM_MODE", "GRADLOOM_PRINT_IR", "GRADLOOM_CACHE", "GRADLOOM_VERBOSE"):
        env.pop(var, None)
    env.update(env_extra)
    proc = subprocess.run(
        [sys.executable, str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"interpreter died (rc={proc.returncode}):\n{proc.stderr}"
    return path, proc


@pytest.fixture(scope="module")
def debug_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("debug")
    path, proc = run_script(tmp, SCRIPT, GRADLOOM_MODE="debug")
    return str(path.resolve()), json.loads(proc.stdout.splitlines()[-1])


def assert_oob_at(result, path, line, statement):
    assert result["error"] == "KernelRuntimeError", result
    assert result["is_runtime_error"]
    msg = result["message"]
    assert "out of bounds" in msg, msg
    assert f"{path}:{line}:" in msg, msg
    assert statement in msg, msg


@pytest.mark.parametrize("name", OOB)
def test_out_of_bounds_raises_with_location(debug_run, name):
    path, out = debug_run
    line = marker_lines(SCRIPT)[name]
    statement = SCRIPT.splitlines()[line - 1].split("#")[0].strip()
    assert_oob_at(out[name], path, line, statement)
    assert f"'{name}'" in out[name]["message"]  # names the kernel too


def test_out_of_bounds_inside_func_reports_the_funcs_line(debug_run):
    path, out = debug_run
    assert_oob_at(out["read_in_func"], path, marker_lines(SCRIPT)["in_func"], "return x[k]")


def test_in_bounds_kernels_are_correct_after_errors(debug_run):
    _, out = debug_run
    x = np.arange(4, dtype=np.float32)
    assert out["saxpy"]["error"] is None
    np.testing.assert_allclose(out["saxpy"]["y"], 3.0 * x)
    assert out["saxpy_again"]["error"] is None
    np.testing.assert_allclose(out["saxpy_again"]["y"], 5.0 * x)
    assert out["grid"]["error"] is None
    g = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(out["grid"]["y"], g * 10.0 + np.arange(3))


def test_same_kernel_errors_again_then_runs_in_bounds(debug_run):
    path, out = debug_run
    assert_oob_at(out["read_at_n_again"], path, marker_lines(SCRIPT)["read_at_n"], "x[i + 1]")
    assert out["read_at_n_in_bounds"]["error"] is None  # dim 3: x[i + 1] stays inside


def test_cached_kernel_reports_its_current_line(tmp_path):
    text = SCRIPT
    for _ in range(2):
        path, proc = run_script(tmp_path, text, GRADLOOM_MODE="debug")
        out = json.loads(proc.stdout.splitlines()[-1])
        line = marker_lines(text)["write_at_n"]
        assert_oob_at(out["write_at_n"], str(path.resolve()), line, "y[i + 1] = x[i]")
        text = text.replace("import json\n", "import json\n# two lines\n# pushed in\n", 1)


def test_print_ir(tmp_path):
    text = """\
import numpy as np
import gradloom as wp


@wp.kernel
def shown_kernel(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 3.0


x = wp.array(np.ones(4, dtype=np.float32), dtype=float, device="cpu")
wp.launch(shown_kernel, 4, inputs=[x], device="cpu")
print(x.numpy().tolist())
"""
    for _ in range(2):  # the second run hits the cache but must still print the IR
        _, proc = run_script(tmp_path, text, GRADLOOM_PRINT_IR="1")
        assert "kernel shown_kernel" in proc.stderr, proc.stderr
        assert "define void" in proc.stderr, proc.stderr
        assert proc.stdout.strip() == "[3.0, 3.0, 3.0, 3.0]"
    _, proc = run_script(tmp_path, text)
    assert "define void" not in proc.stderr


# --- in-process: the mode switched after kernels were built, failed launches leave arrays as
# they were, and the message names the index, the array's shape and the thread ---------------

import gradloom as wp  # noqa: E402
from gradloom import config  # noqa: E402
from gradloom.errors import KernelRuntimeError  # noqa: E402


@wp.kernel
def shift_up(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0  # <- shift_up


@wp.kernel
def grid_right(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j + 1] = a[i, j] + 1.0  # <- grid_right


@wp.struct
class Holder:
    data: wp.array(dtype=float)


@wp.kernel
def through_struct(h: Holder, n: int):
    i = wp.tid()
    h.data[i + n] = 5.0  # <- through_struct


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@pytest.fixture()
def debug(monkeypatch):
    monkeypatch.setattr(config, "mode", "debug")


def _this_line(name: str) -> int:
    text = Path(__file__).read_text()
    return marker_lines(text)[name]


def test_mode_set_after_a_kernel_was_built_takes_effect(monkeypatch):
    a = wp.array(np.arange(4, dtype=np.float32))
    wp.launch(shift_up, 4, [a])  # built in release mode
    monkeypatch.setattr(config, "mode", "debug")
    with pytest.raises(KernelRuntimeError):
        wp.launch(shift_up, 5, [a])
    monkeypatch.setattr(config, "mode", "release")
    wp.launch(shift_up, 4, [a])
    np.testing.assert_array_equal(a.numpy(), np.arange(4) + 2.0)


def test_a_failed_debug_launch_leaves_the_arrays_unchanged(debug):
    a = wp.array(np.arange(4, dtype=np.float32))
    with pytest.raises(KernelRuntimeError) as info:
        wp.launch(shift_up, 10**12, [a])
    np.testing.assert_array_equal(a.numpy(), [0.0, 1.0, 2.0, 3.0])  # threads 0-3 were undone
    msg = str(info.value)
    assert "index 4 is out of bounds for dimension 0 (size 4) of array 'a' with shape (4,)" in msg
    assert "in thread 4," in msg
    assert f"{Path(__file__).resolve()}:{_this_line('shift_up')}:" in msg


def test_the_message_gives_the_thread_of_a_2d_launch(debug):
    g = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(KernelRuntimeError) as info:
        wp.launch(grid_right, (2, 3), [g])
    msg = str(info.value)
    assert "index 3 is out of bounds for dimension 1 (size 3) of array 'a' with shape (2, 3)" in msg
    assert "in thread (0, 2)," in msg
    np.testing.assert_array_equal(g.numpy(), np.arange(6).reshape(2, 3))


def test_the_message_names_an_array_held_in_a_struct(debug):
    h = Holder()
    h.data = wp.zeros(3, dtype=float)
    with pytest.raises(KernelRuntimeError) as info:
        wp.launch(through_struct, 3, [h, 2])
    assert "of array 'h.data' with shape (3,)" in str(info.value)
    assert "in thread 1," in str(info.value)
    np.testing.assert_array_equal(h.data.numpy(), [0.0, 0.0, 0.0])


def test_a_recorded_launch_reports_and_restores_too(debug):
    a = wp.array(np.arange(4, dtype=np.float32))
    cmd = wp.launch(shift_up, 6, [a], record_cmd=True)
    for _ in range(2):  # the second replay sees a clean block
        with pytest.raises(KernelRuntimeError, match="index 4"):
            cmd.launch()
        np.testing.assert_array_equal(a.numpy(), [0.0, 1.0, 2.0, 3.0])


def test_verify_fp_names_the_kernel_the_array_and_the_element(monkeypatch):
    monkeypatch.setattr(config, "verify_fp", True)
    x = wp.array(np.array([1.0, 2.0, np.inf, 3.0], dtype=np.float32))
    y = wp.zeros(4, dtype=float)
    with pytest.raises(KernelRuntimeError) as info:
        wp.launch(square, 4, [x, y])
    msg = str(info.value)
    assert "'square'" in msg and "'y'" in msg and "(2,)" in msg and "inf" in msg
    y.zero_()
    wp.launch(square, 2, [x, y])  # finite outputs: no error
    monkeypatch.setattr(config, "verify_fp", False)
    wp.launch(square, 4, [x, y])  # the check is off again


def test_config_rejects_bad_values_and_warns_on_unknown_names():
    with pytest.raises(ValueError, match="'release' or 'debug'"):
        config.mode = "fast"
    with pytest.raises(ValueError, match="num_threads"):
        config.num_threads = 0
    with pytest.warns(UserWarning, match="did you mean 'verify_fp'"):
        config.verify_fpp = True
    before = config.max_unroll
    config.max_unroll = 4  # a Warp option: accepted silently
    config.max_unroll = before  # (other tests read its Warp default)
    assert sorted(dir(config)) == sorted(
        ["cache_dir", "cache_enabled", "deterministic", "enable_cpu_blocks", "mode",
         "num_threads", "opt_level",
         "optimization_level",
         "parallel_min_ns", "print_ir", "quiet", "simd", "simd_width", "verbose",
         "verify_autograd_array_access", "verify_fp"])


CRASH = """\
import gradloom as wp


@wp.kernel
def wild_write(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i * 100000000 + 50000000] = 1.0


a = wp.zeros(4, dtype=float)
wp.launch(wild_write, 4, [a])
print("survived")
"""


def test_a_release_mode_crash_names_the_kernel_and_suggests_debug_mode(tmp_path):
    path = tmp_path / "crash.py"
    path.write_text(CRASH)
    env = {**os.environ, "GRADLOOM_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    env.pop("GRADLOOM_MODE", None)
    proc = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0 and "survived" not in proc.stdout
    assert "fatal signal while kernel 'wild_write' was running" in proc.stderr, proc.stderr
    assert "GRADLOOM_MODE=debug" in proc.stderr
