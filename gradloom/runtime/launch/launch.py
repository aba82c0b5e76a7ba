"""`wp.launch`: one path for every device. Resolves the device and the kernel's overload,
records the launch into a graph being captured or on the active Tapes, and hands the run to the
device's backend (runtime/backend.py: its `prepared` entry checks, packs and launches)."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import config
from ...errors import GradloomError, LaunchError, user_traceback
from ...hooks import Hook
from ...types import (
    ArrayType,
    FabricArrayType,
    IndexedArrayType,
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    make_composite_value,
)
from ..array import lazy_zero
from ..array.array import array
from ..array.structs import array_fields, field_value
from ..capturing import ACTIVE_CAPTURE, recording_graph
from ..device import current_device, get_device
from ..recording import ACTIVE_TAPES
from .blocks import launch_blocks

_MAX_THREADS = 2**63

#: `config.print_launches`: a launch's line goes to the active logger's info (logger.py fills it)
PRINT_LAUNCH: Hook[Callable[[str], None]] = Hook("config.print_launches", "gradloom.logger")


def _repeat_leading(kernel: Any, dims: tuple[int, ...], repeats: int, args: Sequence[Any],
                    dev: Any, stream: Any, record_tape: bool, max_blocks: int,
                    block_dim: int | None) -> None:
    """A launch over more dimensions than the kernel unpacks from `wp.tid()`, as Warp 1.19
    documents it: every thread of the whole grid runs and `i = wp.tid()` is its leading index
    (`i, j = wp.tid()` its leading two). The threads of the trailing dimensions repeat those of
    the leading ones, so this is the leading-dimensional launch (dims) once per trailing index
    (repeats)."""
    for _ in range(repeats):
        launch(kernel, dims, args, device=dev, stream=stream, record_tape=record_tape,
               max_blocks=max_blocks, block_dim=block_dim)


def _dims(dim: Any) -> tuple[int, ...]:
    if type(dim) is int and 0 <= dim < _MAX_THREADS:
        return (dim,)
    plain = tuple(dim) if type(dim) is list else dim  # launch_tiled's grids are lists
    # a tuple of non-negative ints (bools excluded by the exact type) skips the general checks
    # below (they took 1.5 us of a launch, this loop 0.15)
    if type(plain) is tuple and 0 < len(plain) <= 4:
        for d in plain:
            if type(d) is not int or d < 0:
                break
        else:
            if math.prod(plain) < _MAX_THREADS:
                return plain
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        dims: tuple[Any, ...] = (dim,)
    elif isinstance(dim, (tuple, list)):
        dims = tuple(dim)
    else:
        raise _bad_dims(dim)
    if not 1 <= len(dims) <= 4 or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise _bad_dims(dim)
    out = tuple(int(d) for d in dims)
    if math.prod(out) >= _MAX_THREADS:
        raise _bad_dims(dim)
    return out


def _bad_dims(dim: Any) -> LaunchError:
    return LaunchError(f"launch dim must be an int or a tuple of 1-4 non-negative ints whose "
                       f"product fits in int64, got {dim!r}")


def array_keys(params: Sequence[tuple[str, Any]]) -> list[tuple[int, str | None]]:
    """(param index, dotted struct field path or None) of every array among a kernel's
    parameters."""
    keys: list[tuple[int, str | None]] = []
    for i, (_, t) in enumerate(params):
        if isinstance(t, ArrayType):
            keys.append((i, None))
        elif isinstance(t, FabricArrayType):
            continue  # Fabric memory: no array to track (no gradient, as in Warp)
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


def adjoint_reads(kernel: Any) -> frozenset[tuple[int, str | None]] | None:
    """kernel.adjoint_reads(), once per kernel and build options (a Tape asks at every
    recorded launch)."""
    if "_gl_adjoint_reads" not in kernel.__dict__:
        kernel._gl_adjoint_reads = kernel.adjoint_reads()
        _READS.add(kernel)
    return kernel._gl_adjoint_reads  # type: ignore[no-any-return]


#: kernels holding adjoint_reads, dropped when an option that shapes their build changes
_READS: weakref.WeakSet[Any] = weakref.WeakSet()


def _forget_reads() -> None:
    for kernel in list(_READS):
        kernel.__dict__.pop("_gl_adjoint_reads", None)
    _READS.clear()


config._add_rebuild_hook(_forget_reads)


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


def launch(kernel: Any, dim: Any, inputs: Sequence[Any] = (), outputs: Sequence[Any] = (),
           adj_inputs: Any = None, adj_outputs: Any = None, device: Any = None,
           stream: Any = None, adjoint: bool = False, record_tape: bool = True,
           record_cmd: bool = False, max_blocks: int = 0, block_dim: int | None = None) -> Any:
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
            threads per block (None: 256); on the CPU a block is one thread unless
            `wp.config.enable_cpu_blocks` is set: then `wp.block_dim()` is block_dim (2 to 1024)
            in a kernel without tiles (runtime/launch/blocks.py).
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
    try:
        dev = current_device() if device is None else get_device(device)
        if config.print_launches:  # Warp's line, before anything runs (a launch over 0 threads too)
            PRINT_LAUNCH.get()(f"kernel: {getattr(kernel, 'key', kernel)} dim: {dim} inputs: "
                               f"{list(inputs)} outputs: {list(outputs)} device: {dev}")
        args: Sequence[Any] = [*inputs, *outputs] if outputs else inputs
        if getattr(kernel, "is_generic", False):  # Warp's implicit overload of a generic kernel
            kernel = kernel.specialize(list(args))
        if block_dim is not None or config.enable_cpu_blocks or not dev.is_cpu:  # (blocks.py)
            kernel, block_dim = launch_blocks(kernel, dev.is_cpu, block_dim)
        cap = ACTIVE_CAPTURE.get()
        if record_cmd or adjoint or (cap is not None and cap.records_nodes):
            adj = [*(adj_inputs or [None] * len(inputs)),
                   *(adj_outputs or [None] * len(outputs))] if adjoint else None
            return _command_or_adjoint(kernel, dim, list(args), adj, dev, stream, max_blocks,
                                       block_dim, record_tape, record_cmd)
        try:  # the entry a backend keeps in the kernel for this device (none: ask the backend)
            prepared = kernel.__dict__[dev.entry_key]
        except (KeyError, AttributeError):
            prepared = dev.backend.prepared(kernel, "forward", dev)
        dims = (dim,) if type(dim) is int and 0 <= dim < _MAX_THREADS else _dims(dim)
        if len(dims) > prepared.launch_ndim:  # more dimensions than the kernel's wp.tid() gives
            dims, repeats = _leading(kernel, dims, prepared)
            if repeats != 1:  # (launch_tiled's block width 1 is dropped in place)
                return _repeat_leading(kernel, dims, repeats, args, dev, stream, record_tape,
                                       max_blocks, block_dim)
        tapes = ACTIVE_TAPES.get() if record_tape else ()
        if not tapes:
            prepared.run(dims, prepared.admit(args), stream, max_blocks, block_dim)
            return None
        args = prepared.adapt(args)
        for tape in tapes:  # forward mode runs the kernel's tangent kernel (runtime/tape/tangent.py)
            takes = getattr(tape, "takes_launch", None)
            if takes is not None and takes(kernel):
                tape.run_launch(kernel, dims, args)
                return None
        records = [prepared.begin(t, kernel, dims, args, max_blocks, block_dim) for t in tapes]
        prepared.protect_writes(args)
        prepared.run(dims, args, stream, max_blocks, block_dim)
        for tape, record in zip(tapes, records, strict=True):
            tape.end_launch(record)
        return None
    except GradloomError as exc:
        raise user_traceback(exc) from None  # the same exception, without our frames


def _command_or_adjoint(kernel: Any, dim: Any, args: list[Any], adj: list[Any] | None,
                        dev: Any, stream: Any, max_blocks: int, block_dim: Any,
                        record_tape: bool, record_cmd: bool) -> Any:
    """`record_cmd=True`: the launch as a command its `launch()` runs. Inside a graph
    capture: that command, recorded into the graph (it runs when the graph runs, with the
    arguments — array memory, scalar values — given now). Else an adjoint launch, run now."""
    backend = dev.backend
    dims, repeats = _leading(kernel, _dims(dim), backend.prepared(kernel, "forward", dev))
    graph = None if record_cmd else recording_graph()
    if record_cmd and repeats != 1:
        raise LaunchError(f"kernel '{getattr(kernel, 'key', kernel)}' unpacks "
                          f"{len(dims)} indices from wp.tid() but record_cmd was given dim="
                          f"{dim!r}: one command cannot repeat its threads; unpack every index "
                          f"or launch with dim={dims!r}")
    if record_cmd or graph is not None:
        for _ in range(repeats):
            cmd = backend.command(kernel, dims, args, adj, dev, stream, max_blocks, block_dim,
                                  record_tape)
            if graph is None:
                return cmd
            graph.add(cmd)
        return None
    for _ in range(repeats):
        _adjoint(kernel, dims, args, adj, dev, stream, max_blocks, block_dim)
    return None


def _leading(kernel: Any, dims: tuple[int, ...], prepared: Any) -> tuple[tuple[int, ...], int]:
    """The dims a launch runs and how many times, by Warp 1.19's rule for a grid of more
    dimensions than the kernel unpacks from wp.tid() (`_repeat_leading`)."""
    n = prepared.launch_ndim
    if len(dims) <= n or getattr(kernel, "cpu_block_dim", 1) != 1:
        return dims, 1
    return dims[:n], math.prod(dims[n:])


def _adjoint(kernel: Any, dims: tuple[int, ...], args: list[Any], adj: list[Any] | None,
             dev: Any, stream: Any, max_blocks: int, block_dim: Any) -> None:
    """An adjoint launch (`wp.launch(..., adjoint=True)`), run now."""
    backend = dev.backend
    assert adj is not None
    lazy_zero.settle_all()  # gradients it reads through its arrays' words hold zeros
    printing = kernel.printing_adjoint()  # it prints: as Warp's, with the adjoints given
    if printing is not None:
        args = args + printing.given_adjoints(adj)
        adj = adj + [None] * len(printing.printing_pairs)
        kernel = printing
    prepared = backend.prepared(kernel, "adjoint", dev)
    args = list(prepared.adapt(args))
    grad_args = prepared.with_gradients(args, adj)
    prepared.run(dims, grad_args, stream, max_blocks, block_dim)
    write_back = getattr(grad_args, "write_back", None)  # gradients passed as copies
    if write_back is not None:
        write_back()
