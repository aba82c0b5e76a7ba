"""DLPack: `wp.from_dlpack` (any producer or capsule, zero-copy; host or CUDA memory) and
`wp.to_dlpack`."""

from __future__ import annotations

import ctypes
import weakref
from typing import Any

import numpy as np

from gradloom.errors import ArrayTypeError, GradloomError
from gradloom.runtime.array.aligned import DLPACK_CPU
from gradloom.runtime.array.array import array
from gradloom.runtime.array.foreign import is_torch_tensor, wrap_numpy
from gradloom.runtime.backend import CUDA
from gradloom.types import bfloat16

DLPACK_CUDA = 2  # kDLCUDA

_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host (pinned)", 4: "OpenCL", 7: "Vulkan", 8: "Metal",
                 10: "ROCm", 13: "CUDA managed", 14: "oneAPI"}


class _Capsule:
    """A bare DLPack capsule (from a legacy `to_dlpack()`) as a DLPack producer."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (DLPACK_CPU, 0)


def from_dlpack(source: Any, dtype: Any = None) -> array:
    """An array sharing the memory of a DLPack producer (an object with `__dlpack__`) or of a
    DLPack capsule. `dtype` reads trailing dims as vector/matrix components (wp.vec3...).
    CUDA memory (device type 2) gives a CUDA array; a producer is asked for its capsule for
    gradloom's current stream on that device (the DLPack stream handshake)."""
    if type(source).__name__ == "PyCapsule":
        # the capsule's C structs are read only for a bare capsule: not at `import gradloom`
        from gradloom.runtime.dlpack_capsule import capsule_device, capsule_is_bfloat16

        if capsule_device(source)[0] == DLPACK_CUDA:  # device memory: the CUDA backend's
            return CUDA.get("from_capsule")(source, dtype, "from_dlpack capsule")
        if capsule_is_bfloat16(source):  # numpy has no bfloat16: read the capsule ourselves
            return _bfloat16_capsule(source, dtype)
        source = _Capsule(source)
    elif not hasattr(source, "__dlpack__"):
        raise GradloomError(f"from_dlpack: {type(source).__name__} is neither a DLPack "
                            "producer (no __dlpack__) nor a DLPack capsule")
    else:
        if is_torch_tensor(source):
            source = source.detach()  # torch refuses to export tensors that require grad
        if _device_type(source) == DLPACK_CUDA:
            return CUDA.get("from_dlpack_producer")(source, dtype, "from_dlpack source")
        _check_device(source)
    try:
        data = np.from_dlpack(source)
    except (TypeError, RuntimeError, BufferError, ValueError) as e:
        if "PyCapsule" in str(e):  # the producer handed back something else (Warp's words)
            got = type(source.__dlpack__()).__name__
            raise ArrayTypeError(f"Expected a valid DLPack capsule, got {got}") from None
        raise GradloomError(f"from_dlpack: cannot import {type(source).__name__}: {e}") from None
    return wrap_numpy(_bool_as(data, dtype), dtype, "from_dlpack source")


def _bool_as(data: np.ndarray, dtype: Any) -> np.ndarray:
    """Integer data read as the same-size integer of the other signedness, bool data as int8 /
    uint8 (the same bytes, as Warp allows); bool as any other type is refused in Warp's
    words."""
    name = getattr(dtype, "name", None)
    if data.dtype.kind in "iu" and isinstance(name, str) and name.startswith(("int", "uint")) \
            and np.dtype(name).itemsize == data.dtype.itemsize:
        return data.view(np.dtype(name))  # the other signedness: the same bits (as Warp)
    if data.dtype != np.bool_ or dtype is None or name == "bool":
        return data
    if name in ("int8", "uint8"):
        return data.view(np.dtype(name))
    raise DLPackTypeError(f"Incompatible data types: DLPack bool8 and Warp "
                          f"{name if name else repr(dtype)}")


class DLPackTypeError(GradloomError, RuntimeError):
    """A DLPack tensor whose element type the requested dtype cannot read (a RuntimeError, as
    Warp raises)."""


def _bfloat16_capsule(capsule: Any, dtype: Any) -> array:
    """An array over a host capsule of bfloat16 elements (their uint16 bits, gradloom's storage
    of bfloat16); the capsule's deleter runs when the memory is no longer used."""
    from gradloom.runtime.dlpack_capsule import consume

    imp = consume(capsule)
    shape, strides = imp.shape, imp.strides
    if any(s < 0 for s in strides):
        imp.release()
        raise GradloomError("from_dlpack: negative strides are not supported")
    if 0 in shape:  # no memory to share
        imp.release()
        data = np.zeros(shape, np.uint16)
    else:
        extent = sum((d - 1) * s for d, s in zip(shape, strides, strict=True)) + 2
        buffer = (ctypes.c_char * extent).from_address(imp.data)
        data = np.ndarray(shape, np.uint16, buffer=memoryview(buffer), strides=strides)
        weakref.finalize(buffer, imp.release)
    return wrap_numpy(data, dtype if dtype is not None else bfloat16, "from_dlpack capsule")


def _device_type(source: Any) -> int:
    device = getattr(source, "__dlpack_device__", None)
    return DLPACK_CPU if device is None else int(device()[0])


def _check_device(source: Any) -> None:
    device = getattr(source, "__dlpack_device__", None)
    if device is None:
        return
    kind, ordinal = (int(x) for x in device())
    if kind not in _DEVICE_NAMES:  # not a device DLPack names (Warp's words)
        raise ArrayTypeError(f"Unsupported source device for DLPack: device_type={kind}, "
                             f"device_id={ordinal}")
    if kind != DLPACK_CPU:
        raise GradloomError(f"from_dlpack: the source lives in {_DEVICE_NAMES[kind]} memory; "
                            "gradloom takes host (CPU) and CUDA memory")


def to_dlpack(a: array) -> Any:
    """A DLPack capsule sharing `a`'s memory (for consumers that take capsules)."""
    if not isinstance(a, array):
        raise GradloomError(f"to_dlpack: expected a gradloom array, got {type(a).__name__}")
    return a.__dlpack__()
