"""Warp tests that do not apply to gradloom (Warp-private internals, CUDA-only features), with reasons.

Three rules, each giving the reason shown in docs/compat.md:
- the test reached ``warp._src`` (the shim's placeholders raise ``WarpPrivate``);
- it failed on one of ``PRIVATE_ERRORS``: a Warp-private attribute of a public object;
- it is listed in ``NOT_APPLICABLE`` (``fnmatch`` patterns on ``Class.test_name`` per module).
A test that passes on gradloom counts as passed whatever these say. Keep the lists short: anything
public belongs in the score.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

_CUDA_MEMORY = "CUDA-only feature: memory pools / peer access between CUDA devices"
_NATIVE_BUILD = ("native C++ built against Warp's headers (`warp.build_experimental`: C++ types and "
                 "builtins from a preamble), the class of `@wp.func_native` snippets: gradloom "
                 "compiles kernels to LLVM IR from Python and has no C++ step")
_OPENGL = ("Warp's OpenGL renderer (pyglet), outside gradloom: the tests drive its private state "
           "(`_instances`, `_shape_geo_hash`) on an instance made with `__new__`")

NOT_APPLICABLE: dict[str, dict[str, str]] = {
    "test_struct": {
        "*.test_struct_array_gc_replacement_clears_grad_keepalive*":
            "reads Warp-private struct instance internals (the `_data_grad` keep-alive attribute)",
    },
    "test_subscript_types": {
        "*.test_annotation_vars_caching": "reads `.vars` of an array annotation: the variables "
                                          "Warp's code generator gives array attributes "
                                          "(`warp._src.codegen.Var` objects)",
    },
    "test_fsai": {
        "*.test_skipped_topology_validation*":
            "counts launches of Warp's private kernel `warp._src.optim.fsai._compare_topology`",
    },
    "test_external_build": {"*": _NATIVE_BUILD},
    "test_render_opengl": {"*": _OPENGL},
    "test_implicit_init": {
        "*.test_is_mempool_*": _CUDA_MEMORY,
        "*.test_is_peer_access_*": _CUDA_MEMORY,
    },
}

# (exception type, regex on the message, reason): errors that mean the test reads Warp internals.
PRIVATE_ERRORS: tuple[tuple[str, str, str], ...] = (
    ("AttributeError", r"object has no attribute 'adj'$",
     "inspects Warp's code generator (Kernel.adj / Function.adj: Warp's Adjoint object)"),
    ("AttributeError", r"^'ParamsView' object has no attribute ",
     "inspects Warp's code generator (Kernel.adj / Function.adj: Warp's Adjoint object; "
     "gradloom's kernel.adj is only its parameter view, .args)"),
    ("TypeError", r"^assertRaisesRegex\(\) arg 1 must be an exception type",
     "expects an exception class of a Warp-private module (a shim placeholder here)"),
    ("AttributeError", r"'Module' object has no attribute '_get_live_kernels'$",
     "drives Warp's C++/CUDA module builder (Module._get_live_kernels for ModuleHasher / "
     "ModuleBuilder)"),
    ("AttributeError", r"'Module' object has no attribute '_run_codegen'$",
     "runs Warp's C++/CUDA code generator directly (the private Module._run_codegen) to read "
     "the warnings it prints"),
)  # fmt: skip


def reason_for(module: str, test: str) -> str:
    """The reason ``test`` of ``module`` is listed as not applicable, or ''."""
    for pattern, reason in NOT_APPLICABLE.get(module, {}).items():
        if fnmatchcase(test, pattern):
            return reason
    return ""


def reason_for_error(exc_type: str, message: str) -> str:
    """The reason an error on gradloom means "not applicable", or ''."""
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    if exc_type == "WarpPrivate":
        return f"uses Warp-private {first.split(':')[0]}"
    if exc_type == "ModuleNotFoundError" and "warp._src" in first:
        return f"imports a Warp-private module ({first})"
    for etype, pattern, reason in PRIVATE_ERRORS:
        if exc_type == etype and re.search(pattern, first):
            return reason
    return ""
