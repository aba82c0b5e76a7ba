"""The CPU backend's launches: a kernel's compiled entry with its packer, launch blocks and
adjoint stacks, run over the grid on the calling thread or split across the worker pool."""

from __future__ import annotations

import ctypes
import functools
import math
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import config
from ...abi import (
    CLEAR_STATUS,
    ERROR_WORD,
    HEAD,
    NO_ERROR,
    STATUS_STACK_FULL,
    error_word,
    failed_thread,
    header,
)
from ...errors import KernelRuntimeError, LaunchError
from ..array.array import NDArray, array
from ..array.foreign import adapt_args, array_slots
from ..array.storage import copy_same_layout
from ..array.watch import before_write
from ..device import Device
from ..launch import checks
from ..launch.launch import arg_array, array_keys
from ..launch.packing import Packer, describe
from ..signals import launch_words
from . import parallel
from .block_threads import run_block_threads

_FIRST_STACK = 1 << 16
_ONES = {n: (1,) * (4 - n) for n in range(1, 5)}
_ONE: tuple[int, bool, list[Any]] = (1, False, [])


class Prepared:
    """A compiled entry (a kernel's forward or adjoint) with its packer and launch blocks."""

    def __init__(self, kernel: Any, compiled: Any = None, adjoint: bool | None = None) -> None:
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
        #: (runtime/cpu/parallel.py, runtime/cpu/chunking.py)
        self.ns_per_thread: float | None = None
        self.backoff = parallel.Backoff()
        self.chunkings: list[Any] = []
        self.is_adjoint = compiled is not None if adjoint is None else adjoint
        #: the shared bytes of a CPU block whose threads exchange tile values (block_threads.py)
        self.block_exchange = 0 if getattr(kernel, "cpu_block_dim", 1) == 1 \
            else kernel.block_exchange_bytes()
        #: an adjoint's other variants (`prepared`)
        self.variants: dict[str, Prepared] = {}
        self.verify_fp = config.verify_fp
        # debug mode and verify_fp wrap run (runtime/launch/checks.py); release launches pay nothing
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
            if i < n and not issubclass(type(args[i]), array):  # the real class, not __class__
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

    def run(self, dims: tuple[int, ...], args: Sequence[Any], stream: Any = None,
            max_blocks: int = 0, block_dim: int = 256,
            restart: Callable[[], None] | None = None) -> None:
        """Launch over dims, split across worker threads when that pays (runtime/cpu/parallel.py);
        CPU work is synchronous (no stream) and has no CUDA grid (max_blocks, block_dim).
        When an adjoint's stack fills up, it grows and the launch resumes at the thread that
        found it full — or, given `restart` (which must undo what the launch did so far), starts
        over."""
        if self.compiled.reversed is not None and parallel.overlapping(args):
            # a zero-stride view defeats the proof that let the threads run in launch order
            reverse = prepared(self.kernel, self.compiled.reversed)
            return reverse.run(dims, args, stream, max_blocks, block_dim, restart=restart)
        w = self.words  # a Ctrl-C from here on stops the kernel (codegen/signals.py)
        w.gl_launch_base = w.gl_interrupts
        if self.launch_ndim > len(dims):
            raise LaunchError(f"kernel '{self.kernel.key}' unpacks {self.launch_ndim} "
                              f"indices from wp.tid() but was launched with dim={dims!r}")
        total = dims[0] if len(dims) == 1 else math.prod(dims)
        if self.block_exchange:
            run_block_threads(self, dims, args, self.kernel.cpu_block_dim, self.block_exchange)
            return
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
                parallel.plan(self, total, args, buf, dims)
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

    # -- the backend protocol (runtime/backend.py) ---------------------------------------------

    def adapt(self, args: Sequence[Any]) -> Sequence[Any]:
        """The arguments with foreign arrays (numpy, torch, DLPack) wrapped as arrays."""
        return adapt_args(self.kernel.key, self.array_slots, args)

    def with_gradients(self, args: Sequence[Any], adj: Sequence[Any]) -> GradientArgs:
        """An adjoint's arguments whose arrays use the gradient arrays `adj` (None: each
        array's own .grad)."""
        access = self.kernel.compiled().access or {}
        write_only = frozenset(i for (i, field), flags in access.items() if field is None
                               and "stores" in flags and not flags & {"loads", "minmax"})
        return with_gradients(args, adapt_args(self.kernel.key, self.array_slots, adj),
                              write_only)

    def begin(self, tape: Any, kernel: Any, dims: tuple[int, ...], args: Sequence[Any],
              max_blocks: int, block_dim: int) -> Any:
        """A tape's record of the launch about to run (runtime/tape/adjoint.py)."""
        return tape.begin_launch(kernel, dims, args, self.compiled)



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


