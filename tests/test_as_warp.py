"""`gradloom.as_warp`: programs written for `import warp` run on gradloom unedited.

Each case runs in a fresh interpreter (the finder changes what `import warp` means for the whole
process; warp-lang itself is installed in the test environment, so a wrong answer would show).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent


def _python(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, timeout=180,
                          capture_output=True, text=True)  # fmt: skip


PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import warp as wp
    import warp.config, warp.types, warp.optim

    @wp.kernel
    def scale(a: wp.array(dtype=wp.vec3), s: float):
        i = wp.tid()
        a[i] = a[i] * s

    a = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=wp.vec3)
    wp.launch(scale, dim=2, inputs=[a, float(sys.argv[1])])
    np.save(sys.argv[2], a.numpy())
    import gradloom
    print(wp.__version__, wp.vec3 is gradloom.vec3, wp.config is gradloom.config,
          wp.types is gradloom.types, wp.optim is gradloom.optim, wp.utils is gradloom.utils)
""")


def test_script_runs_unedited_with_its_arguments(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    out = _python(["-m", "gradloom.as_warp", str(script), "2.5", str(tmp_path / "a.npy")], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1.19.0", "True", "True", "True", "True", "True"]
    expected = np.arange(6, dtype=np.float32).reshape(2, 3) * 2.5
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), expected)


def test_install_in_process_and_module_mode(tmp_path):
    (tmp_path / "mymod.py").write_text("import sys, warp\nprint(warp.__gradloom_version__ != '', sys.argv[1:])\n")
    out = _python(["-m", "gradloom.as_warp", "-m", "mymod", "-q", "--x"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True ['-q', '--x']"
    code = "import gradloom; w = gradloom.install_as_warp(); import warp; print(w is warp)"
    out = _python(["-c", code], tmp_path)
    assert (out.returncode, out.stdout.strip()) == (0, "True"), out.stderr


@pytest.mark.parametrize("use, kind, words", [
    ("import warp.jax_experimental", "ModuleNotFoundError", ["warp.jax_experimental", "gradloom"]),
    ("import warp.tests", "ModuleNotFoundError", ["warp.tests", "test suite"]),
    ("import warp._src.codegen", "ModuleNotFoundError", ["warp._src", "Warp-private"]),
    ("warp.NoSuchThing", "AttributeError", ["warp.NoSuchThing", "gradloom"]),
    ("print(hasattr(warp, 'NoSuchThing'))", "", ["False"]),
])  # fmt: skip
def test_what_gradloom_lacks_is_named(tmp_path, use, kind, words):
    code = f"import warp\ntry:\n    {use}\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    out = _python(["-m", "gradloom.as_warp", "-c", code], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(kind)
    for word in words:
        assert word in out.stdout


def test_refuses_when_warp_lang_is_already_imported(tmp_path):
    pytest.importorskip("warp")
    code = "import warp, gradloom\ntry:\n    gradloom.install_as_warp()\nexcept ImportError as e:\n    print(e)\n"
    out = _python(["-c", code], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "already imported" in out.stdout and "before the first" in out.stdout


def test_extra_package_and_bad_command_line(tmp_path):
    pkg = tmp_path / "extras"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "thing.py").write_text("import warp\nVALUE = warp.vec2(1.0, 2.0)\n")
    code = "from warp.extras.thing import VALUE; import gradloom; print(type(VALUE) is type(gradloom.vec2()))"
    out = _python(["-m", "gradloom.as_warp", "--package", f"extras={pkg}", "-c", code], tmp_path)
    assert (out.returncode, out.stdout.strip()) == (0, "True"), out.stderr
    bad = _python(["-m", "gradloom.as_warp", "--package", "extras"], tmp_path)
    assert bad.returncode != 0 and "NAME=DIR" in bad.stderr


def test_private_modules_libraries_import(tmp_path):
    # newton imports these two Warp-private modules; other private ones stay refused
    code = ("from warp._src.thirdparty.appdirs import user_cache_dir\n"
            "from warp._src import types\n"
            "import gradloom, os\n"
            "os.environ['XDG_CACHE_HOME'] = '/xdg'\n"
            "print(user_cache_dir('newton', 'nvidia', '1.0'), types.float32 is gradloom.float32)\n")  # fmt: skip
    out = _python(["-m", "gradloom.as_warp", "-c", code], tmp_path)
    assert out.returncode == 0, out.stderr
    if sys.platform.startswith("linux"):
        assert out.stdout.split() == ["/xdg/newton/1.0", "True"]


def test_private_types_typing_helpers(tmp_path):
    # newton's Kamino annotates methods with Warp's private generics: `-> Vector[Any, Int]`
    code = ("from warp._src.types import Any, Int, Float, Vector, Matrix\n"
            "import typing, gradloom\n"
            "class Joint:\n"
            "    def axes(self) -> Vector[Any, Int]: ...\n"
            "    def block(self) -> Matrix[Float, int, int]: ...\n"
            "hints = typing.get_type_hints(Joint.axes)\n"
            "print(Any is typing.Any, gradloom.int32 in Int.__constraints__,\n"
            "      typing.get_args(hints['return']) == (Any, Int))\n"
            "import warp._src.types as private\n"
            "try:\n    private.not_a_name\n"
            "except AttributeError as e:\n    print('refused', 'Warp-private' in str(e))\n")  # fmt: skip
    out = _python(["-m", "gradloom.as_warp", "-c", code], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True", "refused", "True"]


def test_render_module_imports_and_renderers_refuse(tmp_path):
    # Warp examples import warp.render unconditionally and build a renderer only to draw
    code = ("import warp.render, gradloom\n"
            "assert warp.render is gradloom.render\n"
            "try:\n    warp.render.UsdRenderer('stage.usd')\n"
            "except NotImplementedError as e:\n    print('refused', 'headless' in str(e))\n")  # fmt: skip
    out = _python(["-m", "gradloom.as_warp", "-c", code], tmp_path)
    assert (out.returncode, out.stdout.strip()) == (0, "refused True"), out.stderr
