"""Launches: the one `wp.launch` path, argument packing, debug checks, tiled launches, graph
capture and Warp's `Launch` setters."""
