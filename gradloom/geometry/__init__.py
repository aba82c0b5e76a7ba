"""`gradloom.geometry` (Warp's `warp.geometry`): isosurface extraction from dense fields."""

from .iso_surface import IsoSurfaceBase
from .marching_cubes import IsoSurfaceMarchingCubes
from .sparse_marching_cubes import (
           lipschitz_octree,
           sparse_marching_cubes,
           sparse_marching_cubes_from_cells,
)
from .surface_nets import IsoSurfaceNets

__all__ = ["IsoSurfaceBase", "IsoSurfaceMarchingCubes", "IsoSurfaceNets", "lipschitz_octree", "sparse_marching_cubes",
           "sparse_marching_cubes_from_cells"]
