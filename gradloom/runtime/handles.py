"""Opaque uint64 handles kernels receive (`HashGrid.id`), and what a Tape keeps of them.

A handle is the address of a descriptor that kernels read through builtins. It is an `int`, so
it passes as a `wp.uint64` argument, and `wp.uint64(handle)` returns it unchanged. It holds its
owner alive. A Tape records launches with `frozen(args)`: each handle is replaced by one that
points at a copy of the descriptor as it is now, so that the adjoint, run later, sees the
structure the forward launch saw even if the owner was rebuilt in between. A frozen copy may
keep its structure compactly: its owner's `thaw()` makes it whole for the adjoint's run
(`thawed(args)`) and returns what lets it go again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any


class Handle(int):
    """A descriptor address that also holds what the descriptor points into."""

    __gl_handle__ = True
    _owner: Any
    _freeze: Callable[[], Handle] | None

    def __new__(cls, address: int, owner: Any,
                freeze: Callable[[], Handle] | None = None) -> Handle:
        h = super().__new__(cls, address)
        h._owner = owner
        h._freeze = freeze
        return h

    def frozen(self) -> Handle:
        """A handle to the descriptor's current contents, unchanged by later rebuilds."""
        return self if self._freeze is None else self._freeze()

    def __repr__(self) -> str:
        return f"{type(self._owner).__name__}.id({int(self):#x})"


def frozen(args: Sequence[Any]) -> list[Any]:
    """Launch arguments with every handle frozen (what a Tape records)."""
    return [a.frozen() if isinstance(a, Handle) else a for a in args]


def thaw(args: Sequence[Any]) -> list[Callable[[], None]]:
    """Make the frozen handles among `args` whose owner keeps its structure compactly
    (`thaw()`) whole; returns what lets each go again (`release`). A Tape's backward calls it
    for every recorded launch: a plain loop, no context manager."""
    return [a._owner.thaw() for a in args
            if isinstance(a, Handle) and hasattr(a._owner, "thaw")]


def release(releases: list[Callable[[], None]]) -> None:
    for r in releases:
        r()


@contextmanager
def thawed(args: Sequence[Any]) -> Iterator[None]:
    """While the block runs, the frozen handles among `args` are whole (`thaw`)."""
    releases = thaw(args)
    try:
        yield
    finally:
        release(releases)
