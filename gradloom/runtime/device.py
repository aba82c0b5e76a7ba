"""Devices: the CPU device, the current device (a ContextVar) and Warp's device functions."""

from __future__ import annotations

import contextvars
from types import TracebackType
from typing import Any

from gradloom.errors import GradloomError
from gradloom.runtime.capturing import capturing


class Device:
    """A compute device. This build has exactly one: the CPU."""

    __slots__ = ("alias",)

    alias: str

    def __init__(self, alias: str) -> None:
        object.__setattr__(self, "alias", alias)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "stream":  # Warp's `device.stream = s`
            self.set_stream(value)
            return
        raise AttributeError(f"Device attributes are read-only ({name!r})")

    @property
    def name(self) -> str:
        return self.alias

    @property
    def is_cpu(self) -> bool:
        return self.alias == "cpu"

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def ordinal(self) -> int:
        return -1

    @property
    def is_uva(self) -> bool:
        return False

    @property
    def is_capturing(self) -> bool:
        """Whether a graph is being captured (in this context)."""
        return capturing()

    @property
    def stream(self) -> Any:
        """The device's current stream (runtime/stream.py: CPU streams are synchronous)."""
        from . import stream  # stream.py builds on this module

        return stream.get_stream(self)

    def set_stream(self, stream: Any, sync: bool = True) -> None:
        from . import stream as streams

        streams.set_stream(stream, self, sync)

    @property
    def has_stream(self) -> bool:
        return True

    def __str__(self) -> str:
        return self.alias

    def __repr__(self) -> str:
        return f"'{self.alias}'"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Device):
            return self.alias == other.alias
        if isinstance(other, str):
            return self.alias == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.alias)


#: The CPU device (immutable).
CPU = Device("cpu")

_current: contextvars.ContextVar[Device] = contextvars.ContextVar("gradloom_device", default=CPU)


def _no_cuda(ident: str) -> GradloomError:
    return GradloomError(
        f"device {ident!r} is not available: no CUDA device is available to gradloom "
        "(the GPU backend is not in this build). Use device='cpu'."
    )


def get_device(ident: Any = None) -> Device:
    """The device named by `ident` ("cpu", a Device), or the current device when None."""
    if ident is None:
        return _current.get()
    if isinstance(ident, Device):
        if ident.is_cpu:
            return CPU
        raise _no_cuda(ident.alias)
    if isinstance(ident, str):
        name = ident.strip().lower()
        if name == "cpu":
            return CPU
        if name == "cuda" or name.startswith("cuda:"):
            raise _no_cuda(ident)
        raise GradloomError(f"unknown device {ident!r}: gradloom knows 'cpu' (and 'cuda[:N]')")
    raise GradloomError(f"invalid device identifier {ident!r}: expected a str or a Device")


def set_device(ident: Any) -> None:
    """Make `ident` the current device (in the current context)."""
    _current.set(get_device(ident))


def get_preferred_device() -> Device:
    """The best available device: a CUDA device if there were one, else the CPU."""
    return CPU


def get_cuda_device_count() -> int:
    return 0


def get_cuda_devices() -> list[Device]:
    return []


def get_cuda_device(ordinal: int | None = None) -> Device:
    raise _no_cuda("cuda" if ordinal is None else f"cuda:{ordinal}")


def is_cuda_available() -> bool:
    return False


def is_cpu_available() -> bool:
    return True


def is_device_available(device: Any) -> bool:
    try:
        get_device(device)
    except GradloomError:
        return False
    return True


def get_devices() -> list[Device]:
    return [CPU]


def synchronize() -> None:
    """Wait for all devices: CPU work is synchronous, so there is nothing to wait for."""


def synchronize_device(device: Any = None) -> None:
    """Wait for one device (validates the identifier; CPU work is already finished)."""
    get_device(device)


def init() -> None:
    """Warp's explicit initialisation: gradloom initialises lazily, so this does nothing."""


class ScopedDevice:
    """`with ScopedDevice("cpu"):` makes a device current for the block, then restores."""

    def __init__(self, ident: Any) -> None:
        self.device = get_device(ident)
        self._tokens: list[contextvars.Token[Device]] = []

    def __enter__(self) -> Device:
        self._tokens.append(_current.set(self.device))
        return self.device

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _current.reset(self._tokens.pop())
