"""The Warp-style `array` class: numpy-backed CPU storage, its attributes, views and element access."""

from __future__ import annotations

import math
import operator
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np

from gradloom.errors import GradloomError
from gradloom.runtime.array.aligned import aligned_zeros
from gradloom.runtime.array.annotation import AnnotationProtocols, annotation_ndim
from gradloom.runtime.array.arith import ArrayArithmetic
from gradloom.runtime.array.storage import MAX_DIMS as MAX_DIMS
from gradloom.runtime.array.storage import NDArray as NDArray
from gradloom.runtime.array.storage import (
    copy_storage,
    element_value,
    infer_dtype,
    is_bf16,
    storage_from_ptr,
    strided_zeros,
    to_numpy,
    view_storage,
)
from gradloom.runtime.array.storage import elem_shape as elem_shape
from gradloom.runtime.array.storage import fit_data as fit_data
from gradloom.runtime.array.storage import normalize_shape as normalize_shape
from gradloom.runtime.array.storage import resolve_dtype as resolve_dtype
from gradloom.runtime.array.storage import storage_dtype as storage_dtype
from gradloom.runtime.array.watch import Memory, before_write
from gradloom.runtime.capturing import recording_graph
from gradloom.runtime.device import Device, MemoryKind, get_device
from gradloom.runtime.layout import is_contiguous, span
from gradloom.runtime.memops import zero_all
from gradloom.runtime.readmarks import ReadMarks
from gradloom.runtime.recording import ACTIVE_TAPES, forward_step, on_host, record_op
from gradloom.types import ArrayType, StructType, size_of

from ...hooks import Hook
from .ctype import array_cptr, array_ctype
from .host import HostArray
from .lazy_zero import TOKEN, raw_ptr, settle
from .storage import ARRAY_CLASS, struct_record

#: what this module's class calls of modules built on it, which fill these when imported:
#: `a.to(device)` copies as wp.clone (array_ops.py); `a[I]` with index arrays is an indexed view,
#: and an indexed array in a struct packs its words (indexedarray.py)
CLONE: Hook[Any] = Hook("array.to()", "gradloom.runtime.array.ops")


class MemoryAttribute:
    """An attribute whose implementation depends on where the array's memory lives: it is the
    same-named attribute of the array's `_methods` (runtime/array/host.py `HostArray`,
    runtime/cuda/array.py `DeviceArray`), applied to the array."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return vars(obj._methods)[self.name].__get__(obj, owner)

    def __set__(self, obj: Any, value: Any) -> None:
        vars(obj._methods)[self.name].__set__(obj, value)

# --------------------------------------------------------------------------------------------
# The array class


class _GlType:
    """`__gl_type__`: an instance's ArrayType; on the class itself, a generic (dtype Any) one."""

    def __get__(self, obj: array | None, owner: type[array]) -> Callable[[], ArrayType]:
        if obj is None:
            generic = ArrayType(dtype=typing.Any, ndim=owner._fixed_ndim or 1)
            return lambda: generic
        gl, error = obj._type, obj._dtype_error
        if error is not None:  # an annotation of a dtype no array can hold: refused when used

            def refuse() -> ArrayType:
                raise GradloomError(error)

            return refuse
        return lambda: gl


