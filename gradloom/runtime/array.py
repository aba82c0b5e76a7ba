"""The Warp-style `array` class: numpy-backed CPU storage, its attributes, views and element access."""

from __future__ import annotations

import math
import operator
import typing
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np

from gradloom.errors import ArrayShapeError, GradloomError
from gradloom.runtime.array_annotation import AnnotationProtocols, annotation_ndim
from gradloom.runtime.array_arith import ArrayArithmetic
from gradloom.runtime.array_protocols import ArrayProtocols, aligned_zeros
from gradloom.runtime.array_storage import MAX_DIMS as MAX_DIMS
from gradloom.runtime.array_storage import NDArray as NDArray
from gradloom.runtime.array_storage import (
    bf16_storage,
    copy_storage,
    element_value,
    infer_dtype,
    is_bf16,
    storage_from_ptr,
    strided_zeros,
    to_numpy,
    view_storage,
    zeros_same_layout,
)
from gradloom.runtime.array_storage import elem_shape as elem_shape
from gradloom.runtime.array_storage import fit_data as fit_data
from gradloom.runtime.array_storage import normalize_shape as normalize_shape
from gradloom.runtime.array_storage import resolve_dtype as resolve_dtype
from gradloom.runtime.array_storage import storage_dtype as storage_dtype
from gradloom.runtime.capturing import deferrable, recording_graph
from gradloom.runtime.device import Device, get_device
from gradloom.runtime.layout import is_contiguous, packed_strides, same_layout, span
from gradloom.runtime.memops import copy_into, fill, zero_all
from gradloom.runtime.readmarks import ReadMarks
from gradloom.runtime.recording import (
    ACTIVE_TAPES,
    forward_step,
    on_host,
    record_copy,
    record_op,
)
from gradloom.runtime.watch import Memory, before_write
from gradloom.types import ArrayType, IndexedArrayType, ScalarType, StructType, size_of

from ..hooks import Hook
from .array_storage import ARRAY_CLASS

#: what this module's class calls of modules built on it, which fill these when imported:
#: `a.to(device)` copies as wp.clone (array_ops.py); `a[I]` with index arrays is an indexed view,
#: and an indexed array in a struct packs its words (indexedarray.py)
CLONE: Hook[Any] = Hook("array.to()", "gradloom.runtime.array_ops")
INDEX_VIEW: Hook[Any] = Hook("indexing with arrays", "gradloom.runtime.indexedarray")
INDEXED_WORDS: Hook[Any] = Hook("indexed arrays in structs", "gradloom.runtime.indexedarray")

# --------------------------------------------------------------------------------------------
# The array class


class _GlType:
    """`__gl_type__`: an instance's ArrayType; on the class itself, a generic (dtype Any) one."""

    def __get__(self, obj: array | None, owner: type[array]) -> Callable[[], ArrayType]:
        if obj is None:
            generic = ArrayType(dtype=typing.Any, ndim=owner._fixed_ndim or 1)
            return lambda: generic
        gl = obj._type
        return lambda: gl


