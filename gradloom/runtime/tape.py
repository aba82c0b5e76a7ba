"""`wp.Tape`: records launches and array operations, then runs their adjoints in reverse."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import Token
from typing import Any

from ..errors import GradloomError
from .adjoint import LaunchRecord
from .array import array
from .foreign import as_array
from .recording import ACTIVE_TAPES


class FuncRecord:
    """A backward step given as a Python function (array operations, `record_func`)."""

    def __init__(self, backward: Callable[[], None], arrays: Sequence[array]) -> None:
        self.backward = backward
        self._arrays = list(arrays)

    def arrays(self) -> list[array]:
        return self._arrays


class Tape:
    """Records the launches and array operations run inside `with tape:`.

    `backward()` runs them backwards: gradients flow from the seeded arrays' `.grad` into the
    `.grad` of every array they depend on. Leaf gradients accumulate across calls until
    `zero()`. While several tapes are active (nested `with` blocks), each records every
    operation; `backward` on one replays only what it recorded.
    """

    def __init__(self) -> None:
        self.records: list[LaunchRecord | FuncRecord] = []
        self.loss: array | None = None
        self._tokens: list[Token[tuple[Any, ...]]] = []

    def __enter__(self) -> Tape:
        self._tokens.append(ACTIVE_TAPES.set((*ACTIVE_TAPES.get(), self)))
        return self

    def __exit__(self, *exc: object) -> None:
        ACTIVE_TAPES.reset(self._tokens.pop())

    # -- recording ----------------------------------------------------------------------------

    def begin_launch(self, kernel: Any, dims: tuple[int, ...], args: Sequence[Any],
                     compiled: Any) -> LaunchRecord:
        return LaunchRecord(kernel, dims, args, compiled)

    def end_launch(self, record: LaunchRecord) -> None:
        record.finish()
        self.records.append(record)

    def record_func(self, backward: Callable[[], None], arrays: Sequence[array]) -> None:
        """Record a Python function to run during `backward` (arrays: those whose gradients
        `zero()` resets)."""
        self.records.append(FuncRecord(backward, arrays))

    # -- backward -----------------------------------------------------------------------------

    def backward(self, loss: array | None = None,
                 grads: dict[array, Any] | None = None) -> None:
        """Propagate gradients backwards through everything recorded.

        `loss`: a one-element array; its gradient is set to 1. `grads`: {array: seed}; each
        array's gradient is set to a copy of its seed (the seed itself is never written).
        """
        if loss is None and not grads:
            raise GradloomError("Tape.backward() needs loss=<1-element array> or "
                                "grads={array: seed}")
        if loss is not None:
            loss = as_array(loss, "Tape.backward(loss=...)")
            g = _gradient_of(loss, "loss")
            if loss.size != 1:
                raise GradloomError(f"Tape.backward(loss=...): the loss must have exactly one "
                                    f"element, got shape {loss.shape}; use grads={{array: seed}} "
                                    "for other outputs")
            self.loss = loss
            g.fill_(1.0)
        for a, seed in (grads or {}).items():
            g = _gradient_of(as_array(a, "Tape.backward(grads=...)"), "grads")
            g.assign(_values(seed))
        for record in reversed(self.records):
            record.backward()

    # -- housekeeping -------------------------------------------------------------------------

    def _arrays(self) -> list[array]:
        seen: dict[int, array] = {}
        for record in self.records:
            for a in record.arrays():
                seen.setdefault(id(a), a)
        if self.loss is not None:
            seen.setdefault(id(self.loss), self.loss)
        return list(seen.values())

    @property
    def gradients(self) -> dict[array, array]:
        """{array: its gradient} for every recorded array that has one."""
        return {a: a.grad for a in self._arrays() if a.grad is not None}

    def zero(self) -> None:
        """Zero the gradients of every array the tape recorded."""
        for a in self._arrays():
            if a.grad is not None:
                a.grad.zero_()

    def reset(self) -> None:
        """Zero the gradients, then forget everything recorded."""
        self.zero()
        self.records.clear()
        self.loss = None


def _values(seed: Any) -> Any:
    """A seed's values for `assign` (read, never written; tensors are detached)."""
    if isinstance(seed, array):
        return seed.numpy()
    if hasattr(seed, "detach"):
        return seed.detach().cpu().numpy()
    return seed


def _gradient_of(a: Any, what: str) -> array:
    if not isinstance(a, array):
        raise GradloomError(f"Tape.backward({what}=...): expected a gradloom array, got "
                            f"{type(a).__name__}")
    if a.grad is None:
        raise GradloomError(f"Tape.backward({what}=...): {a!r} has no gradient; create it with "
                            "requires_grad=True")
    return a.grad

