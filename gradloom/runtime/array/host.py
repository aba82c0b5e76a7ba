"""The CPU backend's array methods: an array in host memory, seen through numpy views.

`wp.array` is one class for every device; the methods whose work depends on where the memory
lives call the array's `_methods` (this class for host memory, runtime/cuda/array.py's
`DeviceArray` for CUDA memory), which the device's backend chose when the array was made.
Each takes the array as `self`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradloom.errors import ArrayShapeError, GradloomError
from gradloom.runtime.array.aligned import DLPACK_CPU
from gradloom.runtime.array.storage import (
    ARRAY_CLASS,
    NDArray,
    bf16_storage,
    copy_storage,
    elem_shape,
    element_value,
    fill_value,
    fit_data,
    is_bf16,
    normalize_shape,
    storage_dtype,
    to_numpy,
    zeros_same_layout,
)
from gradloom.runtime.capturing import deferrable
from gradloom.runtime.layout import packed_strides, same_layout
from gradloom.runtime.memops import copy_into, fill
from gradloom.runtime.recording import record_copy

from ...hooks import Hook

#: what these methods call of modules built on arrays, which fill them when imported: `a[I]`
#: with index arrays is an indexed view (indexedarray.py)
INDEX_VIEW: Hook[Any] = Hook("indexing with arrays", "gradloom.runtime.array.indexed")


def _array() -> Any:
    """The array class (runtime/array/array.py, built on this module, fills the hook)."""
    return ARRAY_CLASS.get()


def _packed(view: NDArray) -> NDArray:
    """A reshaped view of packed storage, with packed strides: numpy already gives them unless
    the view is empty, where Warp's reshape still makes them packed (so it stays contiguous)."""
    if view.size:
        return view
    return np.lib.stride_tricks.as_strided(view, strides=packed_strides(view.shape, view.itemsize))


def flat_pair(dest: Any, src: Any) -> tuple[Any, Any]:
    """(what `dest.assign(src)` writes, what it reads): the arrays themselves, or — another
    shape, both contiguous — the first `src.size` elements of dest and src, flat: Warp's
    assign is `wp.copy`, which copies all of the source's elements in order; a source with
    more elements than dest is an error."""
    if src.shape == dest.shape:
        return dest, src
    if src.size <= dest.size and src.is_contiguous and dest.is_contiguous:
        flat = dest.reshape(-1)
        return (flat if src.size == dest.size else flat[:src.size]), src.reshape(-1)
    raise GradloomError(f"assign: source shape {src.shape} != destination {dest.shape} (Warp "
                        "copies another shape only between contiguous arrays, at most as "
                        "many elements as the destination holds)")


