"""CUDA launches on a `wp.Tape`: copy-on-write snapshots in device memory and the adjoint
launched on the device.

A recorded CUDA launch is a `LaunchRecord` (runtime/tape/adjoint.py) whose watches keep device
copies: when something is about to overwrite an array the adjoint will read, `before_write`
(runtime/array/watch.py) makes each watch copy the array's byte span device-to-device, queued on the
device's current stream ahead of the write. `backward()` launches the kernel's adjoint on the
device against the contents the forward saw (the snapshots, or the arrays themselves when
nothing overwrote them), with the arrays' own gradients; a full adjoint stack reruns the whole
launch (runtime/cuda/launch.py restores what it wrote).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..array.array import array
from ..array.watch import NDArray, Watch
from ..device import Device
from ..launch.launch import arg_array
from ..recording import on_host
from ..stream import cuda_stream
from ..tape.adjoint import LaunchRecord, _replace
from .array import copy_same_layout, view_of, with_grad
from .launch import prepared as prepared_for


class DeviceWatch(Watch):
    """A promise to keep a device array view's contents: a device copy when it is written."""

    __slots__ = ()

    def preserve(self) -> None:
        if self.saved is None:
            self.saved = copy_same_layout(self.array)

    def contents(self) -> array:
        """The contents as they were when the watch began, in device memory."""
        return self.array if self.saved is None else self.saved  # type: ignore[no-any-return]

    def host(self) -> NDArray:
        """A host copy of those contents."""
        return self.contents().numpy()


class CudaLaunchRecord(LaunchRecord):
    """A CUDA launch on a tape: its device, its grid, and device snapshots."""

    watch = DeviceWatch

    def __init__(self, kernel: Any, dims: tuple[int, ...], args: Sequence[Any], compiled: Any,
                 device: Device, max_blocks: int = 0, block_dim: int = 256) -> None:
        self.device, self.grid = device, (max_blocks, block_dim)
        super().__init__(kernel, dims, args, compiled)

    def backward(self) -> None:
        prepared = prepared_for(self.kernel, "adjoint", self.device)
        # the GPU runs threads in no set order: two threads writing one element overlap too
        self.check_overlap(prepared, prepared.packer, exclusive=True)
        prepared.run_on(self.dims, self.device_args(), cuda_stream(self.device), *self.grid)
        self._consume_replaced_minmax()

    def device_args(self) -> list[Any]:
        """The launch's arguments, each array's data replaced by the contents the adjoint must
        see (a fresh device copy for arrays the kernel reads and writes), with its gradient."""
        args = list(self.args)
        for key, flags in self.flags.items():
            a = arg_array(self.args, key)
            seen = None if a is None else self.adjoint_contents(key, flags, copy_same_layout)
            if a is None or seen is None:
                continue
            data = seen[0]
            _replace(args, key, with_grad(data, a.grad) if a.grad is not None
                     else view_of(data, 0, data.shape, data.strides))
        return args

    def _consume_replaced_minmax(self) -> None:
        for key, watch in self.after.items():
            a = arg_array(self.args, key)
            if a is not None and a.grad is not None:
                before = self.before[key]
                assert isinstance(before, DeviceWatch) and isinstance(watch, DeviceWatch)
                replaced = before.host() != watch.host()
                on_host([a.grad], lambda g, r=replaced: g.__setitem__(r, 0))
