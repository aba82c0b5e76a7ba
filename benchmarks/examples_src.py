"""warp-lang's own example files, read from the installed wheel and loaded with `wp` bound to a backend.

Nothing is copied into this repository: each example's text is read from the installed
warp-lang at run time, its `import warp as wp` line is pointed at the backend (`gradloom` or
`warp`), the two lines that only matter for rendering or for warp-lang's global cache are
dropped, and the result is imported from a temporary directory under a name of its own, so
that both backends' copies live side by side in one process. Any other reference to `warp`
in the file is an error (the example changed: look at it before timing it).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

# the examples timed by bench_examples.py, relative to warp/examples/ of the installed wheel
FILES = {
    "cloth": "benchmarks/benchmark_cloth_warp.py",
    "wave": "core/example_wave.py",
    "fluid": "core/example_fluid.py",
    # tile examples (bench_tile_examples.py): those warp-lang's tests run on its CPU
    "tile_matmul": "tile/example_tile_matmul.py",
    "tile_cholesky": "tile/example_tile_cholesky.py",
    "tile_nbody": "tile/example_tile_nbody.py",
    "tile_mcgp": "tile/example_tile_mcgp.py",
}
CLOTH_HOST = "benchmarks/benchmark_cloth.py"  # the Cloth grid builder (numpy; needs pxr stubbed)

IMPORT_LINE = "import warp as wp"
# lines dropped: USD rendering only (never used with stage_path=None) and a call that empties
# warp-lang's kernel cache (shared by every process of the user) at import
DROPPED = ("import warp.render", "wp.clear_kernel_cache()")


class ExampleChanged(RuntimeError):
    """The installed example no longer has the shape this benchmark rewrites."""


def examples_dir() -> Path:
    """warp/examples/ of the installed warp-lang, found without importing warp."""
    spec = importlib.util.find_spec("warp")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("warp-lang is not installed (pip install '.[bench]')")
    return Path(spec.origin).parent / "examples"


def bind(src: str, backend: str, where: str) -> str:
    """The example text `src` with `wp` bound to `backend`; `where` names the file in errors."""
    lines = src.splitlines()
    if sum(ln.strip() == IMPORT_LINE for ln in lines) != 1:
        raise ExampleChanged(f"{where}: expected exactly one line {IMPORT_LINE!r}")
    out = []
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if s == IMPORT_LINE:
            line = line.replace(IMPORT_LINE, f"import {backend} as wp")
        elif s in DROPPED:
            line = line[: len(line) - len(line.lstrip())] + "pass  # dropped by the benchmark"
        elif s.startswith(("import warp", "from warp")):
            raise ExampleChanged(f"{where}:{n}: unexpected import of warp: {s!r}")
        out.append(line)
    return "\n".join(out) + "\n"


def load(name: str, backend: str, tmp: Path) -> types.ModuleType:
    """Example `name` (a key of FILES) as a module whose `wp` is `backend`."""
    path = examples_dir() / FILES[name]
    mod_name = f"glbench_{name}_{backend}"
    (tmp / f"{mod_name}.py").write_text(bind(path.read_text(), backend, str(path)))
    if str(tmp) not in sys.path:
        sys.path.insert(0, str(tmp))
    return importlib.import_module(mod_name)


def cloth_class() -> Any:
    """The `Cloth` grid builder of warp-lang's cloth benchmark (its code above `run_benchmark`,
    with the USD import removed: it is only used to render)."""
    path = examples_dir() / CLOTH_HOST
    host = path.read_text().split("def run_benchmark")[0]
    host = host.replace("from pxr import Usd, UsdGeom", "")
    if IMPORT_LINE in host:  # the grid builder does not use warp
        host = host.replace(IMPORT_LINE, "")
    ns: dict[str, Any] = {"__file__": str(path), "__name__": "glbench_cloth_host"}
    exec(compile(host, str(path), "exec"), ns)
    return ns["Cloth"]
