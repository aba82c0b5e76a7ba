"""Foreign arrays in CUDA memory as gradloom CUDA arrays, zero-copy: DLPack producers and
capsules (device type 2), objects with `__cuda_array_interface__` (cupy, numba), torch CUDA
tensors — with the stream handshake of each protocol.

- DLPack: gradloom, the consumer, passes its current stream of the device to
  `__dlpack__(stream=...)`; the producer orders its work before it.
- CUDA Array Interface: the producer names its stream (`"stream"`, version 3); gradloom's
  current stream waits for it (an event).
- torch: its tensors go through DLPack (`detach()`ed: torch exports no tensor that requires
  grad), so torch orders its current stream before gradloom's; a tensor that requires grad
  lends its `.grad` (created if None) as the array's gradient.

Like runtime/array/foreign.py for host memory, nothing here imports torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...errors import GradloomError, LaunchError
from ...types import ArrayType
from ..array.array import array, elem_shape, resolve_dtype
from ..array.foreign import element_view, is_torch_tensor, memory_for, scalar_dtype_of
from ..device import Device, get_device
from ..dlpack_capsule import DLPACK_CUDA, consume
from ..layout import packed_strides
from ..stream import cuda_stream
from .stream import order_streams


def wrap_device_memory(device: Device, ptr: int, npdt: np.dtype[Any], shape: tuple[int, ...],
                       strides: tuple[int, ...], t: Any, what: str, keep: Any = None,
                       deleter: Any = None) -> array:
    """A CUDA array over `ptr` (shape and byte strides of scalars; `t`'s vector/matrix
    components are the trailing dims, as for host data)."""
    t = scalar_dtype_of(npdt, what) if t is None else resolve_dtype(t)
    probe = as_strided(np.zeros(1, npdt), shape, strides)  # layout only: never read
    view = element_view(probe, t, what)
    k = len(elem_shape(t))
    dims = tuple(view.shape[:view.ndim - k])
    byte_strides = tuple(view.strides[:view.ndim - k])
    out = array(ptr=ptr, dtype=t, shape=dims, strides=byte_strides, device=device,
                deleter=deleter)
    out._mem = memory_for(ptr, out._mem)
    out._foreign = keep  # type: ignore[attr-defined]  # the producer, kept alive
    return out


def from_capsule(capsule: Any, t: Any, what: str, keep: Any = None) -> array:
    """A CUDA array over a DLPack capsule's device memory (the capsule is consumed)."""
    imp = consume(capsule)
    if imp.device_type != DLPACK_CUDA:
        imp.release()
        raise GradloomError(f"{what}: the DLPack tensor is not in CUDA memory (device type "
                            f"{imp.device_type})")
    device = get_device(f"cuda:{imp.device_id}")
    return wrap_device_memory(device, imp.data, imp.dtype, imp.shape, imp.strides, t, what,
                              keep, lambda ptr, nbytes: imp.release())


def from_dlpack_producer(source: Any, t: Any, what: str) -> array:
    """A producer whose `__dlpack_device__` is (2, n): the capsule for gradloom's current
    stream on cuda:n."""
    _, ordinal = source.__dlpack_device__()
    device = get_device(f"cuda:{int(ordinal)}")
    try:
        capsule = source.__dlpack__(stream=cuda_stream(device).value)
    except (TypeError, BufferError, RuntimeError) as e:
        raise GradloomError(f"{what}: cannot import {type(source).__name__} through DLPack: "
                            f"{e}") from None
    return from_capsule(capsule, t, what, keep=source)


def from_cuda_array_interface(obj: Any, t: Any, what: str, device: Device | None = None
                              ) -> array:
    """An object with `__cuda_array_interface__` (on `device`, default: the current CUDA
    device); gradloom's stream waits for the one the interface names."""
    cai = obj.__cuda_array_interface__
    device = device if device is not None else get_device("cuda")
    npdt = np.dtype(cai["typestr"])
    shape = tuple(int(n) for n in cai["shape"])
    strides = cai.get("strides")
    strides = packed_strides(shape, npdt.itemsize) if strides is None else tuple(map(int, strides))
    stream = cai.get("stream")
    if stream is not None:
        order_streams(device.ordinal, int(stream), cuda_stream(device).value)
    return wrap_device_memory(device, int(cai["data"][0]), npdt, shape, strides, t, what, obj)


def wrap_torch_cuda(tensor: Any, dtype: Any, requires_grad: bool | None, grad: Any,
                    what: str) -> array:
    """`wp.from_torch` of a CUDA tensor: zero-copy through DLPack, its gradient `grad` or (when
    it requires grad) its `.grad`, created if None."""
    out = from_dlpack_producer(tensor.detach(), dtype, what)
    wants = bool(tensor.requires_grad) if requires_grad is None else bool(requires_grad)
    g = grad
    if g is None and wants:
        if tensor.grad is None:
            tensor.grad = tensor.detach().new_empty_strided(tuple(tensor.shape),
                                                            tensor.stride()).zero_()
        g = tensor.grad
    if g is not None:
        out.grad = g if isinstance(g, array) else from_dlpack_producer(g.detach(), out.dtype,
                                                                       f"{what}.grad")
    out._mem = memory_for(int(tensor.untyped_storage().data_ptr()), out._mem)
    return out


def is_device_foreign(value: Any) -> bool:
    """Whether a launch argument is foreign memory of a CUDA device."""
    if isinstance(value, array):
        return False
    if is_torch_tensor(value):
        return bool(value.device.type == "cuda")
    if hasattr(value, "__cuda_array_interface__"):
        return True
    device = getattr(value, "__dlpack_device__", None)
    return device is not None and int(device()[0]) == DLPACK_CUDA


def device_foreign_to_array(value: Any, t: Any, what: str, device: Device) -> array:
    if is_torch_tensor(value):
        return wrap_torch_cuda(value, t, None, None, what)
    if hasattr(value, "__cuda_array_interface__"):
        return from_cuda_array_interface(value, t, what, device)
    return from_dlpack_producer(value, t, what)


def adapt_device_args(kernel_key: str, params: Any, args: list[Any], device: Device
                      ) -> list[Any]:
    """Launch arguments with foreign CUDA memory given for array parameters wrapped as CUDA
    arrays (zero-copy, after the stream handshake)."""
    for i, (name, t) in enumerate(params):
        if i < len(args) and isinstance(t, ArrayType) and is_device_foreign(args[i]):
            what = f"kernel '{kernel_key}' argument '{name}' (position {i})"
            try:
                wrapped = device_foreign_to_array(args[i], t.dtype, what, device)
            except GradloomError as e:
                raise LaunchError(str(e)) from None
            if wrapped.ndim != t.ndim:
                raise LaunchError(f"{what}: expected {t!r}, got {type(args[i]).__name__} "
                                  f"({wrapped.ndim}-D as {t.dtype!r})")
            args[i] = wrapped
    return args
