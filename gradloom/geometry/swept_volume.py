"""Swept volumes of rigidly moving meshes (Warp's `swept_volume_bounds`, `swept_volume_field`,
`swept_volume_mesh`): the pseudo signed distance min over every mesh and sampled pose,
sampled on a dense grid by brute force, and its isosurface by marching cubes."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

import gradloom as wp

from .marching_cubes import extract_mesh


class SweptVolumeSignMode(enum.IntEnum):
    """How a mesh's distance gets its sign: closest face normal, winding number (needs
    ``support_winding_number=True``), ray parity, or none (an unsigned distance)."""

    NORMAL = 0
    WINDING_NUMBER = 1
    PARITY = 2
    NO_SIGN = 3


def _transforms(meshes: Sequence[Any], transforms: Any, device: Any) -> Any:
    """The poses as a (meshes, samples) array of wp.transform, checked against the meshes."""
    if len(meshes) == 0:
        raise ValueError("swept volumes need at least one mesh.")
    if isinstance(transforms, wp.array):
        arr = transforms.numpy().reshape(transforms.shape[0], transforms.shape[1], 7)
    else:
        arr = np.asarray(transforms, dtype=np.float32)
    if arr.ndim != 3 or arr.shape[2] != 7:
        raise ValueError(f"Expected transforms of shape (num_meshes, num_samples, 7), got {arr.shape}.")
    if arr.shape[0] != len(meshes):
        raise ValueError(f"{arr.shape[0]} rows of transforms for {len(meshes)} meshes.")
    if arr.shape[1] == 0:
        raise ValueError("Expected at least one pose sample per mesh.")
    return wp.array(np.ascontiguousarray(arr, dtype=np.float32), dtype=wp.transform, device=device)


def _device(meshes: Sequence[Any], device: Any) -> Any:
    return wp.get_device(device if device is not None else meshes[0].points.device)


def _bounds(meshes: Sequence[Any], xforms: Any, device: Any) -> tuple[np.ndarray, np.ndarray]:
    from . import _swept_kernels as K

    pts = [m.points.numpy().astype(np.float32) for m in meshes]
    lo = wp.array(np.array([p.min(axis=0) for p in pts]), dtype=wp.vec3, device=device)
    hi = wp.array(np.array([p.max(axis=0) for p in pts]), dtype=wp.vec3, device=device)
    out = wp.zeros((len(meshes), xforms.shape[1], 8), dtype=wp.vec3, device=device)
    wp.launch(K.posed_corners, dim=out.shape, inputs=[lo, hi, xforms], outputs=[out], device=device)
    corners = out.numpy().reshape(-1, 3).astype(np.float64)
    return corners.min(axis=0), corners.max(axis=0)


def swept_volume_bounds(meshes: Sequence[Any], transforms: Any, padding: float = 0.0,
                        device: Any = None) -> tuple[Any, Any]:  # fmt: skip
    """(lower, upper) world box of every mesh's rest box under every pose, widened by padding."""
    device = _device(meshes, device) if meshes else device
    lo, hi = _bounds(meshes, _transforms(meshes, transforms, device), device)
    return wp.vec3(*(lo - padding)), wp.vec3(*(hi + padding))


def _grid(lo: np.ndarray, hi: np.ndarray, voxel_size: float | None, resolution: Any,
          lower: Any, upper: Any, pad_cells: float, pad: float) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:  # fmt: skip
    """(node counts, lower, upper): explicit corners verbatim, else the bounds padded by ``pad``
    plus ``pad_cells`` cells, grown to whole voxels (voxel_size) or split into ``resolution``."""
    if (voxel_size is None) == (resolution is None):
        raise ValueError("Pass exactly one of voxel_size and resolution.")
    if (lower is None) != (upper is None):
        raise ValueError("Pass both lower and upper, or neither.")
    if voxel_size is not None and not voxel_size > 0.0:
        raise ValueError(f"voxel_size must be positive, got {voxel_size}.")
    if resolution is not None:
        resolution = tuple(int(n) for n in resolution)
        if len(resolution) != 3 or min(resolution) < 2:
            raise ValueError(f"resolution must be three node counts of at least 2, got {resolution}.")
    if lower is not None:
        if voxel_size is not None:
            raise ValueError("voxel_size cannot be combined with explicit lower/upper corners.")
        return resolution, np.array(tuple(lower), np.float64), np.array(tuple(upper), np.float64)
    if voxel_size is not None:
        lo, hi = lo - pad - pad_cells * voxel_size, hi + pad + pad_cells * voxel_size
        n = np.ceil((hi - lo) / voxel_size - 1e-9).astype(np.int64) + 1
        centre = 0.5 * (lo + hi)
        half = 0.5 * (n - 1) * voxel_size
        return tuple(int(x) for x in n), centre - half, centre + half
    n = np.array(resolution, np.float64)
    extent = (hi - lo) + 2.0 * pad
    cells = (extent / np.maximum(n - 1 - 2 * pad_cells, 1.0)) * pad_cells + pad
    return resolution, lo - cells, hi + cells


