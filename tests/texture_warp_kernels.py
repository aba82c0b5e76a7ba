"""The texture sampling kernel of tests/test_texture.py, built with warp-lang (a file of its own:
Warp reads kernel source from files)."""

from __future__ import annotations

from typing import Any


def make(wp: Any) -> Any:
    @wp.kernel
    def sample2(t: wp.Texture2D, c: wp.array(dtype=wp.vec2), out: wp.array(dtype=wp.vec4)):
        i = wp.tid()
        out[i] = wp.texture_sample(t, c[i], dtype=wp.vec4)

    return sample2
