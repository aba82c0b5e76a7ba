"""Shared pieces of the array utilities: Warp-compatible error classes, element views, writes."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import GradloomError
from ..runtime.array.array import NDArray, array, elem_shape
from ..runtime.array.watch import before_write
from ..runtime.capturing import defer
from ..runtime.recording import ACTIVE_TAPES, refuse_forward_mode
from ..types import float32, float64


class UtilsRuntimeError(GradloomError, RuntimeError):
    """Bad arguments to an array utility (a RuntimeError, as Warp raises)."""


class UtilsValueError(GradloomError, ValueError):
    """A bad value passed to an array utility (a ValueError, as in Warp)."""


class UtilsTypeError(GradloomError, TypeError):
    """A wrongly typed argument to an array utility (a TypeError, as in Warp)."""


class UtilsIndexError(GradloomError, IndexError):
    """An axis out of range (an IndexError, as in Warp)."""


class UtilsCaptureError(GradloomError, NotImplementedError):
    """A utility form a graph cannot replay (a NotImplementedError, as in Warp)."""


FLOATS = (float32, float64)


def check_array(a: Any, what: str) -> array:
    if not isinstance(a, array):
        raise UtilsTypeError(f"{what} must be a gradloom array, got {type(a).__name__}")
    return a


def check_same_device(*arrays: array, message: str) -> None:
    if any(a.device != arrays[0].device for a in arrays[1:]):
        raise UtilsRuntimeError(message)


def flat(a: array) -> NDArray:
    """The elements in flattened order as (size, *element shape); a view where the layout
    allows (contiguous or 1-D arrays), else a copy (read only then)."""
    data = a.numpy()
    if a.ndim == 1:
        return data
    return data.reshape((a.size, *elem_shape(a.dtype)))


def flat_index(a: array, count: int) -> tuple[NDArray, ...]:
    """Index arrays selecting a's first `count` elements in flattened order (for writes into
    any layout, e.g. gradients of strided views)."""
    return np.unravel_index(np.arange(count), a.shape)


def write(out: array, where: Any, data: Any) -> None:
    """Store into `out` after tapes that still need its contents have copied them."""
    before_write(out)
    if not out.device.backend.host_memory:  # numpy() is a copy: update it, write it back
        host = out.numpy()
        host[where] = data
        out.assign(host)
        return
    out.numpy()[where] = data


def captured(fn: Any, what: str) -> bool:
    """Inside a graph capture: record the call (it runs when the graph runs) and return True."""
    return defer(fn, what)


def taping() -> bool:
    """Whether tapes record (the differentiable utilities ask; forward mode refuses them)."""
    tapes = ACTIVE_TAPES.get()
    if tapes:
        refuse_forward_mode("this wp.utils operation")
    return bool(tapes)
