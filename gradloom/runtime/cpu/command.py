"""The CPU backend's recorded launch: `wp.launch(..., record_cmd=True)` and Warp's `wp.Launch`,
checked and packed once and replayed cheaply."""

from __future__ import annotations

import math
from typing import Any

from ...abi import ERROR_WORD, NO_ERROR, error_word
from ...errors import LaunchError, user_traceback
from ..array.array import array
from ..array.foreign import adapt_args
from ..array.watch import before_write
from ..capturing import recording_graph
from ..device import CPU, get_device
from ..launch import checks
from ..launch.blocks import launch_blocks
from ..launch.launch import _dims, default_args, launch
from ..launch.recorded import RecordedParams
from ..recording import ACTIVE_TAPES
from . import parallel
from .launch import prepared_adjoint, prepared_forward


class Launch(RecordedParams):
    """A launch recorded by `wp.launch(..., record_cmd=True)`, run by `launch()` as often as
    wanted. Its arguments are checked and packed once, so a small launch replays in about a
    microsecond; while a Tape records, or when it is large enough to split across threads, it
    goes through `wp.launch` instead (recorded, copy-on-write respected, split).

    `wp.Launch(kernel, device, adjoint=False)` (Warp's constructor) makes one with every
    parameter at its default (arrays None, numbers, vectors, quaternions and transforms zero, structs default-built)
    and dim 0: set them with `set_param_*` and `set_dim`. `fwd_args` / `adj_args` give the
    arguments and the adjoint's gradient arrays (None: each array's own `.grad`) instead;
    `hooks`, `params`, `params_addr` and `max_blocks` (CUDA launch details) are accepted and
    unused, `bounds` is the dim; `block_dim` is the CPU block width with
    `wp.config.enable_cpu_blocks` (runtime/launch/blocks.py), else 1."""

    def __init__(self, kernel: Any, device: Any = None, hooks: Any = None, params: Any = None,
                 params_addr: Any = None, bounds: Any = None, max_blocks: int = 0,
                 block_dim: Any = None, adjoint: bool = False, fwd_args: Any = None,
                 adj_args: Any = None) -> None:
        if device is not None and device != "cpu" and get_device(device) is not CPU:
            raise LaunchError(f"wp.Launch({kernel.key!r}, {device!r}) is not supported on CUDA "
                              "devices (gradloom records CPU launches only)")
        if getattr(kernel, "is_generic", False):
            raise LaunchError(f"kernel '{kernel.key}' is generic: record a launch of it with "
                              "wp.launch(..., record_cmd=True), which knows the argument types")
        kernel, _ = launch_blocks(kernel, True, block_dim)  # (runtime/launch/blocks.py)
        args = list(fwd_args) if fwd_args is not None else default_args(kernel)
        adj = (list(adj_args) if adj_args is not None else [None] * len(args)) if adjoint \
            else None
        self._setup(kernel, 0 if bounds is None else bounds, args, adj, True)

    @classmethod
    def recorded(cls, kernel: Any, dim: Any, args: list[Any], adj: list[Any] | None,
                 record_tape: bool) -> Launch:
        """The launch `wp.launch(..., record_cmd=True)` returns (adj: the gradient arrays of an
        adjoint launch, else None)."""
        self = cls.__new__(cls)
        self._setup(kernel, dim, args, adj, record_tape)
        return self

    def _setup(self, kernel: Any, dim: Any, args: list[Any], adj: list[Any] | None,
               record_tape: bool) -> None:
        self.kernel, self.adjoint, self.record_tape = kernel, adj, record_tape
        #: the CPU block width it runs with (Warp's `Launch.block_dim`: runtime/launch/blocks.py)
        self.block_dim = getattr(kernel, "cpu_block_dim", 1)
        self.prepared = prepared_adjoint(kernel) if adj is not None else prepared_forward(kernel)
        self.params = [name for name, _ in self.prepared.compiled.params]
        self.args = list(adapt_args(kernel.key, self.prepared.array_slots, args))
        self.dims = _dims(dim)
        self._buf, self._addr = self.prepared.block()  # owned for good, never released
        self._pack()

    def _pack(self) -> None:
        self.prepared.packer.pack(self.args, self._buf)
        total = math.prod(self.dims)
        self.prepared.set_header(self._buf, self.dims, 0, total)
        # the fast replay covers small forward launches writing no arrays held in structs;
        # everything else takes wp.launch's path (which also raises its errors)
        self._fast = (total < parallel.TIMED_THREADS and self.adjoint is None
                      and self.prepared.compiled.launch_ndim <= len(self.dims)
                      and not self.prepared.struct_writes and not self.prepared.checked)
        self._watched = [a for i in self.prepared.write_args if i < len(self.args)
                         and isinstance(a := self.args[i], array)]

    def set_dim(self, dim: Any) -> None:
        self.dims = _dims(dim)
        self._pack()

    def _set_args(self, values: list[Any]) -> None:
        self.args = list(adapt_args(self.kernel.key, self.prepared.array_slots, values))
        self._pack()

    def _adjoint_changed(self) -> None:
        self._pack()

    def launch(self, stream: Any = None) -> None:
        if recording_graph() is not None:
            self._capture()
            return
        if not self._fast or (self.record_tape and ACTIVE_TAPES.get()):
            launch(self.kernel, self.dims, self.args, adj_inputs=self.adjoint,
                   adjoint=self.adjoint is not None, record_tape=self.record_tape)
            return
        w = self.prepared.words  # a Ctrl-C from here on stops the kernel
        w.gl_launch_base = w.gl_interrupts
        for a in self._watched:
            if a._mem.watchers:
                before_write(a)
        self.prepared.entry(self._addr)
        if self._buf[ERROR_WORD] != NO_ERROR:
            self.raise_error()

    def run(self) -> None:
        """Run the launch now: a graph's replay (never inside a capture) runs it this way."""
        self.launch()

    def _capture(self) -> None:
        """Inside a graph capture: record a copy (later changes to this command do not reach
        the graph, as a CUDA graph keeps the parameters it captured)."""
        graph = recording_graph()
        assert graph is not None
        graph.add(Launch.recorded(self.kernel, self.dims, list(self.args), self.adjoint,
                                  self.record_tape))

    def raise_error(self) -> None:
        """After a fast run left an error in the block: clear it and raise it."""
        err = error_word(self._buf)
        try:
            exc = checks.status_error(self.prepared, err, self._buf)
        finally:  # the status words are the header's: put it back for the next replay
            self.prepared.set_header(self._buf, self.dims, 0, math.prod(self.dims))
        raise user_traceback(exc)

    def fast_parts(self) -> tuple[Any, int, bytearray, list[array]] | None:
        """(entry, block address, block, arrays it writes) for a replay loop that runs this
        launch as `run()` does when no Tape records, or None where `run()` takes wp.launch's
        path. A graph replay (runtime/capturing.py) uses them to skip per-launch overhead."""
        if not self._fast:
            return None
        return self.prepared.entry, self._addr, self._buf, self._watched


def command(kernel: Any, dim: Any, args: list[Any], adj: list[Any] | None, device: Any,
            stream: Any, max_blocks: int, block_dim: int, record_tape: bool) -> Launch:
    """The backend's recorded launch (`wp.launch(..., record_cmd=True)` on the CPU; no
    stream, no CUDA grid)."""
    return Launch.recorded(kernel, dim, args, adj, record_tape)
