"""`wp.launch`: checks each argument against the kernel's signature, packs them, runs the entry."""

from __future__ import annotations

import ctypes
import functools
import math
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import config
from ..abi import (
    CLEAR_STATUS,
    ERROR_WORD,
    HEAD,
    NO_ERROR,
    STATUS_STACK_FULL,
    error_word,
    failed_thread,
    header,
)
from ..errors import GradloomError, KernelRuntimeError, LaunchError, user_traceback
from ..types import (
    ArrayType,
    IndexedArrayType,
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    make_composite_value,
)
from . import checks, parallel
from .array import NDArray, array
from .backend import CUDA
from .capturing import capturing, no_tape_while_capturing
from .device import CPU, current_device, get_device
from .foreign import adapt_args, array_slots
from .packing import Packer, describe
from .recorded import RecordedParams
from .recording import ACTIVE_TAPES
from .signals import launch_words
from .structs import array_fields, field_value
from .watch import before_write

_FIRST_STACK = 1 << 16
_MAX_THREADS = 2**63


def _dims(dim: Any) -> tuple[int, ...]:
    if type(dim) is int and 0 <= dim < _MAX_THREADS:
        return (dim,)
    bad = LaunchError(f"launch dim must be an int or a tuple of 1-4 non-negative ints whose "
                      f"product fits in int64, got {dim!r}")
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        dims: tuple[Any, ...] = (dim,)
    elif isinstance(dim, (tuple, list)):
        dims = tuple(dim)
    else:
        raise bad
    if not 1 <= len(dims) <= 4 or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise bad
    out = tuple(int(d) for d in dims)
    if math.prod(out) >= _MAX_THREADS:
        raise bad
    return out