def _field(meshes: Sequence[Any], transforms: Any, voxel_size: float | None, resolution: Any, lower: Any,
           upper: Any, sign_mode: int, device: Any, pad: float) -> tuple[Any, np.ndarray, np.ndarray]:  # fmt: skip
    from . import _swept_kernels as K

    device = _device(meshes, device) if meshes else device
    xforms = _transforms(meshes, transforms, device)
    sign_mode = int(sign_mode)
    if sign_mode == SweptVolumeSignMode.WINDING_NUMBER and not all(m.support_winding_number for m in meshes):
        raise ValueError("SweptVolumeSignMode.WINDING_NUMBER needs meshes built with support_winding_number=True.")
    lo, hi = _bounds(meshes, xforms, device)
    shape, g_lo, g_hi = _grid(lo, hi, voxel_size, resolution, lower, upper, 2.0, pad)
    delta = (g_hi - g_lo) / (np.array(shape) - 1)
    # a bound that reaches the surface from every node: the diagonal of the domain and geometry together
    reach = float(np.linalg.norm(np.maximum(hi, g_hi) - np.minimum(lo, g_lo))) * 1.01 + 1.0
    field = wp.zeros(shape, dtype=wp.float32, device=device)
    ids = wp.array(np.array([m.id for m in meshes], dtype=np.uint64), dtype=wp.uint64, device=device)
    wp.launch(K.swept_field, dim=shape, device=device,
              inputs=[ids, xforms, wp.vec3(*g_lo), wp.vec3(*delta), reach, sign_mode], outputs=[field])  # fmt: skip
    return field, g_lo, g_hi


def swept_volume_field(meshes: Sequence[Any], transforms: Any, voxel_size: float | None = None, *,
                       resolution: Any = None, lower: Any = None, upper: Any = None,
                       sign_mode: SweptVolumeSignMode = SweptVolumeSignMode.WINDING_NUMBER,
                       device: Any = None) -> tuple[Any, Any, Any]:  # fmt: skip
    """(field, lower, upper): the swept pseudo signed distance at the nodes of a dense grid."""
    field, lo, hi = _field(meshes, transforms, voxel_size, resolution, lower, upper, sign_mode, device, 0.0)
    return field, wp.vec3(*lo), wp.vec3(*hi)


def swept_volume_mesh(meshes: Sequence[Any], transforms: Any, voxel_size: float | None = None, *,
                      resolution: Any = None, lower: Any = None, upper: Any = None, threshold: float = 0.0,
                      sign_mode: SweptVolumeSignMode = SweptVolumeSignMode.WINDING_NUMBER,
                      device: Any = None) -> tuple[Any, Any]:  # fmt: skip
    """(vertices, flat int32 indices): the ``threshold`` isosurface of the swept field."""
    if int(sign_mode) == SweptVolumeSignMode.NO_SIGN and not threshold > 0.0:
        raise ValueError("SweptVolumeSignMode.NO_SIGN needs a positive threshold: its field is positive everywhere.")
    field, lo, hi = _field(meshes, transforms, voxel_size, resolution, lower, upper, sign_mode, device,
                           max(float(threshold), 0.0))  # fmt: skip
    return extract_mesh(field, threshold, tuple(lo), tuple(hi))
