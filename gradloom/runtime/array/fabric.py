"""`wp.fabricarray` / `wp.indexedfabricarray`: arrays whose elements lie in buckets of memory.

A Fabric array is built from a Fabric interface dict (`{"version": 1, "device", "attribs":
{name: {"type", "access", "pointers", "counts"[, "array_lengths"]}}}`, or an object with
`__fabric_arrays_interface__`): bucket k holds `counts[k]` elements at `pointers[k]`, and the
elements are numbered across the buckets in order. The memory is not owned. With `array_depth`
1 in the type info (`wp.fabricarrayarray`) each element is a sub-array: a uint64 pointer in the
bucket, its length at `array_lengths[k]`. `fa[indices]` (an int32 array) is an
`indexedfabricarray`. Kernels reach elements through a table of element addresses built here
once (types.FabricArrayType; builtins/memory.py loads through it). There are no gradients, as in
Warp. In Python scope the arrays offer the non-contiguous methods: `numpy()`, `list()`,
`contiguous()`, `fill_`, `zero_`, `assign` (host memory only).
"""

from __future__ import annotations

import ctypes
import math
import typing
from typing import Any

import numpy as np

from ... import types as scalars
from ...errors import GradloomError
from ...types import (
    FabricArrayType,
    int32,
    matrix,
    quaternion,
    size_of,
    type_repr,
    uint64,
    vector,
)
from ..device import get_device
from .annotation import AnnotationProtocols, annotation_ndim
from .arith import ArrayArithmetic
from .array import NDArray, array, fit_data, resolve_dtype, storage_dtype
from .storage import elem_shape, fill_value

_BASE = {"b": "bool_", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64", "u1": "uint8",
         "u2": "uint16", "u4": "uint32", "u8": "uint64", "f2": "float16", "f4": "float32",
         "f8": "float64"}


def fabric_dtype(info: Any, attrib: str) -> tuple[Any, int]:
    """(element type, ndim) of a Fabric attribute's type info
    `(usable, base type code, element count, array depth, role)`."""
    if not hasattr(info, "__len__") or len(info) != 5:
        raise ValueError(f"Fabric attribute '{attrib}' type metadata must contain five elements, "
                         f"got {len(info) if hasattr(info, '__len__') else 0}: {info!r}")
    usable, code, count, depth, role = info
    if not usable:
        raise RuntimeError(f"Attribute '{attrib}' cannot be used in Warp")
    base = getattr(scalars, _BASE.get(code, ""), None)
    if base is None:
        raise RuntimeError(f"Attribute '{attrib}' base data type '{code}' is not supported")
    if role in ("text", "path"):
        raise RuntimeError(f"Attribute '{attrib}' role '{role}' is not supported")
    if depth not in (0, 1):
        raise ValueError(f"Invalid attribute array depth: {depth}")
    if count <= 1:
        return base, depth + 1
    if role == "quat" and count == 4:
        return quaternion(base), depth + 1
    if role in ("matrix", "transform", "frame"):
        n = math.isqrt(count)
        if n * n != count:
            raise ValueError(f"Fabric attribute '{attrib}' matrix metadata must have a square "
                             f"element count, got {count}")
        return matrix((n, n), base), depth + 1
    return vector(count, base), depth + 1


class _GlType:
    """`__gl_type__`: an instance's FabricArrayType; on the class, a generic (dtype Any) one."""

    def __get__(self, obj: _Family | None, owner: type[_Family]) -> Any:
        t = FabricArrayType(typing.Any, 1, owner._indexed) if obj is None else \
            FabricArrayType(obj.dtype, obj.ndim, obj._indexed)
        return lambda: t


