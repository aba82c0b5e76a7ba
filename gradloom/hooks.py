"""Slots through which a lower layer calls what a higher layer defines, filled by that layer.

Imports point downward only (docs/design.md §3). Where a lower layer needs something a higher
one defines (an operator on a host vector means what the kernel library says it means), the
lower layer owns a `Hook` and the higher layer fills it when it is imported, as JAX's core has
its lowering rules registered from above. A hook not filled yet imports its provider by name
on first use (as runtime/backend.py loads a device backend), so a layer loaded lazily — the
frontend's lowering is imported only when something is compiled — is still found, and the
lower layer keeps no import edge to it.
"""

from __future__ import annotations

import importlib
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
            importlib.import_module(self.provider)  # it fills this hook when imported
            if self._fn is None:
                raise GradloomError(f"{self.name}: {self.provider} did not provide it")
        return self._fn
