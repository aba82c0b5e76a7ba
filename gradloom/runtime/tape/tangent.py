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

from ... import config
from ...errors import GradloomError, TapeError
from ...types import ArrayType, IndexedArrayType, StructType
from ..array.aligned import ALIGNMENT, aligned_zeros, bytes_like
from ..array.array import NDArray, array
from ..array.lazy_zero import MIN_BYTES
from ..array.watch import Memory
from ..capturing import recording_graph
from ..launch.launch import launch
from ..recording import ACTIVE_TAPES, FuncRecord, refuse_forward_mode


class _Shadow:
    """The tangent (and its gradient) of one allocation: bytes laid out like the allocation.

    A seed given as a contiguous buffer of the array's own layout is *borrowed*: the tangent is
    read where the caller keeps it (`bytes` then covers only the seeded array's bytes, from
    `lo`), and copied into a buffer of the tape's own (`own`) before anything would write it or
    a view reaches outside it."""

    def __init__(self, root: NDArray, gradients: bool, borrowed: NDArray | None = None,
                 at: int = 0, written: tuple[int, int] | None = None) -> None:
        """`written`: the bytes [lo, hi) the first launch writes every one of (a ZEROED
        variant, pipeline.Variant), left unzeroed here."""
        self.root = root  # kept alive: its id keys the shadow
        self.root_lo, self.root_hi = _bounds(root)
        self.borrowed = borrowed is not None
        size = self.root_hi - self.root_lo
        if borrowed is None:
            self.lo, self.bytes = self.root_lo, bytes_like(size, self.root_lo, written is None)
            if written is not None:
                self.bytes[:written[0] - self.root_lo] = 0
                self.bytes[written[1] - self.root_lo:] = 0
        else:
            self.lo, self.bytes = at, borrowed
        # laid out as the allocation, so views of them are aligned as its views are (every
        # tangent has a gradient, even one no launch writes, whose gradient nothing reads: an
        # adjoint given a null gradient runs its slower loop, codegen/entry_cpu.py)
        self.grad = bytes_like(size, self.root_lo) if gradients else None
        #: the gradient of the allocation's own values where it has none (gradients=True)
        self.primal_grad = bytes_like(size, self.root_lo) if gradients else None
        self.mem = Memory()

    def view(self, storage: NDArray, buf: NDArray | None = None) -> NDArray:
        first = storage.__array_interface__["data"][0]
        if buf is None:
            if self.borrowed and not self.covers(storage):
                self.own()
            buf, lo = self.bytes, self.lo
        else:
            lo = self.root_lo
        return np.ndarray(storage.shape, storage.dtype, buf, first - lo, storage.strides)

    def covers(self, storage: NDArray) -> bool:
        lo, hi = _bounds(storage)
        return self.lo <= lo and hi <= self.lo + self.bytes.size

    def overlaps(self, lo: int, hi: int) -> bool:
        """A borrowed tangent's memory (the caller's buffer) meets bytes [lo, hi)."""
        if not self.borrowed:
            return False
        at, end = _bounds(self.bytes)
        return lo < end and at < hi

    def own(self) -> None:
        """Copy a borrowed tangent into a zeroed buffer of the whole allocation."""
        if self.borrowed:
            full = bytes_like(self.root_hi - self.root_lo, self.root_lo)
            at = self.lo - self.root_lo
            full[at:at + self.bytes.size] = self.bytes
            self.lo, self.bytes, self.borrowed = self.root_lo, full, False