class _Family(ArrayArithmetic, AnnotationProtocols):
    """What both Fabric array classes share: annotations, host-side gathers and scatters."""

    _indexed: typing.ClassVar[bool] = False
    _family: typing.ClassVar[str] = "fabricarray"
    dtype: Any
    ndim: int
    device: Any
    size: int
    shape: tuple[int, ...]

    def __init__(self, *args: Any, dtype: Any = None, ndim: int | None = None) -> None:
        raise NotImplementedError

    __gl_type__ = _GlType()

    @classmethod
    def __class_getitem__(cls, params: Any) -> Any:
        """`wp.fabricarray[float]`, `wp.fabricarray[float, Literal[2]]`: an annotation."""
        if not isinstance(params, tuple):
            return cls(dtype=params)
        if len(params) != 2:
            raise TypeError(f"wp.{cls._family}[...] takes (dtype) or (dtype, ndim)")
        return cls(dtype=params[0], ndim=annotation_ndim(params[1]))

    def _annotation_key(self) -> tuple[str, Any, int] | None:
        return (self._family, self.dtype, self.ndim) if self.device is None else None

    def _elements(self) -> NDArray:
        """Flat element numbers of this view in the Fabric array's numbering."""
        raise NotImplementedError

    def _base(self) -> fabricarray:
        raise NotImplementedError

    def numpy(self) -> NDArray:
        """The elements, gathered into a new numpy array."""
        views, starts = self._base()._views()
        es = elem_shape(self.dtype)
        out = np.empty((self.size, *es), dtype=storage_dtype(self.dtype))
        flat = self._elements()
        for view, start in zip(views, starts, strict=True):
            m = (flat >= start) & (flat < start + len(view))
            out[m] = view[flat[m] - start]
        return out

    def _scatter(self, values: Any) -> None:
        views, starts = self._base()._views()
        flat = self._elements()
        full = np.broadcast_to(values, (self.size, *elem_shape(self.dtype))) \
            if np.ndim(values) <= len(elem_shape(self.dtype)) else values
        for view, start in zip(views, starts, strict=True):
            m = (flat >= start) & (flat < start + len(view))
            view[flat[m] - start] = full[m]

    def _no_jagged(self, what: str) -> None:
        if self.ndim > 1:
            raise RuntimeError(f"{what} Fabric arrays of arrays is not supported")

    def list(self) -> list[Any]:
        return array(self.numpy(), dtype=self.dtype).list() if self.size else []

    def contiguous(self) -> array:
        """A new contiguous array holding the elements."""
        self._no_jagged("Copying")
        if self.size == 0:
            return array(shape=self.shape, dtype=self.dtype, device=self.device)
        return array(self.numpy(), dtype=self.dtype, device=self.device)

    def fill_(self, value: Any) -> None:
        self._no_jagged("Filling")
        if self.size:
            try:
                self._scatter(fill_value(self.dtype, value))
            except (TypeError, ValueError) as e:
                raise GradloomError(f"cannot fill a Fabric array of {self.dtype!r} with "
                                    f"{value!r}: {e}") from e

    def zero_(self) -> None:
        self._no_jagged("Zeroing")
        if self.size:
            self._scatter(np.zeros((), dtype=storage_dtype(self.dtype)))

    def assign(self, src: Any) -> None:
        """Copy src (an array, Fabric array, numpy array or nested list of this shape) in."""
        self._no_jagged("Assigning to")
        values = src.numpy() if hasattr(src, "numpy") else src
        if not np.size(values):
            return
        data = fit_data(np.asarray(values, dtype=storage_dtype(self.dtype)), self.dtype, None)
        if data.shape[0] != self.size:
            raise GradloomError(f"assign: source of shape {data.shape} does not match the Fabric "
                                f"array's shape {self.shape}")
        self._scatter(data)

    def to(self, device: Any) -> Any:
        return self

    @property
    def is_contiguous(self) -> bool:
        return False

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        if self.device is None:
            return self.annotation_repr()
        return f"{self._family}(shape={self.shape}, dtype={self.dtype!r})"

    def __str__(self) -> str:
        return repr(self) if self.device is None else str(self.numpy())


