"""Textures' kernel-side facts: Warp's filter and address modes, and the fields a texture carries.

A texture reaches a kernel as a struct value (runtime/geometry/texture.py builds the struct type with the
Python class, builtins/texture.py samples it); both read the layout from here. The texels are
float32, already converted from the data's type (integers normalised as Warp does), stored level
after level; `levels` points at one int32 row `(offset, width, height, depth)` per mip level,
offsets counted in float32 values.
"""

from __future__ import annotations

import enum
from typing import Any

from .scalars import int32, uint64


class TextureFilterMode(enum.IntEnum):
    """How a sample between texel centres is filtered (within a level, or between levels)."""

    CLOSEST = 0
    LINEAR = 1


class TextureAddressMode(enum.IntEnum):
    """What a coordinate beyond the texture reads."""

    WRAP = 0
    CLAMP = 1
    MIRROR = 2
    BORDER = 3


#: the fields of every texture struct type, in order
TEXTURE_FIELDS: tuple[tuple[str, Any], ...] = (
    ("_data", uint64),
    ("_levels", uint64),
    ("_channels", int32),
    ("_filter", int32),
    ("_mip_filter", int32),
    ("_num_levels", int32),
    ("_address_u", int32),
    ("_address_v", int32),
    ("_address_w", int32),
    ("_normalized", int32),
    ("width", int32),  # level 0's sizes (1 past the texture's dimensions), read as `tex.width`
    ("height", int32),
    ("depth", int32),
)

#: texture struct type name -> number of coordinates it is sampled with
TEXTURE_NDIM = {"Texture1D": 1, "Texture2D": 2, "Texture3D": 3}


def texture_ndim(t: Any) -> int | None:
    """The number of coordinates of a texture struct type; None for any other type."""
    name = getattr(t, "name", None)
    fields = getattr(t, "fields", None)
    return TEXTURE_NDIM.get(name) if fields == TEXTURE_FIELDS else None  # type: ignore[arg-type]
