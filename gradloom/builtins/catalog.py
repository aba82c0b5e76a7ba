"""Which builtin modules register their builtins at import, and which on the first lookup of a
name not registered yet (subsystems a program may not use: tiles beyond the core, geometry)."""

from __future__ import annotations

import importlib

from . import (  # noqa: F401
    arrayview,
    atomics,
    construct,
    debug,
    decomp,
    euler,
    fabric,
    fixedarray,
    lang,
    linalg,
    math,
    noise,
    operators,
    quat,
    random,
    search,
    spatial,
    tile_index,
    tile_math,
    tile_more,
    tiles,
    transform,
    vecmath,
)
from .registry import REGISTRY

#: loaded on demand (builtins/registry.py: `Registry.on_miss`)
ON_DEMAND = (
    "bvh", "bvh_tiled", "geometry_intersect", "hash_grid", "mesh", "mesh_aabb", "mesh_eval",
    "mesh_get", "mesh_ray", "mesh_sign", "texture", "volume", "volume_index",
    "tile_fft", "tile_indexed", "tile_linalg", "tile_random", "tile_sort",
    "tile_stack",
)


def load_on_demand() -> None:
    """Import every on-demand builtin module (each registers its builtins)."""
    for name in ON_DEMAND:
        importlib.import_module(f"{__package__}.{name}")


REGISTRY.on_miss(load_on_demand)