class TangentTape:
    """Tangents of arrays, carried through the launches and copies run inside `with tape:`."""

    def __init__(self, gradients: bool = False) -> None:
        self.gradients = gradients
        self._shadows: dict[int, _Shadow] = {}
        #: (allocation's id, gradient) of the memory `result` handed out
        self._released: set[tuple[int, bool]] = set()
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
        _SPANS.clear()

    # -- tangents -----------------------------------------------------------------------------

    def _shadow(self, storage: NDArray) -> _Shadow:
        root = _root(storage)
        shadow = self._shadows.get(id(root))
        if shadow is None:
            shadow = self._shadows[id(root)] = _Shadow(root, self.gradients)
        return shadow

    def tangent(self, a: array, write: bool = False) -> NDArray:
        """The tangent of `a` as numpy storage with a's shape and strides (zero until set);
        write: the caller writes it (a borrowed seed is copied first)."""
        storage = a.numpy()
        shadow = self._shadow(storage)
        if write:
            shadow.own()
            self._before_write(storage)
        return shadow.view(storage)

    def tangent_array(self, a: array) -> array:
        """The tangent of `a` as an array (with its gradient under `gradients=True`)."""
        storage = a.numpy()
        shadow = self._shadow(storage)
        grad = shadow.view(storage, shadow.grad) if shadow.grad is not None else None
        if grad is not None:
            return array._wrap(shadow.view(storage), a.dtype, a.device, grad, shadow.mem)
        out = array._like(a, shadow.view(storage), None)  # a's layout facts, not worked out
        out._mem = shadow.mem
        return out

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

    def result(self, a: array, gradient: bool = False) -> NDArray:
        """a's tangent (`gradient`: the gradient `gradient()` gives) for the caller to keep once
        the tape is done: the tape's own memory where it is contiguous, aligned and no other
        result took it (the tape writes it no more), else a copy; never a borrowed seed."""
        storage = a.numpy()
        shadow = self._shadow(storage)
        view = self.gradient(a) if gradient else shadow.view(storage)
        key = (id(shadow.root), gradient)
        if (shadow.borrowed and not gradient) or key in self._released or not view.size or \
                not view.flags.c_contiguous or view.ctypes.data % ALIGNMENT:
            return _copy(view)
        self._released.add(key)
        return view

    def set_tangent(self, a: array, values: Any) -> None:
        """Seed a's tangent. A contiguous numpy array (or host array) of a's dtype and shape,
        with a contiguous, is read where it is (borrowed, see `_Shadow`), never written."""
        data = values.numpy() if isinstance(values, array) else values
        storage = a.numpy()
        root = _root(storage)
        if (isinstance(data, np.ndarray) and data.dtype == storage.dtype
                and data.shape == storage.shape and data.flags.c_contiguous
                and storage.flags.c_contiguous and storage.size and id(root) not in self._shadows):
            borrowed = data.reshape(-1).view(np.uint8)
            at = storage.__array_interface__["data"][0]
            self._shadows[id(root)] = _Shadow(root, self.gradients, borrowed, at)
            return
        self.tangent(a, write=True)[...] = np.asarray(data).reshape(storage.shape)

    def _before_write(self, storage: NDArray) -> None:
        """Something writes `storage` (values or tangent): borrowed tangents whose memory it
        meets (a seed that is itself an array of the program) become the tape's own first."""
        lo, hi = _bounds(storage)
        for shadow in self._shadows.values():
            if shadow.overlaps(lo, hi):
                shadow.own()

    # -- launches (runtime/launch/launch.py) ---------------------------------------------------------

    def takes_launch(self, kernel: Any) -> bool:
        """Every launch but a tangent kernel's own runs as its tangent kernel (`run_launch`)."""
        return getattr(kernel, "dual_of", None) is None

    def run_launch(self, kernel: Any, dims: tuple[int, ...], args: Sequence[Any]) -> None:
        if not hasattr(kernel, "tangent_kernel"):
            raise GradloomError(f"forward mode needs a @wp.kernel, got {type(kernel).__name__}")
        dual = kernel.tangent_kernel()
        written = _written_params(dual, len(kernel.params))
        variant = self._zeroed_variant(dual, dims, args, written)
        for k in written:
            self._map_arrays(args[k], kernel.params[k][1], self._written)
        tangents = [self._tangent_arg(args[k], kernel.params[k][1]) for k, _ in dual.dual_pairs]
        if self.gradients:
            args = [self._map_arrays(v, t, self.with_gradient)
                    for v, (_, t) in zip(args, kernel.params, strict=True)]
        device = self._direct(args) if variant is None else args[written[0]].device
        if device is None:
            launch(dual, dims, inputs=[*args, *tangents])
            return
        # no other tape records it (_zeroed_variant, _direct): the entry runs as launch() would
        if variant is not None:
            prepared = device.backend.prepared(dual, variant, device)
        else:
            try:
                prepared = dual.__dict__[device.entry_key]
            except (KeyError, AttributeError):
                prepared = device.backend.prepared(dual, "forward", device)
        prepared.run(dims, prepared.admit([*args, *tangents]))

    def _direct(self, args: Sequence[Any]) -> Any:
        """The device a tangent kernel's launch runs on without launch()'s bookkeeping: where
        only this tape is active, nothing captures, and launch() would do nothing else (no CPU
        blocks, no printing); None: launch() it."""
        if ACTIVE_TAPES.get() != (self,) or recording_graph() is not None or \
                config.enable_cpu_blocks or config.print_launches:
            return None
        device = next((a.device for a in args if isinstance(a, array)), None)
        return device if device is not None and device.is_cpu else None

    def _zeroed_variant(self, dual: Any, dims: tuple[int, ...], args: Sequence[Any],
                        written: list[int]) -> str | None:
        """The tangent kernel's variant zeroing, each thread its own element, the tangents of
        large written arrays that have none yet (zero) and that the launch covers
        (pipeline.Variant.ZEROED), their shadows made unzeroed; None (the plain tangent kernel)
        where none qualifies, a struct argument may hold arrays, or another tape records the
        launch (its adjoint would read what the shadow held before)."""
        if self.gradients or len(dims) != 1 or ACTIVE_TAPES.get() != (self,) or \
                recording_graph() is not None or \
                any(isinstance(t, StructType) for _, t in dual.params):
            return None
        roots = [id(_root(a.numpy())) for a in args if isinstance(a, array)]
        tangent_at = dict(dual.dual_pairs)
        chosen: dict[int, tuple[NDArray, NDArray]] = {}
        for k in written:
            a = args[k]
            if not isinstance(a, array) or a.shape != dims or not _is_float(a) or \
                    not a.device.backend.host_memory:
                continue
            storage = a.numpy()
            root = _root(storage)
            if storage.nbytes >= MIN_BYTES and storage.flags.c_contiguous and \
                    id(root) not in self._shadows and roots.count(id(root)) == 1:
                chosen[tangent_at[k]] = (root, storage)
        variant = dual.zeroed_variant(frozenset(chosen)) if chosen else None
        if variant is not None:
            for root, storage in chosen.values():
                self._shadows[id(root)] = _Shadow(root, False, written=_bounds(storage))
        return variant

    def _written(self, a: array) -> array:
        """A launch writes `a`, and so its tangent: no borrowed seed may be written."""
        storage = a.numpy()
        self._shadow(storage).own()
        self._before_write(storage)
        return a

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
            self.tangent(dest, write=True)[where] = self.tangent(src) if _is_float(src) else 0

    def range_copied(self, dest: array, src: array, dest_offset: int, src_offset: int,
                     count: int) -> None:
        """wp.copy of `count` elements at flat offsets (runtime/array/ops.py)."""
        lo, hi = _bounds(dest.numpy())
        if any(sh.overlaps(lo, hi) for sh in self._shadows.values()):
            raise TapeError("wp.copy overwrote the memory of a tangent given to jvp/hvp, which "
                            "is read where it is: pass a copy of it")
        if _is_float(dest):
            self._untaped("wp.copy")
            target = _flat(self.tangent(dest, write=True), dest)[dest_offset:dest_offset + count]
            target[...] = (_flat(self.tangent(src), src)[src_offset:src_offset + count]
                           if _is_float(src) else 0)

    def overwritten(self, a: array, where: Any = ...) -> None:
        """a[where] was filled or given host data: constants, tangent zero."""
        if _is_float(a):
            self._untaped("filling or assigning an array")
            self.tangent(a, write=True)[where] = 0

    def record(self, record: FuncRecord) -> None:
        refuse_forward_mode("this array operation")

    def _untaped(self, what: str) -> None:
        if self.gradients:
            raise TapeError(f"{what} inside a Hessian-vector product is not supported yet: "
                            "write it as a kernel")


