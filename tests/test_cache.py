"""The on-disk kernel cache, driven through fresh Python processes.

Each test writes a kernel module (`kmod.py`) to tmp_path, runs a small driver in a subprocess with
GRADLOOM_CACHE_DIR=<tmp_path>/cache and GRADLOOM_VERBOSE=1, edits the module, and runs again. The
driver launches every `k_*` kernel of the module on x = [0, 1, 2, 3] and prints the outputs; the
verbose lines on stderr tell which kernels were compiled and which came from the cache.
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

DRIVER = """
import json, sys
import numpy as np
import gradloom as wp
import kmod

out = {}
for name in sorted(dir(kmod)):
    if name.startswith("k_"):
        x = wp.array(np.arange(4, dtype=np.float32), dtype=float, device="cpu")
        y = wp.zeros(4, dtype=float, device="cpu")
        wp.launch(getattr(kmod, name), 4, inputs=[x, y], device="cpu")
        out[name] = y.numpy().tolist()
print(json.dumps(out))
"""

MODULE = """\
import numpy as np
import gradloom as wp
import kcfg

# a comment outside every kernel
SCALE = wp.constant(2.0)
OFFSET = wp.constant(wp.vec3(1.0, 2.0, 3.0))
STEPS = wp.constant(2)
TABLE = tuple(float(v) for v in range(100))
BIG = np.arange(100, dtype=np.float32)


def make(c: float):
    @wp.kernel
    def k_fac(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] + c

    return k_fac


k_fac_a = make(1.0)  # same source, different captured value: two kernels
k_fac_b = make(10.0)


