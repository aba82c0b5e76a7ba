"""Devices: the CPU, CUDA devices ("cuda", "cuda:N"), the current device (a ContextVar) and
Warp's device functions.

CUDA devices exist when cuda-bindings loads, an NVIDIA driver initialises and it reports a device
(runtime/cuda/driver.py); asking for one otherwise is a GradloomError saying why. The driver is
initialised on the first question about CUDA, never by CPU work.
"""

from __future__ import annotations

import contextvars
import enum
from types import TracebackType
from typing import Any

from gradloom.errors import GradloomError
from gradloom.runtime.cuda import driver as cuda_driver

from ..hooks import Hook
from .backend import CPU_BACKEND, CUDA, Backend, DeviceProperties

#: a device's current stream, and setting it: runtime/stream.py, built on this module, fills them
GET_STREAM: Hook[Any] = Hook("Device.stream", "gradloom.runtime.stream")
SET_STREAM: Hook[Any] = Hook("Device.set_stream", "gradloom.runtime.stream")


class MemoryKind(enum.IntEnum):
    """The kind of memory behind an array (Warp's `wp.MemoryKind`, `array.memory_kind`): what
    it was allocated as, not where it lives now. The values are Warp's."""

    UNKNOWN = 0
    HOST = 1
    PINNED = 2
    CUDA_DEVICE = 3
    CUDA_MEMPOOL = 4
    CUDA_MANAGED = 5


class Device:
    """A compute device: the CPU, or CUDA device number `ordinal` (alias "cuda:N")."""

    __slots__ = ("alias", "backend", "entry_key", "ordinal")

    alias: str
    #: the CUDA device number; -1 for the CPU
    ordinal: int
    #: what generic code calls to allocate, copy and launch on this device (runtime/backend.py)
    backend: Backend
    #: where a kernel keeps its forward entry prepared for this device, if its backend keeps it
    #: there (runtime/launch/launch.py looks it up before asking the backend)
    entry_key: str

    def __init__(self, alias: str, ordinal: int = -1) -> None:
        object.__setattr__(self, "alias", alias)
        object.__setattr__(self, "ordinal", ordinal)
        object.__setattr__(self, "backend", CPU_BACKEND if ordinal < 0 else CUDA)
        object.__setattr__(self, "entry_key", f"_gl_prepared{'' if ordinal < 0 else ordinal}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "stream":  # Warp's `device.stream = s`
            self.set_stream(value)
            return
        raise AttributeError(f"Device attributes are read-only ({name!r})")

    @property
    def name(self) -> str:
        """The product name of a CUDA device ("NVIDIA H100 80GB HBM3"); "cpu" for the CPU."""
        return self.properties.name

    @property
    def is_cpu(self) -> bool:
        return self.ordinal < 0

    @property
    def is_cuda(self) -> bool:
        return self.ordinal >= 0

    @property
    def properties(self) -> DeviceProperties:
        """What the device's backend reports of it (runtime/backend.py)."""
        return self.backend.properties(self)  # type: ignore[no-any-return]

    @property
    def info(self) -> cuda_driver.DeviceInfo:
        """A CUDA device's properties (runtime/cuda/driver.py); an error for the CPU."""
        if not self.is_cuda:
            raise GradloomError("the CPU device has no CUDA device properties")
        return cuda_driver.current().info(self.ordinal)

    @property
    def arch(self) -> int:
        """Compute capability as an int (90 for sm_90); 0 for the CPU."""
        return self.properties.arch

    @property
    def sm_count(self) -> int:
        return self.properties.sm_count

    @property
    def total_memory(self) -> int:
        return self.properties.total_memory

    @property
    def is_mempool_supported(self) -> bool:
        return self.properties.is_mempool_supported

    @property
    def is_uva(self) -> bool:
        return self.properties.is_uva

    @property
    def max_shared_memory_per_block(self) -> int:
        """Bytes of shared memory a block may use by default; 0 for the CPU."""
        return self.properties.max_shared_memory_per_block

    @property
    def is_capturing(self) -> bool:
        """Whether a graph is being captured from this device's current stream (in this
        context; the CPU's: whether a CPU graph records)."""
        return bool(GET_STREAM.get()(self).is_capturing)

    @property
    def stream(self) -> Any:
        """The device's current stream (runtime/stream.py: CPU streams are synchronous)."""
        return GET_STREAM.get()(self)

    def set_stream(self, stream: Any, sync: bool = True) -> None:
        SET_STREAM.get()(stream, self, sync)

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
            if self.alias == other:
                return True
            if other != "cuda" or not self.is_cuda:
                return False
            try:  # "cuda" names the current CUDA device
                return _cuda_alias_target() is self
            except GradloomError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.alias)


#: what a `device=` argument accepts (Warp's typing name): a Device, an alias ("cpu", "cuda:0"),
#: or None for the current device
DeviceLike = Device | str | None


#: The CPU device (immutable).
CPU = Device("cpu")

