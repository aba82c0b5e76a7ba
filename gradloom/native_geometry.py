"""The compiled BVH refit of meshes and BVHs (codegen/native_bvh.py), compiled on the first
refit in a process and cached on disk like a kernel; runtime/geometry/bvh_tree.py's REFIT hook
imports this module by name, so programs without geometry never load it."""

from __future__ import annotations

import functools

from .codegen import cpu, native_bvh
from .native import compiled_symbols
from .runtime.geometry import bvh_tree


@bvh_tree.REFIT.fill
@functools.cache
def bvh_refit() -> bvh_tree.RefitFn:
    """The compiled BVH refit (compiled once per process, cached)."""
    target = cpu.host_target()
    text = native_bvh.refit_module(target.triple, target.datalayout)
    (address,) = compiled_symbols(f"bvh-refit|{target.key}", text, native_bvh.FUNCTIONS)
    return bvh_tree.refit_function(address)
