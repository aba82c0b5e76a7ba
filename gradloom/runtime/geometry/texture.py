"""`wp.Texture1D/2D/3D`: regularly gridded data sampled in kernels with filtering and addressing.

A texture is built on the host: its data (any of Warp's eight texture dtypes, 1, 2 or 4
channels) is converted once to float32 texels as Warp's samplers read them (unsigned 8/16-bit
integers normalised to [0, 1], signed ones to [-1, 1], 32-bit integers converted unnormalised),
and the mip chain, when asked for, is made by averaging 2×…×2 boxes (an odd last texel along an
axis is dropped, as warp-lang does). Kernels receive the texture as a struct value
(types/texture.py: the texel and level-table addresses, channels, modes); builtins/texture.py
samples it. Textures live in host memory: CUDA textures are not provided.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ...errors import GradloomError
from ...types import (
    TEXTURE_FIELDS,
    StructType,
    TextureAddressMode,
    TextureFilterMode,
    resolve_annotation,
)
from ..device import get_device

_NORMALISE: dict[str, float] = {"uint8": 255.0, "uint16": 65535.0, "int8": 127.0,
                                "int16": 32767.0}  # fmt: skip
_DTYPES = ("uint8", "uint16", "uint32", "int8", "int16", "int32", "float16", "float32")
_WIDE_INTS = ("uint32", "int32")


class TextureError(GradloomError, ValueError):
    """A texture given data, sizes or modes Warp's textures do not take."""


class TextureCopyError(GradloomError, RuntimeError):
    """What a host texture cannot do: copies into mipmapped levels (derived from level 0), CUDA
    handles."""


def texels(data: np.ndarray) -> np.ndarray:
    """float32 texel values of data, as a sampler reads them (Warp's normalisation rules)."""
    name = data.dtype.name
    out = data.astype(np.float32)
    if name in _NORMALISE:
        out /= np.float32(_NORMALISE[name])
        if name.startswith("int"):
            np.maximum(out, np.float32(-1.0), out=out)
    return out


def mip_chain(level0: np.ndarray, ndim: int, count: int) -> list[np.ndarray]:
    """Levels 0..count-1: each halves every axis longer than one texel by averaging pairs, in
    double precision rounded once per level (so large finite texels do not overflow)."""
    levels = [level0]
    for _ in range(count - 1):
        cur = levels[-1].astype(np.float64)
        for axis in range(ndim):
            n = cur.shape[axis]
            if n > 1:
                half = n // 2
                idx = [slice(None)] * cur.ndim
                idx[axis] = slice(0, 2 * half, 2)
                even = cur[tuple(idx)]
                idx[axis] = slice(1, 2 * half, 2)
                cur = (even + cur[tuple(idx)]) * 0.5
        levels.append(np.ascontiguousarray(cur, dtype=np.float32))
    return levels


def full_chain_length(sizes: tuple[int, ...]) -> int:
    return int(max(sizes)).bit_length()


def _mode(kind: Any, value: Any, what: str) -> Any:
    """The enum member ``value`` names; a TextureError (a ValueError) naming ``what`` if none."""
    try:
        return kind(value)
    except ValueError:
        raise TextureError(f"Invalid texture {what} {value!r}; one of "
                           f"{', '.join(f'{m.name} ({int(m)})' for m in kind)}") from None


def _address_modes(ndim: int, address_mode: Any, per_axis: tuple[Any, ...]) -> list[int]:
    modes = list(address_mode) if isinstance(address_mode, (tuple, list)) else [address_mode] * ndim
    if len(modes) != ndim:
        raise TextureError(f"address_mode: {ndim} values for a {ndim}-D texture, got {len(modes)}")
    modes = [m if o is None else o for m, o in zip(modes, per_axis, strict=False)]
    out = [int(_mode(TextureAddressMode, m, "address mode")) for m in modes]
    return out + [int(TextureAddressMode.CLAMP)] * (3 - ndim)