@ARRAY_CLASS.fill
class array(ArrayArithmetic, AnnotationProtocols, ArrayProtocols, ReadMarks):
    """A Warp-style array of 1-4 dimensions (or, built with only dtype/ndim, an annotation)."""

    _fixed_ndim: ClassVar[int | None] = None
    __gl_type__ = _GlType()

    dtype: Any
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    ndim: int
    size: int
    device: Device
    ptr: int | None  # None for an empty array (as Warp)
    is_contiguous: bool
    pinned: bool
    _np: NDArray
    _type: ArrayType
    _annotation: bool
    _grad: array | None
    _requires_grad: bool
    _mem: Memory  # shared by the views of one allocation (see watch.py)
    #: the launch words last packed for this array (runtime/packing.py): they change only
    #: with the gradient (pointer, shape and strides never change), whose setters drop them
    _words: tuple[int, ...] | None = None
    #: (dtype, the words): what a launch block recalled for this array depends on
    #: (runtime/packing.py `Packer.fill`), dropped with the words
    _launch_key: tuple[Any, tuple[int, ...]] | None = None

    def __init__(
        self,
        data: Any = None,
        dtype: Any = typing.Any,
        shape: Any = None,
        strides: Any = None,
        ndim: int | None = None,
        device: Any = None,
        requires_grad: bool = False,
        copy: bool = True,
        ptr: int | None = None,
        capacity: int | None = None,
        owner: bool = False,
        deleter: Any = None,
        pinned: bool = False,
        retain_grad: bool = False,
    ) -> None:
        ndim = self._fixed_ndim or ndim
        if data is None and shape is None and ptr is None:
            self._init_annotation(dtype, ndim)
            return
        dev = get_device(device)
        dims = None if shape is None else normalize_shape(shape)
        # the device's backend allocates (or wraps `ptr`) and fills (runtime/backend.py)
        dev.backend.init_array(self, dev, data, dtype, dims, strides, ptr, capacity, ndim,
                               requires_grad, deleter, copy)

    def _init_host(self, device: Device, data: Any, dtype: Any, dims: tuple[int, ...] | None,
                   strides: Any, ptr: int | None, capacity: int | None, ndim: int | None,
                   requires_grad: bool, copy: bool) -> None:
        """`__init__` in host memory (the CPU backend's `init_array`)."""
        if ptr is not None:
            t = resolve_dtype(float if dtype is typing.Any else dtype)
            storage = storage_from_ptr(ptr, t, dims, strides, capacity)
        elif data is not None:
            storage, t = _storage_from_data(data, dtype, dims, copy)
        else:
            t = resolve_dtype(float if dtype is typing.Any else dtype)
            storage = aligned_zeros((*(dims or ()), *elem_shape(t)), storage_dtype(t)) \
                if strides is None else strided_zeros(dims or (0,), t, strides)
        # as in Warp, data's own shape wins over ndim (wp.array(np.array([]), ndim=2) is 1-D)
        self._bind(storage, t, device, ndim if data is None else None)
        self._grad, self._requires_grad = None, False
        self.requires_grad = requires_grad

    def __class_getitem__(cls, params: Any) -> array:
        """`wp.array[float]`, `wp.array2d[wp.vec3]`, `wp.array[float, 2]`: an annotation, the
        same as `wp.array(dtype=float, ndim=...)`."""
        if isinstance(params, tuple):
            if cls._fixed_ndim is not None or len(params) != 2:
                want = "(dtype)" if cls._fixed_ndim is not None else "(dtype) or (dtype, ndim)"
                raise TypeError(f"wp.{cls.__name__}[...] takes {want}, got {len(params)} "
                                "parameters")
            return cls(dtype=params[0], ndim=annotation_ndim(params[1]))
        return cls(dtype=params)

    def _init_annotation(self, dtype: Any, ndim: int | None) -> None:
        t = typing.Any if dtype is typing.Any else resolve_dtype(dtype)
        n = 1 if ndim is None else int(ndim)
        if not 1 <= n <= MAX_DIMS:
            raise GradloomError(f"arrays have 1 to {MAX_DIMS} dimensions, got ndim={ndim}")
        self._annotation, self.dtype, self.ndim = True, t, n
        self._type = ArrayType(dtype=t, ndim=n)
        self.shape, self.strides, self.size, self.ptr = (), (), 0, None
        self.device, self.is_contiguous, self.pinned = get_device("cpu"), True, False
        self._np = np.zeros(0, dtype=np.float32)
        self._grad, self._requires_grad = None, False
        self._mem = Memory()

    def _bind(self, storage: NDArray, t: Any, device: Device, ndim: int | None = None) -> None:
        k = len(elem_shape(t))
        n = storage.ndim - k
        if not 1 <= n <= MAX_DIMS:
            raise GradloomError(
                f"arrays have 1 to {MAX_DIMS} dimensions; data of shape {storage.shape} with "
                f"dtype {t!r} has {n}"
            )
        if ndim is not None and ndim != n:
            raise GradloomError(f"expected {ndim}-dimensional data, got shape {storage.shape[:n]}")
        self._annotation, self._np, self.dtype, self.device = False, storage, t, device
        self.shape, self.strides, self.ndim = storage.shape[:n], storage.strides[:n], n
        self.size = math.prod(self.shape)
        self.ptr = int(storage.ctypes.data) if self.size else None
        self.is_contiguous = is_contiguous(self.shape, self.strides, size_of(t))
        self.pinned = False
        self._type = ArrayType(dtype=t, ndim=n)
        self._mem = Memory()

    @classmethod
    def _wrap(cls, storage: NDArray, t: Any, device: Device, grad: NDArray | None = None,
              mem: Memory | None = None) -> array:
        """An array over existing storage (a view of the allocation `mem`, if given), with
        `grad` as its gradient storage."""
        out = array.__new__(array)
        out._bind(storage, t, device)
        out._grad = None if grad is None else array._wrap(grad, t, device)
        out._requires_grad = grad is not None
        if mem is not None:
            out._mem = mem
        return out

    def _concrete(self) -> NDArray:
        if self._annotation:
            raise GradloomError(
                f"{self!r} is a type annotation (built without data or shape); it has no "
                "memory. Use wp.zeros/wp.empty/wp.array(data) to allocate an array."
            )
        return self._np

    def launch_words(self) -> tuple[int, ...]:
        """Data pointer, gradient pointer, shape, strides: the words an array argument takes
        in a launch block (abi.py `array_words`) — the one builder of them."""
        grad = self._grad
        return (self.ptr or 0, 0 if grad is None else grad.ptr or 0, *self.shape, *self.strides)

    # ---- gradient --------------------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        storage = self._concrete()
        self._words = self._launch_key = None  # the old gradient's launch words
        if value and self._grad is None:
            self._grad = array._wrap(zeros_same_layout(storage), self.dtype, self.device)
        elif not value:
            self._grad = None
        self._requires_grad = bool(value)

    @property
    def grad(self) -> array | None:
        return self._grad

    @grad.setter
    def grad(self, value: Any) -> None:
        storage = self._concrete()
        self._words = self._launch_key = None  # the old gradient's launch words
        if value is None:
            self._grad, self._requires_grad = None, False
            return
        g = value if isinstance(value, array) else array(value, dtype=self.dtype, copy=False)
        if g.dtype != self.dtype or not same_layout(g._concrete(), storage):
            raise GradloomError(
                f"incompatible gradient: expected shape {self.shape}, dtype {self.dtype!r} and "
                f"strides {self.strides}; got shape {g.shape}, dtype {g.dtype!r}, strides "
                f"{g.strides}"
            )
        self._grad, self._requires_grad = g, True

    # ---- layout ----------------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        """Bytes spanned by the elements, from the first to the end of the last."""
        self._concrete()  # an annotation has no memory
        lo, hi = span(self.shape, self.strides, size_of(self.dtype))
        return hi - lo

    @property
    def vars(self) -> dict[str, Any]:
        """The fields of a struct array's storage (Warp's `vars`), else an empty dict."""
        names = self._concrete().dtype.names or ()
        return {name: self._np[name] for name in names}

    def numpy(self) -> NDArray:
        """A zero-copy numpy view (element dims, then a vector/matrix's trailing dims)."""
        return self._concrete()

    def to(self, device: Any) -> array:
        dev = get_device(device)
        self._concrete()
        if dev is not self.device:  # a copy on the other device, as wp.clone makes
            return CLONE.get()(self, device=dev)
        return self

    def contiguous(self) -> array:
        storage = self._concrete()
        if self.is_contiguous:
            return self
        packed = aligned_zeros(storage.shape, storage.dtype)
        copy_into(packed, storage)
        out = array._wrap(packed, self.dtype, self.device)
        out.requires_grad = self._requires_grad
        return out

    def reshape(self, shape: Any) -> array:
        storage = self._concrete()
        if not self.is_contiguous:
            raise GradloomError(
                f"cannot reshape a non-contiguous array (shape {self.shape}, strides "
                f"{self.strides}); call .contiguous() first"
            )
        dims = normalize_shape(shape, "reshape() shape", infer=True)
        try:
            view = storage.reshape(dims + elem_shape(self.dtype))
        except ValueError:
            size = math.prod(d for d in dims if d >= 0)
            raise ArrayShapeError(f"cannot reshape array of shape {self.shape} (size {self.size}) "
                                  f"into shape {dims} (size {size})") from None
        view = _packed(view)
        grad = None if self._grad is None else _packed(self._grad.numpy().reshape(view.shape))
        return array._wrap(view, self.dtype, self.device, grad, self._mem)

    def view(self, dtype: Any) -> array:
        """This array's memory seen as elements of another type (no copy), as Warp's
        `view`: `ints.view(wp.uint32)`, `vec4s.view(float)` (shape gains (4,)),
        `floats.view(wp.vec4)` (the last dim of 4 becomes the element)."""
        t = resolve_dtype(dtype)
        storage = view_storage(self._concrete(), self.dtype, t, self.ndim)
        grad = None if self._grad is None else \
            view_storage(self._grad.numpy(), self.dtype, t, self.ndim)
        return array._wrap(storage, t, self.device, grad, self._mem)

    def __del__(self) -> None:
        """Nothing to free: numpy owns the memory (Warp's arrays free theirs here)."""

    def flatten(self) -> array:
        return self.reshape(-1)

    def transpose(self, axes: Any = None) -> array:
        storage = self._concrete()
        perm = tuple(reversed(range(self.ndim))) if axes is None else tuple(axes)
        if sorted(perm) != list(range(self.ndim)):
            raise GradloomError(
                f"transpose axes {axes!r} are not a permutation of {self.ndim} dims"
            )
        full = perm + tuple(range(self.ndim, storage.ndim))
        grad = None if self._grad is None else self._grad.numpy().transpose(full)
        return array._wrap(storage.transpose(full), self.dtype, self.device, grad, self._mem)

    # ---- values ----------------------------------------------------------------------------

    def _overwrite(self, key: Any = None) -> None:
        """Before this array (or its elements at key) is overwritten: keep what tapes need, and
        record that the old values get no gradient through the new ones."""
        before_write(self)
        if ACTIVE_TAPES.get():
            forward_step("overwritten", self, ... if key is None else key)
        if self._grad is not None and ACTIVE_TAPES.get():
            where = ... if key is None else key

            def backward() -> None:
                grad = self._grad  # the gradient at backward time (the user may replace it)
                if grad is None:
                    return
                if grad.device.backend.overwrite_step(grad, where):
                    return
                on_host([grad], lambda g: g.__setitem__(where, 0))

            record_op(backward, [self], devices=True, carried=True)

    @deferrable("array.fill_()")
    def fill_(self, value: Any) -> None:
        storage = self._concrete()
        self._overwrite()
        try:
            fill(storage, _fill_value(self.dtype, value))
        except (TypeError, ValueError) as e:
            raise GradloomError(
                f"cannot fill an array of {self.dtype!r} with {value!r}: {e}"
            ) from e

    @deferrable("array.zero_()")
    def zero_(self) -> None:
        storage = self._concrete()
        self._overwrite()
        fill(storage, 0)

    @deferrable("array.assign()")
    def assign(self, src: Any) -> None:
        """Copy `src` (an array, numpy array or nested list of the same shape) into this array."""
        storage = self._concrete()
        if isinstance(src, array):
            if src.shape != self.shape:
                raise GradloomError(f"assign: source shape {src.shape} != destination {self.shape}")
            self._overwrite()
            copy_storage(self, src)
            record_copy(self, src)
            return
        data = fit_data(to_numpy(src, storage_dtype(self.dtype), False, self.dtype), self.dtype,
                        None)
        if data.shape != storage.shape:
            raise GradloomError(
                f"assign: source data of shape {data.shape[: data.ndim - len(elem_shape(self.dtype))]}"
                f" does not match the array's shape {self.shape} (dtype {self.dtype!r})"
            )
        self._overwrite()
        copy_into(storage, data)

    def list(self) -> list[Any]:
        """The elements in order, flattened (vector/matrix elements as their value type)."""
        es = elem_shape(self.dtype)
        flat = self._concrete().reshape((self.size, *es))
        if isinstance(self.dtype, StructType):
            return [element_value(self.dtype, r) for r in flat]
        if is_bf16(self.dtype):
            flat = element_value(self.dtype, flat)
        if es:
            return [self.dtype(x) for x in flat]
        return flat.tolist()  # type: ignore[no-any-return]

    # ---- indexing --------------------------------------------------------------------------

    def _index(self, key: Any) -> tuple[int | slice, ...]:
        keys = key if isinstance(key, tuple) else (key,)
        out: list[int | slice] = []
        for k in keys:
            if isinstance(k, slice):
                out.append(k)
                continue
            try:
                out.append(operator.index(k))
            except TypeError as e:
                raise GradloomError(
                    f"array indices in Python scope must be integers or slices, got {k!r}"
                ) from e
        if len(out) > self.ndim:
            raise IndexError(f"too many indices ({len(out)}) for an array of {self.ndim} dims")
        return tuple(out)

    def __getitem__(self, key: Any) -> Any:
        storage = self._concrete()
        keys = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, array) for k in keys):  # `a[I]`: an indexed view, as in Warp
            return INDEX_VIEW.get()(self, keys)
        idx = self._index(key)
        if len(idx) == self.ndim and all(isinstance(k, int) for k in idx):
            value = element_value(self.dtype, storage[idx])
            return self.dtype(value) if elem_shape(self.dtype) else value
        grad = None if self._grad is None else self._grad.numpy()[idx]
        return array._wrap(storage[idx], self.dtype, self.device, grad, self._mem)

    @deferrable("array[...] =")
    def __setitem__(self, key: Any, value: Any) -> None:
        storage = self._concrete()
        idx = self._index(key)
        src = value.numpy() if isinstance(value, array) else value
        if is_bf16(self.dtype) and not isinstance(value, array):
            src = bf16_storage(src)
        self._overwrite(idx)
        try:
            storage[idx] = src
        except (TypeError, ValueError) as e:
            raise GradloomError(f"cannot store {value!r} into {self!r}[{key!r}]: {e}") from e
        if isinstance(value, array):
            record_copy(self, value, idx)

    def __len__(self) -> int:
        return int(self._concrete().shape[0])

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    # ---- numpy interop and printing --------------------------------------------------------

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> NDArray:
        out = self._concrete()
        if dtype is not None:
            out = out.astype(dtype, copy=False)
        return out.copy() if copy else out

    @property
    def __array_interface__(self) -> dict[str, Any]:
        storage = self._concrete()
        out = dict(storage.__array_interface__)
        out["strides"] = storage.strides  # explicit: numpy drops an empty array's
        return out

    def __repr__(self) -> str:
        if self._annotation:
            return self.annotation_repr()
        return f"array(shape={self.shape}, dtype={self.dtype!r})"

    def _annotation_key(self) -> tuple[str, Any, int] | None:
        return ("array", self.dtype, self.ndim) if self._annotation else None

    def __str__(self) -> str:
        return repr(self) if self._annotation else str(self._np)