#: kernels holding Prepared entries, dropped when an option that shapes their build changes
_PREPARED: weakref.WeakSet[Any] = weakref.WeakSet()


def _forget_prepared() -> None:
    for kernel in list(_PREPARED):
        kernel.__dict__.pop("_gl_prepared", None)
        kernel.__dict__.pop("_gl_adjoint_prepared", None)
    _PREPARED.clear()


config._add_rebuild_hook(_forget_prepared)


def prepared(kernel: Any, variant: str, device: Device | None = None) -> Prepared:
    """The kernel's forward or adjoint entry on the CPU, or another variant of one of them
    (pipeline.Variant names them; compiled at the first call)."""
    if variant == "forward":
        return prepared_forward(kernel)
    forward = variant.startswith("zeroed:")  # a forward variant (the others: the adjoint's)
    base = prepared_forward(kernel) if forward else prepared_adjoint(kernel)
    if variant == "adjoint":
        return base
    # kept with the base entry, so they are dropped with it (options, unload)
    other = base.variants.get(variant)
    if other is None:
        other = base.variants[variant] = Prepared(kernel, kernel._build(variant),
                                                  adjoint=not forward)
    return other


class GradientArgs(list):  # type: ignore[type-arg]
    """An adjoint's arguments, and what `write_back()` does after the run: a gradient laid out
    unlike its array (the kernel indexes a gradient with its array's strides) was passed as a
    copy in the array's layout and gets the result; the given gradient of an array the kernel
    only writes gets its seed back (the adjoint consumes it; Warp's explicit adjoint launch
    leaves the caller's buffer as it was)."""

    def __init__(self, args: list[Any], back: list[tuple[NDArray, NDArray]]) -> None:
        super().__init__(args)
        self.back = back

    def write_back(self) -> None:
        for dest, tmp in self.back:
            dest[...] = tmp


def with_gradients(args: Sequence[Any], adj: Sequence[Any],
                   write_only: frozenset[int] = frozenset()) -> GradientArgs:
    """Arguments whose arrays use the given gradient arrays (None: the array's own .grad);
    `write_only`: the positions of arrays the kernel writes and never reads (GradientArgs)."""
    out, back = list(args), []
    for i, (value, g) in enumerate(zip(args, adj, strict=True)):
        if g is None or not isinstance(value, array):
            continue
        if not isinstance(g, array) or g.shape != value.shape or g.dtype != value.dtype:
            raise LaunchError(f"adjoint argument {i}: expected an array of shape {value.shape} "
                              f"and dtype {value.dtype!r} for the gradient, got {describe(g)}")
        vnp, gnp = value.numpy(), g.numpy()
        if value.size and gnp.strides != vnp.strides:
            tmp = copy_same_layout(vnp)
            tmp[...] = gnp
            # a broadcast gradient is never written back, nor a seed the adjoint consumes
            if 0 not in gnp.strides and i not in write_only:
                back.append((gnp, tmp))
            gnp = tmp
        elif value.size and i in write_only:
            back.append((gnp, copy_same_layout(gnp)))
        out[i] = array._wrap(vnp, value.dtype, value.device, gnp)
    return GradientArgs(out, back)
