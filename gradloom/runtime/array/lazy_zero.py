"""Gradients zeroed or seeded when first used: `Tape.zero()` defers the zeroing of a large host
gradient, and `Tape.backward(grads=...)` the copy of a seed into one, until something uses its
memory; neither happens where that use overwrites every element or reads the seed in place.

A tape's gradients are zeroed after each backward pass and, in a training loop, overwritten by
the next pass's seeds or added into by its adjoints: zeroing them at once, and copying each
seed before an adjoint reads it, are passes over memory the result often does not need (a
16M-element saxpy's forward + backward spent half its time in them: benchmarks/README.md).

A deferred gradient `g` keeps its memory; its `_np` and `ptr` attributes move into a `Pending`
token, so every use of its memory through gradloom (`numpy()`, `_concrete()`, `ptr`, views,
copies, fills, launches with `g` as an argument) misses them and `array.__getattr__` settles
the token first: the memory is zeroed, or the seed copied in, then used. A seed `s` that a
pending copy reads is guarded the same way (its token's `dependents`): any use of `s` first
copies it into every gradient still waiting for it. Other ways to settle: `discard` (the
caller overwrites every element), `memory` / `seed_memory` (an adjoint that zeroes each
element before using it, or reads the seed where it is: runtime/tape/adjoint.py),
`settle_all` (an adjoint launched outside a Tape reads gradients through its arrays' launch
words: everything pending is settled first), `raw_ptr` of a guarded seed.

Deferred only where nothing else can reach the memory unseen: host memory, C-contiguous, at
least MIN_BYTES, no other numpy array or view holding it (counted by reference counts), no
tape watching it, no tape recording and no graph capture. A raw address read from `ptr`
beforehand and used afterwards through another library bypasses gradloom, as a numpy view's
writes bypass a tape's snapshots (docs/autodiff.md).
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

from ..capturing import recording_graph
from ..memops import copy_into, fill
from ..recording import ACTIVE_TAPES

#: gradients smaller than this are zeroed and seeded at once
MIN_BYTES = 1 << 20
#: the name of the token in a deferred array's __dict__
TOKEN = "_lazy_zero"


class Pending:
    """The memory of one deferred array: a gradient to zero (`source` None) or to fill from a
    seed (`source`: the seed's token) when first used, while `active`; or a seed that pending
    copies still read (`dependents`)."""

    __slots__ = ("__weakref__", "active", "dependents", "ptr", "source", "storage")

    def __init__(self, storage: Any, ptr: int, source: Pending | None = None) -> None:
        self.storage, self.ptr, self.active, self.source = storage, ptr, True, source
        self.dependents: list[Pending] = []

    def resolve(self, write: bool = True) -> None:
        """Settle the memory (without writing it where `write` is False); the array keeps
        lacking its attributes until its own next use restores them (`settle`)."""
        if not self.active:
            return
        self.active = False
        _PENDING.discard(self)
        for dep in list(self.dependents):  # a seed: copied into what still waits for it
            dep.resolve()
        source, self.source = self.source, None
        if source is not None:
            source.dependents.remove(self)
            if write:
                copy_into(self.storage, source.storage)
        elif write and not _is_seed(self):
            fill(self.storage, 0)


def _is_seed(token: Pending) -> bool:
    return token in _SEEDS


#: tokens not settled yet (settle_all); weak: a dropped array needs nothing
_PENDING: weakref.WeakSet[Pending] = weakref.WeakSet()
#: the tokens of seeds (guards: settling one writes nothing of its own)
_SEEDS: weakref.WeakSet[Pending] = weakref.WeakSet()


def _deferrable(g: Any) -> Any:
    """g's storage where g may be deferred, else None."""
    storage = g.__dict__.get("_np")
    if (storage is None or storage.nbytes < MIN_BYTES or not storage.flags.c_contiguous
            or g._mem.watchers or ACTIVE_TAPES.get() or recording_graph() is not None
            or not _unshared(storage)):
        return None
    return storage


def _unshared(storage: Any) -> bool:
    """Whether only the array's own attribute holds storage and its memory: no numpy view, no
    exported buffer, no second gradloom array over it. (Counts: the attribute, the caller's
    local, this argument and getrefcount's own; the base's: storage's reference, `owner` and
    getrefcount's own.)"""
    if sys.getrefcount(storage) > 4:
        return False
    owner = storage.base
    if owner is None:
        return True
    return type(owner).__module__ == "numpy" and owner.base is None and \
        sys.getrefcount(owner) <= 3


def _install(g: Any, token: Pending) -> None:
    d = g.__dict__
    del d["_np"], d["ptr"]
    d[TOKEN] = token
    g._words = g._launch_key = None
    _PENDING.add(token)


def defer(g: Any) -> bool:
    """Zero gradient array g when first used instead of now; False where it cannot be (the
    caller zeroes it now)."""
    token = g.__dict__.get(TOKEN)
    if token is not None:
        if token.active and not _is_seed(token):
            if token.source is not None:  # waiting for a seed: now for nothing
                token.source.dependents.remove(token)
                token.source = None
            return True
        del token
        settle(g)  # a seed (its copies made first), or settled: deferred afresh
    storage = _deferrable(g)
    if storage is None:
        return False
    _install(g, Pending(storage, g.__dict__["ptr"]))
    return True


def defer_copy(g: Any, seed: Any) -> bool:
    """Fill gradient array g with a copy of array `seed` (same dtype and layout) when first
    used; False where it cannot be (the caller copies now)."""
    d, s = g.__dict__, seed.__dict__
    if seed is g or (TOKEN in s and not (s[TOKEN].active and _is_seed(s[TOKEN]))):
        return False  # a seed waiting to be zeroed or filled itself: copied now
    if TOKEN in d:
        if not d[TOKEN].active or _is_seed(d[TOKEN]):
            return False
        discard(g)
    storage = _deferrable(g)
    seed_storage = s.get("_np") if TOKEN not in s else s[TOKEN].storage
    if storage is None or seed_storage is None or seed_storage.nbytes != storage.nbytes or \
            not seed_storage.flags.c_contiguous or \
            (TOKEN not in s and (seed._mem.watchers or not _unshared(seed_storage))):
        return False
    source = s.get(TOKEN)
    if source is None:
        source = Pending(seed_storage, s["ptr"])
        _install(seed, source)
        _SEEDS.add(source)
    token = Pending(storage, d["ptr"], source)
    source.dependents.append(token)
    _install(g, token)
    return True


def settle(g: Any, zero: bool = True) -> None:
    """Give g its memory back, settled first (zeroed, its seed copied in, or copied into what
    waits for it) unless `zero` is False (the caller overwrites every element)."""
    token = g.__dict__.pop(TOKEN, None)
    if token is None:
        return
    g.__dict__["_np"], g.__dict__["ptr"] = token.storage, token.ptr
    token.resolve(write=zero or bool(token.dependents))


def discard(g: Any) -> None:
    """g's elements are all about to be overwritten: its pending zeroing or copy is not
    needed (a seed's dependents still get their copies)."""
    settle(g, zero=False)


def raw_ptr(g: Any) -> int:
    """g's address without settling a pending gradient (a launch packs a gradient's address;
    only an adjoint uses it, and adjoints settle or take over pending gradients first); a
    seed's copies are made first (the launch may write it)."""
    token = g.__dict__.get(TOKEN)
    if token is None:
        return g.ptr or 0
    if token.dependents:
        settle(g)
    return int(token.ptr)


def address(g: Any) -> int:
    """g's address, settling nothing."""
    token = g.__dict__.get(TOKEN)
    return int(token.ptr) if token is not None else (g.__dict__.get("ptr") or 0)


def storage_of(g: Any) -> Any:
    """g's host memory (numpy) without settling it; None for device memory."""
    token = g.__dict__.get(TOKEN)
    return token.storage if token is not None else g.__dict__.get("_np")


def memory(g: Any) -> Any:
    """g's memory (numpy), unzeroed where its zeroing is pending: for an adjoint that zeroes
    each element before using it (runtime/tape/adjoint.py)."""
    token = g.__dict__.get(TOKEN)
    return g.numpy() if token is None else token.storage


def seed_of(g: Any) -> Pending | None:
    """The token of the seed gradient g waits to be filled from (None: none)."""
    token = g.__dict__.get(TOKEN)
    return None if token is None or not token.active else token.source


def is_pending(g: Any) -> bool:
    """g's zeroing is deferred (not a pending copy)."""
    token = g.__dict__.get(TOKEN)
    return token is not None and bool(token.active) and token.source is None and \
        not token.dependents and not _is_seed(token)


def idle() -> bool:
    """Whether no gradient or seed waits now (nothing is deferred): then no array's
    `seed_of` or `is_pending` holds (a Tape's backward asks once per recorded launch)."""
    return not _PENDING


def settle_all() -> None:
    """Settle every pending gradient and seed now (before an adjoint launched outside a Tape)."""
    for token in list(_PENDING):
        token.resolve()
    _PENDING.clear()