def _packed(view: NDArray) -> NDArray:
    """A reshaped view of packed storage, with packed strides: numpy already gives them unless
    the view is empty, where Warp's reshape still makes them packed (so it stays contiguous)."""
    if view.size:
        return view
    return np.lib.stride_tricks.as_strided(view, strides=packed_strides(view.shape, view.itemsize))


def zero_arrays(arrays: list[Any]) -> None:
    """`zero_()` on every array, the host ones together (`memops.zero_all` shares many small
    ones out to the threads: a Tape's gradients); device arrays one by one; inside a graph
    capture each `zero_` is deferred, as always."""
    if recording_graph() is not None:
        for a in arrays:
            a.zero_()
        return
    host = []
    for a in arrays:
        if a.device.backend.host_memory:
            host.append(a._concrete())
            a._overwrite()  # what tapes still need of it is kept first, as zero_() does
        else:  # device memory
            a.zero_()
    zero_all(host)


def _storage_from_data(
    data: Any, dtype: Any, shape: tuple[int, ...] | None, copy: bool
) -> tuple[NDArray, Any]:
    if dtype is typing.Any or dtype is None:
        if isinstance(data, array):
            t = data.dtype
            arr = to_numpy(data, None, copy)
        else:
            arr = to_numpy(data, None, copy)
            t = infer_dtype(arr)
    else:
        t = resolve_dtype(dtype)
        if isinstance(t, StructType) and not isinstance(data, (array, np.ndarray)):
            data = [struct_record(item, t) for item in data]
        arr = to_numpy(data, storage_dtype(t), copy, t)
    return fit_data(arr, t, shape), t


