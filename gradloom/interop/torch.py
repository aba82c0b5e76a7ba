"""PyTorch conversions: `from_torch` / `to_torch` (zero-copy, gradients attached) and the
device and dtype mappings. torch is imported when one of these is called, never before."""

from __future__ import annotations

import ctypes
import importlib
from typing import Any

import numpy as np

from gradloom import types as _t
from gradloom.errors import GradloomError
from gradloom.runtime.array.array import array, resolve_dtype
from gradloom.runtime.array.foreign import memory_for, wrap_tensor
from gradloom.runtime.device import Device, get_device

_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float16", "float32", "float64")


def torch_module() -> Any:
    """The torch module, or a clear error when it is not installed."""
    try:
        return importlib.import_module("torch")
    except ImportError as e:
        raise GradloomError("PyTorch is not installed: pip install torch==2.13.0 "
                            "(the CPU wheel)") from e


def _pairs() -> list[tuple[Any, Any]]:
    torch = torch_module()
    gl = {"bool": _t.bool_}
    return [(gl.get(n) or getattr(_t, n), getattr(torch, n)) for n in _DTYPE_NAMES]


def dtype_from_torch(torch_dtype: Any) -> Any:
    """The gradloom scalar type of a torch dtype (torch.float32 -> wp.float32)."""
    for gl, th in _pairs():
        if th == torch_dtype:
            return gl
    raise GradloomError(f"torch dtype {torch_dtype} has no gradloom equivalent (supported: "
                        "bool, int8-64, uint8-64, float16, float32, float64)")


#: Warp's torch types of unsigned integers (torch long lacked them): the signed type of the
#: same size, whose bits a tensor of it shares
_SIGNED = {"uint16": "int16", "uint32": "int32", "uint64": "int64"}


def dtype_to_torch(gradloom_dtype: Any) -> Any:
    """The torch dtype of a gradloom scalar type (vectors/matrices: their component's), as
    Warp maps them: uint16/32/64 -> torch.int16/32/64, bfloat16 -> torch.bfloat16."""
    t = resolve_dtype(gradloom_dtype)
    scalar = t.dtype if isinstance(t, (_t.VectorType, _t.MatrixType)) else t
    torch = torch_module()
    if scalar == _t.bfloat16:
        return torch.bfloat16
    for gl, th in _pairs():
        if gl == scalar:
            name = _SIGNED.get(str(th).removeprefix("torch."))
            return getattr(torch, name) if name else th
    raise GradloomError(f"{gradloom_dtype!r} has no torch equivalent")


def _storage_view(torch: Any, t: Any, dtype: Any) -> tuple[Any, Any]:
    """(tensor, dtype) for wrapping: a bfloat16 tensor as its uint16 bits (gradloom's storage
    of bfloat16), an integer tensor given an integer dtype of its size but other signedness
    as that type's bits (as Warp shares them)."""
    if t.dtype == torch.bfloat16 and dtype in (None, _t.bfloat16):
        return t.view(torch.uint16), _t.bfloat16
    if dtype is not None:
        scalar = resolve_dtype(dtype)
        scalar = scalar.dtype if isinstance(scalar, (_t.VectorType, _t.MatrixType)) else scalar
        name = str(scalar)
        target = getattr(torch, name, None) if name.startswith(("int", "uint")) else None
        if (target is not None and t.dtype != target and not t.dtype.is_floating_point
                and not t.dtype.is_complex
                and t.element_size() == torch.empty(0, dtype=target).element_size()):
            return t.view(target), dtype
    return t, dtype


def device_from_torch(torch_device: Any) -> Device:
    """The gradloom device of a torch device ("cpu", "cuda", "cuda:N")."""
    return get_device(str(torch_device))


def device_to_torch(device: Any = None) -> str:
    """The torch device string of a gradloom device."""
    return get_device(device).alias


class ArrayDescriptor(ctypes.Structure):
    """Warp's `array_t` descriptor, what `from_torch(..., return_ctype=True)` gives: the data
    and gradient addresses (0: none), shape and byte strides (4 slots), and ndim."""

    _fields_ = [("data", ctypes.c_uint64), ("grad", ctypes.c_uint64),
                ("shape", ctypes.c_int32 * 4), ("strides", ctypes.c_int32 * 4),
                ("ndim", ctypes.c_int32)]


