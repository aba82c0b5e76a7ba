"""The compiled BVH build and refit of meshes and BVHs (codegen/native_bvh_build.py,
codegen/native_bvh.py), compiled on first use in a process and cached on disk like a kernel;
runtime/geometry/bvh_tree.py's BUILD and REFIT hooks import this module by name, so programs
without geometry never load it."""

from __future__ import annotations

import functools

from .codegen import cpu, native_bvh, native_bvh_build
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


@bvh_tree.BUILD.fill
@functools.cache
def bvh_build() -> bvh_tree.BuildFns:
    """The compiled BVH build loops (compiled once per process, cached)."""
    target = cpu.host_target()
    text = native_bvh_build.build_module(target.triple, target.datalayout)
    addresses = compiled_symbols(f"bvh-build|{target.key}", text, native_bvh_build.FUNCTIONS)
    return bvh_tree.build_functions(*addresses)
