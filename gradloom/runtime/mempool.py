"""Warp's memory-pool and peer-access queries and switches (`wp.is_mempool_enabled`, ...).

CUDA devices allocate arrays from the device's memory pool when it has one and pools are
enabled for it (`wp.set_mempool_enabled`; at start: `config.enable_mempools_at_init`); the CPU
has no pools. gradloom does not enable access between different devices: peer and pool access
across devices are reported unsupported, and enabling them is refused with Warp's errors.
Which devices have pools switched off is a context variable (no global state).
"""

from __future__ import annotations

import contextvars
from types import TracebackType
from typing import Any

from .. import config
from .device import Device, get_device

#: ordinals of the CUDA devices whose pools were switched on (True) or off (False) explicitly
_SWITCHED: contextvars.ContextVar[tuple[tuple[int, bool], ...]] = contextvars.ContextVar(
    "gradloom_mempool_switched", default=())

_CUDA_ONLY = "Memory pools are only supported on CUDA devices"


def is_mempool_supported(device: Any = None) -> bool:
    """Whether the device has a memory pool allocator (CUDA devices that support one)."""
    return bool(get_device(device).is_mempool_supported)


def is_mempool_enabled(device: Any = None) -> bool:
    """Whether arrays on the device are allocated from its memory pool."""
    d = get_device(device)
    if not d.is_cuda or not d.is_mempool_supported:
        return False
    switched = dict(_SWITCHED.get())
    return switched.get(d.ordinal, bool(getattr(config, "enable_mempools_at_init", True)))


def set_mempool_enabled(device: Any, enable: bool) -> None:
    """Allocate the device's arrays from its memory pool (True) or with plain allocations."""
    d = get_device(device)
    if not d.is_cuda:
        if enable:
            raise ValueError(_CUDA_ONLY)
        return
    if enable and not d.is_mempool_supported:
        raise RuntimeError(f"Device {d} does not support memory pools")
    switched = dict(_SWITCHED.get())
    switched[d.ordinal] = bool(enable)
    _SWITCHED.set(tuple(sorted(switched.items())))


def _pool_device(device: Any) -> Device:
    d = get_device(device)
    if not d.is_cuda:
        raise ValueError(_CUDA_ONLY)
    if not d.is_mempool_supported:
        raise RuntimeError(f"Device {d} does not support memory pools")
    return d


def set_mempool_release_threshold(device: Any, threshold: int | float) -> None:
    _pool_device(device)
    raise RuntimeError("gradloom does not set memory pool release thresholds")


def get_mempool_release_threshold(device: Any = None) -> int:
    _pool_device(device)
    raise RuntimeError("gradloom does not read memory pool release thresholds")


def get_mempool_used_mem_current(device: Any = None) -> int:
    _pool_device(device)
    raise RuntimeError("gradloom does not read memory pool usage")


def get_mempool_used_mem_high(device: Any = None) -> int:
    _pool_device(device)
    raise RuntimeError("gradloom does not read memory pool usage")


def is_peer_access_supported(target_device: Any, peer_device: Any) -> bool:
    """Whether peer_device can access target_device's memory directly: a CUDA device its own."""
    t, p = get_device(target_device), get_device(peer_device)
    return t.is_cuda and p.is_cuda and t == p


def is_peer_access_enabled(target_device: Any, peer_device: Any) -> bool:
    return is_peer_access_supported(target_device, peer_device)


def _switch(what: str, target_device: Any, peer_device: Any, enable: bool) -> None:
    t, p = get_device(target_device), get_device(peer_device)
    if not enable:
        return
    if not (t.is_cuda and p.is_cuda):
        raise ValueError(f"{what} is only supported between CUDA devices")
    if what == "Memory pool access" and not t.is_mempool_supported:
        raise RuntimeError(f"Device {t} does not support memory pools")
    if t != p:
        raise RuntimeError(f"Device {p} cannot access device {t}")


def set_peer_access_enabled(target_device: Any, peer_device: Any, enable: bool) -> None:
    _switch("Peer access", target_device, peer_device, enable)


def is_mempool_access_supported(target_device: Any, peer_device: Any) -> bool:
    t = get_device(target_device)
    return bool(t.is_mempool_supported) and is_peer_access_supported(t, peer_device)


def is_mempool_access_enabled(target_device: Any, peer_device: Any) -> bool:
    return is_mempool_access_supported(target_device, peer_device)


def set_mempool_access_enabled(target_device: Any, peer_device: Any, enable: bool) -> None:
    _switch("Memory pool access", target_device, peer_device, enable)


class _Scoped:
    """Set something on entry, restore what it was on exit."""

    def __init__(self, get: Any, put: Any, enable: bool) -> None:
        self._get, self._put, self.enable = get, put, enable
        self._saved: bool | None = None

    def __enter__(self) -> _Scoped:
        self._saved = self._get()
        self._put(self.enable)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._put(bool(self._saved))


class ScopedMempool(_Scoped):
    """`with wp.ScopedMempool(device, enable):` pools on or off for the block."""

    def __init__(self, device: Any, enable: bool) -> None:
        self.device = get_device(device)
        super().__init__(lambda: is_mempool_enabled(self.device),
                         lambda on: set_mempool_enabled(self.device, on), enable)


class ScopedMempoolAccess(_Scoped):
    """`with wp.ScopedMempoolAccess(target, peer, enable):` pool access for the block."""

    def __init__(self, target_device: Any, peer_device: Any, enable: bool) -> None:
        t, p = get_device(target_device), get_device(peer_device)
        super().__init__(lambda: is_mempool_access_enabled(t, p),
                         lambda on: set_mempool_access_enabled(t, p, on), enable)


class ScopedPeerAccess(_Scoped):
    """`with wp.ScopedPeerAccess(target, peer, enable):` peer access for the block."""

    def __init__(self, target_device: Any, peer_device: Any, enable: bool) -> None:
        t, p = get_device(target_device), get_device(peer_device)
        super().__init__(lambda: is_peer_access_enabled(t, p),
                         lambda on: set_peer_access_enabled(t, p, on), enable)
