"""Backward steps of recorded array operations whose gradients live in CUDA memory, run on the
device: zeroing the gradient of overwritten elements (memsets) and adding one gradient into
another (a `wp.map` add kernel launched on the device, recorded on no tape). Being device work
on the device's stream, they can be captured into a CUDA graph with `tape.backward()`.

Each step returns False where it does not apply (gradients on two devices, a broadcast copy);
the caller then runs the CPU's numpy step on host copies (recording.on_host).
"""

from __future__ import annotations

from typing import Any

from ...types import size_of
from ..array.arith import ELEMENTWISE
from ..array.array import array
from ..launch.launch import launch
from .array import fill_bytes, index_view, is_device_array, view_of


def view_at(a: array, where: Any) -> array:
    """The view of `a` that `a[where]` writes (`...`: all of it; an index of ints and slices;
    an element as a one-element view)."""
    if where is ...:
        return a
    idx = where if isinstance(where, tuple) else (where,)
    off, shape, strides = index_view(a.shape, a.strides, a._index(idx))
    return view_of(a, off, shape or (1,), strides or (size_of(a.dtype),))


def flat_range(a: array, offset: int, count: int) -> array:
    """Elements [offset, offset + count) of `a` in flattened order (`wp.copy`'s ranges: any
    contiguous array, or a 1-D one)."""
    flat = a.reshape(-1) if a.is_contiguous and a.ndim > 1 else a
    return flat[offset:offset + count]  # type: ignore[no-any-return]


def zero(view: array) -> None:
    """Zero a gradient view (no Tape records it)."""
    fill_bytes(view, bytes(size_of(view.dtype)))


def add_into(target: array, source: array) -> None:
    """target += source, element by element, on target's device."""
    k = ELEMENTWISE.get()("add", target, source, out=target, return_kernel=True)
    launch(k, target.shape, [target, source], [target], None, None, target.device, None, False,
           False, False, 0, 256)


def _same_device(*grads: Any) -> bool:
    return all(is_device_array(g) and g.device is grads[0].device for g in grads)


def overwrite_step(grad: Any, where: Any) -> bool:
    """An overwrite of grad's array at `where`: the gradient there is consumed."""
    if not _same_device(grad):
        return False
    zero(view_at(grad, where))
    return True


def copy_step(dest_grad: Any, src_grad: Any, where: Any) -> bool:
    """dest[where] = src: dest's gradient there flows into src's and is consumed."""
    if not _same_device(dest_grad, src_grad):
        return False
    taken = view_at(dest_grad, where)
    if taken.shape != src_grad.shape:  # broadcast: summed on the host
        return False
    add_into(src_grad, taken)
    zero(taken)
    return True


def range_step(dest_grad: Any, src_grad: Any | None, dest_offset: int, src_offset: int,
               count: int) -> bool:
    """`wp.copy` of `count` elements: the gradient of the copied range flows into the source's
    (when it has one of the same type) and is consumed."""
    grads = (dest_grad,) if src_grad is None else (dest_grad, src_grad)
    if not _same_device(*grads):
        return False
    taken = flat_range(dest_grad, dest_offset, count)
    if src_grad is not None:
        add_into(flat_range(src_grad, src_offset, count), taken)
    zero(taken)
    return True
