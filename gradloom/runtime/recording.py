"""The tapes recording right now (a context variable), and how array operations reach them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any

from ..errors import TapeError
from .backend import transfer_backend
from .readmarks import check_copy

#: Every Tape whose `with` block is active, outermost first; each records every operation.
ACTIVE_TAPES: ContextVar[tuple[Any, ...]] = ContextVar("gradloom_active_tapes", default=())


class FuncRecord:
    """A backward step given as a Python function (array operations, `Tape.record_func`).

    `arrays`: those whose gradients `Tape.zero()` resets. `written`: how many of them (the
    first ones) the operation overwrites without reading; the rest it reads. None: unknown
    (a user's function), taken as read and written."""

    # a Tape holds one per recorded array operation (a zero_ per simulation substep): no
    # instance dict unless a subclass or a caller sets other attributes
    __slots__ = ("__dict__", "_arrays", "backward", "written")

    def __init__(self, backward: Callable[[], None], arrays: Sequence[Any],
                 written: int | None = None) -> None:
        self.backward = backward
        self._arrays = list(arrays)
        self.written = written

    def arrays(self) -> list[Any]:
        return self._arrays

    def touches(self) -> list[tuple[Any, bool, bool]]:
        """(array, reads its contents, writes it) for each array, as `LaunchRecord.touches`."""
        if self.written is None:
            return [(a, True, True) for a in self._arrays]
        return [(a, k >= self.written, k < self.written) for k, a in enumerate(self._arrays)]


def record_op(backward: Callable[[], None], arrays: Sequence[Any],
              devices: bool = False, carried: bool = False) -> None:
    """Record an array operation's backward step on every active tape. `arrays`: the array the
    operation overwrites first, then the arrays it reads (their gradients are read when
    `backward` runs, so a `.grad` replaced after recording is the one used). `devices`: the
    backward step handles arrays in device memory (through `on_host`); other operations on
    CUDA arrays are refused. `carried`: forward-mode tapes were told already (`forward_step`);
    otherwise they refuse the operation (runtime/tape/tangent.py)."""
    tapes = ACTIVE_TAPES.get()
    if tapes and not devices and not all(a.device.backend.host_memory for a in arrays):
        raise TapeError("recording this operation on CUDA arrays on a wp.Tape is not "
                        "supported yet (docs/gpu.md): run it on CPU arrays, or outside the "
                        "Tape")
    for tape in tapes:
        if not (carried and hasattr(tape, "takes_launch")):
            tape.record(FuncRecord(backward, arrays, written=1))


def refuse_forward_mode(what: str) -> None:
    """Refuse an operation that forward mode (runtime/tape/tangent.py) cannot carry tangents
    through, while a forward-mode tape is active."""
    if any(hasattr(t, "takes_launch") for t in ACTIVE_TAPES.get()):
        raise TapeError(f"{what} has no forward-mode (jvp) rule yet; run it outside the jvp, "
                        "or write it as a kernel")


def forward_step(name: str, *args: Any) -> None:
    """Tell each active forward-mode tape (runtime/tape/tangent.py: `copied`, `range_copied`,
    `overwritten`) about an array operation whose tangents it carries."""
    for tape in ACTIVE_TAPES.get():
        step = getattr(tape, name, None)
        if step is not None:
            step(*args)


def record_copy(dest: Any, src: Any, where: Any = ...) -> None:
    """On active tapes: the gradient of dest[where] = src flows from dest to src (summed over
    the dimensions src was broadcast along)."""
    if ACTIVE_TAPES.get():
        check_copy(dest, src)
        forward_step("copied", dest, src, where)
    if (dest._grad is None or src._grad is None or dest.dtype != src.dtype
            or not ACTIVE_TAPES.get()):
        return

    def backward() -> None:
        dg, sg = dest._grad, src._grad
        if dg is None or sg is None:
            return
        if transfer_backend(dg.device.backend, sg.device.backend).copy_step(dg, sg, where):
            return
        on_host([dg, sg], flow)

    def flow(dg: Any, target: Any) -> None:
        taken = dg[where]
        extra = taken.ndim - target.ndim
        summed = taken.sum(axis=tuple(range(extra))) if extra > 0 else taken
        axes = tuple(k for k, n in enumerate(target.shape) if n == 1 and summed.shape[k] != 1)
        target += summed.sum(axis=axes, keepdims=True) if axes else summed
        dg[where] = 0

    record_op(backward, [dest, src], devices=True, carried=True)


def on_host(grads: Sequence[Any], step: Callable[..., None]) -> None:
    """Run a backward step on numpy views of gradient arrays: a host array's own memory, or
    for an array in device memory a host copy, written back after the step (a round trip, for
    what runtime/cuda/grads.py does not do on the device: docs/gpu.md)."""
    views = [g.numpy() for g in grads]
    step(*views)
    for g, v in zip(grads, views, strict=True):
        g.device.backend.write_host(g, v)
