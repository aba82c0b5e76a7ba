"""Foreign arrays (numpy arrays, torch tensors, DLPack producers) as gradloom arrays, zero-copy.

Nothing here imports torch: a tensor is recognised through `sys.modules` and used through its
own methods, so `import gradloom` never loads torch. Every wrapper of one allocation shares one
`Memory` token (keyed by the allocation's address), so the Tape's copy-on-write sees a write
through any of them. A torch tensor with `requires_grad` gets its `.grad` (created if None) as
the gradient buffer: Tape gradients land there exactly once, and values are never touched.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from gradloom.errors import GradloomError, LaunchError
from gradloom.runtime.array.array import NDArray, array, elem_shape, resolve_dtype, storage_dtype
from gradloom.runtime.array.watch import Memory
from gradloom.runtime.device import CPU
from gradloom.runtime.layout import same_layout
from gradloom.types import ArrayType, ScalarType, scalar_from_numpy

from ..backend import CUDA

_MEMORY: weakref.WeakValueDictionary[int, Memory] = weakref.WeakValueDictionary()


def memory_for(address: int, existing: Memory | None = None) -> Memory:
    """The Memory token of the allocation starting at `address` (`existing` if none yet).

    Safe against address reuse: a token lives only while an array wrapping the allocation
    does, and that array keeps the allocation alive."""
    mem = _MEMORY.get(address)
    if mem is None:
        mem = existing if existing is not None else Memory()
        _MEMORY[address] = mem
    return mem


def numpy_root(data: NDArray) -> int:
    """The address of the numpy array that owns (or first wraps) `data`'s memory."""
    root = data
    while isinstance(root.base, np.ndarray):
        root = root.base
    return int(root.__array_interface__["data"][0])


# --------------------------------------------------------------------------------------------
# dtypes and element views


def scalar_dtype_of(npdt: np.dtype[Any], what: str) -> ScalarType:
    """The gradloom scalar type for numpy dtype `npdt`; a clear error naming `what` otherwise."""
    st = scalar_from_numpy(npdt) if npdt.names is None else None
    if st is None:
        raise GradloomError(
            f"{what}: unsupported dtype {npdt}; gradloom arrays hold bool, int8-64, uint8-64, "
            "float16, float32 or float64 elements"
        )
    return st


def element_view(data: NDArray, t: Any, what: str) -> NDArray:
    """`data` viewed (never copied) as storage for elements of type `t`: the array dims, then
    a vector's (n,) or a matrix's (r, c) component dims, which must be contiguous. A matrix
    may also come as one trailing dim of r*c components."""
    npdt = storage_dtype(t)
    if data.dtype != npdt:
        raise GradloomError(
            f"{what}: dtype {data.dtype} does not match the element type {t!r} (which needs "
            f"{npdt} data); convert it first (a copy would not share memory)"
        )
    es = elem_shape(t)
    shape, strides = tuple(data.shape), tuple(data.strides)
    if es and shape[-len(es):] != es:
        n = int(np.prod(es))
        if len(es) != 2 or not shape or shape[-1] != n:
            raise GradloomError(
                f"{what}: shape {shape} does not end in the component dims {es} of {t!r}"
            )
        s = strides[-1]
        shape, strides = (*shape[:-1], *es), (*strides[:-1], es[1] * s, s)
    k = len(es)
    expected = data.itemsize
    for n_, s_ in zip(reversed(shape[len(shape) - k:]), reversed(strides[len(strides) - k:])):
        if n_ > 1 and s_ != expected:
            raise GradloomError(
                f"{what}: the components of {t!r} must be contiguous in memory (strides "
                f"{strides}); pass a .contiguous() copy"
            )
        expected *= n_
    ndim = len(shape) - k
    if not 1 <= ndim <= 4:
        raise GradloomError(
            f"{what}: gradloom arrays have 1 to 4 dimensions; shape {tuple(data.shape)} with "
            f"element type {t!r} has {ndim}"
        )
    if (shape, strides) == (tuple(data.shape), tuple(data.strides)):
        return data
    return as_strided(data, shape, strides, writeable=bool(data.flags.writeable))


def wrap_numpy(data: NDArray, t: Any = None, what: str = "array", grad: NDArray | None = None,
               memory: Memory | None = None) -> array:
    """A gradloom array over `data`'s memory (zero-copy); `grad` (same layout) its gradient."""
    if data.dtype.byteorder not in "=|":
        raise GradloomError(f"{what}: byte-swapped data ({data.dtype}) is not supported")
    t = scalar_dtype_of(data.dtype, what) if t is None else t
    storage = element_view(data, t, what)
    gstorage = None
    if grad is not None:
        gstorage = element_view(grad, t, f"{what}.grad")
        if gstorage.dtype != storage.dtype or not same_layout(gstorage, storage):
            raise GradloomError(
                f"{what}: its gradient buffer must have the same shape and strides as the "
                f"data (data strides {storage.strides}, gradient strides {gstorage.strides})"
            )
    mem = memory if memory is not None else memory_for(numpy_root(data))
    return array._wrap(storage, t, CPU, gstorage, mem)


# --------------------------------------------------------------------------------------------
# torch tensors, duck-typed


