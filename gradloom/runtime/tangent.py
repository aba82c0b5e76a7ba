"""Forward mode at run time: while a `TangentTape` is active, launches run their tangent entries.

Every float array has a tangent, kept as a *shadow* of its memory: a zeroed buffer the size of
the allocation the array's storage views, so an array and each of its views (slices,
reshapes, transposes) share one tangent with the same layout. A launch on the tape runs the
kernel's tangent entry (autodiff/forward.py) instead of its forward: it computes the same
values and, through the gradient slots, reads the tangents of what it reads and writes the
tangents of what it writes. Array copies carry tangents along (`copied`); fills and writes of
host data make them zero (`overwritten`). Any other recorded array operation has no forward
rule and is refused (`record`), rather than leave a tangent silently stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import Token
from typing import Any

import numpy as np

from ..errors import GradloomError, TapeError
from .adjoint import _replace
from .array import NDArray, array
from .launch import Prepared, arg_array, array_keys
from .recording import ACTIVE_TAPES, FuncRecord, refuse_forward_mode


class TangentTape:
    """Tangents of arrays, carried through the launches and copies run inside `with tape:`."""

    def __init__(self) -> None:
        #: id(root storage) -> (the root, its lowest byte address, the shadow bytes)
        self._shadows: dict[int, tuple[NDArray, int, NDArray]] = {}
        self._token: Token[tuple[Any, ...]] | None = None

    def __enter__(self) -> TangentTape:
        active = ACTIVE_TAPES.get()
        if any(isinstance(t, TangentTape) for t in active):
            raise TapeError("forward mode inside forward mode (a jvp of a jvp) is not "
                            "supported")
        self._token = ACTIVE_TAPES.set((*active, self))
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        ACTIVE_TAPES.reset(self._token)
        self._token = None

    # -- tangents -----------------------------------------------------------------------------

    def tangent(self, a: array) -> NDArray:
        """The tangent of `a` as numpy storage with a's shape and strides (zero until set)."""
        storage = a.numpy()
        root = storage
        while isinstance(root.base, np.ndarray):
            root = root.base
        entry = self._shadows.get(id(root))
        if entry is None:
            lo, hi = _bounds(root)
            entry = self._shadows[id(root)] = (root, lo, np.zeros(hi - lo, np.uint8))
        _, lo, shadow = entry
        first = storage.__array_interface__["data"][0]
        return np.ndarray(storage.shape, storage.dtype, shadow, first - lo, storage.strides)

    def set_tangent(self, a: array, values: Any) -> None:
        data = values.numpy() if isinstance(values, array) else values
        self.tangent(a)[...] = np.asarray(data).reshape(a.numpy().shape)

    # -- launches (runtime/launch.py) ---------------------------------------------------------

    def begin_launch(self, kernel: Any, dims: tuple[int, ...], args: Sequence[Any],
                     compiled: Any) -> Any:
        if any(isinstance(a, array) and a.device.is_cuda for a in _arrays(args, compiled)):
            raise TapeError("forward mode (jvp) of launches on CUDA arrays is not supported "
                            "yet: run it on CPU arrays")
        return kernel, compiled

    def end_launch(self, record: Any) -> None:
        """Nothing to keep: the tangents are written when the launch runs."""

    def launch_runner(self, record: Any, dims: tuple[int, ...], args: Sequence[Any]) -> None:
        """Run the launch: the tangent entry, every float array's gradient slot pointing at its
        tangent."""
        kernel, compiled = record
        prepared = _prepared_tangent(kernel)
        proxied = list(args)
        for key in array_keys(compiled.params):
            a = arg_array(args, key)
            if a is not None:
                grad = self.tangent(a) if _is_float(a) else None
                _replace(proxied, key, array._wrap(a.numpy(), a.dtype, a.device, grad, a._mem))
        prepared.run(dims, proxied)

    # -- array operations (runtime/array.py, recording.py) --------------------------------------

    def copied(self, dest: array, src: array, where: Any = ...) -> None:
        """dest[where] = src: the tangent goes along (broadcast as the values were)."""
        if _is_float(dest):
            self.tangent(dest)[where] = self.tangent(src) if _is_float(src) else 0

    def range_copied(self, dest: array, src: array, dest_offset: int, src_offset: int,
                     count: int) -> None:
        """wp.copy of `count` elements at flat offsets (runtime/array_ops.py)."""
        if _is_float(dest):
            target = _flat(self.tangent(dest), dest)[dest_offset:dest_offset + count]
            target[...] = (_flat(self.tangent(src), src)[src_offset:src_offset + count]
                           if _is_float(src) else 0)

    def overwritten(self, a: array, where: Any = ...) -> None:
        """a[where] was filled or given host data: constants, tangent zero."""
        if _is_float(a):
            self.tangent(a)[where] = 0

    def record(self, record: FuncRecord) -> None:
        refuse_forward_mode("this array operation")


def _bounds(a: NDArray) -> tuple[int, int]:
    """The lowest byte address of a's elements and one past the highest."""
    lo = hi = a.__array_interface__["data"][0]
    if a.size == 0:
        return lo, hi
    for n, stride in zip(a.shape, a.strides, strict=True):
        span = (n - 1) * stride
        lo, hi = (lo + span, hi) if span < 0 else (lo, hi + span)
    return lo, hi + a.itemsize


def _is_float(a: array) -> bool:
    return bool(a.numpy().dtype.kind == "f")


def _flat(storage: NDArray, a: array) -> NDArray:
    """The elements of a tangent in flattened order (a writable view: a contiguous array's,
    or a 1-D one's, which are the copies with offsets wp.copy allows)."""
    es = storage.shape[a.ndim:]
    return storage.reshape((-1, *es)) if storage.flags.c_contiguous else storage


def _arrays(args: Sequence[Any], compiled: Any) -> list[Any]:
    return [a for key in array_keys(compiled.params) if (a := arg_array(args, key)) is not None]


def _prepared_tangent(kernel: Any) -> Prepared:
    """The tangent entry with its packer, once per kernel and build options."""
    prepared: Prepared | None = kernel.__dict__.get("_gl_tangent_prepared")
    if prepared is None:
        if not hasattr(kernel, "tangent_compiled"):
            raise GradloomError(f"forward mode needs a @wp.kernel, got {type(kernel).__name__}")
        prepared = kernel._gl_tangent_prepared = Prepared(kernel, kernel.tangent_compiled())
    return prepared
