"""Imports point downward only (docs/design.md §3): checked from each module's import statements."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from import_graph import graph

ROOT = Path(__file__).resolve().parent.parent / "gradloom"

# unit (package or top-level module) -> the gradloom units it may import (docs/design.md §3)
_BASE = {"abi", "types", "errors", "config", "hooks"}
ALLOWED = {
    "config": set(),
    "errors": set(),
    # slots a higher layer fills with what a lower one calls (hooks.py)
    "hooks": {"errors"},
    # the launch ABI: plain facts (offsets, codes), below everything that packs or reads a block
    "abi": set(),
    # an operator on a host vector means what the builtin library says it means: a hook
    # (hooks.py) that builtins/host.py fills
    "types": {"abi", "errors", "config", "hooks"},
    "typedocs": {"types"},
    "ir": {"abi", "types", "errors", "hooks"},
    "builtins": _BASE | {"ir"},
    "passes": _BASE | {"ir"},
    "codegen": _BASE | {"ir"},
    # array operators (`a + b`) are wp.map of the builtin: a hook (runtime/array/arith.py
    # ELEMENTWISE) that utils/mapping.py fills
    "runtime": _BASE,
    "interop": _BASE | {"runtime"},
    "frontend": _BASE | {"ir", "builtins"},
    "autodiff": _BASE | {"ir", "passes"},
    "argtypes": _BASE | {"runtime"},
    "native": _BASE | {"ir", "codegen", "runtime"},
    # the compiled BVH refit, loaded by name through runtime/geometry/bvh_tree.py's hook
    "native_geometry": _BASE | {"codegen", "runtime", "native"},
    # Module.load() compiles its kernels through a hook loading.py fills
    "modules": _BASE,
    "cuda_build": _BASE | {"ir", "passes", "codegen", "runtime"},
    # the compile pipeline (source -> IR -> passes -> LLVM IR text or PTX), below kernel.py,
    # which imports it at a kernel's first compile (function level)
    "pipeline": _BASE | {"ir", "passes", "codegen", "frontend", "autodiff"},
    "kernel": _BASE | {"ir", "builtins", "passes", "codegen", "runtime", "frontend", "autodiff",
                       "argtypes", "native", "modules", "cuda_build", "pipeline",
                       "kernel_params"},
    # a kernel's parameter types: generic or not, overloads' concrete types, tangent parameters
    "kernel_params": _BASE | {"frontend"},
    # @wp.kernel and wp.overload: declaring kernels of kernel.py's class
    "kernel_decl": _BASE | {"kernel", "frontend", "modules"},
    "loading": _BASE | {"codegen", "kernel", "modules"},
    # ahead-of-time module files: kernels' cache records written to and read from one file
    "aot": _BASE | {"codegen", "runtime", "kernel", "modules"},
    "autograd": _BASE | {"runtime", "kernel", "forward_mode", "autograd_tape", "second_order",
                         "jacobian_report"},
    # Jacobian comparison, the gradcheck report and plots
    "jacobian_report": _BASE | {"runtime"},
    # gradcheck_tape's walk over a tape's launches (autograd.py passes its gradcheck in)
    "autograd_tape": _BASE | {"runtime"},
    "logger": _BASE | {"runtime"},  # fills the launch's print_launches hook
    "diagnostics": _BASE | {"runtime"},
    # jvp of functions that launch kernels: runtime/tape/tangent.py's TangentTape, kernels' tangent
    # entries
    "forward_mode": _BASE | {"runtime", "kernel"},
    # the second-order check: hvp against finite differences of reverse-mode gradients
    "second_order": _BASE | {"runtime", "kernel", "forward_mode"},
    # checkpointed rollouts: re-exports runtime/tape/checkpoint.py
    "checkpoint": _BASE | {"runtime"},
    # saved CPU graphs: kernels named by module and key, found again through modules.py
    "graph_file": _BASE | {"runtime", "kernel", "modules"},
    # optim/_kernels.py is kernel source written against the public API (`import gradloom as
    # wp`), as a user's is: optim sits above the package's own modules (which never import it)
    "optim": _BASE | {"runtime", "kernel", "__init__", "sparse"},
    # sparse/_kernels.py is kernel source against the public API, as optim's; optim.linear's
    # operators wrap its matrices
    "sparse": _BASE | {"runtime", "kernel", "__init__"},
    # geometry/_kernels.py is kernel source against the public API, as sparse's
    "geometry": _BASE | {"runtime", "kernel", "__init__"},
    "utils": _BASE | {"ir", "builtins", "codegen", "runtime", "frontend", "kernel",
                      "kernel_decl"},
    "torch": {"interop"},
    # torch.func.jvp and double backward of gradloom.torch functions (the bridge's SECOND hook)
    "torch_forward": _BASE | {"runtime", "interop", "kernel", "forward_mode"},
    # halo exchange / all-reduce / broadcast over torch.distributed (docs/distributed.md):
    # arrays, tapes and the torch interop below it; nothing in gradloom imports it
    "distributed": _BASE | {"runtime", "interop"},
    # Warp's FEM value types (wp.fem.Sample): structs; fem/linalg.py is kernel source against
    # the public API, as geometry's
    "fem": _BASE | {"runtime", "__init__"},
    # the command line: the top, above the package itself
    "__main__": _BASE | {"codegen", "runtime", "kernel", "__init__"},
    # Warp's renderer names (creating one raises a clear error)
    "render": {"errors"},
    # `import warp` answered by gradloom: above the whole public package
    "as_warp": {"__init__"},
}
#: the public surface may import anything
EVERYTHING = "__init__"


def _gradloom_imports(path: Path) -> set[str]:
    """First component under gradloom of every gradloom import in the file."""
    pkg_parts = path.relative_to(ROOT).parts[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg_parts[: len(pkg_parts) - node.level + 1])
                mod = base + (node.module.split(".") if node.module else [])
                names = [mod[0]] if mod else [a.name for a in node.names]
                out.update(names)
            elif node.module and node.module.startswith("gradloom."):
                out.add(node.module.split(".")[1])
            elif node.module == "gradloom":
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("gradloom."):
                    out.add(a.name.split(".")[1])
                elif a.name == "gradloom":  # the package itself: everything
                    out.add(EVERYTHING)
    return out


def _units() -> dict[str, list[Path]]:
    units: dict[str, list[Path]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        units.setdefault(rel.parts[0] if len(rel.parts) > 1 else rel.stem, []).append(path)
    return units


def test_every_unit_has_a_row() -> None:
    assert set(_units()) - {EVERYTHING} == set(ALLOWED)


@pytest.mark.parametrize("unit", sorted(ALLOWED))
def test_unit_imports_point_downward(unit: str) -> None:
    for path in _units()[unit]:
        bad = _gradloom_imports(path) - ALLOWED[unit] - {unit}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}, not allowed for {unit}"


def test_the_checker_sees_relative_imports() -> None:
    assert "types" in _gradloom_imports(ROOT / "ir" / "builder.py")
    assert "frontend" in _gradloom_imports(ROOT / "kernel.py")


# --------------------------------------------------------------------------------------------
# inside the runtime: ranks (docs/design.md §3). A runtime module imports only runtime modules
# of its own rank or lower ones; cycles are refused by tests/test_import_cycles.py.

RUNTIME_RANKS: list[tuple[str, set[str]]] = [
    # facts and mechanisms nothing else in the runtime is below: layouts, handles, read marks,
    # the backend registry, the worker pool, signals, the kernel cache, the CUDA driver loader
    # (device discovery)
    ("base", {"layout", "handles", "readmarks", "signals", "page_map", "pool", "cache",
              "host_malloc",
              "backend", "cuda.driver"}),
    # devices and host memory operations
    ("device", {"device", "memops", "dlpack_capsule", "occupancy", "mempool"}),
    # what arrays report to: active tapes and captures, streams
    ("recording", {"recording", "capturing", "stream", "timing"}),
    # packages, each a rank: the one array class and its operations; launches and graph
    # capture; the Tape, checkpointed rollouts and forward mode's tangent tape; geometry
    # objects built on arrays; the backends, above every generic module
    ("array", {"array"}),
    ("launch", {"launch"}),
    ("tape", {"tape"}),
    ("geometry", {"geometry"}),
    ("backends", {"cpu", "cuda"}),
]


def _runtime_rank(module: str) -> int | None:
    """The rank of a runtime module (dotted under runtime/): its own, else its package's."""
    for key in (module, module.split(".")[0]):
        for rank, (_, members) in enumerate(RUNTIME_RANKS):
            if key in members:
                return rank
    return None


