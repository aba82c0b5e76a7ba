"""`gradloom.geometry` (Warp's `warp.geometry`): isosurface extraction from dense fields."""

from .iso_surface import IsoSurfaceBase
from .marching_cubes import IsoSurfaceMarchingCubes

__all__ = ["IsoSurfaceBase", "IsoSurfaceMarchingCubes"]