def _copy(t: NDArray) -> NDArray:
    """A copy an array can wrap as it is (aligned, contiguous)."""
    out = aligned_zeros(t.shape, t.dtype) if t.size else np.array(t)
    out[...] = t
    return out


def _root(storage: NDArray) -> NDArray:
    root = storage
    while isinstance(root.base, np.ndarray):
        root = root.base
    return root


def _written_params(dual: Any, n: int) -> list[int]:
    """The parameters (of the n the kernel has) its tangent kernel writes (all when its
    accesses are unknown); kept in the tangent kernel, as its compiled entry is."""
    known: list[int] | None = dual.__dict__.get("_gl_written")
    if known is not None:
        return known
    access = dual.compiled().access
    known = list(range(n)) if access is None else sorted(
        {k for (k, _), flags in access.items() if k < n and flags & {"stores", "minmax"}})
    dual._gl_written = known
    return known


#: id(numpy array) -> (the array, kept alive, and its _bounds) while a tape runs: every launch
#: asks them of the same arrays, and numpy builds a dict to say where an array's data is
_SPANS: dict[int, tuple[NDArray, int, int]] = {}


def _bounds(a: NDArray) -> tuple[int, int]:
    """The lowest byte address of a's elements and one past the highest."""
    known = _SPANS.get(id(a))
    if known is not None and known[0] is a:
        return known[1], known[2]
    lo, hi = _span(a)
    if len(_SPANS) < 4096:
        _SPANS[id(a)] = (a, lo, hi)
    return lo, hi


def _span(a: NDArray) -> tuple[int, int]:
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