@wp.kernel
def k_captured(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * kcfg.FACTOR + wp.static(TABLE[5]) + wp.static(float(BIG[7]))


@wp.func
def inner(v: float) -> float:
    return v * 1.0


@wp.func
def helper(v: float) -> float:
    return inner(v) + 1.0


@wp.kernel
def k_main(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = helper(x[i]) * SCALE


@wp.kernel
def k_const(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for _ in range(STEPS):
        s += x[i]
    y[i] = s + OFFSET[2]
"""

x = np.arange(4, dtype=np.float32)
EXPECTED = {
    "k_main": (x + 1.0) * 2.0,
    "k_const": 2.0 * x + 3.0,
    "k_captured": 2.0 * x + 12.0,
    "k_fac_a": x + 1.0,
    "k_fac_b": x + 10.0,
}
FAC = "make__locals__k_fac"  # the key (Warp's form of the qualname) verbose lines give both


class Project:
    """A kernel module in tmp_path plus the cache directory its runs share."""

    def __init__(self, tmp_path: Path):
        self.dir = tmp_path
        self.cache = tmp_path / "cache"
        self.module = tmp_path / "kmod.py"
        self.module.write_text(MODULE)
        self.config = tmp_path / "kcfg.py"
        self.config.write_text("import gradloom as wp\n\nFACTOR = wp.constant(2.0)\n")
        (tmp_path / "driver.py").write_text(DRIVER)

    def edit(self, old: str, new: str, file: Path | None = None) -> None:
        file = file or self.module
        text = file.read_text()
        assert old in text, old
        file.write_text(text.replace(old, new, 1))

    def run(self, **env_extra: str):
        """Run the driver; returns (outputs as numpy arrays, compiled names, loaded names)."""
        env = {
            **os.environ,
            "GRADLOOM_CACHE_DIR": str(self.cache),
            "GRADLOOM_VERBOSE": "1",
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(self.dir)]),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        for name in ("GRADLOOM_CACHE", "GRADLOOM_MODE", "GRADLOOM_PRINT_IR"):
            env.pop(name, None)
        env.update(env_extra)
        proc = subprocess.run(
            [sys.executable, "driver.py"],
            cwd=self.dir,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        outs = {k: np.array(v) for k, v in json.loads(proc.stdout.splitlines()[-1]).items()}
        compiled = set(re.findall(r"gradloom: compiled kernel (\S+)", proc.stderr))
        loaded = set(re.findall(r"gradloom: loaded kernel (\S+) from cache", proc.stderr))
        return outs, compiled, loaded


def check(outs, expected):
    assert set(outs) == set(expected)
    for name, want in expected.items():
        np.testing.assert_allclose(outs[name], want, rtol=1e-6, err_msg=name)


ALL = {"k_main", "k_const", "k_captured", FAC}


@pytest.fixture
def project(tmp_path):
    p = Project(tmp_path)
    outs, compiled, loaded = p.run()
    check(outs, EXPECTED)
    assert compiled == ALL and loaded == set()
    return p


def test_second_run_loads_from_cache(project):
    outs, compiled, loaded = project.run()
    check(outs, EXPECTED)
    assert compiled == set() and loaded == ALL
    assert list(project.cache.rglob("*.bin")), "no cache files were written"


@pytest.mark.parametrize(
    "old,new,want",
    [
        ("return inner(v) + 1.0", "return inner(v) + 5.0", (x + 5.0) * 2.0),
        ("return v * 1.0", "return v * 3.0", (3.0 * x + 1.0) * 2.0),  # a func called by a func
    ],
    ids=["called-func", "func-called-by-func"],
)
def test_changing_a_called_func_recompiles(project, old, new, want):
    project.edit(old, new)
    outs, compiled, loaded = project.run()
    check(outs, {**EXPECTED, "k_main": want})
    assert compiled == {"k_main"} and loaded == ALL - {"k_main"}


@pytest.mark.parametrize(
    "old,new,name,want",
    [
        ("SCALE = wp.constant(2.0)", "SCALE = wp.constant(4.0)", "k_main", (x + 1.0) * 4.0),
        ("wp.vec3(1.0, 2.0, 3.0)", "wp.vec3(1.0, 2.0, 7.0)", "k_const", 2.0 * x + 7.0),
        ("STEPS = wp.constant(2)", "STEPS = wp.constant(3)", "k_const", 3.0 * x + 3.0),
    ],
    ids=["float", "vec3", "int-loop-bound"],
)
def test_changing_a_captured_constant_recompiles(project, old, new, name, want):
    project.edit(old, new)
    outs, compiled, loaded = project.run()
    check(outs, {**EXPECTED, name: want})
    assert compiled == {name} and loaded == ALL - {name}


def test_adding_a_kernel_compiles_only_the_new_one(project):
    project.module.write_text(
        project.module.read_text()
        + """

@wp.kernel
def k_new(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] - 1.0
"""
    )
    outs, compiled, loaded = project.run()
    check(outs, {**EXPECTED, "k_new": x - 1.0})
    assert compiled == {"k_new"} and loaded == ALL


def test_comment_outside_kernels_does_not_recompile(project):
    project.edit("# a comment outside every kernel", "# an edited comment\n# and one more line")
    outs, compiled, loaded = project.run()
    check(outs, EXPECTED)
    assert compiled == set() and loaded == ALL


def test_corrupted_cache_files_are_a_miss(project):
    files = [f for f in project.cache.rglob("*") if f.is_file()]
    assert files
    for i, f in enumerate(files):
        # garbage, an empty file, and a valid pickle of the wrong shape
        f.write_bytes([b"\x00garbage\xff" * 50, b"", b"\x80\x04K\x07."][i % 3])
    outs, compiled, loaded = project.run()
    check(outs, EXPECTED)
    assert compiled == ALL and loaded == set()
    outs, compiled, loaded = project.run()  # the rewritten entries are good again
    check(outs, EXPECTED)
    assert compiled == set() and loaded == ALL


def test_truncated_cache_files_are_a_miss(project):
    for f in project.cache.rglob("*.bin"):
        data = f.read_bytes()
        f.write_bytes(data[: len(data) // 2])
    outs, compiled, loaded = project.run()
    check(outs, EXPECTED)
    assert compiled == ALL and loaded == set()


def test_cache_disabled_compiles_every_time(tmp_path):
    p = Project(tmp_path)
    for _ in range(2):
        outs, compiled, loaded = p.run(GRADLOOM_CACHE="0")
        check(outs, EXPECTED)
        assert compiled == ALL and loaded == set()
    assert not list(p.cache.rglob("*.bin"))


def test_switching_to_debug_mode_recompiles(project):
    outs, compiled, loaded = project.run(GRADLOOM_MODE="debug")
    check(outs, EXPECTED)
    assert compiled == ALL and loaded == set()


@pytest.mark.parametrize(
    "old,new,which,want",
    [
        ("FACTOR = wp.constant(2.0)", "FACTOR = wp.constant(4.0)", "config", 4.0 * x + 12.0),
        ("in range(100))", "in range(1, 101))", "module", 2.0 * x + 13.0),
        ("np.arange(100,", "np.arange(1, 101,", "module", 2.0 * x + 13.0),
    ],
    ids=["module-attribute-constant", "large-tuple", "large-numpy-array"],
)
def test_changing_any_captured_value_recompiles(project, old, new, which, want):
    project.edit(old, new, project.config if which == "config" else None)
    outs, compiled, _ = project.run()
    check(outs, {**EXPECTED, "k_captured": want})
    assert "k_captured" in compiled
