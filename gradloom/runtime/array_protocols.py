"""Protocols `wp.array` exports to other frameworks: DLPack (`__dlpack__`, `__dlpack_device__`).

A mixin, so that array.py stays within its size budget; the memory is the array's numpy storage,
so the export is zero-copy and numpy's own DLPack implementation does the work.
"""

from __future__ import annotations

from typing import Any

from gradloom.errors import GradloomError

#: DLPack's device type code for CPU memory (kDLCPU).
DLPACK_CPU = 1


class ArrayProtocols:
    """DLPack export for `wp.array` (CPU memory, zero-copy)."""

    def numpy(self) -> Any:  # provided by `array`
        raise NotImplementedError

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule sharing this array's memory (vector/matrix components trail)."""
        if stream is not None and stream != -1:
            raise BufferError("gradloom arrays live on the CPU: __dlpack__ takes no stream")
        kwargs: dict[str, Any] = {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        data = self.numpy()
        if data.dtype.names is not None:
            raise GradloomError(
                f"cannot export an array of structs (dtype {data.dtype}) through DLPack: "
                "DLPack has no struct types"
            )
        try:
            return data.__dlpack__(**kwargs)
        except TypeError:  # numpy < 2 knows only `stream`
            if copy:
                return data.copy().__dlpack__()
            return data.__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (DLPACK_CPU, 0)