class HostArray:
    """The methods of an array in host memory (see the module docstring)."""

    def numpy(self: Any) -> Any:
        """A zero-copy numpy view (element dims, then a vector/matrix's trailing dims)."""
        return self._concrete()

    @property
    def __cuda_array_interface__(self: Any) -> dict[str, Any]:
        raise AttributeError("an array in host memory has no __cuda_array_interface__")

    def set_requires_grad(self: Any, value: bool) -> None:
        storage = self._concrete()
        self._words = self._launch_key = None  # the old gradient's launch words
        if value and self._grad is None:
            self._grad = type(self)._wrap(zeros_same_layout(storage), self.dtype, self.device)
        elif not value:
            self._grad = None
        self._requires_grad = bool(value)

    def set_grad(self: Any, value: Any) -> None:
        storage = self._concrete()
        self._words = self._launch_key = None  # the old gradient's launch words
        if value is None:
            self._grad, self._requires_grad = None, False
            return
        g = value if isinstance(value, _array()) else _array()(value, dtype=self.dtype, copy=False)
        if g.dtype != self.dtype or not same_layout(g._concrete(), storage):
            raise GradloomError(
                f"incompatible gradient: expected shape {self.shape}, dtype {self.dtype!r} and "
                f"strides {self.strides}; got shape {g.shape}, dtype {g.dtype!r}, strides "
                f"{g.strides}"
            )
        self._grad, self._requires_grad = g, True

    def reshape(self: Any, shape: Any) -> Any:
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
        return _view_of(self, type(self)._wrap(view, self.dtype, self.device, grad, self._mem))

    def transpose(self: Any, axes: Any = None) -> Any:
        storage = self._concrete()
        perm = tuple(reversed(range(self.ndim))) if axes is None else tuple(axes)
        if sorted(perm) != list(range(self.ndim)):
            raise GradloomError(
                f"transpose axes {axes!r} are not a permutation of {self.ndim} dims"
            )
        full = perm + tuple(range(self.ndim, storage.ndim))
        grad = None if self._grad is None else self._grad.numpy().transpose(full)
        return _view_of(self, type(self)._wrap(storage.transpose(full), self.dtype, self.device,
                                               grad, self._mem))

    @deferrable("array.fill_()")
    def fill_(self: Any, value: Any) -> None:
        storage = self._concrete()
        self._overwrite()
        try:
            fill(storage, fill_value(self.dtype, value))
        except (TypeError, ValueError) as e:
            raise GradloomError(
                f"cannot fill an array of {self.dtype!r} with {value!r}: {e}"
            ) from e

    @deferrable("array.zero_()")
    def zero_(self: Any) -> None:
        storage = self._concrete()
        self._overwrite()
        fill(storage, 0)

    @deferrable("array.assign()")
    def assign(self: Any, src: Any) -> None:
        """Copy `src` (an array, numpy array or nested list of the same shape — or, both
        contiguous, of as many elements: Warp copies them in order) into this array."""
        storage = self._concrete()
        if isinstance(src, _array()):
            dest, src = flat_pair(self, src)
            dest._overwrite()
            copy_storage(dest, src)
            record_copy(dest, src)
            return
        data = fit_data(to_numpy(src, storage_dtype(self.dtype), False, self.dtype), self.dtype,
                        None)
        if data.shape != storage.shape:  # another shape: Warp's copy of its elements in order
            dest, _ = flat_pair(self, type(self)._wrap(data, self.dtype, self.device))
            dest._overwrite()
            copy_into(dest._concrete(), data.reshape(dest._concrete().shape))
            return
        self._overwrite()
        copy_into(storage, data)

    def __getitem__(self: Any, key: Any) -> Any:
        storage = self._concrete()
        keys = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, _array()) for k in keys):  # `a[I]`: an indexed view, as in Warp
            return INDEX_VIEW.get()(self, keys)
        idx = self._index(key)
        if len(idx) == self.ndim and all(isinstance(k, int) for k in idx):
            value = element_value(self.dtype, storage[idx])
            return self.dtype(value) if elem_shape(self.dtype) else value
        grad = None if self._grad is None else self._grad.numpy()[idx]
        return _view_of(self, type(self)._wrap(storage[idx], self.dtype, self.device, grad,
                                               self._mem))

    @deferrable("array[...] =")
    def __setitem__(self: Any, key: Any, value: Any) -> None:
        storage = self._concrete()
        idx = self._index(key)
        src = value.numpy() if isinstance(value, _array()) else value
        if is_bf16(self.dtype) and not isinstance(value, _array()):
            src = bf16_storage(src)
        self._overwrite(idx)
        try:
            storage[idx] = src
        except (TypeError, ValueError) as e:
            raise GradloomError(f"cannot store {value!r} into {self!r}[{key!r}]: {e}") from e
        if isinstance(value, _array()):
            record_copy(self, value, idx)

    @property
    def __array_interface__(self: Any) -> dict[str, Any]:
        storage = self._concrete()
        out = dict(storage.__array_interface__)
        out["strides"] = storage.strides  # explicit: numpy drops an empty array's
        return out

    def __dlpack__(
        self: Any,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule sharing this array's memory (vector/matrix components trail)."""
        if stream is not None and stream != -1:
            raise BufferError("gradloom arrays live on the CPU: __dlpack__ takes no stream")
        kwargs: dict[str, Any] = {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        data = self.numpy()
        if data.dtype.names is not None:
            raise GradloomError(
                f"cannot export an array of structs (dtype {data.dtype}) through DLPack: "
                "DLPack has no struct types"
            )
        if is_bf16(self.dtype):  # numpy's capsule would say uint16: DLPack's bfloat type
            # the capsule structs load on first use, not at `import gradloom`
            from gradloom.runtime.dlpack_capsule import export

            return export(self, int(data.ctypes.data), 0, data.dtype, data.shape, data.strides,
                          DLPACK_CPU, bfloat16=True)
        try:
            return data.__dlpack__(**kwargs)
        except TypeError:  # numpy < 2 knows only `stream`
            if copy:
                return data.copy().__dlpack__()
            return data.__dlpack__()

    def __dlpack_device__(self: Any) -> tuple[int, int]:
        return (DLPACK_CPU, 0)


def _view_of(owner: Any, view: Any) -> Any:
    """A view keeps the array it was taken from alive (Warp's `_ref`), so an object the user
    made (a subclass instance) lives as long as views of its memory."""
    view._ref = owner
    return view
