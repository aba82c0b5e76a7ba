"""The volume probe kernel of tests/test_volume.py, built with any Warp-like module (a file of
its own: Warp reads kernel source from files)."""

from __future__ import annotations

from typing import Any


def make(wp: Any) -> Any:
    @wp.kernel
    def probe(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float),
              grad: wp.array(dtype=wp.vec3), world: wp.array(dtype=wp.vec3)):  # fmt: skip
        i = wp.tid()
        p = pts[i]
        g = wp.vec3()
        out[i] = wp.volume_sample_grad_f(vid, p, wp.Volume.LINEAR, g) + wp.volume_sample_f(
            vid, p, wp.Volume.CLOSEST) * 10.0 + wp.volume_lookup_f(vid, int(p[0]), int(p[1]), int(p[2]))
        grad[i] = g
        world[i] = wp.volume_world_to_index(vid, wp.volume_index_to_world(vid, p) + p)

    return probe
