"""Slots through which a lower layer calls what a higher layer defines, filled by that layer.

Imports point downward only (docs/design.md §3). Where a lower layer needs something a higher
one defines (an operator on a host vector means what the kernel library says it means), the
lower layer owns a `Hook` and the higher layer fills it when it is imported, as JAX's core has
its lowering rules registered from above. `import gradloom` imports every layer, so every hook
is filled before user code runs; calling one that is not says which layer to import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from .errors import GradloomError

F = TypeVar("F", bound=Callable[..., Any])


class Hook(Generic[F]):
    """One function a higher layer provides (`fill`) and a lower one calls (`get`)."""

    def __init__(self, name: str, provider: str) -> None:
        self.name, self.provider = name, provider
        self._fn: F | None = None

    def fill(self, fn: F) -> F:
        """Install `fn` (usable as a decorator); the layer that defines it calls this once."""
        self._fn = fn
        return fn

    def get(self) -> F:
        if self._fn is None:
            raise GradloomError(f"{self.name} is provided by {self.provider}, which was not "
                                f"imported; import gradloom first")
        return self._fn