@ARRAY_CLASS.fill
class array(ArrayArithmetic, AnnotationProtocols, ReadMarks):
    """A Warp-style array of 1-4 dimensions (or, built with only dtype/ndim, an annotation)."""

    _fixed_ndim: ClassVar[int | None] = None
    __gl_type__ = _GlType()
    #: in a kernel, `wp.array(ptr=..., shape=..., dtype=...)` is an array over raw memory
    __gl_kernel_builtin__: ClassVar[str] = "array"
    _ref: Any = None
    _dtype_error: str | None = None
    #: bytes from the first element to the end of the memory it lies in, where that is known
    #: and more than the elements span (a torch view: to the end of the tensor's storage)
    _storage_capacity: int | None = None

    dtype: Any
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    ndim: int
    size: int
    device: Device
    ptr: int | None  # None for an empty array (as Warp)
    is_contiguous: bool
    pinned: bool
    _np: NDArray  # host memory only: its numpy view
    _buffer: Any  # device memory only: the allocation its views share (runtime/cuda/array.py)
    #: the methods that depend on where the memory lives (see MemoryAttribute)
    _methods: Any
    _type: ArrayType
    _annotation: bool
    _grad: array | None
    _requires_grad: bool
    _mem: Memory  # shared by the views of one allocation (see watch.py)
    #: the launch words last packed for this array (runtime/launch/packing.py): they change only
    #: with the gradient (pointer, shape and strides never change), whose setters drop them
    _words: tuple[int, ...] | None = None
    #: Warp's `deleter`: the function `array(ptr=..., deleter=...)` was given, called with
    #: (ptr, bytes) once no view of the memory is left; None for memory gradloom owns
    deleter: Any = None
    #: (dtype, the words): what a launch block recalled for this array depends on
    #: (runtime/launch/packing.py `Packer.fill`), dropped with the words
    _launch_key: tuple[Any, tuple[int, ...]] | None = None
    _retain_grad: bool = False

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
        # with data, one -1 may stand for the size the data leaves (as Warp, numpy's reshape)
        dims = None if shape is None else normalize_shape(shape, infer=data is not None)
        # the device's backend allocates (or wraps `ptr`) and fills (runtime/backend.py)
        dev.backend.init_array(self, dev, data, dtype, dims, strides, ptr, capacity, ndim,
                               requires_grad, deleter, copy)
        if deleter is not None:
            self.deleter = deleter
        if retain_grad:
            self.retain_grad = True

    def _init_host(self, device: Device, data: Any, dtype: Any, dims: tuple[int, ...] | None,
                   strides: Any, ptr: int | None, capacity: int | None, ndim: int | None,
                   requires_grad: bool, copy: bool, deleter: Any = None) -> None:
        """`__init__` in host memory (the CPU backend's `init_array`)."""
        if ptr is not None:
            t = resolve_dtype(float if dtype is typing.Any else dtype)
            storage = storage_from_ptr(ptr, t, dims, strides, capacity, deleter)
        elif data is not None:
            storage, t = _storage_from_data(data, dtype, dims, copy)
        else:
            t = resolve_dtype(float if dtype is typing.Any else dtype)
            storage = aligned_zeros((*(dims or ()), *elem_shape(t)), storage_dtype(t)) \
                if strides is None else strided_zeros(dims or (0,), t, strides)
        # as in Warp, data's own shape wins over ndim (wp.array(np.array([]), ndim=2) is 1-D)
        self._bind(storage, t, device, ndim if data is None else None)
        if isinstance(data, np.ndarray) and np.may_share_memory(storage, data):
            self._ref = data  # as Warp's `_ref`: the numpy array whose memory this one is
        self._grad, self._requires_grad = None, False
        self.requires_grad = requires_grad

    def __class_getitem__(cls, params: Any) -> array:
        """`wp.array[float]`, `wp.array2d[wp.vec3]`, `wp.array[float, 2]`: an annotation, the
        same as `wp.array(dtype=float, ndim=...)`. With a TypeVar (`wp.array[IndexType]` in a
        generic class's Python-scope annotations, as Warp's array is Generic in its dtype): a
        typing alias, which no kernel parameter takes."""
        if any(isinstance(p, typing.TypeVar) for p in (params if isinstance(params, tuple)
                                                         else (params,))):
            return types.GenericAlias(cls, params)  # type: ignore[return-value]
        if isinstance(params, tuple):
            if cls._fixed_ndim is not None or len(params) != 2:
                want = "(dtype)" if cls._fixed_ndim is not None else "(dtype) or (dtype, ndim)"
                raise TypeError(f"wp.{cls.__name__}[...] takes {want}, got {len(params)} "
                                "parameters")
            return cls(dtype=params[0], ndim=annotation_ndim(params[1]))
        return cls(dtype=params)

    def _init_annotation(self, dtype: Any, ndim: int | None) -> None:
        try:
            t = typing.Any if dtype is typing.Any else resolve_dtype(dtype)
        except GradloomError as exc:
            if not isinstance(dtype, type):
                raise
            # as Warp, an annotation keeps a class it does not know as its dtype; the error
            # comes where the annotation is used (a kernel's or function's parameter)
            t, self._dtype_error = dtype, str(exc)
        n = 1 if ndim is None else ndim if ndim is typing.Any else int(ndim)
        if n is not typing.Any and not 1 <= n <= MAX_DIMS:
            raise GradloomError(f"arrays have 1 to {MAX_DIMS} dimensions, got ndim={ndim}")
        self._annotation, self.dtype, self.ndim = True, t, n
        self._type = ArrayType(dtype=t, ndim=n)
        self.shape, self.strides, self.size, self.ptr = (), (), 0, None
        self.device, self.is_contiguous, self.pinned = get_device("cpu"), True, False
        self._np = np.zeros(0, dtype=np.float32)
        self._methods = HostArray
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
        self._methods = HostArray

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

    @classmethod
    def _like(cls, a: array, storage: NDArray, grad: NDArray | None) -> array:
        """`_wrap(storage, a.dtype, a.device, grad)` for storage (and grad) laid out as host
        array `a`'s memory — its contents or a copy of them — taking the layout facts from `a`
        instead of working them out again (a Tape's backward makes one per array argument of
        every recorded launch)."""
        own = a._np if a._methods is HostArray else None
        if own is None or storage.shape != own.shape or storage.strides != own.strides or (
                grad is not None and (grad.shape != own.shape or grad.strides != own.strides)):
            return cls._wrap(storage, a.dtype, a.device, grad)
        out = _laid_out_as(a, storage, a)
        g = a._grad
        out._grad = None if grad is None else _laid_out_as(a, grad, g)
        out._requires_grad = grad is not None
        return out

    def _concrete(self) -> NDArray:
        """The host memory's numpy view; an error for an annotation or device memory."""
        if self._annotation:
            raise GradloomError(
                f"{self!r} is a type annotation (built without data or shape); it has no "
                "memory. Use wp.zeros/wp.empty/wp.array(data) to allocate an array."
            )
        try:
            return self._np
        except AttributeError:  # device memory: no host view
            raise GradloomError(
                f"this operation needs the array's memory on the host, and the array is on "
                f"{self.device}: use .numpy() for a host copy, or .to('cpu')") from None

    def launch_words(self) -> tuple[int, ...]:
        """Data pointer, gradient pointer, shape, strides: the words an array argument takes
        in a launch block (abi.py `array_words`) — the one builder of them."""
        grad = self._grad  # a gradient whose zeroing is deferred keeps it deferred (lazy_zero)
        return (self.ptr or 0, 0 if grad is None else raw_ptr(grad), *self.shape, *self.strides)

    # ---- gradient --------------------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        """Give the array a zeroed gradient of its layout (True) or drop it (False)."""
        self._methods.set_requires_grad(self, value)
        if not value:
            self._retain_grad = False

    @property
    def retain_grad(self) -> bool:
        """Warp's flag that stores keep (not consume) this array's gradient: kept, with no
        effect (gradloom's stores consume gradients as always: docs/differences.md). Only an
        array with a gradient takes it, as in Warp."""
        return self._retain_grad

    @retain_grad.setter
    def retain_grad(self, value: bool) -> None:
        if value and not self.requires_grad:
            raise ValueError("retain_grad=True needs an array with requires_grad=True")
        self._retain_grad = bool(value)

    @property
    def grad(self) -> array | None:
        return self._grad

    @grad.setter
    def grad(self, value: Any) -> None:
        """Set the gradient: an array of this one's dtype and layout, on its device (None:
        none)."""
        self._methods.set_grad(self, value)

    # ---- layout ----------------------------------------------------------------------------

    @property
    def memory_kind(self) -> MemoryKind:
        """The kind of memory holding the data (Warp's): HOST or PINNED host memory,
        CUDA_DEVICE memory; UNKNOWN for an annotation, which has none."""
        if self._annotation:
            return MemoryKind.UNKNOWN
        if self.device.is_cuda:
            return MemoryKind.CUDA_DEVICE
        return MemoryKind.PINNED if self.pinned else MemoryKind.HOST

    @property
    def capacity(self) -> int:
        """Bytes spanned by the elements, from the first to the end of the last (for an array
        over a torch tensor, to the end of the tensor's storage, as Warp reports)."""
        if self._annotation:
            self._concrete()  # raises: an annotation has no memory
        if self._storage_capacity is not None:
            return self._storage_capacity
        lo, hi = span(self.shape, self.strides, size_of(self.dtype))
        return hi - lo

    @property
    def vars(self) -> dict[str, Any]:
        """The fields of a struct array's storage (Warp's `vars`), else an empty dict."""
        storage = self._concrete()
        return {name: storage[name] for name in storage.dtype.names or ()}

    def numpy(self) -> NDArray:
        """The elements as numpy (element dims, then a vector/matrix's trailing dims): a
        zero-copy view of host memory, a host copy of device memory."""
        return self._methods.numpy(self)  # type: ignore[no-any-return]

    def to(self, device: Any) -> array:
        dev = get_device(device)
        if self._annotation:
            self._concrete()  # raises: an annotation has no memory
        if dev is not self.device:  # a copy on the other device, as wp.clone makes
            return CLONE.get()(self, device=dev)  # type: ignore[no-any-return]
        return self

    def contiguous(self) -> array:
        """This array if it is contiguous, else a contiguous copy on its device."""
        if self._annotation:
            self._concrete()  # raises: an annotation has no memory
        if self.is_contiguous:
            return self
        out = array(shape=self.shape, dtype=self.dtype, device=self.device)
        copy_storage(out, self)
        out.requires_grad = self._requires_grad
        return out

    def reshape(self, shape: Any) -> array:
        return self._methods.reshape(self, shape)  # type: ignore[no-any-return]

    def view(self, dtype: Any) -> array:
        """This array's memory seen as elements of another type (no copy), as Warp's
        `view`: `ints.view(wp.uint32)`, `vec4s.view(float)` (shape gains (4,)),
        `floats.view(wp.vec4)` (the last dim of 4 becomes the element)."""
        t = resolve_dtype(dtype)
        storage = view_storage(self._concrete(), self.dtype, t, self.ndim)
        grad = None if self._grad is None else \
            view_storage(self._grad.numpy(), self.dtype, t, self.ndim)
        return array._wrap(storage, t, self.device, grad, self._mem)

    def __getattr__(self, name: str) -> Any:
        """Only for attributes an instance lacks: a gradient whose zeroing `Tape.zero()`
        deferred lacks its memory's (`_np`, `ptr`) until it is zeroed (lazy_zero.py)."""
        if name in ("_np", "ptr") and TOKEN in self.__dict__:
            settle(self)
            return self.__dict__[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __del__(self) -> None:
        """Nothing to free: numpy owns the memory (Warp's arrays free theirs here)."""

    def flatten(self) -> array:
        return self.reshape(-1)

    def transpose(self, axes: Any = None) -> array:
        return self._methods.transpose(self, axes)  # type: ignore[no-any-return]

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

    def fill_(self, value: Any) -> None:
        self._methods.fill_(self, value)

    def zero_(self) -> None:
        self._methods.zero_(self)

    def assign(self, src: Any) -> None:
        """Copy `src` (an array on any device, numpy data or a nested list of the same shape)
        into this array."""
        self._methods.assign(self, src)

    def __ctype__(self) -> Any:
        """Warp's ctypes descriptor of the array: its launch words (runtime/array/ctype.py)."""
        return array_ctype(self)

    def cptr(self) -> Any:
        """A ctypes pointer to the first element (host memory), as Warp's `cptr()`."""
        return array_cptr(self)

    def list(self) -> list[Any]:
        """The elements in order, flattened (vector/matrix elements as their value type)."""
        es = elem_shape(self.dtype)
        flat = self.numpy().reshape((self.size, *es))
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
        return self._methods.__getitem__(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._methods.__setitem__(self, key, value)

    def __len__(self) -> int:
        if self._annotation:
            self._concrete()  # raises: an annotation has no elements
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    # ---- numpy interop and printing --------------------------------------------------------

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> NDArray:
        out = self.numpy()
        if dtype is not None:
            out = out.astype(dtype, copy=False)
        return out.copy() if copy else out

    #: numpy's and the CUDA Array Interface's views of the memory: one or the other exists
    __array_interface__ = MemoryAttribute()
    __cuda_array_interface__ = MemoryAttribute()

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule sharing this array's memory (vector/matrix components trail)."""
        return self._methods.__dlpack__(self, stream=stream, max_version=max_version,
                                        dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._methods.__dlpack_device__(self)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        if self._annotation:
            return self.annotation_repr()
        return f"array(shape={self.shape}, dtype={self.dtype!r})"

    def _annotation_key(self) -> tuple[str, Any, int] | None:
        return ("array", self.dtype, self.ndim) if self._annotation else None

    def __str__(self) -> str:
        return repr(self) if self._annotation else str(self.numpy())


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


def _laid_out_as(a: array, storage: NDArray, source: array | None) -> array:
    """A host array with a's dtype, device and layout over `storage` (of that layout); its
    pointer is `source`'s where storage is source's memory."""
    out = array.__new__(array)
    ptr = source.ptr if source is not None and storage is source.__dict__.get("_np") else (
        int(storage.ctypes.data) if a.size else None)
    out.__dict__.update(_annotation=False, _np=storage, dtype=a.dtype, device=a.device,
                        shape=a.shape, strides=a.strides, ndim=a.ndim, size=a.size, ptr=ptr,
                        is_contiguous=a.is_contiguous, pinned=False, _type=a._type,
                        _mem=Memory(), _methods=HostArray)
    return out
