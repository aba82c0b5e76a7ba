"""`wp.indexedarray`: a view of the elements of an array picked by int32 index arrays per dimension.

Element (i, j, ...) of `indexedarray(data, [idx0, idx1, ...])` is `data[idx0[i], idx1[j], ...]`;
a dimension given `None` (or beyond the list) is taken whole. Kernels read, write and update
the data array through it (types.IndexedArrayType; builtins/memory.py does the indexing), so
gradients go to `data.grad`. In Python scope it offers Warp's non-contiguous array methods:
`numpy()`/`list()`/`contiguous()` (copies), `fill_`, `zero_`, `assign`. `array[I]` with an index
array (`data[I]`, `data[:, I]`) makes one, as in Warp.
"""

from __future__ import annotations

import math
import typing
from typing import Any, ClassVar

import numpy as np

from ...errors import GradloomError
from ...types import FabricArrayType, IndexedArrayType, int32, type_repr
from .annotation import AnnotationProtocols, annotation_ndim
from .arith import ArrayArithmetic
from .array import MAX_DIMS, NDArray, array, fit_data, resolve_dtype, storage_dtype
from .fabric import fabric_words, fabricarray, indexedfabricarray
from .host import INDEX_VIEW
from .storage import FIELD_STUB, INDEXED_WORDS, fill_value


class _GlType:
    """`__gl_type__`: an instance's IndexedArrayType; on the class, a generic (dtype Any) one."""

    def __get__(self, obj: indexedarray | None, owner: type[indexedarray]) -> Any:
        if obj is None:
            generic = IndexedArrayType(typing.Any, owner._fixed_ndim or 1)
            return lambda: generic
        t = IndexedArrayType(obj.dtype, obj.ndim)
        return lambda: t


class indexedarray(ArrayArithmetic, AnnotationProtocols):
    """An indexed view of an array (or, built without data, an annotation)."""

    _fixed_ndim: ClassVar[int | None] = None
    __gl_type__ = _GlType()

    def __init__(self, data: array | None = None, indices: Any = None, dtype: Any = None,
                 ndim: int | None = None) -> None:
        ndim = self._fixed_ndim or ndim
        self.data = data
        self.indices: list[array | None] = [None] * MAX_DIMS
        if data is None:  # an annotation: wp.indexedarray(dtype=float, ndim=2)
            self.dtype = typing.Any if dtype is None or dtype is typing.Any \
                else resolve_dtype(dtype)
            self.ndim = typing.cast(int, ndim) if ndim is typing.Any else int(ndim or 1)  # generic
            self.shape: tuple[int, ...] = (0,) * (1 if ndim is typing.Any else self.ndim)
            self.device: Any = None
            self.size = 0
            return
        if not isinstance(data, array):
            raise GradloomError(f"indexed array data must be a wp.array, got "
                                f"{type(data).__name__}")
        if dtype is not None and resolve_dtype(dtype) != data.dtype:
            raise GradloomError(f"requested dtype ({dtype!r}) does not match the data array's "
                                f"dtype ({data.dtype!r})")
        if ndim is not None and ndim != data.ndim:
            raise GradloomError(f"requested dimensionality ({ndim}) does not match the data "
                                f"array's ({data.ndim})")
        self.dtype, self.ndim, self.device = data.dtype, data.ndim, data.device
        shape = list(data.shape)
        for k, idx in enumerate(_index_list(indices, data.ndim)):
            if idx is not None:
                _check_indices(idx, data)
                self.indices[k] = idx
                shape[k] = idx.shape[0]
        self.shape = tuple(shape)
        self.size = math.prod(shape)

    @classmethod
    def __class_getitem__(cls, params: Any) -> indexedarray:
        """`wp.indexedarray[float]`, `wp.indexedarray[float, Literal[2]]`: an annotation."""
        if not isinstance(params, tuple):
            return cls(dtype=params)
        if len(params) != 2:
            raise TypeError(f"wp.indexedarray[...] takes (dtype) or (dtype, ndim), got "
                            f"{len(params)} parameters")
        return cls(dtype=params[0], ndim=annotation_ndim(params[1]))

    # -- Python-scope access (copies, like Warp's non-contiguous arrays) ----------------------

    def _source(self) -> NDArray:
        if self.data is None:
            raise GradloomError(f"{self!r} is a type annotation; it has no memory")
        return self.data.numpy()

    def _selector(self) -> tuple[Any, ...]:
        """numpy advanced-indexing key selecting the view's elements (an outer product)."""
        keys = []
        for k in range(self.ndim):
            idx = self.indices[k]
            sel = np.arange(self.data.shape[k]) if idx is None else idx.numpy()  # type: ignore[union-attr]
            shape = [1] * self.ndim
            shape[k] = -1
            keys.append(np.asarray(sel, dtype=np.int64).reshape(shape))
        return tuple(keys)

    def numpy(self) -> NDArray:
        """The elements, gathered into a new numpy array."""
        return np.array(self._source()[self._selector()], copy=True)

    def list(self) -> list[Any]:
        return array(self.numpy(), dtype=self.dtype).list() if self.size else []

    def contiguous(self) -> array:
        """A new contiguous array holding the elements."""
        if self.size == 0:
            return array(shape=self.shape, dtype=self.dtype, device=self.device)
        return array(self.numpy(), dtype=self.dtype, device=self.device)

    def fill_(self, value: Any) -> None:
        storage = self._source()
        self.data._overwrite(self._selector())  # type: ignore[union-attr]
        try:
            storage[self._selector()] = fill_value(self.dtype, value)
        except (TypeError, ValueError) as e:
            raise GradloomError(f"cannot fill an indexed array of {self.dtype!r} with "
                                f"{value!r}: {e}") from e

    def zero_(self) -> None:
        storage = self._source()
        self.data._overwrite(self._selector())  # type: ignore[union-attr]
        storage[self._selector()] = 0

    def assign(self, src: Any) -> None:
        """Copy src (an array, indexed array, numpy array or nested list of this shape) in."""
        storage = self._source()
        values = src.numpy() if isinstance(src, (array, indexedarray)) else src
        data = fit_data(np.asarray(values, dtype=storage_dtype(self.dtype)), self.dtype, None) \
            if np.size(values) else np.asarray(values, dtype=storage_dtype(self.dtype))
        es = storage.ndim - self.data.ndim  # type: ignore[union-attr]
        if data.size and data.shape[:data.ndim - es] != self.shape:
            raise GradloomError(f"assign: source of shape {data.shape} does not match the "
                                f"indexed array's shape {self.shape}")
        self.data._overwrite(self._selector())  # type: ignore[union-attr]
        if data.size:
            storage[self._selector()] = data

    def to(self, device: Any) -> indexedarray:
        return self

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        if self.data is None:
            return self.annotation_repr()
        return f"indexedarray(shape={self.shape}, dtype={self.dtype!r})"

    @property
    def is_contiguous(self) -> bool:
        """Never: an indexed view gathers its elements (as Warp's)."""
        return False

    def _annotation_key(self) -> tuple[str, Any, int] | None:
        return ("indexedarray", self.dtype, self.ndim) if self.data is None else None

    def __str__(self) -> str:
        return repr(self) if self.data is None else str(self.numpy())


