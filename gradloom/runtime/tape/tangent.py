"""Forward mode at run time: while a `TangentTape` is active, launches run tangent kernels.

Every float array has a tangent, kept as a *shadow* of its memory: a zeroed buffer the size of
the allocation the array's storage views, so an array and each of its views (slices,
reshapes, transposes) share one tangent with the same layout. A launch on the tape runs the
kernel's tangent kernel (`Kernel.tangent_kernel()`, autodiff/forward.py) instead: the
kernel's arguments, then the tangents of those holding float arrays; it computes the same
values and the tangents of what it writes. Array copies carry tangents along (`copied`); fills
and writes of host data make them zero (`overwritten`). Any other recorded array operation has
no forward rule and is refused (`record`), rather than leave a tangent silently stale.

With `gradients=True` (Hessian-vector products, forward_mode.py) the tangent arrays have
gradients too (shadows as well), and the tangent kernels' launches are recorded on the other
active tapes in place of the kernels', so a Tape's backward differentiates the tangents.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from contextvars import Token
from typing import Any

import numpy as np

from ...errors import GradloomError, TapeError
from ...types import ArrayType, IndexedArrayType, StructType
from ..array.array import NDArray, array
from ..array.watch import Memory
from ..launch.launch import launch
from ..recording import ACTIVE_TAPES, FuncRecord, refuse_forward_mode


class _Shadow:
    """The tangent (and its gradient) of one allocation: bytes laid out like the allocation."""

    def __init__(self, root: NDArray, gradients: bool) -> None:
        self.root = root  # kept alive: its id keys the shadow
        self.lo, hi = _bounds(root)
        self.bytes = np.zeros(hi - self.lo, np.uint8)
        self.grad = np.zeros(hi - self.lo, np.uint8) if gradients else None
        #: the gradient of the allocation's own values where it has none (gradients=True)
        self.primal_grad = np.zeros(hi - self.lo, np.uint8) if gradients else None
        self.mem = Memory()

    def view(self, storage: NDArray, buf: NDArray | None = None) -> NDArray:
        buf = self.bytes if buf is None else buf
        first = storage.__array_interface__["data"][0]
        return np.ndarray(storage.shape, storage.dtype, buf, first - self.lo, storage.strides)


class TangentTape:
    """Tangents of arrays, carried through the launches and copies run inside `with tape:`."""

    def __init__(self, gradients: bool = False) -> None:
        self.gradients = gradients
        self._shadows: dict[int, _Shadow] = {}
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

    def _shadow(self, storage: NDArray) -> _Shadow:
        root = storage
        while isinstance(root.base, np.ndarray):
            root = root.base
        shadow = self._shadows.get(id(root))
        if shadow is None:
            shadow = self._shadows[id(root)] = _Shadow(root, self.gradients)
        return shadow

    def tangent(self, a: array) -> NDArray:
        """The tangent of `a` as numpy storage with a's shape and strides (zero until set)."""
        storage = a.numpy()
        return self._shadow(storage).view(storage)

    def tangent_array(self, a: array) -> array:
        """The tangent of `a` as an array (with its gradient under `gradients=True`)."""
        storage = a.numpy()
        shadow = self._shadow(storage)
        grad = shadow.view(storage, shadow.grad) if shadow.grad is not None else None
        return array._wrap(shadow.view(storage), a.dtype, a.device, grad, shadow.mem)

    def with_gradient(self, a: array) -> array:
        """`a` with a gradient of the tape's own (gradients=True), so the reverse pass flows
        through every array (an intermediate the function made without one) and leaves the
        arrays' own `.grad` alone."""
        if not self.gradients or not _is_float(a):
            return a
        storage = a.numpy()
        shadow = self._shadow(storage)
        assert shadow.primal_grad is not None
        return array._wrap(storage, a.dtype, a.device, shadow.view(storage, shadow.primal_grad),
                           a._mem)

    def gradient(self, a: array) -> NDArray:
        """The gradient the reverse pass left for `a` (gradients=True) where `with_gradient`
        put it."""
        storage = a.numpy()
        shadow = self._shadow(storage)
        assert shadow.primal_grad is not None
        return shadow.view(storage, shadow.primal_grad)

    def set_tangent(self, a: array, values: Any) -> None:
        data = values.numpy() if isinstance(values, array) else values
        self.tangent(a)[...] = np.asarray(data).reshape(a.numpy().shape)

    # -- launches (runtime/launch/launch.py) ---------------------------------------------------------

    def takes_launch(self, kernel: Any) -> bool:
        """Every launch but a tangent kernel's own runs as its tangent kernel (`run_launch`)."""
        return getattr(kernel, "dual_of", None) is None

    def run_launch(self, kernel: Any, dims: tuple[int, ...], args: Sequence[Any]) -> None:
        if not hasattr(kernel, "tangent_kernel"):
            raise GradloomError(f"forward mode needs a @wp.kernel, got {type(kernel).__name__}")
        dual = kernel.tangent_kernel()
        tangents = [self._tangent_arg(args[k], kernel.params[k][1]) for k, _ in dual.dual_pairs]
        if self.gradients:
            args = [self._map_arrays(v, t, self.with_gradient)
                    for v, (_, t) in zip(args, kernel.params, strict=True)]
        launch(dual, dims, inputs=[*args, *tangents])

    def _tangent_arg(self, value: Any, t: Any) -> Any:
        """The tangent argument of a kernel argument that holds float arrays."""
        if isinstance(t, IndexedArrayType):
            raise TapeError("forward mode (jvp) through indexed arrays is not supported yet")
        return self._map_arrays(value, t, self.tangent_array)

    def _map_arrays(self, value: Any, t: Any, f: Any) -> Any:
        """`value` with each float array it holds (itself, or a struct's fields) replaced by
        f(array); the user's struct instances are copied, never changed."""
        if isinstance(value, array) and not value.device.backend.host_memory:
            raise TapeError("forward mode (jvp) of launches on CUDA arrays is not supported "
                            "yet: run it on CPU arrays")
        if isinstance(t, ArrayType):
            return f(value) if isinstance(value, array) and _is_float(value) else value
        if not isinstance(t, StructType) or value is None:
            return value
        out = copy.copy(value)
        for name, ft in t.fields:
            if isinstance(ft, ArrayType | StructType):
                setattr(out, name, self._map_arrays(getattr(value, name, None), ft, f))
        return out

    def begin_launch(self, kernel: Any, dims: tuple[int, ...], args: Sequence[Any],
                     compiled: Any) -> None:
        """A tangent kernel's own launch (run_launch made it): nothing to record."""

    def end_launch(self, record: Any) -> None:
        """Nothing to keep: the tangents are written when the launch runs."""

    # -- array operations (runtime/array/array.py, recording.py) --------------------------------------

    def copied(self, dest: array, src: array, where: Any = ...) -> None:
        """dest[where] = src: the tangent goes along (broadcast as the values were)."""
        if _is_float(dest):
            self._untaped("an array copy")
            self.tangent(dest)[where] = self.tangent(src) if _is_float(src) else 0

    def range_copied(self, dest: array, src: array, dest_offset: int, src_offset: int,
                     count: int) -> None:
        """wp.copy of `count` elements at flat offsets (runtime/array/ops.py)."""
        if _is_float(dest):
            self._untaped("wp.copy")
            target = _flat(self.tangent(dest), dest)[dest_offset:dest_offset + count]
            target[...] = (_flat(self.tangent(src), src)[src_offset:src_offset + count]
                           if _is_float(src) else 0)

    def overwritten(self, a: array, where: Any = ...) -> None:
        """a[where] was filled or given host data: constants, tangent zero."""
        if _is_float(a):
            self._untaped("filling or assigning an array")
            self.tangent(a)[where] = 0

    def record(self, record: FuncRecord) -> None:
        refuse_forward_mode("this array operation")

    def _untaped(self, what: str) -> None:
        if self.gradients:
            raise TapeError(f"{what} inside a Hessian-vector product is not supported yet: "
                            "write it as a kernel")


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
