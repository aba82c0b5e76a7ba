"""Geometry objects built on arrays: hash grids, meshes, BVHs, NanoVDB volumes, textures."""
