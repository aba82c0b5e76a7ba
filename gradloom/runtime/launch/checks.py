"""What debug mode and `config.verify_fp` add around a launch, and the messages of the errors a
kernel reports while it runs (out-of-bounds index, interrupt).

Debug mode copies the arrays a launch may write (and every gradient it is given) before it runs
and puts them back if the launch fails, so a failed launch leaves the user's arrays as they were.
`verify_fp` checks the floating-point arrays a launch wrote for NaN and Inf afterwards.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...abi import (
    ARRAY_SHAPE,
    BLOCK_ARGS,
    BLOCK_DIMS,
    BLOCK_STATUS,
    STATUS_INTERRUPTED,
    STATUS_WHERE,
)
from ...errors import AssertLoc, KernelRuntimeError
from ...types import ArrayType, StructType, arg_offsets
from ..array.array import NDArray, array
from ..signals import raise_interrupt

Run = Callable[..., None]


def arrays_of(args: Sequence[Any], keys: Sequence[tuple[int, str | None]],
              params: Sequence[tuple[str, Any]]) -> list[tuple[str, array]]:
    """(name, array) for each argument key (param index, struct field) naming an array."""
    out = []
    for i, field in keys:
        if i >= len(args):
            continue
        value = args[i] if field is None else getattr(args[i], field, None)
        if isinstance(value, array):
            out.append((params[i][0] + ("" if field is None else f".{field}"), value))
    return out


def _all_arrays(args: Sequence[Any], params: Sequence[tuple[str, Any]]
                ) -> list[tuple[str, array]]:
    keys: list[tuple[int, str | None]] = []
    for i, (_, t) in enumerate(params):
        if isinstance(t, ArrayType):
            keys.append((i, None))
        elif isinstance(t, StructType):
            keys.extend((i, n) for n, ft in t.fields if isinstance(ft, ArrayType))
    return arrays_of(args, keys, params)


def snapshot(prepared: Any, args: Sequence[Any]) -> list[tuple[NDArray, NDArray]]:
    """Copies of the memory a launch may write: the arrays it writes and every gradient."""
    params = prepared.compiled.params
    seen: set[int] = set()
    saved = []
    targets = [a.numpy() for _, a in arrays_of(args, prepared.writes, params)]
    targets += [a.grad.numpy() for _, a in _all_arrays(args, params) if a.grad is not None]
    for mem in targets:
        if id(mem) not in seen and mem.size:
            seen.add(id(mem))
            saved.append((mem, mem.copy()))
    return saved


def debug_run(prepared: Any, run: Run, dims: tuple[int, ...], args: Sequence[Any],
              *launch_options: Any, restart: Callable[[], None] | None = None) -> None:
    """Run the launch; if it fails (or is interrupted), restore what it wrote."""
    saved = snapshot(prepared, args)
    try:
        run(dims, args, *launch_options, restart=restart)
    except BaseException:
        for mem, copy in saved:
            mem[...] = copy
        raise
    if prepared.verify_fp:
        verify_fp(prepared, args)


def verified_run(prepared: Any, run: Run, dims: tuple[int, ...], args: Sequence[Any],
                 *launch_options: Any, restart: Callable[[], None] | None = None) -> None:
    run(dims, args, *launch_options, restart=restart)
    verify_fp(prepared, args)


def verify_fp(prepared: Any, args: Sequence[Any]) -> None:
    """Raise if an array the launch wrote (or a gradient, for an adjoint) holds NaN or Inf."""
    params = prepared.compiled.params
    written = arrays_of(args, prepared.writes, params)
    if prepared.is_adjoint:
        written = [(f"{n}.grad", a.grad) for n, a in _all_arrays(args, params)
                   if a.grad is not None]
    for name, a in written:
        mem = a.numpy()
        if mem.dtype.kind != "f" or mem.dtype.names:
            continue
        bad = ~np.isfinite(mem)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            value = mem[where]
            raise KernelRuntimeError(
                f"kernel '{prepared.kernel.key}' left a non-finite value ({value}) in array "
                f"'{name}' at index {where[:a.ndim]} (wp.config.verify_fp is on)")


def status_error(prepared: Any, err: int, buf: bytearray) -> BaseException:
    """The exception for a launch block's nonzero error word (other than a full stack)."""
    if err == STATUS_INTERRUPTED:
        raise_interrupt(prepared.kernel.key)
    where, index, extent, tid = struct.unpack_from("<iqqq", buf, BLOCK_STATUS + STATUS_WHERE)
    dims = list(struct.unpack_from("<4q", buf, BLOCK_DIMS))
    loc = prepared.kernel.source_loc(err - 1)
    ndim = max(prepared.launch_ndim, 1)
    thread = tuple(int(i) for i in np.unravel_index(tid, dims[:ndim]))
    thread_s = str(thread[0]) if len(thread) == 1 else str(thread)
    if isinstance(loc, AssertLoc):
        return KernelRuntimeError(f"kernel '{prepared.kernel.key}': Assertion failed: "
                                  f"{loc.message}, in thread {thread_s}, at {loc}\n"
                                  f"{loc.excerpt()}")
    found = _array_at(prepared.compiled.params, where, buf)
    array_s = (f"dimension {found[1]} (size {extent}) of array {found[0]}" if found
               else f"an array dimension of size {extent}")
    return KernelRuntimeError(
        f"kernel '{prepared.kernel.key}': index {index} is out of bounds for {array_s}, in "
        f"thread {thread_s}, at {loc}\n{loc.excerpt()}")


def _array_at(params: Sequence[tuple[str, Any]], offset: int, buf: bytearray
              ) -> tuple[str, int] | None:
    """The array (name and shape) whose shape word for some dimension is at offset in the
    argument block, and that dimension."""
    if offset < 0:
        return None
    offsets, _ = arg_offsets([t for _, t in params])
    for (name, t), off in zip(params, offsets, strict=True):
        found = [(name, off, t)] if isinstance(t, ArrayType) else []
        if isinstance(t, StructType):
            found = [(f"{name}.{n}", off + t.offsets[n], ft) for n, ft in t.fields
                     if isinstance(ft, ArrayType)]
        for label, base, at in found:
            k, rem = divmod(offset - (base + ARRAY_SHAPE), 8)
            if rem == 0 and 0 <= k < at.ndim:
                shape = struct.unpack_from(f"<{at.ndim}q", buf, BLOCK_ARGS + base + ARRAY_SHAPE)
                return f"'{label}' with shape {tuple(shape)}", k
    return None