class Prepared:
    """A compiled entry (a kernel's forward or adjoint) with its packer and launch blocks."""

    def __init__(self, kernel: Any, compiled: Any = None) -> None:
        self.kernel = kernel
        self.compiled = kernel.compiled() if compiled is None else compiled
        self.entry = self.compiled.entry
        #: the words kernels share with the SIGINT handler (codegen/signals.py)
        self.words = launch_words()
        self.launch_ndim = self.compiled.launch_ndim
        self._scatter = bool(self.compiled.scatter)
        self.packer = Packer(kernel.key, self.compiled.params)
        self._recalls, self._fill = self.packer.recalls, self.packer.fill
        self._pack_whole, self._values = self.packer.whole.pack_into, self.packer.values
        self._free: list[tuple[bytearray, int]] = []
        #: one adjoint stack per worker thread (index 0: the launching thread)
        self.stacks: list[NDArray] = []
        self.stack_changes = 0
        self._stack_words: list[tuple[int, int]] = []
        self.stack_for(0)
        access = self.compiled.access
        if access is None:  # not analysable: every array argument may be written
            access = {key: frozenset({"stores"}) for key in array_keys(self.compiled.params)}
        self.writes = [key for key, flags in access.items() if flags & {"stores", "minmax"}]
        self.write_args = [i for i, field in self.writes if field is None]
        self.struct_writes = [key for key in self.writes if key[1] is not None]
        self.array_slots = array_slots(self.compiled.params)
        self.array_positions = [i for i, _, _ in self.array_slots]
        #: measured cost of one thread (ns), which decides whether a launch is worth splitting;
        #: when to try again after splits that did not gain; free memory for chunked launches
        #: (runtime/parallel.py, runtime/chunking.py)
        self.ns_per_thread: float | None = None
        self.backoff = parallel.Backoff()
        self.chunkings: list[Any] = []
        self.is_adjoint = compiled is not None
        self.verify_fp = config.verify_fp
        # debug mode and verify_fp wrap run (runtime/checks.py); release launches pay nothing
        self.checked = config.mode == "debug" or self.verify_fp
        if self.checked:
            wrap = checks.debug_run if config.mode == "debug" else checks.verified_run
            self.run = functools.partial(wrap, self, self.run)  # type: ignore[method-assign]

    @property
    def stack(self) -> NDArray:
        return self.stacks[0]

    def stack_for(self, worker: int) -> NDArray:
        while len(self.stacks) <= worker:
            self.set_stack(len(self.stacks),
                           np.empty(_FIRST_STACK if self.compiled.uses_stack else 0, np.uint8))
        return self.stacks[worker]

    def set_stack(self, worker: int, stack: NDArray) -> None:
        if worker == len(self.stacks):
            self.stacks.append(stack)
            self._stack_words.append((0, 0))
        self.stacks[worker] = stack
        self._stack_words[worker] = (stack.ctypes.data if stack.size else 0), stack.size
        self.stack_changes += 1  # launch blocks kept for chunked launches follow (chunking.py)

    def stack_words(self, worker: int) -> tuple[int, int]:
        """(address, capacity) of a worker's adjoint stack, as the header holds them."""
        self.stack_for(worker)
        return self._stack_words[worker]

    def admit(self, args: Sequence[Any]) -> Sequence[Any]:
        """The launch's arguments with foreign arrays (numpy, torch, DLPack) wrapped, after
        tapes that still need the contents of arrays it writes have copied them."""
        n = len(args)
        for i in self.array_positions:
            if i < n and type(args[i]) is not array:
                args = adapt_args(self.kernel.key, self.array_slots, args)
                break
        self.protect_writes(args)
        return args

    def protect_writes(self, args: Sequence[Any]) -> None:
        """Before the launch writes its arrays: tapes that still need their contents copy them."""
        n = len(args)
        for i in self.write_args:
            if i < n:
                a = args[i]
                if isinstance(a, array) and a._mem.watchers:
                    before_write(a)
        for key in self.struct_writes:
            a = arg_array(args, key)
            if a is not None:
                before_write(a)

    def block(self) -> tuple[bytearray, int]:
        """A launch block and its address (reused; a concurrent launch takes another)."""
        if self._free:
            return self._free.pop()
        buf = bytearray(self.packer.block_bytes)
        return buf, ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))

    def release(self, block: tuple[bytearray, int]) -> None:
        self._free.append(block)

    def set_header(self, buf: bytearray, dims: tuple[int, ...], lo: int, hi: int,
                   worker: int = 0) -> None:
        HEAD.pack_into(buf, 0, *header(dims, self.stack_words(worker), lo, hi))

    def run(self, dims: tuple[int, ...], args: Sequence[Any],
            restart: Callable[[], None] | None = None) -> None:
        """Launch over dims, split across worker threads when that pays (runtime/parallel.py).
        When an adjoint's stack fills up, it grows and the launch resumes at the thread that
        found it full — or, given `restart` (which must undo what the launch did so far), starts
        over."""
        w = self.words  # a Ctrl-C from here on stops the kernel (codegen/signals.py)
        w.gl_launch_base = w.gl_interrupts
        if self.launch_ndim > len(dims):
            raise LaunchError(f"kernel '{self.kernel.key}' unpacks {self.launch_ndim} "
                              f"indices from wp.tid() but was launched with dim={dims!r}")
        total = dims[0] if len(dims) == 1 else math.prod(dims)
        block = self._free.pop() if self._free else self.block()
        buf, base = block
        try:
            if self._recalls:  # a recent launch's block, or header and arguments packed
                self._fill(buf, args, dims, self._stack_words[0])
            else:  # header and arguments in one call
                self._pack_whole(buf, 0, *dims, *_ONES[len(dims)], *CLEAR_STATUS,
                                 *self._stack_words[0], 0, total, *self._values(args))
            cost = self.ns_per_thread
            # a launch of a kernel without shared additions whose measured cost is below
            # config.parallel_min_ns runs serially (parallel.plan would say so, at a cost)
            chunks, wake, targets = (
                parallel.plan(self, total, args)
                if total > 1 and (self._scatter or cost is None
                                  or cost * total >= config.parallel_min_ns) else _ONE)
            if chunks > 1:
                parallel.run_split(self, block, dims, total, args, chunks, wake, targets,
                                   restart)
                return
            if total >= parallel.TIMED_THREADS:
                t0 = time.perf_counter_ns()
                self.entry(base)
                self.ns_per_thread = (time.perf_counter_ns() - t0) / total
            elif total:
                self.entry(base)
            if buf[ERROR_WORD] != NO_ERROR:
                self.recover(buf, base, 0, total, restart)
        finally:
            self._free.append(block)

    def recover(self, buf: bytearray, base: int, lo: int, hi: int,
                restart: Callable[[], None] | None, worker: int = 0) -> None:
        """A slice [lo, hi) stopped early: raise its error, or grow the stack and carry on from
        the thread that found it full (threads run last-first when `reverse_threads`)."""
        start, end = lo, hi
        while True:
            err = error_word(buf)
            if err == 0:
                return
            if err != STATUS_STACK_FULL:
                raise checks.status_error(self, err, buf)
            failed = failed_thread(buf)
            self.grow_stack(worker)
            if restart is not None:
                restart()
                start, end = lo, hi
            elif self.compiled.reverse_threads:
                end = failed + 1
            else:
                start = failed
            dims = HEAD.unpack_from(buf, 0)[:4]
            self.set_header(buf, dims, start, end, worker)
            self.entry(base)

    def grow_stack(self, worker: int = 0) -> None:
        """Double a worker's adjoint stack."""
        size = 2 * self.stacks[worker].size
        try:
            self.set_stack(worker, np.empty(size, np.uint8))
        except MemoryError:
            raise KernelRuntimeError(
                f"kernel '{self.kernel.key}': the adjoint needs more than {size // 2} bytes per "
                "thread to store its loops' values, and no more memory could be had") from None