def _runtime_modules() -> dict[str, dict[str, int]]:
    return {m[len("runtime."):]: {t[len("runtime."):]: line for t, line in imported.items()
                                  if t.startswith("runtime.")}
            for m, imported in graph().items() if m.startswith("runtime.")}


def test_every_runtime_module_has_a_rank() -> None:
    unranked = sorted(m for m in _runtime_modules() if _runtime_rank(m) is None)
    assert not unranked, f"runtime modules without a rank in RUNTIME_RANKS: {unranked}"


def test_runtime_imports_point_downward() -> None:
    problems = []
    for module, imported in sorted(_runtime_modules().items()):
        rank = _runtime_rank(module)
        for target, line in sorted(imported.items()):
            target_rank = _runtime_rank(target)
            if rank is not None and target_rank is not None and target_rank > rank:
                problems.append(f"runtime/{module} (rank {RUNTIME_RANKS[rank][0]}) imports "
                                f"{target} (rank {RUNTIME_RANKS[target_rank][0]}) at line {line}")
    assert not problems, "\n".join(problems)


def test_the_rank_checker_sees_an_upward_import() -> None:
    assert _runtime_rank("array.array") is not None and _runtime_rank("tape.tape") is not None
    assert _runtime_rank("array.array") < _runtime_rank("tape.tape")  # type: ignore[operator]
    assert _runtime_rank("cuda.driver") == 0
    assert "array.array" in _runtime_modules()["tape.tape"]
