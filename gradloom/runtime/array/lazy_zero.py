"""Gradients zeroed when first used: `Tape.zero()` defers the zeroing of a large host gradient
until something uses its memory, and skips it where that use overwrites every element.

A tape's gradients are zeroed after each backward pass and, in a training loop, overwritten
by the next pass's seeds (`backward(grads=...)`) or added into by its adjoints: zeroing them
at once is a pass over memory the result often does not need (a 16M-element saxpy's forward +
backward spent a quarter of its time in `tape.zero()`: benchmarks/README.md).

A deferred gradient `g` keeps its memory; its `_np` and `ptr` attributes move into a `Pending`
token, so every use of its memory through gradloom (`numpy()`, `_concrete()`, `ptr`, views,
copies, fills, launches with `g` as an argument) misses them and `array.__getattr__` settles
the token first: the memory is zeroed, then used. Three uses settle it without zeroing or
differently: `discard` (the caller overwrites every element: a seed copied into it),
`storage` (an adjoint that zeroes each element in its own first pass: runtime/tape/adjoint.py)
and `settle_all` (an adjoint launched outside a Tape, which reads gradients through its
arrays' launch words: everything pending is zeroed first).

Deferred only where nothing else can reach the memory unseen: host memory, C-contiguous, at
least MIN_BYTES, no other numpy array or view holding it (counted by reference counts), no
tape watching it, no tape recording and no graph capture. A raw address read from `ptr` before
`Tape.zero()` and used afterwards through another library bypasses gradloom, as a numpy view's
writes bypass a tape's snapshots (docs/autodiff.md).
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

from ..capturing import recording_graph
from ..memops import fill
from ..recording import ACTIVE_TAPES

#: gradients smaller than this are zeroed at once (with the others, in one shared pass)
MIN_BYTES = 1 << 20
#: the name of the token in a deferred array's __dict__
TOKEN = "_lazy_zero"


class Pending:
    """The memory of one deferred gradient: zeroed when first used (`active` until then)."""

    __slots__ = ("__weakref__", "active", "ptr", "storage")

    def __init__(self, storage: Any, ptr: int) -> None:
        self.storage, self.ptr, self.active = storage, ptr, True


#: tokens not settled yet (settle_all); weak: a dropped gradient needs no zeroing
_PENDING: weakref.WeakSet[Pending] = weakref.WeakSet()


def defer(g: Any) -> bool:
    """Zero gradient array g when first used instead of now; False where it cannot be (the
    caller zeroes it now)."""
    d = g.__dict__
    if TOKEN in d:
        return True
    storage = d.get("_np")
    if (storage is None or storage.nbytes < MIN_BYTES or not storage.flags.c_contiguous
            or g._mem.watchers or ACTIVE_TAPES.get() or recording_graph() is not None
            or not _unshared(storage)):
        return False
    token = Pending(storage, d["ptr"])
    del d["_np"], d["ptr"]
    d[TOKEN] = token
    g._words = g._launch_key = None
    _PENDING.add(token)
    return True


def _unshared(storage: Any) -> bool:
    """Whether only the array's own attribute holds storage and its memory: no numpy view, no
    exported buffer, no second gradloom array over it. (Counts: the attribute, `defer`'s
    local, this argument and getrefcount's own; the base's: storage's reference, `owner` and
    getrefcount's own.)"""
    if sys.getrefcount(storage) > 4:
        return False
    owner = storage.base
    if owner is None:
        return True
    return type(owner).__module__ == "numpy" and owner.base is None and \
        sys.getrefcount(owner) <= 3


def settle(g: Any, zero: bool = True) -> None:
    """Give g its memory back, zeroed first unless `zero` is False (the caller overwrites every
    element) or another holder of the token settled it already."""
    token = g.__dict__.pop(TOKEN, None)
    if token is None:
        return
    g.__dict__["_np"], g.__dict__["ptr"] = token.storage, token.ptr
    if token.active:
        token.active = False
        _PENDING.discard(token)
        if zero:
            fill(token.storage, 0)


def discard(g: Any) -> None:
    """g's elements are all about to be overwritten: its pending zeroing is not needed."""
    settle(g, zero=False)


def raw_ptr(g: Any) -> int:
    """g's address without settling it (a launch packs a gradient's address; only an adjoint
    uses it, and adjoints settle or take over pending gradients first)."""
    token = g.__dict__.get(TOKEN)
    return int(token.ptr) if token is not None else (g.ptr or 0)


def memory(g: Any) -> Any:
    """g's memory (numpy), unzeroed where its zeroing is pending: for an adjoint that zeroes
    each element before using it (runtime/tape/adjoint.py)."""
    token = g.__dict__.get(TOKEN)
    return g.numpy() if token is None else token.storage


def is_pending(g: Any) -> bool:
    token = g.__dict__.get(TOKEN)
    return token is not None and bool(token.active)


def settle_all() -> None:
    """Zero every pending gradient now (before an adjoint launched outside a Tape)."""
    for token in list(_PENDING):
        if token.active:
            token.active = False
            fill(token.storage, 0)
    _PENDING.clear()