_current: contextvars.ContextVar[Device] = contextvars.ContextVar("gradloom_device", default=CPU)
#: the current device (a bound C method: what a launch asks first, at no Python-call cost)
current_device = _current.get


#: the CUDA devices made so far, by ordinal (immutable objects, made once each)
_CUDA: dict[int, Device] = {}


def _no_cuda(ident: str) -> GradloomError:
    reason = cuda_driver.unavailable_reason()
    return GradloomError(
        f"device {ident!r} is not available: no CUDA device is available to gradloom "
        f"({reason}). Use device='cpu'."
    )


def _cuda(ordinal: int, ident: str) -> Device:
    """CUDA device `ordinal`, checked to exist."""
    dev = _CUDA.get(ordinal)
    if dev is not None and cuda_driver.current().device_count() > ordinal:
        return dev
    count = cuda_driver.current().device_count()
    if count == 0:
        raise _no_cuda(ident)
    if not 0 <= ordinal < count:
        have = ", ".join(f"cuda:{i}" for i in range(count))
        raise GradloomError(f"device {ident!r} does not exist: this machine has {count} CUDA "
                            f"device(s) ({have})")
    return _CUDA.setdefault(ordinal, Device(f"cuda:{ordinal}", ordinal))


def cuda_device(ordinal: int) -> Device:
    """CUDA device number `ordinal` (checked to exist)."""
    return _cuda(ordinal, f"cuda:{ordinal}")


def _cuda_alias_target() -> Device:
    """The device "cuda" means: the current device if it is a CUDA device, else cuda:0."""
    cur = _current.get()
    return cur if cur.is_cuda else _cuda(0, "cuda")


def get_device(ident: Any = None) -> Device:
    """The device named by `ident` ("cpu", "cuda", "cuda:N", a Device), or the current device
    when None."""
    if ident is None:
        return _current.get()
    if isinstance(ident, Device):
        if ident.is_cpu:
            return CPU
        return _cuda(ident.ordinal, ident.alias)
    if isinstance(ident, str):
        name = ident.strip().lower()
        if name == "cpu":
            return CPU
        if name == "cuda":
            return _cuda_alias_target()
        if name.startswith("cuda:"):
            try:
                ordinal = int(name[5:])
            except ValueError:
                raise GradloomError(f"invalid device {ident!r}: expected 'cuda:N' with an "
                                    "integer N") from None
            return _cuda(ordinal, ident)
        raise GradloomError(f"unknown device {ident!r}: gradloom knows 'cpu' and 'cuda[:N]'")
    raise GradloomError(f"invalid device identifier {ident!r}: expected a str or a Device")


def set_device(ident: Any) -> None:
    """Make `ident` the current device (in the current context)."""
    _current.set(get_device(ident))


def get_preferred_device() -> Device:
    """The best available device: cuda:0 if there is one, else the CPU."""
    return _cuda(0, "cuda:0") if is_cuda_available() else CPU


def get_cuda_device_count() -> int:
    """The number of CUDA devices (0 without cuda-bindings, an NVIDIA driver or a device)."""
    return cuda_driver.current().device_count()


def get_cuda_driver_version() -> int | None:
    """Warp's `wp.get_cuda_driver_version()`: the NVIDIA driver's CUDA version as an int (12040
    for 12.4), None where no driver can be loaded."""
    return cuda_driver.current().driver_version()


def get_cuda_devices() -> list[Device]:
    return [_cuda(i, f"cuda:{i}") for i in range(get_cuda_device_count())]


def get_cuda_device(ordinal: int | None = None) -> Device:
    """CUDA device `ordinal`; None: the current CUDA device ("cuda")."""
    if ordinal is None:
        return get_device("cuda")
    return _cuda(int(ordinal), f"cuda:{ordinal}")


def is_cuda_available() -> bool:
    """True only when a CUDA device can be used: cuda-bindings, an NVIDIA driver and a device."""
    return cuda_driver.is_cuda_available()


def is_cpu_available() -> bool:
    return True


def is_device_available(device: Any) -> bool:
    try:
        get_device(device)
    except GradloomError:
        return False
    return True


def get_devices() -> list[Device]:
    return [CPU, *get_cuda_devices()]


def synchronize() -> None:
    """Wait for all devices: the CUDA devices gradloom has used (CPU work is synchronous)."""
    driver = cuda_driver.started()
    if driver is None:
        return
    for ordinal in driver.used_devices():
        driver.synchronize(ordinal)


def synchronize_device(device: Any = None) -> None:
    """Wait for all work on one device (CPU work has always finished already)."""
    dev = get_device(device)
    dev.backend.synchronize(dev)


def init() -> None:
    """Warp's explicit initialisation: gradloom initialises lazily, so this does nothing."""


class ScopedDevice:
    """`with ScopedDevice("cpu"):` makes a device current for the block, then restores."""

    def __init__(self, device: Any) -> None:  # Warp's keyword: `ScopedDevice(device="cpu")`
        self.device = get_device(device)
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