class fabricarray(_Family):
    """A Fabric array (or, built without data, an annotation)."""

    def __init__(self, data: Any = None, attrib: str | None = None, dtype: Any = typing.Any,
                 ndim: int | None = None) -> None:
        self.buckets: list[tuple[int, int, int]] = []  # (pointer, count, lengths pointer)
        self.access = None
        if data is None:  # an annotation: wp.fabricarray(dtype=float, ndim=2)
            self.dtype = dtype if dtype is typing.Any else resolve_dtype(dtype)
            self.ndim = typing.cast(int, ndim) if ndim is typing.Any else int(ndim or 1)  # generic
            self.device, self.size, self.shape = None, 0, (0,)
            return
        iface, info = _attribute(data, attrib)
        self.device = get_device(iface.get("device"))
        self.dtype, self.ndim = fabric_dtype(info["type"], str(attrib))
        self.access = info.get("access")
        pointers, counts = info["pointers"], info["counts"]
        if not (hasattr(pointers, "__len__") and hasattr(counts, "__len__")
                and len(pointers) == len(counts)):
            raise RuntimeError("Attribute pointers and counts must be lists of the same size")
        lengths: Any = info.get("array_lengths") if self.ndim == 2 else [0] * len(pointers)
        if not hasattr(lengths, "__len__") or len(lengths) != len(pointers):
            raise RuntimeError("Attribute `array_lengths` must be a list of the same size as "
                               "`pointers` and `counts`")
        self.buckets = [(int(p or 0), int(c), int(n or 0))
                        for p, c, n in zip(pointers, counts, lengths, strict=True)]
        self.size = sum(c for _, c, _ in self.buckets)
        self.shape = (self.size,)
        self._tables = self._address_tables()

    def __del__(self) -> None:
        """Nothing to release: the memory belongs to Fabric."""

    def _address_tables(self) -> tuple[array, array | None]:
        """Per element, its address (ndim 2: its sub-array pointer's), and for ndim 2 the
        address of its length, as uint64 arrays on the device."""
        step = size_of(self.dtype) if self.ndim == 1 else 8
        parts = [np.uint64(p) + np.arange(c, dtype=np.uint64) * np.uint64(step)
                 for p, c, _ in self.buckets]
        addrs = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
        table = array(addrs, dtype=uint64, device=self.device)
        if self.ndim == 1:
            return table, None
        lens = [np.uint64(n) + np.arange(c, dtype=np.uint64) * np.uint64(8)
                for _, c, n in self.buckets]
        lt = np.concatenate(lens) if lens else np.zeros(0, np.uint64)
        return table, array(lt, dtype=uint64, device=self.device)

    def _base(self) -> fabricarray:
        return self

    def _elements(self) -> NDArray:
        return np.arange(self.size, dtype=np.int64)

    def _views(self) -> tuple[list[NDArray], list[int]]:
        """numpy views of the buckets' host memory, and each bucket's first element number."""
        if self.device is None or not self.device.backend.host_memory:
            raise GradloomError("Fabric arrays are read in Python scope from host memory only")
        self._no_jagged("Reading")
        es, nd = elem_shape(self.dtype), storage_dtype(self.dtype)
        views, starts, start = [], [], 0
        for p, c, _ in self.buckets:
            if c:
                raw = (ctypes.c_byte * (c * size_of(self.dtype))).from_address(p)
                views.append(np.frombuffer(raw, dtype=nd).reshape(c, *es))  # type: ignore[call-overload]
                starts.append(start)
            start += c
        return views, starts

    def __getitem__(self, key: Any) -> indexedfabricarray:
        if isinstance(key, array):
            return indexedfabricarray(fa=self, indices=key)
        raise ValueError(f"Fabric arrays only support indexing using index arrays, got key of "
                         f"type {type(key)}")

    def kernel_words(self) -> list[int]:
        """The argument words (types.FabricArrayType)."""
        table, lens = self._tables
        words = [table.ptr or 0, 0, self.size]
        if self.ndim == 2:
            words.append(0)
        words.append(8)
        if self.ndim == 2:
            words.append(0 if lens is None else lens.ptr or 0)
        return words + [0] * self.ndim


