"""Imports every builtin module so that each registers its builtins (the registry's contents)."""

from __future__ import annotations

from . import (  # noqa: F401
    atomics,
    construct,
    debug,
    decomp,
    euler,
    fixedarray,
    hash_grid,
    lang,
    linalg,
    math,
    mesh,
    mesh_ray,
    noise,
    operators,
    quat,
    random,
    search,
    spatial,
    texture,
    tile_index,
    tile_linalg,
    tile_math,
    tile_more,
    tiles,
    transform,
    vecmath,
    volume,
    volume_index,
)