def array_keys(params: Sequence[tuple[str, Any]]) -> list[tuple[int, str | None]]:
    """(param index, dotted struct field path or None) of every array among a kernel's
    parameters."""
    keys: list[tuple[int, str | None]] = []
    for i, (_, t) in enumerate(params):
        if isinstance(t, ArrayType):
            keys.append((i, None))
        elif isinstance(t, IndexedArrayType):
            keys.append((i, "data"))  # the array an indexed array views
        elif isinstance(t, StructType):
            keys.extend((i, path) for path, _ in array_fields(t))
    return keys


def arg_array(args: Sequence[Any], key: tuple[int, str | None]) -> array | None:
    """The array an argument key names in a launch's argument list, if it is one."""
    i, field = key
    if i >= len(args):
        return None
    value = args[i] if field is None else field_value(args[i], field)
    return value if isinstance(value, array) else None


def prepared_forward(kernel: Any) -> Prepared:
    prepared = getattr(kernel, "_gl_prepared", None)
    if prepared is None:
        if not hasattr(kernel, "compiled"):
            raise LaunchError(f"wp.launch() needs a @wp.kernel, got {type(kernel).__name__}")
        prepared = kernel._gl_prepared = Prepared(kernel)
        _PREPARED.add(kernel)
    return prepared  # type: ignore[no-any-return]


def prepared_adjoint(kernel: Any) -> Prepared:
    prepared = getattr(kernel, "_gl_adjoint_prepared", None)
    if prepared is None:
        if not hasattr(kernel, "adjoint_compiled"):
            raise LaunchError(f"wp.launch() needs a @wp.kernel, got {type(kernel).__name__}")
        prepared = Prepared(kernel, kernel.adjoint_compiled())
        kernel._gl_adjoint_prepared = prepared
        _PREPARED.add(kernel)
    return prepared  # type: ignore[no-any-return]


def adjoint_reads(kernel: Any) -> frozenset[tuple[int, str | None]] | None:
    """kernel.adjoint_reads(), once per kernel and build options (a Tape asks at every
    recorded launch)."""
    if "_gl_adjoint_reads" not in kernel.__dict__:
        kernel._gl_adjoint_reads = kernel.adjoint_reads()
        _PREPARED.add(kernel)
    return kernel._gl_adjoint_reads  # type: ignore[no-any-return]


#: kernels holding Prepared entries, dropped when an option that shapes their build changes
_PREPARED: weakref.WeakSet[Any] = weakref.WeakSet()


def _forget_prepared() -> None:
    for kernel in list(_PREPARED):
        kernel.__dict__.pop("_gl_prepared", None)
        kernel.__dict__.pop("_gl_adjoint_prepared", None)
        kernel.__dict__.pop("_gl_adjoint_reads", None)
    _PREPARED.clear()


config._add_rebuild_hook(_forget_prepared)