def struct_record(item: Any, t: StructType) -> Any:
    """A struct instance as the nested tuple numpy uses for one structured element (an array
    field as its words: data and grad pointers, shape, strides)."""
    if not isinstance(item, t.cls):
        return item  # tuples and the like go to numpy unchanged
    fields = []
    for name, ft in t.fields:
        v = getattr(item, name)
        if isinstance(ft, StructType):
            v = struct_record(v, ft)
        elif isinstance(ft, (ArrayType, IndexedArrayType)):
            v = _array_field_words(v, ft)
        elif is_bf16(ft):
            v = bf16_storage(v)
        fields.append(v)
    return tuple(fields)


def _array_field_words(v: Any, t: ArrayType | IndexedArrayType) -> list[int]:
    if v is None:
        return [0] * (t.size // 8)
    if isinstance(t, IndexedArrayType):
        return [int(w) for w in INDEXED_WORDS.get()(v, t)]
    return list(v.launch_words())


def _fill_value(t: Any, value: Any) -> Any:
    """`value` shaped to broadcast over a storage of element type `t`."""
    if isinstance(value, array):
        raise TypeError("fill_ takes an element value; use assign() to copy an array")
    es = elem_shape(t)
    if isinstance(t, StructType) and isinstance(value, t.cls):
        return np.array(struct_record(value, t), dtype=storage_dtype(t))
    if not es:
        if isinstance(t, ScalarType) and np.ndim(value) != 0:
            raise TypeError(f"a {t!r} element takes a scalar")
        return bf16_storage(value) if is_bf16(t) else value
    v = bf16_storage(value) if is_bf16(t) else np.asarray(value, dtype=storage_dtype(t))
    if v.ndim == 0:
        return v
    if v.size != math.prod(es):
        raise TypeError(f"{t!r} has {math.prod(es)} components, the value has {v.size}")
    return v.reshape(es)
