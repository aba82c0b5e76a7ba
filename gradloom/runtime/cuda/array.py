"""Arrays in CUDA device memory: `wp.array(..., device="cuda")`, its views, copies and fills.

A CUDA array is a `wp.array` whose elements live in a device allocation (storage.DeviceBuffer,
shared by its views); `init_device_array` (the CUDA backend's `init_array`) allocates it and
gives the array `DeviceArray` as its methods, the ones whose work depends on where the memory
lives (runtime/array/host.py says how). `numpy()` copies to the host, as in Warp. Operations
are queued on the device's current stream.

Not yet on the device: copies between non-contiguous arrays are staged through the host, and a
write into a non-contiguous view reads its whole byte span to the host, updates it and writes it
back (so another stream must not write the bytes between the view's elements meanwhile).
Writes call `_overwrite` (copy-on-write for tapes, and a recorded write consumes the gradient
of what it overwrote) and copies record their gradient flow, as on the CPU; a Tape's backward
step of such an operation runs on host copies of the gradients (recording.on_host).
"""

from __future__ import annotations

import math
import typing
from typing import Any, TypeGuard

import numpy as np

from ...errors import GradloomError
from ...types import ArrayType, size_of
from ..array.array import (
    MAX_DIMS,
    NDArray,
    _storage_from_data,
    array,
    copy_storage,
    elem_shape,
    fit_data,
    normalize_shape,
    resolve_dtype,
    storage_dtype,
)
from ..array.host import flat_pair
from ..array.storage import fill_value, to_numpy
from ..array.watch import Memory
from ..capturing import deferrable
from ..device import CPU, Device
from ..dlpack_capsule import DLPACK_CUDA, export
from ..layout import is_contiguous, packed_strides, same_layout, span
from ..mempool import is_mempool_enabled
from ..recording import record_copy
from ..stream import cuda_stream
from .driver import current
from .memory import DeviceBuffer, ExternalBuffer, dtod, dtoh, fill, htod
from .stream import order_streams


def address(a: Any) -> int:
    """The device address of an array's first element (0 for an empty array, whose ptr is
    None as in Warp)."""
    return a.ptr or 0


# --------------------------------------------------------------------------------------------
# layouts


def inner_strides(t: Any) -> tuple[int, ...]:
    es = elem_shape(t)
    return np.zeros(es, dtype=storage_dtype(t)).strides if es else ()


def index_view(shape: tuple[int, ...], strides: tuple[int, ...], idx: tuple[int | slice, ...]
               ) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """(byte offset, shape, strides) of the view `idx` (ints and slices) selects."""
    off, out_shape, out_strides = 0, [], []
    for d, (n, s) in enumerate(zip(shape, strides)):
        k = idx[d] if d < len(idx) else slice(None)
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            length = len(range(start, stop, step))
            off += start * s if length else 0
            out_shape.append(length)
            out_strides.append(s * step)
            continue
        i = k + n if k < 0 else k
        if not 0 <= i < n:
            raise IndexError(f"index {k} is out of bounds for dimension {d} with size {n}")
        off += i * s
    return off, tuple(out_shape), tuple(out_strides)


# --------------------------------------------------------------------------------------------
# the class


def is_device_array(a: Any) -> TypeGuard[array]:
    """Whether `a` is an array in CUDA memory."""
    return isinstance(a, array) and a._methods is DeviceArray


def stream_of(a: array) -> Any:
    """The driver stream work on `a` goes to: its device's current stream."""
    return cuda_stream(a.device).handle