def _descriptor(a: array) -> ArrayDescriptor:
    pad = (0,) * (4 - a.ndim)
    grad = a.grad.ptr if a.grad is not None else None
    return ArrayDescriptor(a.ptr or 0, grad or 0, (ctypes.c_int32 * 4)(*a.shape, *pad),
                           (ctypes.c_int32 * 4)(*a.strides, *pad), a.ndim)


def from_torch(t: Any, dtype: Any = None, requires_grad: bool | None = None,
               grad: Any = None, retain_grad: bool = False, return_ctype: bool = False) -> Any:
    """An array sharing the tensor's memory (a write on one side shows on the other).

    `dtype` (default: the tensor's scalar type) may be a vector/matrix type, which takes the
    trailing dims (they must be contiguous). With `requires_grad` (default: the tensor's), the
    array's gradient is `grad` if given, else the tensor's `.grad`, allocated (zeros) if None.
    Non-contiguous tensors keep their strides. With `return_ctype`, Warp's `array_t`
    descriptor of that array instead (the tensor and its `.grad` own the memory it names).
    """
    out = _from_torch(t, dtype, requires_grad, grad, retain_grad)
    storage = t.untyped_storage().nbytes() - t.storage_offset() * t.element_size()
    out._storage_capacity = max(storage, out.capacity)
    return _descriptor(out) if return_ctype else out


def _from_torch(t: Any, dtype: Any, requires_grad: bool | None, grad: Any,
                retain_grad: bool) -> array:
    torch = torch_module()
    if not isinstance(t, torch.Tensor):
        raise GradloomError(f"from_torch: expected a torch.Tensor, got {type(t).__name__}")
    t, dtype = _storage_view(torch, t, dtype)
    if grad is not None and isinstance(grad, torch.Tensor):
        grad, _ = _storage_view(torch, grad, dtype)
    out = wrap_tensor(t, dtype, requires_grad, grad, what="from_torch tensor")
    if retain_grad:  # Warp's flag, kept on the array (no effect in gradloom)
        out.retain_grad = True
    return out


def to_torch(a: array, requires_grad: bool | None = None) -> Any:
    """A tensor sharing `a`'s memory (vector/matrix components as trailing dims).

    With `requires_grad` (default: `a.requires_grad`) the tensor requires grad and its `.grad`
    shares `a.grad`'s memory (allocated if `a` had none).
    """
    torch = torch_module()
    if not isinstance(a, array):
        raise GradloomError(f"to_torch: expected a gradloom array, got {type(a).__name__}")
    if not a.device.backend.host_memory:  # device memory: shared through DLPack
        return _cuda_tensor(torch, a, requires_grad)
    t = _tensor_of(torch, a.numpy(), "to_torch")
    if t.dtype != (want := dtype_to_torch(a.dtype)):  # Warp's types: bfloat16, signed
        t = t.view(want)
    memory_for(int(t.untyped_storage().data_ptr()), a._mem)
    if a.requires_grad if requires_grad is None else requires_grad:
        if a.grad is None:
            a.requires_grad = True
        assert a.grad is not None
        t.requires_grad_(True)
        t.grad = _tensor_of(torch, a.grad.numpy(), "to_torch (gradient)").view(t.dtype)
    return t


def _cuda_tensor(torch: Any, a: array, requires_grad: bool | None) -> Any:
    """to_torch of a CUDA array: through DLPack (torch passes its current stream, which waits
    for gradloom's work on the array's device)."""
    t = torch.from_dlpack(a)
    memory_for(int(t.untyped_storage().data_ptr()), a._mem)
    if a.requires_grad if requires_grad is None else requires_grad:
        if a.grad is None:
            a.requires_grad = True
        assert a.grad is not None
        t.requires_grad_(True)
        t.grad = torch.from_dlpack(a.grad)
    return t


def _tensor_of(torch: Any, data: np.ndarray[Any, Any], what: str) -> Any:
    if data.dtype.names is not None:
        raise GradloomError(f"{what}: arrays of structs have no torch equivalent")
    if any(s < 0 for s in data.strides):
        raise GradloomError(f"{what}: torch has no negative strides (strides {data.strides}); "
                            "pass a .contiguous() copy")
    try:
        return torch.from_numpy(data)
    except (TypeError, ValueError, RuntimeError) as e:
        raise GradloomError(f"{what}: torch cannot share memory of dtype {data.dtype}: {e}") \
            from None