def _make_fixed(n: int) -> type[indexedarray]:
    cls = type(f"indexedarray{n}d", (indexedarray,), {"_fixed_ndim": n,
                                                       "__module__": __name__})
    cls.__doc__ = f"`wp.indexedarray{n}d`: an {n}-dimensional indexed array (or annotation)."
    return cls


indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d = (_make_fixed(n)
                                                                  for n in range(1, 5))


def _index_list(indices: Any, ndim: int) -> list[array | None]:
    if indices is None:
        return []
    if isinstance(indices, array):
        return [indices]
    if not isinstance(indices, (list, tuple)):
        raise GradloomError("indices must be a wp.array or a list of wp.array (or None)")
    if len(indices) > ndim:
        raise GradloomError(f"{len(indices)} index arrays for a {ndim}-dimensional array")
    return list(indices)


def _check_indices(idx: Any, data: array) -> None:
    if not isinstance(idx, array):
        raise GradloomError(f"index arrays must be wp.array, got {type(idx).__name__}")
    if idx.ndim != 1 or idx.dtype != int32:
        raise GradloomError(f"index arrays must be 1-D int32, got {idx!r}")
    if idx.device != data.device:
        raise GradloomError(f"index array device ({idx.device}) does not match the data "
                            f"array's ({data.device})")


@INDEXED_WORDS.fill
def indexed_words(value: Any, t: IndexedArrayType) -> list[Any]:
    """data, grad, indexed shape, data strides, index pointers: an indexed array argument
    (a Fabric array's words: runtime/array/fabric.py)."""
    if isinstance(t, FabricArrayType):
        return fabric_words(value, t)
    if not isinstance(value, indexedarray) or value.data is None:  # Warp's words
        raise TypeError(f"expects an array of type {type_repr(t)}, but passed value has type "
                        f"{type(value).__name__}")
    if value.ndim != t.ndim or value.dtype != t.dtype:
        raise TypeError(f"expected {t!r}, got {value!r}")
    d = value.data
    grad = d.grad
    ptrs = [0 if i is None else i.ptr or 0 for i in value.indices[:t.ndim]]
    return [d.ptr or 0, 0 if grad is None else grad.ptr or 0, *value.shape, *d.strides, *ptrs]


@FIELD_STUB.fill
def field_stub(t: IndexedArrayType) -> Any:
    """A data-less indexed (or Fabric) array of type t: what a struct array's element holds
    in such a field when read back in Python (as Warp's `list()`)."""
    if isinstance(t, FabricArrayType):
        cls = indexedfabricarray if t.indexed else fabricarray
        return cls(dtype=t.dtype, ndim=t.ndim)
    return indexedarray(dtype=t.dtype, ndim=t.ndim)


@INDEX_VIEW.fill
def index_view(a: array, keys: tuple[Any, ...]) -> indexedarray:
    """`a[keys]` where some keys are index arrays: slices and integers first, then indices."""
    plain = tuple(k if not isinstance(k, array) else slice(None) for k in keys)
    base = a[plain] if any(k != slice(None) for k in plain) else a
    # integers remove dimensions: the index arrays follow the dimensions that remain
    indices = [k for k in keys if not isinstance(k, int)]
    return indexedarray(base, [k if isinstance(k, array) else None for k in indices])
