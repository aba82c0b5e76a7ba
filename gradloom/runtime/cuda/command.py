"""`wp.launch(..., device="cuda", record_cmd=True)`: a CUDA launch kept as a command that
`launch()` runs (again), with Warp's `Launch` methods to change its parameters and grid.

Its arguments are checked against the kernel when it is made and when they change. Each
`launch()` goes through `wp.launch` (runtime/launch/launch.py), so it is recorded on active
tapes, captured into a CUDA graph being captured on its device, and raises as a launch does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import GradloomError, user_traceback
from ..device import Device
from ..launch.launch import _dims, launch
from ..launch.recorded import RecordedParams
from .launch import prepared


class CudaLaunch(RecordedParams):
    """A recorded CUDA launch (see the module docstring)."""

    def __init__(self, kernel: Any, dim: Any, args: Sequence[Any], adj: list[Any] | None,
                 device: Device, stream: Any, max_blocks: int, block_dim: int,
                 record_tape: bool) -> None:
        self.kernel, self.device, self.stream = kernel, device, stream
        self.adjoint, self.record_tape = adj, record_tape
        self.max_blocks, self.block_dim = max_blocks, block_dim
        self.params = [name for name, _ in kernel.params]
        self.args = list(args)
        self.dims = _dims(dim)
        self._check()

    def _check(self) -> None:
        """The arguments fit the kernel (LaunchError naming the one that does not)."""
        variant = "forward" if self.adjoint is None else "adjoint"
        prepared(self.kernel, variant, self.device).packer.values(self.args)

    def set_dim(self, dim: Any) -> None:
        self.dims = _dims(dim)

    def _set_args(self, values: list[Any]) -> None:
        """Take new arguments if they fit the kernel; else keep the old ones and raise."""
        old = self.args
        self.args = values
        try:
            self._check()
        except GradloomError:
            self.args = old
            raise

    def launch(self, stream: Any = None) -> None:
        """Run the launch (on `stream`, else the stream it was recorded with, else the device's
        current stream)."""
        try:
            launch(self.kernel, self.dims, self.args, [], self.adjoint, None, self.device,
                   self.stream if stream is None else stream, self.adjoint is not None,
                   self.record_tape, False, self.max_blocks, self.block_dim)
        except GradloomError as exc:
            raise user_traceback(exc) from None

    def run(self) -> None:
        """Run it now (a CPU graph's replay runs its nodes this way)."""
        self.launch()

    def __repr__(self) -> str:
        return f"<gradloom CUDA Launch of {self.kernel.key!r} on {self.device}, dim={self.dims}>"