class DeviceArray:
    """The methods of an array in CUDA memory (runtime/array/host.py says how arrays use
    them); `self` is the array, whose `_buffer` owns the allocation."""

    # ---- host copies -----------------------------------------------------------------------

    def numpy(self: Any) -> NDArray:
        """A host copy of the elements (waits for the work queued on the device's stream)."""
        return to_host(self)

    @property
    def __array_interface__(self: Any) -> dict[str, Any]:
        raise AttributeError(f"an array on {self.device} has no __array_interface__ (its "
                             "memory is not host memory): use .numpy()")

    @property
    def __cuda_array_interface__(self: Any) -> dict[str, Any]:
        """The CUDA Array Interface (version 3): numba, cupy and torch read device arrays
        through it, zero-copy. `stream` is the stream the data was produced on."""
        npdt = storage_dtype(self.dtype)
        handle = cuda_stream(self.device).value
        return {
            "version": 3,
            "shape": (*self.shape, *elem_shape(self.dtype)),
            "typestr": npdt.str,
            "descr": npdt.descr,
            "data": (self.ptr, False),
            "strides": None if self.is_contiguous else (*self.strides, *inner_strides(self.dtype)),
            "stream": handle if handle else 1,  # 1: the legacy default stream
        }

    def __dlpack__(self: Any, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule sharing this array's device memory (vector/matrix components
        trail). The stream handshake: work the consumer queues on `stream` (an int; None:
        CUDA's legacy default stream, 1; -1: no ordering) waits for the work gradloom has
        queued on the array's device so far. `copy=True` exports a copy."""
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"cannot export an array on {self.device} to DLPack device "
                              f"{tuple(dl_device)}")
        src = self
        if copy:
            src = new_array(self.device, self.shape, self.dtype, zero=False)
            copy_arrays(src, self)
        if stream != -1:
            order_streams(self.device.ordinal, cuda_stream(self.device).value,
                          1 if stream is None else int(stream))
        es = elem_shape(self.dtype)
        return export(src, address(src), self.device.ordinal, storage_dtype(self.dtype),
                      (*self.shape, *es), (*self.strides, *inner_strides(self.dtype)))

    def __dlpack_device__(self: Any) -> tuple[int, int]:
        return (DLPACK_CUDA, self.device.ordinal)

    # ---- gradient --------------------------------------------------------------------------

    def set_requires_grad(self: Any, value: bool) -> None:
        if value and self._grad is None:
            self._grad = zeros_same_layout(self)
        elif not value:
            self._grad = None
        self._requires_grad = bool(value)

    def set_grad(self: Any, value: Any) -> None:
        if value is None:
            self._grad, self._requires_grad = None, False
            return
        if not (is_device_array(value) and value.device is self.device
                and value.dtype == self.dtype and same_layout(value, self)):
            raise GradloomError(
                f"incompatible gradient: expected an array on {self.device} with shape "
                f"{self.shape}, dtype {self.dtype!r} and strides {self.strides}; got "
                f"{value!r}" + (f" on {value.device}" if isinstance(value, array) else ""))
        self._grad, self._requires_grad = value, True

    # ---- views -----------------------------------------------------------------------------

    def __getitem__(self: Any, key: Any) -> Any:
        keys = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, array) for k in keys):
            raise GradloomError(f"indexed views (a[index_array]) of arrays on {self.device} "
                                "are not supported yet")
        idx = self._index(key)
        off, shape, strides = index_view(self.shape, self.strides, idx)
        if not shape:
            return read_element(self, off)
        return view_of(self, off, shape, strides)

    @deferrable("array[...] =")
    def __setitem__(self: Any, key: Any, value: Any) -> None:
        idx = self._index(key)
        off, shape, strides = index_view(self.shape, self.strides, idx)
        target = view_of(self, off, shape or (1,), strides or (size_of(self.dtype),))
        self._overwrite(idx)
        if isinstance(value, array) and value.shape == target.shape:
            copy_arrays(target, value)
        else:
            full = (*target.shape, *elem_shape(self.dtype))
            src = value.numpy() if isinstance(value, array) else value
            try:
                data = np.broadcast_to(np.asarray(src, dtype=storage_dtype(self.dtype)), full)
            except (TypeError, ValueError) as e:
                raise GradloomError(f"cannot store {value!r} into {self!r}[{key!r}]: "
                                    f"{e}") from e
            write_host(target, data)
        if isinstance(value, array):
            record_copy(self, value, idx)

    def reshape(self: Any, shape: Any) -> array:
        if not self.is_contiguous:
            raise GradloomError(f"cannot reshape a non-contiguous array (shape {self.shape}, "
                                f"strides {self.strides}); call .contiguous() first")
        dims = list(normalize_shape(shape, "reshape() shape", infer=True))
        if -1 in dims:
            known = math.prod(d for d in dims if d != -1)
            if known == 0 or self.size % known:
                raise GradloomError(f"cannot reshape an array of shape {self.shape} to "
                                    f"{tuple(dims)}")
            dims[dims.index(-1)] = self.size // known
        if math.prod(dims) != self.size:
            raise GradloomError(f"cannot reshape an array of shape {self.shape} to "
                                f"{tuple(dims)}")
        return view_of(self, 0, tuple(dims), packed_strides(tuple(dims), size_of(self.dtype)))

    def transpose(self: Any, axes: Any = None) -> array:
        perm = tuple(reversed(range(self.ndim))) if axes is None else tuple(axes)
        if sorted(perm) != list(range(self.ndim)):
            raise GradloomError(f"transpose axes {axes!r} are not a permutation of "
                                f"{self.ndim} dims")
        return view_of(self, 0, tuple(self.shape[p] for p in perm),
                          tuple(self.strides[p] for p in perm))

    # ---- writes ----------------------------------------------------------------------------

    @deferrable("array.fill_()")
    def fill_(self: Any, value: Any) -> None:
        try:
            elem = np.empty(elem_shape(self.dtype), dtype=storage_dtype(self.dtype))
            elem[...] = fill_value(self.dtype, value)
        except (TypeError, ValueError) as e:
            raise GradloomError(f"cannot fill an array of {self.dtype!r} with {value!r}: "
                                f"{e}") from e
        self._overwrite()
        fill_bytes(self, elem.tobytes())

    @deferrable("array.zero_()")
    def zero_(self: Any) -> None:
        self._overwrite()
        fill_bytes(self, bytes(size_of(self.dtype)))

    @deferrable("array.assign()")
    def assign(self: Any, src: Any) -> None:
        """Copy `src` (an array on any device, numpy data or a nested list of the same shape)."""
        if isinstance(src, array):
            dest, src = flat_pair(self, src)
            dest._overwrite()
            copy_arrays(dest, src)
            record_copy(dest, src)
            return
        data = fit_data(to_numpy(src, storage_dtype(self.dtype), copy=False), self.dtype, None)
        full = (*self.shape, *elem_shape(self.dtype))
        if data.shape != full and data.size == math.prod(full) and self.is_contiguous:
            data = data.reshape(full)  # as many elements, in order (Warp's copy)
        if data.shape[:data.ndim - len(elem_shape(self.dtype))] != self.shape:
            raise GradloomError(f"assign: source data of shape {data.shape} does not match the "
                                f"array's shape {self.shape} (dtype {self.dtype!r})")
        self._overwrite()
        write_host(self, data)