class Texture:
    """A texture of `ndim` dimensions (use Texture1D, Texture2D or Texture3D)."""

    ndim: ClassVar[int] = 0
    __gl_type__: ClassVar[StructType]

    def __init__(self, data: Any = None, width: int = 0, height: int = 0, depth: int = 0,
                 num_channels: int = 0, dtype: Any = None, filter_mode: Any = None,
                 address_mode: Any = TextureAddressMode.CLAMP, address_mode_u: Any = None,
                 address_mode_v: Any = None, address_mode_w: Any = None,
                 normalized_coords: bool = True, num_mip_levels: int = 1,
                 mip_filter_mode: Any = None, device: Any = None, **cuda: Any) -> None:  # fmt: skip
        if self.ndim == 0:
            raise TypeError("wp.Texture is a base class: create a Texture1D, Texture2D or Texture3D")
        self.device = get_device(device)
        if not self.device.backend.host_memory:
            raise GradloomError("textures live on the CPU in gradloom; CUDA textures are not "
                                "provided (create the texture with device='cpu')")  # fmt: skip
        raw = self._raw_data(data, (depth, height, width), num_channels, dtype)
        self.dtype = resolve_annotation(raw.dtype.type)
        self._set_modes(filter_mode, mip_filter_mode, num_mip_levels, address_mode,
                        (address_mode_u, address_mode_v, address_mode_w), data is not None)  # fmt: skip
        self.normalized_coords = bool(normalized_coords)
        self._raw = raw.copy()  # level 0 as given (its own dtype): what copy_to gives back
        self._build(texels(raw))

    # -- construction ---------------------------------------------------------------------

    def _raw_data(self, data: Any, sizes: tuple[int, int, int], channels: int, dtype: Any) -> np.ndarray:
        if data is None:
            dims = [s for s in sizes[3 - self.ndim:]]
            if max(dims) == 0:  # Warp's empty texture (a struct field's default): one zero texel
                self._empty = True
                return np.zeros((*([1] * self.ndim), channels or 1), np.float32)
            if min(dims) <= 0:
                raise TextureError(f"a {self.ndim}-D texture without data needs its sizes "
                                   f"(width, height, depth as it has them), got {dims[::-1]}")  # fmt: skip
            np_dtype = np.dtype(resolve_annotation(dtype or np.float32).np_dtype)
            return np.zeros((*dims, channels or 1), np_dtype)
        arr = np.asarray(data.numpy() if hasattr(data, "numpy") else data)
        if arr.dtype.name not in _DTYPES:
            raise TextureError(f"texture data of dtype {arr.dtype.name} is not supported; use one "
                               f"of {', '.join(_DTYPES)}")  # fmt: skip
        if arr.ndim == self.ndim:
            arr = arr[..., None]
        if arr.ndim != self.ndim + 1 or arr.shape[-1] not in (1, 2, 4) or 0 in arr.shape:
            raise TextureError(f"a {self.ndim}-D texture takes data of shape {self._shape_doc()} "
                               f"with 1, 2 or 4 channels; got {arr.shape}")  # fmt: skip
        return arr

    def _shape_doc(self) -> str:
        dims = ("depth", "height", "width")[3 - self.ndim:]
        return f"({', '.join(dims)}) or ({', '.join(dims)}, num_channels)"

    def _set_modes(self, filter_mode: Any, mip_filter_mode: Any, num_mip_levels: int,
                   address_mode: Any, per_axis: tuple[Any, ...], has_data: bool) -> None:  # fmt: skip
        wide = self.dtype.name in _WIDE_INTS
        default = TextureFilterMode.CLOSEST if wide else TextureFilterMode.LINEAR
        self.filter_mode = _mode(TextureFilterMode, default if filter_mode is None else filter_mode,
                                 "filter mode")  # fmt: skip
        self.mip_filter_mode = _mode(TextureFilterMode, default if mip_filter_mode is None
                                     else mip_filter_mode, "mip filter mode")  # fmt: skip
        if wide and self.filter_mode == TextureFilterMode.LINEAR:
            raise TextureError(f"{self.dtype!r} textures support closest filtering only: filter_mode "
                               "must be TextureFilterMode.CLOSEST")  # fmt: skip
        if num_mip_levels < 0 or (num_mip_levels != 1 and not has_data):
            raise TextureError("num_mip_levels: 1 (no mipmaps), 0 (the full chain) or a count, "
                               "and mipmaps need data")  # fmt: skip
        self._requested_levels = num_mip_levels
        modes = _address_modes(self.ndim, address_mode, per_axis)
        self.address_mode_u, self.address_mode_v, self.address_mode_w = \
            (TextureAddressMode(m) for m in modes)

    def _build(self, level0: np.ndarray) -> None:
        sizes = level0.shape[:-1]
        full = full_chain_length(sizes)
        if self._requested_levels > full:
            raise TextureError(f"num_mip_levels {self._requested_levels}: a texture of sizes "
                               f"{tuple(sizes)} has at most {full} levels")  # fmt: skip
        count = full if self._requested_levels == 0 else self._requested_levels
        if count > 1 and self.dtype.name in _WIDE_INTS and self.mip_filter_mode == TextureFilterMode.LINEAR:
            raise TextureError(f"{self.dtype!r} textures support closest filtering only: "
                               "mip_filter_mode must be TextureFilterMode.CLOSEST")  # fmt: skip
        levels = mip_chain(level0, self.ndim, count)
        self._store = np.concatenate([lv.ravel() for lv in levels]).astype(np.float32)
        table = []
        offset = 0
        for lv in levels:
            dims = [1, 1, 1]
            dims[:self.ndim] = lv.shape[:-1][::-1]  # width first
            table.append((offset, *dims))
            offset += lv.size
        self._table = np.array(table, np.int32)
        self._level_arrays = levels
        self._fill_fields(level0.shape[-1], count)

    def _fill_fields(self, channels: int, count: int) -> None:
        """The struct fields kernels receive (types/texture.py TEXTURE_FIELDS)."""
        self._data = int(self._store.ctypes.data)
        self._levels = int(self._table.ctypes.data)
        self._channels = channels
        self._filter, self._mip_filter = int(self.filter_mode), int(self.mip_filter_mode)
        self._num_levels = count
        self._address_u, self._address_v, self._address_w = (
            int(self.address_mode_u), int(self.address_mode_v), int(self.address_mode_w))
        self._normalized = int(self.normalized_coords)

    # -- Warp's attributes ----------------------------------------------------------------

    _empty: bool = False

    @property
    def width(self) -> int:
        return 0 if self._empty else int(self._table[0, 1])

    @property
    def height(self) -> int:
        return 0 if self._empty else int(self._table[0, 2])

    @property
    def depth(self) -> int:
        return 0 if self._empty else int(self._table[0, 3])

    # -- copies (Warp's copy_from / copy_to; level 0 of a texture without mipmaps) ----------

    def _copy_shape(self) -> tuple[int, ...]:
        raw = self._raw
        return raw.shape[:-1] if raw.shape[-1] == 1 else raw.shape

    def _check_copy(self, other: np.ndarray, role: str) -> np.ndarray:
        if self.is_mipmapped:
            raise TextureCopyError("copy_from / copy_to: a mipmapped texture's levels are derived; "
                                "create a new texture instead")  # fmt: skip
        shape = self._copy_shape()
        if other.shape != shape and other.shape != self._raw.shape:
            raise TextureError(f"Incompatible array shape for copy: texture shape={shape}, "
                               f"{role} shape={other.shape}")  # fmt: skip
        if other.dtype != self._raw.dtype:
            raise TextureError(f"Incompatible array data type for copy: texture dtype={self._raw.dtype.name}, "
                               f"{role} dtype={other.dtype.name}")  # fmt: skip
        return other.reshape(self._raw.shape)

    def copy_from(self, src: Any) -> None:
        """Replace the texels with ``src`` (an array, numpy array or texture of the same shape
        and dtype), in place: the texture's id stays the same."""
        if isinstance(src, Texture):
            if src._copy_shape() != self._copy_shape():
                raise TextureError(f"Incompatible texture shapes for copy: destination shape="
                                   f"{self._copy_shape()}, source shape={src._copy_shape()}")  # fmt: skip
            src = src._raw
        data = self._check_copy(np.asarray(src.numpy() if hasattr(src, "numpy") else src), "source")
        self._raw[...] = data
        self._store[: self._raw.size] = texels(self._raw).ravel()

    def copy_to(self, dst: Any) -> None:
        """Write the texels into ``dst`` (an array, numpy array or texture of the same shape and dtype)."""
        if isinstance(dst, Texture):
            dst.copy_from(self)
            return
        host = dst.numpy() if hasattr(dst, "numpy") else dst
        self._check_copy(np.asarray(host), "destination")
        if hasattr(dst, "assign"):
            dst.assign(self._raw.reshape(host.shape))
        else:
            dst[...] = self._raw.reshape(dst.shape)

    def __del__(self) -> None:
        """Nothing to release by hand (numpy memory); safe on an instance never initialised."""

    @property
    def num_channels(self) -> int:
        return self._channels

    @property
    def num_mip_levels(self) -> int:
        return self._num_levels

    @property
    def is_mipmapped(self) -> bool:
        return self._num_levels > 1

    @property
    def id(self) -> int:
        return self._data

    def _cuda_handle(self, what: str) -> int:
        raise TextureCopyError(f"Texture.{what} is only supported for CUDA textures; gradloom's "
                               "textures live in host memory")  # fmt: skip

    @property
    def cuda_texture(self) -> int:
        return self._cuda_handle("cuda_texture")

    @property
    def cuda_array(self) -> int:
        return self._cuda_handle("cuda_array")

    @property
    def cuda_surface(self) -> int:
        return self._cuda_handle("cuda_surface")

    def __repr__(self) -> str:
        dims = "x".join(str(d) for d in (self.width, self.height, self.depth)[:self.ndim])
        return (f"{type(self).__name__}({dims}, {self.num_channels} channel(s), "
                f"dtype={self.dtype!r}, levels={self._num_levels})")


class Texture1D(Texture):
    """A 1-D texture: data of shape (width,) or (width, num_channels)."""

    ndim = 1


class Texture2D(Texture):
    """A 2-D texture: data of shape (height, width) or (height, width, num_channels)."""

    ndim = 2


class Texture3D(Texture):
    """A 3-D texture: data of shape (depth, height, width) or (depth, height, width, num_channels)."""

    ndim = 3


for _cls in (Texture1D, Texture2D, Texture3D):
    _cls.__gl_type__ = StructType(_cls.__name__, TEXTURE_FIELDS, _cls)