class indexedfabricarray(_Family):
    """`fa[indices]`: the elements of a Fabric array picked by an int32 index array."""

    _indexed = True
    _family = "indexedfabricarray"

    def __init__(self, fa: fabricarray | None = None, indices: array | None = None,
                 dtype: Any = None, ndim: int | None = None) -> None:
        self.fa, self.indices = fa, indices
        if fa is None:
            self.dtype = typing.Any if dtype is None or dtype is typing.Any else resolve_dtype(dtype)
            self.ndim = typing.cast(int, ndim) if ndim is typing.Any else int(ndim or 1)  # generic
            self.device, self.size, self.shape = None, 0, (0,)
            return
        if not isinstance(indices, array) or indices.ndim != 1 or indices.dtype != int32:
            raise GradloomError(f"index arrays must be 1-D int32 wp.array, got {indices!r}")
        if indices.device != fa.device:
            raise GradloomError(f"index array device ({indices.device}) does not match the Fabric "
                                f"array's ({fa.device})")
        self.dtype, self.ndim, self.device = fa.dtype, fa.ndim, fa.device
        self.size = indices.size
        self.shape = (self.size,)

    def _base(self) -> fabricarray:
        assert self.fa is not None
        return self.fa

    def _elements(self) -> NDArray:
        assert self.indices is not None
        return np.asarray(self.indices.numpy(), dtype=np.int64)

    def kernel_words(self) -> list[int]:
        assert self.indices is not None
        words = self._base().kernel_words()
        words[2] = self.size
        words[-self.ndim] = self.indices.ptr or 0
        return words


def _attribute(data: Any, attrib: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The interface dict and the named attribute's entry, checked."""
    if not isinstance(attrib, str):
        raise ValueError(f"Invalid attribute name: {attrib}")
    iface = data if isinstance(data, dict) else getattr(data, "__fabric_arrays_interface__", None)
    if not isinstance(iface, dict):
        raise ValueError("Invalid data argument for fabricarray: expected dict or object with "
                         "__fabric_arrays_interface__")
    if iface.get("version") != 1:
        raise ValueError(f"Unsupported Fabric interface version: {iface.get('version')}")
    if not isinstance(iface.get("device"), str):
        raise ValueError(f"Invalid Fabric interface device: {iface.get('device')}")
    attribs = iface.get("attribs")
    if not isinstance(attribs, dict):
        raise ValueError("Failed to get Fabric interface attributes")
    info = attribs.get(attrib)
    if not isinstance(info, dict):
        raise ValueError(f"Failed to get attribute '{attrib}'")
    return iface, info


def fabricarrayarray(**kwargs: Any) -> fabricarray:
    """A Fabric array of arrays: `fabricarray(..., ndim=2)`."""
    kwargs["ndim"] = 2
    return fabricarray(**kwargs)


def indexedfabricarrayarray(**kwargs: Any) -> indexedfabricarray:
    """An indexed Fabric array of arrays: `indexedfabricarray(..., ndim=2)`."""
    kwargs["ndim"] = 2
    return indexedfabricarray(**kwargs)


#: the classes whose elements are gathered in Python scope (runtime/array/ops.py)
FABRIC_CLASSES = (fabricarray, indexedfabricarray)


def fabric_words(value: Any, t: FabricArrayType) -> list[int]:
    """The argument words of a Fabric array passed for type t."""
    want = indexedfabricarray if t.indexed else fabricarray
    if not isinstance(value, want) or value.device is None:  # Warp's words
        raise TypeError(f"expects an array of type {type_repr(t)}, but passed value has type "
                        f"{type(value).__name__}")
    if value.ndim != t.ndim or value.dtype != t.dtype:
        raise TypeError(f"expected {t!r}, got {value!r}")
    return value.kernel_words()