# --------------------------------------------------------------------------------------------
# construction


def view_of(a: array, off: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> array:
    """The view of `a`'s memory (and its gradient's) at byte offset `off` with this layout."""
    out = bind(array.__new__(array), a._buffer, address(a) + off, shape, strides, a.dtype,
               a.device, a._mem)
    g = a._grad
    if g is not None:
        out._grad = bind(array.__new__(array), g._buffer, address(g) + off, shape, strides,
                         a.dtype, a.device)
        out._requires_grad = True
    return out



def bind(out: array, buffer: Any, ptr: int, shape: tuple[int, ...],
         strides: tuple[int, ...], t: Any, device: Device, mem: Memory | None = None
         ) -> array:
    """Fill in a array's attributes (those `array._bind` sets for host storage)."""
    n = len(shape)
    if not 1 <= n <= MAX_DIMS:
        raise GradloomError(f"arrays have 1 to {MAX_DIMS} dimensions, got shape {shape}")
    out._annotation, out.dtype, out.device = False, t, device
    out.shape, out.strides, out.ndim = tuple(shape), tuple(strides), n
    out.size = math.prod(shape)
    out.ptr = int(ptr) if out.size else 0
    out.is_contiguous = is_contiguous(out.shape, out.strides, size_of(t))
    out.pinned = False
    out._type = ArrayType(dtype=t, ndim=n)
    out._mem = Memory() if mem is None else mem
    out._buffer = buffer
    out._methods = DeviceArray
    out._grad, out._requires_grad = None, False
    return out


def allocate(device: Device, nbytes: int) -> DeviceBuffer:
    return DeviceBuffer(current(), device.ordinal, nbytes, cuda_stream(device),
                        pooled=is_mempool_enabled(device))


def new_array(device: Device, shape: tuple[int, ...], t: Any, zero: bool = True) -> array:
    """A new contiguous array (zero-filled unless `zero` is False)."""
    eb = size_of(t)
    buf = allocate(device, eb * math.prod(shape))
    out = bind(array.__new__(array), buf, buf.ptr, shape, packed_strides(shape, eb), t,
               device)
    if zero:
        fill_bytes(out, bytes(eb))
    return out


def init_device_array(obj: array, device: Device, data: Any, dtype: Any,
                      dims: tuple[int, ...] | None, strides: Any, ptr: int | None,
                      capacity: int | None, ndim: int | None, requires_grad: bool,
                      deleter: Any, copy: bool = True) -> None:
    """`array.__init__` for a CUDA device: allocate (or wrap `ptr`), upload `data` (always a
    copy: `copy=False` cannot share host memory with device memory)."""
    if ptr is not None:
        t = resolve_dtype(float if dtype is typing.Any else dtype)
        shape = dims or (0,)
        eb = size_of(t)
        st = packed_strides(shape, eb) if strides is None else tuple(map(int, strides))
        nbytes = max(int(capacity or 0), span(shape, st, eb)[1])
        bind(obj, ExternalBuffer(device.ordinal, ptr, nbytes, deleter), ptr, shape, st, t,
             device)
    elif data is not None:
        if isinstance(data, array) and dtype in (typing.Any, None):
            t, host = data.dtype, None
            shape = data.shape if dims is None else dims
        else:
            host, t = _storage_from_data(data, dtype, dims, False)
            shape = host.shape[:host.ndim - len(elem_shape(t))]
        eb = size_of(t)
        buf = allocate(device, eb * math.prod(shape))
        bind(obj, buf, buf.ptr, shape, packed_strides(shape, eb), t, device)
        if host is None:
            copy_arrays(obj, data if data.shape == shape else data.reshape(shape))
        else:
            write_host(obj, host)
    else:
        t = resolve_dtype(float if dtype is typing.Any else dtype)
        eb = size_of(t)
        shape = dims or (0,)
        buf = allocate(device, eb * math.prod(shape))
        bind(obj, buf, buf.ptr, shape, packed_strides(shape, eb), t, device)
        fill_bytes(obj, bytes(eb))
    if ndim is not None and ndim != obj.ndim:
        raise GradloomError(f"expected {ndim}-dimensional data, got shape {obj.shape}")
    obj.requires_grad = requires_grad


def zeros_same_layout(a: array) -> array:
    """Zeroed device memory with exactly `a`'s shape and strides (a gradient's layout)."""
    if a.is_contiguous:
        return new_array(a.device, a.shape, a.dtype)
    out, lo, hi = _same_layout(a)
    fill(current(), a.device.ordinal, address(out) + lo, b"\0", hi - lo,
         cuda_stream(a.device).handle)
    return out


def copy_same_layout(a: array) -> array:
    """A device copy of `a` with exactly its shape and strides: one device-to-device copy of
    its byte span, queued on the device's current stream (a Tape's snapshot)."""
    if a.size == 0:
        return view_of(a, 0, a.shape, a.strides)
    out, lo, hi = _same_layout(a)
    ordinal = a.device.ordinal
    dtod(current(), ordinal, address(out) + lo, ordinal, address(a) + lo, hi - lo, stream_of(a))
    return out


def _same_layout(a: array) -> tuple[array, int, int]:
    """A new allocation laid out as `a` (contents undefined), and the span (lo, hi)."""
    lo, hi = span(a.shape, a.strides, size_of(a.dtype))
    buf = allocate(a.device, hi - lo)
    out = bind(array.__new__(array), buf, buf.ptr - lo, a.shape, a.strides, a.dtype,
               a.device)
    return out, lo, hi


def with_grad(a: array, grad: Any) -> array:
    """A view of `a` whose gradient is `grad` (an adjoint launch's `adj_inputs`)."""
    out = view_of(a, 0, a.shape, a.strides)
    out.grad = grad
    return out


# --------------------------------------------------------------------------------------------
# moving bytes


def _host_view(raw: NDArray, lo: int, a: array) -> NDArray:
    npdt = storage_dtype(a.dtype)
    return np.ndarray((*a.shape, *elem_shape(a.dtype)), dtype=npdt, buffer=raw, offset=-lo,
                      strides=(*a.strides, *inner_strides(a.dtype)))


def to_host(a: array) -> NDArray:
    """A new C-contiguous host copy of a device array's elements."""
    out = np.empty((*a.shape, *elem_shape(a.dtype)), dtype=storage_dtype(a.dtype))
    if a.size == 0:
        return out
    drv, ordinal, stream = current(), a.device.ordinal, stream_of(a)
    if a.is_contiguous:
        dtoh(drv, ordinal, out.ctypes.data, address(a), out.nbytes, stream)
        return out
    lo, hi = span(a.shape, a.strides, size_of(a.dtype))
    raw = np.empty(hi - lo, dtype=np.uint8)
    dtoh(drv, ordinal, raw.ctypes.data, address(a) + lo, hi - lo, stream)
    out[...] = _host_view(raw, lo, a)
    return out


def write_host(a: array, data: NDArray) -> None:
    """Write host data (shaped like `a`'s elements, `a`'s storage dtype) into `a`."""
    if a.size == 0:
        return
    drv, ordinal, stream = current(), a.device.ordinal, stream_of(a)
    if a.is_contiguous:
        src = np.ascontiguousarray(data)
        htod(drv, ordinal, address(a), src.ctypes.data, a.size * size_of(a.dtype), stream)
        return
    lo, hi = span(a.shape, a.strides, size_of(a.dtype))
    raw = np.empty(hi - lo, dtype=np.uint8)
    dtoh(drv, ordinal, raw.ctypes.data, address(a) + lo, hi - lo, stream)
    _host_view(raw, lo, a)[...] = data
    htod(drv, ordinal, address(a) + lo, raw.ctypes.data, hi - lo, stream)


def read_element(a: array, off: int) -> Any:
    """The element at byte offset `off` (a vector/matrix as its value type)."""
    npdt, es = storage_dtype(a.dtype), elem_shape(a.dtype)
    out = np.empty(es, dtype=npdt)
    dtoh(current(), a.device.ordinal, out.ctypes.data, address(a) + off, out.nbytes, stream_of(a))
    return a.dtype(out) if es else out[()]


def fill_bytes(a: array, pattern: bytes) -> None:
    """Set every element of `a` to the element whose bytes are `pattern`."""
    if a.size == 0:
        return
    if a.is_contiguous:
        fill(current(), a.device.ordinal, address(a), pattern, a.size, stream_of(a))
        return
    elem = np.frombuffer(pattern, dtype=np.uint8).view(storage_dtype(a.dtype))
    write_host(a, np.broadcast_to(elem.reshape(elem_shape(a.dtype)),
                                  (*a.shape, *elem_shape(a.dtype))))


def copy_arrays(dest: array, src: array) -> None:
    """Copy `src` into `dest` (same shape; element bytes reinterpreted where the types differ
    in kind but not in size, as `copy_storage`), either or both on a CUDA device. Records
    nothing: the callers record the copy (runtime/recording.py)."""
    if dest.device is CPU:
        copy_storage(dest, array._wrap(to_host(src), src.dtype, CPU))
        return
    assert isinstance(dest, array)
    nbytes = dest.size * size_of(dest.dtype)
    if nbytes != src.size * size_of(src.dtype):
        raise GradloomError(f"incompatible array element types: destination {dest.dtype!r}, "
                            f"source {src.dtype!r}")
    if src.device is not CPU and dest.is_contiguous and src.is_contiguous:
        dtod(current(), dest.device.ordinal, address(dest), src.device.ordinal, address(src), nbytes,
             stream_of(dest))
        return
    host = src.numpy()
    npdt = storage_dtype(dest.dtype)
    full = (*dest.shape, *elem_shape(dest.dtype))
    if host.dtype != npdt or host.shape != full:
        host = np.ascontiguousarray(host).reshape(-1).view(np.uint8).view(npdt).reshape(full)
    write_host(dest, host)


def copy_flat(d: array, s: array, dest_offset: int, src_offset: int, count: int) -> None:
    """`wp.copy` of `count` elements between contiguous arrays, one or both on a CUDA device
    (ranges checked by the caller; wp.copy records it)."""
    eb = size_of(s.dtype)
    dst, src, n = address(d) + dest_offset * eb, address(s) + src_offset * eb, count * eb
    drv = current()
    if d.device is CPU:
        dtoh(drv, s.device.ordinal, dst, src, n, cuda_stream(s.device).handle)
    elif s.device is CPU:
        htod(drv, d.device.ordinal, dst, src, n, cuda_stream(d.device).handle)
    else:
        dtod(drv, d.device.ordinal, dst, s.device.ordinal, src, n, cuda_stream(d.device).handle)