def default_args(kernel: Any) -> list[Any]:
    """Each parameter's default for a `wp.Launch` built without arguments: None for arrays,
    zero for numbers, vectors and matrices, a default-built instance for a struct."""
    out: list[Any] = []
    for _, t in kernel.params:
        if isinstance(t, ScalarType):
            out.append(t(0))
        elif isinstance(t, (VectorType, MatrixType)):
            out.append(make_composite_value(t, ()))  # zeros (a transform's too), as in Warp
        elif isinstance(t, StructType):
            out.append(t.cls())
        else:
            out.append(None)  # an array: unset (null), as in Warp
    return out


def with_gradients(args: Sequence[Any], adj: Sequence[Any]) -> list[Any]:
    """Arguments whose arrays use the given gradient arrays (None: the array's own .grad)."""
    out = list(args)
    for i, (value, g) in enumerate(zip(args, adj, strict=True)):
        if g is None or not isinstance(value, array):
            continue
        if not isinstance(g, array) or g.shape != value.shape or g.dtype != value.dtype:
            raise LaunchError(f"adjoint argument {i}: expected an array of shape {value.shape} "
                              f"and dtype {value.dtype!r} for the gradient, got {describe(g)}")
        out[i] = array._wrap(value.numpy(), value.dtype, value.device, g.numpy())
    return out

_ONES = {n: (1,) * (4 - n) for n in range(1, 5)}
_ONE: tuple[int, bool, list[Any]] = (1, False, [])


def launch(kernel: Any, dim: Any, inputs: Sequence[Any] = (), outputs: Sequence[Any] = (),
           adj_inputs: Any = None, adj_outputs: Any = None, device: Any = None,
           stream: Any = None, adjoint: bool = False, record_tape: bool = True,
           record_cmd: bool = False, max_blocks: int = 0, block_dim: int = 256) -> Any:
    """Run `kernel` once per thread of a 1-4-D grid: `wp.launch(k, dim=n, inputs=[a, b])`.

    Args:
        kernel: a `@wp.kernel` function (compiled at its first launch, then cached on disk).
        dim: the grid: an int n (threads 0..n-1) or a tuple of 1-4 ints; `wp.tid()` in the
            kernel returns the thread's index (a tuple for a multi-dimensional grid).
        inputs: the kernel's arguments, in order: arrays (`wp.array`, numpy arrays, torch
            tensors, DLPack producers of the right dtype and ndim), scalars, vectors and
            matrices (any sequence of the right length), `@wp.struct` instances.
        outputs: more arguments, appended after `inputs` (Warp's convention for written
            arrays; gradloom treats them alike).
        adj_inputs, adj_outputs: with `adjoint=True`, the gradient arrays of the inputs and
            outputs (None: each array's own `.grad`).
        device: "cpu", "cuda", "cuda:N" or a Device; None: the current device (the CPU unless
            `wp.ScopedDevice`/`wp.set_device` chose another). CUDA launches: docs/gpu.md.
        stream: the CUDA stream to launch on (None: the device's current stream).
        max_blocks, block_dim: the CUDA grid (0: as many blocks as the threads need) and the
            threads per block; no effect on the CPU.
        adjoint: run the kernel's adjoint instead: gradients flow from the outputs' gradients
            into the inputs' (what `wp.Tape.backward` does for each recorded launch).
        record_tape: record the launch on every active `wp.Tape` (default True).
        record_cmd: do not run: return a `wp.Launch` whose `launch()` runs it (and can run it
            again, cheaply, after `set_param_*`/`set_dim`).

    Returns None, or a `wp.Launch` with `record_cmd=True`.

    Raises LaunchError when an argument does not fit the kernel's signature (the message names
    the argument), a CompileError subclass when the kernel does not compile (naming the file
    and line), and KernelRuntimeError when the kernel reports an error while it runs (in debug
    mode: an out-of-bounds index, with the index, the array's shape and the thread). Ctrl-C
    stops a running launch within 16384 trips of any loop or 32768 threads and raises
    KeyboardInterrupt; the arrays it writes are then partly written (in debug mode they are
    restored to what they were before the launch). See docs/errors.md.
    """
    if (current_device() is not CPU) if device is None else (device is not CPU and device != "cpu"):
        return CUDA.get("launch")(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device,
                           stream, adjoint, record_tape, record_cmd, max_blocks, block_dim)
    try:
        args: Sequence[Any] = [*inputs, *outputs] if outputs else inputs
        if getattr(kernel, "is_generic", False):  # Warp's implicit overload of a generic kernel
            kernel = kernel.specialize(list(args))
        if not record_cmd and capturing(CPU) is not None:
            _capture(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, adjoint, record_tape)
            return None
        if adjoint or record_cmd:
            return _launch_adjoint_or_cmd(kernel, dim, inputs, outputs, args, adj_inputs,
                                          adj_outputs, adjoint, record_cmd, record_tape)
        try:
            prepared = kernel._gl_prepared
        except AttributeError:
            prepared = None
        if prepared is None:
            prepared = prepared_forward(kernel)
        dims = (dim,) if type(dim) is int and 0 <= dim < _MAX_THREADS else _dims(dim)
        tapes = ACTIVE_TAPES.get() if record_tape else ()
        if not tapes:
            prepared.run(dims, prepared.admit(args))
            return None
        args = adapt_args(kernel.key, prepared.array_slots, args)
        for tape in tapes:  # forward mode runs the kernel's tangent kernel (runtime/tangent.py)
            takes = getattr(tape, "takes_launch", None)
            if takes is not None and takes(kernel):
                tape.run_launch(kernel, dims, args)
                return None
        records = [t.begin_launch(kernel, dims, args, prepared.compiled) for t in tapes]
        prepared.protect_writes(args)
        prepared.run(dims, args)
        for tape, record in zip(tapes, records, strict=True):
            tape.end_launch(record)
        return None
    except GradloomError as exc:
        raise user_traceback(exc) from None  # the same exception, without our frames