def is_torch_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def tensor_numpy(t: Any, what: str) -> NDArray:
    """A zero-copy numpy view of a CPU tensor's values (detached; strides kept)."""
    if t.device.type != "cpu":
        raise GradloomError(f"{what}: the tensor is on device '{t.device}', and this needs "
                            "host memory (move it with .cpu())")
    try:
        data: NDArray = t.detach().numpy()
    except (TypeError, RuntimeError) as e:
        raise GradloomError(f"{what}: unsupported torch dtype {t.dtype} ({e}); gradloom "
                            "arrays hold bool, integer, float16, float32 or float64") from None
    return data


def tensor_grad_numpy(t: Any, what: str) -> NDArray:
    """`t.grad` as numpy, created (zeros, the tensor's strides) when it is None."""
    g = t.grad
    if g is None:
        g = t.detach().new_empty_strided(tuple(t.shape), t.stride()).zero_()
        t.grad = g
    return tensor_numpy(g, f"{what}.grad")


def wrap_tensor(t: Any, dtype: Any = None, requires_grad: bool | None = None,
                grad: Any = None, what: str = "tensor") -> array:
    """`wp.from_torch`: an array sharing the tensor's memory; its gradient is `grad`, or the
    tensor's `.grad` (created if None) when `requires_grad` (default: the tensor's). A CUDA
    tensor gives a CUDA array (runtime/cuda/foreign.py)."""
    if t.device.type == "cuda":
        return CUDA.get("wrap_torch_cuda")(t, dtype, requires_grad, grad, what)
    data = tensor_numpy(t, what)
    el = scalar_dtype_of(data.dtype, what) if dtype is None else resolve_dtype(dtype)
    wants_grad = bool(t.requires_grad) if requires_grad is None else bool(requires_grad)
    gdata: NDArray | None = None
    if grad is not None:
        gdata = grad.numpy() if isinstance(grad, array) else tensor_numpy(grad, f"{what} grad")
    elif wants_grad:
        gdata = tensor_grad_numpy(t, what)
    if gdata is not None and gdata.shape != data.shape:
        raise GradloomError(f"{what}: gradient of shape {gdata.shape} for data of shape "
                            f"{data.shape}")
    mem = memory_for(int(t.untyped_storage().data_ptr()))
    return wrap_numpy(data, el, what, gdata, mem)


# --------------------------------------------------------------------------------------------
# launch arguments and tape seeds


def _is_foreign(value: Any) -> bool:
    """A numpy array, or an object of another class offering its memory through DLPack or
    numpy's array interface (by its real class: one spoofing `__class__` is still foreign)."""
    cls = type(value)
    return isinstance(value, np.ndarray) or (not issubclass(cls, array) and (
        hasattr(cls, "__dlpack__") or hasattr(cls, "__array_interface__")))


def foreign_to_array(value: Any, t: Any, what: str) -> array:
    """A numpy array, torch tensor or DLPack producer as an array of element type `t` (None:
    the data's scalar type)."""
    if isinstance(value, np.ndarray):
        return wrap_numpy(value, t, what)
    if is_torch_tensor(value):
        return wrap_tensor(value, t, what=what)
    if not hasattr(type(value), "__dlpack__"):  # numpy's array interface: a view, no copy
        return wrap_numpy(np.asarray(value), t, what)
    try:
        data = np.from_dlpack(value)
    except (TypeError, RuntimeError, BufferError) as e:
        raise GradloomError(f"{what}: cannot import {type(value).__name__} through DLPack: "
                            f"{e}") from None
    return wrap_numpy(data, t, what)


def array_slots(params: Sequence[tuple[str, Any]]) -> list[tuple[int, str, ArrayType]]:
    """(position, name, type) of each array parameter: what `adapt_args` looks at."""
    return [(i, name, t) for i, (name, t) in enumerate(params) if isinstance(t, ArrayType)]


def adapt_args(kernel_key: str, slots: Sequence[tuple[int, str, ArrayType]],
               args: Sequence[Any]) -> Sequence[Any]:
    """Launch arguments with numpy arrays, torch tensors and DLPack producers given for array
    parameters (`slots`, from `array_slots`) wrapped zero-copy as gradloom arrays; `args`
    itself when there are none."""
    out: list[Any] | None = None
    n = len(args)
    for i, name, t in slots:
        if i >= n:
            break
        value = args[i]
        if type(value) is array or not _is_foreign(value):
            continue
        what = f"kernel '{kernel_key}' argument '{name}' (position {i})"
        try:
            wrapped = foreign_to_array(value, t.dtype, what)
        except GradloomError as e:
            raise LaunchError(str(e)) from None
        if wrapped.ndim != t.ndim:
            raise LaunchError(f"{what}: expected {t!r}, got {type(value).__name__} of shape "
                              f"{tuple(value.shape)} ({wrapped.ndim}-D as {t.dtype!r})")
        if out is None:
            out = list(args)
        out[i] = wrapped
    return args if out is None else out


def as_array(value: Any, what: str) -> Any:
    """A torch tensor as a gradloom array (its `.grad` attached when it requires grad); any
    other value unchanged (numpy arrays have no gradient to seed)."""
    return wrap_tensor(value, what=what) if is_torch_tensor(value) else value
