"""Hooks (gradloom/hooks.py): every hook in the package is filled by the module it names, loaded
on demand, so lazily loaded layers (the frontend's lowering) are found however a process
starts."""

import importlib
import pkgutil
import subprocess
import sys
import textwrap

import pytest

import gradloom
from gradloom.errors import GradloomError
from gradloom.hooks import Hook


def _hooks():
    for info in pkgutil.walk_packages(gradloom.__path__, "gradloom."):
        if info.name.endswith(("__main__", "cuda_backend")):
            continue  # a command line; the CUDA backend (needs cuda-bindings to import)
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, Hook):
                yield f"{info.name}.{name}", value


def test_every_hook_is_filled_by_its_provider():
    found = dict(_hooks())
    assert len(found) >= 15
    for where, hook in found.items():
        assert callable(hook.get()), where


def test_an_unfilled_hook_says_which_module_failed_to_provide_it():
    with pytest.raises(GradloomError, match="json did not provide it"):
        Hook("a test hook", "json").get()


def test_a_func_called_from_python_first_thing_in_a_process(tmp_path):
    # the frontend's lowering is not imported by `import gradloom`: the func's host call must
    # load it through its hook
    script = tmp_path / "first_call.py"
    script.write_text(textwrap.dedent("""
        import sys
        import gradloom as wp

        @wp.func
        def twice(x: float) -> float:
            return x * 2.0

        assert "gradloom.frontend.lower" not in sys.modules
        print(twice(3.0))
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, env={**__import__("os").environ,
                                           "GRADLOOM_CACHE_DIR": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "6.0"
