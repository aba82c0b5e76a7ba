"""gradloom arrays as torch tensors for transfers (zero-copy on the CPU), and the package's
error class."""

from __future__ import annotations

from typing import Any

from gradloom.errors import GradloomError
from gradloom.interop.torch import to_torch
from gradloom.runtime.array.array import array


class DistributedError(GradloomError, RuntimeError):
    """A communication step failed: ranks disagree, a peer timed out, or bad input."""


def check_array(a: Any, what: str) -> array:
    """`a` if it is an array the transfers support; else a clear error naming `what`."""
    if not isinstance(a, array):
        raise DistributedError(f"{what}: expected a gradloom array, got {type(a).__name__}")
    if not a.device.backend.host_memory:
        # the design: the device's torch tensor through DLPack (wp.to_torch) and NCCL; not
        # run on a GPU yet, so refused rather than claimed
        raise DistributedError(
            f"{what}: arrays in CUDA memory are not supported yet (NCCL transfers of device "
            "arrays are unverified); copy the array to the CPU (a.numpy() / wp.clone(a, "
            "device='cpu')) or use a CPU array")
    if a.dtype is not None and getattr(a.numpy().dtype, "names", None):
        raise DistributedError(f"{what}: arrays of structs cannot be transferred; transfer "
                               "each field's array")
    return a


def as_tensor(a: array) -> Any:
    """A torch tensor sharing `a`'s memory (vector/matrix components as trailing dims)."""
    return to_torch(a, requires_grad=False)


def section(t: Any, axis: int, start: int, length: int) -> Any:
    """The slab [start, start + length) of tensor t along axis (a view)."""
    return t.narrow(axis, start, length)


def send_buffer(view: Any) -> Any:
    """What a send reads: the view itself when contiguous (zero-copy), else a packed copy."""
    return view if view.is_contiguous() else view.contiguous()


def recv_buffer(view: Any) -> Any:
    """Where a receive writes: the view itself when contiguous, else a packed buffer that
    `unpack` copies into the view."""
    return view if view.is_contiguous() else view.new_empty(view.shape)


def unpack(view: Any, buf: Any) -> None:
    if buf is not view:
        view.copy_(buf)


__all__ = ["DistributedError", "as_tensor", "check_array", "recv_buffer", "section",
           "send_buffer", "unpack"]
