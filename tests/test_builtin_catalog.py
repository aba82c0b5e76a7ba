"""The builtin catalog: every module that registers builtins is listed (eager or on demand), and
a program that uses no on-demand subsystem loads none of them."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import gradloom as wp
from gradloom.builtins import catalog
from gradloom.builtins.registry import REGISTRY

BUILTINS_DIR = Path(catalog.__file__).parent


def _registering_modules() -> set[str]:
    return {p.stem for p in BUILTINS_DIR.glob("*.py") if re.search(r"^@builtin\(", p.read_text(), re.M)}


def _eager_modules() -> set[str]:
    text = Path(catalog.__file__).read_text()
    block = text[text.index("from . import ("):text.index(")", text.index("from . import ("))]
    return set(re.findall(r"^\s+(\w+),", block, re.M))


def test_every_registering_module_is_in_the_catalog() -> None:
    listed = _eager_modules() | set(catalog.ON_DEMAND)
    missing = sorted(_registering_modules() - listed)
    assert not missing, f"builtin modules the catalog does not list: {missing}"
    assert not _eager_modules() & set(catalog.ON_DEMAND)


def test_every_builtin_comes_from_a_listed_module() -> None:
    owners = {b.fn.__module__.rsplit(".", 1)[-1] for b in REGISTRY.values()}
    assert owners <= _eager_modules() | set(catalog.ON_DEMAND) | {"values", "memory", "ops"}


def test_on_demand_builtins_reachable_by_name() -> None:
    assert REGISTRY["mesh_query_point"].name == "mesh_query_point"
    assert wp.tile_fft is REGISTRY["tile_fft"]
    assert "volume_sample" in dir(wp)
    assert "no_such_builtin" not in REGISTRY


_PROBE = textwrap.dedent("""
    import sys
    import gradloom as wp

    @wp.kernel
    def k(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = wp.sin(a[i]) + 1.0

    x = wp.zeros(4, dtype=float)
    wp.launch(k, 4, [x])
    assert list(x.numpy()) == [1.0] * 4
    loaded = sorted(m for m in sys.modules if m.startswith("gradloom"))
    print(" ".join(loaded))
""")


def test_plain_program_loads_no_on_demand_subsystem(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text(_PROBE)
    env_cache = {"GRADLOOM_CACHE_DIR": str(tmp_path / "cache")}
    import os

    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env={**os.environ, **env_cache}, check=True).stdout.split()
    lazy = {f"gradloom.builtins.{m}" for m in catalog.ON_DEMAND} | {"gradloom.runtime.geometry"}
    assert not lazy & set(out), sorted(lazy & set(out))