def _launch_adjoint_or_cmd(kernel: Any, dim: Any, inputs: Sequence[Any],
                           outputs: Sequence[Any], args: Sequence[Any], adj_inputs: Any,
                           adj_outputs: Any, adjoint: bool, record_cmd: bool,
                           record_tape: bool) -> Any:
    adj = [*(adj_inputs or [None] * len(inputs)), *(adj_outputs or [None] * len(outputs))]
    if record_cmd:
        return Launch.recorded(kernel, dim, list(args), adj if adjoint else None, record_tape)
    prepared = prepared_adjoint(kernel)
    slots = prepared.array_slots
    args = adapt_args(kernel.key, slots, args)
    prepared.run(_dims(dim), with_gradients(args, adapt_args(kernel.key, slots, adj)))
    return None


def _capture(kernel: Any, dim: Any, inputs: Sequence[Any], outputs: Sequence[Any],
             adj_inputs: Any, adj_outputs: Any, adjoint: bool, record_tape: bool) -> None:
    """Record a launch into the graph being captured (runtime/capturing.py); it runs only when
    the graph is launched, with the arguments (array memory, scalar values) given now."""
    if record_tape:
        no_tape_while_capturing(f"wp.launch({getattr(kernel, 'key', kernel)!r})")
    cmd = launch(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, adjoint=adjoint,
                 record_tape=record_tape, record_cmd=True)
    graph = capturing(CPU)
    assert graph is not None
    graph.add(cmd)


class Launch(RecordedParams):
    """A launch recorded by `wp.launch(..., record_cmd=True)`, run by `launch()` as often as
    wanted. Its arguments are checked and packed once, so a small launch replays in about a
    microsecond; while a Tape records, or when it is large enough to split across threads, it
    goes through `wp.launch` instead (recorded, copy-on-write respected, split).

    `wp.Launch(kernel, device, adjoint=False)` (Warp's constructor) makes one with every
    parameter at its default (arrays None, numbers, vectors, quaternions and transforms zero, structs default-built)
    and dim 0: set them with `set_param_*` and `set_dim`. `fwd_args` / `adj_args` give the
    arguments and the adjoint's gradient arrays (None: each array's own `.grad`) instead;
    `hooks`, `params`, `params_addr`, `max_blocks` and `block_dim` (CUDA launch details) are
    accepted and unused, `bounds` is the dim."""

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
        if capturing(CPU) is not None:
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
        if self.record_tape:
            no_tape_while_capturing(f"Launch.launch() of {self.kernel.key!r}")
        graph = capturing(CPU)
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
