"""`gradloom.geometry` (Warp's `warp.geometry`): isosurface extraction from dense fields and implicit
functions, swept volumes of moving meshes."""

from ._kernels import find_triangle_neighbor_edge_index
from ._swept_kernels import swept_volume_sdf
from .delaunay import delaunay_edge_flip, tri_tri_adjacency
from .iso_surface import IsoSurfaceBase
from .marching_cubes import IsoSurfaceMarchingCubes
from .sparse_marching_cubes import (
    lipschitz_octree,
    sparse_marching_cubes,
    sparse_marching_cubes_from_cells,
)
from .surface_nets import IsoSurfaceNets
from .swept_volume import (
    SweptVolumeSignMode,
    swept_volume_bounds,
    swept_volume_field,
    swept_volume_mesh,
)

__all__ = [
    "IsoSurfaceBase",
    "IsoSurfaceMarchingCubes",
    "IsoSurfaceNets",
    "SweptVolumeSignMode",
    "delaunay_edge_flip",
    "find_triangle_neighbor_edge_index",
    "lipschitz_octree",
    "sparse_marching_cubes",
    "sparse_marching_cubes_from_cells",
    "swept_volume_bounds",
    "swept_volume_field",
    "swept_volume_mesh",
    "swept_volume_sdf",
    "tri_tri_adjacency",
]
