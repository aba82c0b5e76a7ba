"""Copy-on-write for taped arrays: an array's memory knows who still needs its current contents.

A Tape that recorded a launch reading array `a` registers a Watch on `a`'s memory (shared by
every view of it). Any later write through gradloom — a launch that stores into it, `assign`,
`fill_`, `zero_`, `copy`, item assignment — first calls `before_write`, which makes each watch
save a copy of the contents it promised to keep. Writes through a numpy view (`a.numpy()[...] =`)
bypass this; docs/autodiff.md says so.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy.typing as npt

from .storage import copy_same_layout

NDArray = npt.NDArray[Any]


class Memory:
    """The identity of one allocation, shared by an array and its views."""

    __slots__ = ("__weakref__", "is_read", "watchers")

    def __init__(self) -> None:
        # weak references, so a dropped tape stops watching; a plain list keeps the check
        # every launch makes (`if watchers:`) cheap
        self.watchers: list[weakref.ref[Watch]] = []
        self.is_read = False  # config.verify_autograd_array_access (runtime/readmarks.py)


class Watch:
    """A promise to keep one array view's contents as they are now."""

    __slots__ = ("__weakref__", "array", "saved")

    def __init__(self, a: Any) -> None:
        self.array = a
        #: the contents kept (numpy; a device copy for a CUDA array: runtime/cuda/tape.py)
        self.saved: Any = None
        a._mem.watchers.append(weakref.ref(self))

    @classmethod
    def of(cls, a: Any) -> Watch:
        """A watch on `a`'s contents as they are now: the memory's latest watch where it is one
        of this class on this same view that has kept nothing yet — no write came since it
        began, since a write empties the list — so launches reading an array between two
        writes (a model's constant arrays, a state read by a substep's launches) share one;
        else a new one. Watches of tapes gone are dropped from the list here, so an array
        that is read at every step and never written keeps no growing list of them."""
        refs = a._mem.watchers
        if refs:
            w = refs[-1]()
            if w is None:
                refs[:] = [r for r in refs if r() is not None]
            elif type(w) is cls and w.array is a and w.saved is None:
                return w
        return cls(a)

    def preserve(self) -> None:
        if self.saved is None:
            self.saved = copy_same_layout(self.array.numpy())

    def contents(self) -> Any:
        """The contents as they were when the watch began."""
        return self.array.numpy() if self.saved is None else self.saved


def before_write(a: Any) -> None:
    """Call before writing into array `a`: watchers of its memory save what they need."""
    watchers = a._mem.watchers
    if watchers:
        for ref in watchers:
            w = ref()
            if w is not None:
                w.preserve()
        watchers.clear()
