"""`wp.launch`: checks each argument against the kernel's signature, packs them, runs the entry."""

from __future__ import annotations

import ctypes
import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import KernelRuntimeError, LaunchError
from ..types import (
    ArrayType,
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    arg_offsets,
    leaves,
)
from .array import NDArray, array
from .device import get_device
from .foreign import adapt_args, array_slots
from .recording import ACTIVE_TAPES
from .watch import before_write

# The header before the arguments: dims (4 × int64) at 0, then the status block the entry gets
# as `err`: error word (int32) at 32, adjoint stack base (ptr) at 40 and capacity (int64) at 48,
# the thread that found the stack full (int64) at 56.
_HEADER = 64
_STACK_FULL = -1
_FIRST_STACK = 1 << 16
_NO_ERROR = bytes(4)
_FMT = {"bool": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B",
        "uint16": "H", "uint32": "I", "uint64": "Q", "float16": "e", "float32": "f",
        "float64": "d", "ptr": "Q"}


def _describe(v: Any) -> str:
    if isinstance(v, array):
        return f"array(dtype={v.dtype!r}, ndim={v.ndim})"
    if isinstance(v, np.ndarray):
        return f"numpy.ndarray(dtype={v.dtype}, shape={v.shape})"
    return type(v).__name__


class ArgError(Exception):
    """Internal: why one value does not fit one parameter."""


def _array_words(value: Any, t: ArrayType) -> list[int]:
    if type(value) is array and value.dtype is t.dtype and value.ndim == t.ndim:
        grad = value._grad
        return [value.ptr, 0 if grad is None else grad.ptr, *value.shape, *value.strides]
    if not isinstance(value, array):
        raise ArgError(f"expected {t!r}, got {_describe(value)}")
    if value.ndim != t.ndim or value.dtype != t.dtype:
        raise ArgError(f"expected {t!r}, got {_describe(value)}")
    if value.device != "cpu":
        raise ArgError(f"array is on device {value.device}, but the launch is on cpu")
    grad = value.grad
    gptr = grad.ptr if grad is not None else 0
    return [value.ptr, gptr, *value.shape, *value.strides]


def _scalar(value: Any, t: ScalarType) -> Any:
    if isinstance(value, (bool, np.bool_)) or t.kind == "b":
        if t.kind != "b" or not isinstance(value, (bool, np.bool_, int, np.integer)):
            raise ArgError(f"expected a {t} value, got {_describe(value)} {value!r}")
        return bool(value)
    if t.is_float and isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if t.is_int and isinstance(value, (int, np.integer)):
        info = np.iinfo(t.np_dtype)
        if not info.min <= int(value) <= info.max:
            raise ArgError(f"{value} does not fit in {t} [{info.min}, {info.max}]")
        return int(value)
    raise ArgError(f"expected a {t} value, got {_describe(value)} {value!r}")


def _flat_values(value: Any, t: Any) -> list[Any]:
    """The scalar leaves of one argument, in layout order (see types.leaves)."""
    if isinstance(t, ScalarType):
        return [_scalar(value, t)]
    if isinstance(t, ArrayType):
        return _array_words(value, t)
    if isinstance(t, (VectorType, MatrixType)):
        try:
            comps = np.asarray(value, dtype=t.dtype.np_dtype)
        except (TypeError, ValueError):
            raise ArgError(f"expected {t!r}, got {_describe(value)}") from None
        if comps.size != t.length or (isinstance(value, array)):
            raise ArgError(f"expected {t!r} ({t.length} components), got {_describe(value)}")
        return comps.ravel().tolist()
    if isinstance(t, StructType):
        if not isinstance(value, t.cls):
            raise ArgError(f"expected an instance of struct {t.name}, got {_describe(value)}")
        out: list[Any] = []
        for name, ft in t.fields:
            try:
                out.extend(_flat_values(getattr(value, name), ft))
            except ArgError as exc:
                raise ArgError(f"field '{name}': {exc}") from None
        return out
    raise ArgError(f"unsupported parameter type {t!r}")


class Packer:
    """Packs a kernel's arguments into one argument block, per its compiled signature."""

    def __init__(self, kernel_key: str, params: Sequence[tuple[str, Any]]) -> None:
        self.kernel_key = kernel_key
        self.params = list(params)
        offsets, self.size = arg_offsets([t for _, t in self.params])
        self.layouts = []
        for (_, t), off in zip(self.params, offsets, strict=True):
            fmt = "<" + "".join(_FMT[st.name] for _, st in leaves(t))
            starts = [off + lo for lo, _ in leaves(t)]
            self.layouts.append((t, fmt, starts, _contiguous(leaves(t))))

    def pack(self, args: Sequence[Any], buf: bytearray) -> None:
        if len(args) != len(self.params):
            names = ", ".join(n for n, _ in self.params)
            raise LaunchError(f"kernel '{self.kernel_key}' takes {len(self.params)} arguments "
                              f"({names}), got {len(args)}")
        for i, (value, (t, fmt, starts, contiguous)) in enumerate(
                zip(args, self.layouts, strict=True)):
            try:
                flat = _flat_values(value, t)
            except ArgError as exc:
                name = self.params[i][0]
                raise LaunchError(f"kernel '{self.kernel_key}' argument '{name}' (position {i}): "
                                  f"{exc}") from None
            if contiguous:
                struct.pack_into(fmt, buf, _HEADER + starts[0], *flat)
            else:
                for (st_fmt, pos), v in zip(zip(fmt[1:], starts, strict=True), flat,
                                            strict=True):
                    struct.pack_into("<" + st_fmt, buf, _HEADER + pos, v)


def _contiguous(ls: list[tuple[int, ScalarType]]) -> bool:
    pos = ls[0][0] if ls else 0
    for off, st in ls:
        if off != pos:
            return False
        pos += struct.calcsize("<" + _FMT[st.name])
    return True


def _dims(dim: Any) -> tuple[int, ...]:
    if type(dim) is int and 0 <= dim < 2**63:
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
    if math.prod(out) >= 2**63:
        raise bad
    return out


class Prepared:
    """A compiled entry (a kernel's forward or adjoint) with its packer and argument blocks."""

    def __init__(self, kernel: Any, compiled: Any = None) -> None:
        self.kernel = kernel
        self.compiled = kernel.compiled() if compiled is None else compiled
        self.packer = Packer(kernel.key, self.compiled.params)
        self._free: list[tuple[bytearray, int]] = []
        self.set_stack(np.empty(_FIRST_STACK if self.compiled.uses_stack else 0, np.uint8))
        access = self.compiled.access
        if access is None:  # not analysable: every array argument may be written
            access = {key: frozenset({"stores"}) for key in array_keys(self.compiled.params)}
        self.writes = [key for key, flags in access.items() if flags & {"stores", "minmax"}]
        self.array_slots = array_slots(self.compiled.params)

    def set_stack(self, stack: NDArray) -> None:
        self.stack, self.stack_addr, self.stack_size = stack, stack.ctypes.data, stack.size

    def protect_writes(self, args: Sequence[Any]) -> None:
        """Before the launch writes its arrays: tapes that still need their contents copy them."""
        for key in self.writes:
            a = arg_array(args, key)
            if a is not None:
                before_write(a)

    def block(self) -> tuple[bytearray, int]:
        """An argument block and its address (reused; a concurrent launch takes another)."""
        if self._free:
            return self._free.pop()
        buf = bytearray(_HEADER + self.packer.size)
        return buf, ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))

    def run(self, dims: tuple[int, ...], args: Sequence[Any],
            restart: Callable[[], None] | None = None) -> None:
        """Launch over dims. When an adjoint's stack fills up, it grows and the launch resumes
        at the thread that found it full — or, given `restart` (which must undo what the launch
        did so far), starts over."""
        if self.compiled.launch_ndim > len(dims):
            raise LaunchError(f"kernel '{self.kernel.key}' unpacks {self.compiled.launch_ndim} "
                              f"indices from wp.tid() but was launched with dim={dims!r}")
        buf, base = self.block()
        try:
            self.packer.pack(args, buf)
            total = math.prod(dims)
            struct.pack_into("<4qi", buf, 0, *dims, *_ONES[len(dims)], 0)
            if total:
                if self.stack_size:
                    struct.pack_into("<Qq", buf, 40, self.stack_addr, self.stack_size)
                self.compiled.entry(0, total, base + _HEADER, base, base + 32)
                if buf[32:36] != _NO_ERROR:
                    self.recover(buf, base, total, restart)
        finally:
            self._free.append((buf, base))

    def recover(self, buf: bytearray, base: int, total: int,
                restart: Callable[[], None] | None) -> None:
        """The launch stopped early: raise its error, or grow the stack and carry on from the
        thread that found it full (threads run last-first when `reverse_threads`)."""
        start, end = 0, total
        while True:
            err = int.from_bytes(buf[32:36], "little", signed=True)
            if err == 0:
                return
            if err != _STACK_FULL:
                self.raise_runtime_error(err)
            failed = int.from_bytes(buf[56:64], "little")
            self.grow_stack()
            if restart is not None:
                restart()
                start, end = 0, total
            elif self.compiled.reverse_threads:
                end = failed + 1
            else:
                start = failed
            buf[32:36] = _NO_ERROR
            struct.pack_into("<Qq", buf, 40, self.stack_addr, self.stack_size)
            self.compiled.entry(start, end, base + _HEADER, base, base + 32)

    def grow_stack(self) -> None:
        """Double the adjoint stack."""
        size = 2 * self.stack_size
        try:
            self.set_stack(np.empty(size, np.uint8))
        except MemoryError:
            raise KernelRuntimeError(
                f"kernel '{self.kernel.key}': the adjoint needs more than {size // 2} bytes per "
                "thread to store its loops' values, and no more memory could be had") from None

    def raise_runtime_error(self, err: int) -> None:
        loc = self.kernel.source_loc(err - 1)
        raise KernelRuntimeError(
            f"kernel '{self.kernel.key}': array index out of bounds at {loc}\n{loc.excerpt()}")


def array_keys(params: Sequence[tuple[str, Any]]) -> list[tuple[int, str | None]]:
    """(param index, struct field or None) of every array among a kernel's parameters."""
    keys: list[tuple[int, str | None]] = []
    for i, (_, t) in enumerate(params):
        if isinstance(t, ArrayType):
            keys.append((i, None))
        elif isinstance(t, StructType):
            keys.extend((i, n) for n, ft in t.fields if isinstance(ft, ArrayType))
    return keys


def arg_array(args: Sequence[Any], key: tuple[int, str | None]) -> array | None:
    """The array an argument key names in a launch's argument list, if it is one."""
    i, field = key
    if i >= len(args):
        return None
    value = args[i] if field is None else getattr(args[i], field, None)
    return value if isinstance(value, array) else None


def prepared_forward(kernel: Any) -> Prepared:
    prepared = getattr(kernel, "_gl_prepared", None)
    if prepared is None:
        if not hasattr(kernel, "compiled"):
            raise LaunchError(f"wp.launch() needs a @wp.kernel, got {type(kernel).__name__}")
        prepared = kernel._gl_prepared = Prepared(kernel)
    return prepared  # type: ignore[no-any-return]


def prepared_adjoint(kernel: Any) -> Prepared:
    prepared = getattr(kernel, "_gl_adjoint_prepared", None)
    if prepared is None:
        if not hasattr(kernel, "adjoint_compiled"):
            raise LaunchError(f"wp.launch() needs a @wp.kernel, got {type(kernel).__name__}")
        prepared = Prepared(kernel, kernel.adjoint_compiled())
        kernel._gl_adjoint_prepared = prepared
    return prepared  # type: ignore[no-any-return]


def with_gradients(args: Sequence[Any], adj: Sequence[Any]) -> list[Any]:
    """Arguments whose arrays use the given gradient arrays (None: the array's own .grad)."""
    out = list(args)
    for i, (value, g) in enumerate(zip(args, adj, strict=True)):
        if g is None or not isinstance(value, array):
            continue
        if not isinstance(g, array) or g.shape != value.shape or g.dtype != value.dtype:
            raise LaunchError(f"adjoint argument {i}: expected an array of shape {value.shape} "
                              f"and dtype {value.dtype!r} for the gradient, got {_describe(g)}")
        out[i] = array._wrap(value.numpy(), value.dtype, value.device, g.numpy())
    return out

_ONES = {n: (1,) * (4 - n) for n in range(1, 5)}


def launch(kernel: Any, dim: Any, inputs: Sequence[Any] = (), outputs: Sequence[Any] = (),
           adj_inputs: Any = None, adj_outputs: Any = None, device: Any = None,
           stream: Any = None, adjoint: bool = False, record_tape: bool = True,
           record_cmd: bool = False, max_blocks: int = 0, block_dim: int = 256) -> None:
    """Run kernel over a 1-4-D grid of threads; arguments are inputs followed by outputs."""
    if device is not None and device != "cpu":
        get_device(device)  # raises for devices this build cannot run on
    args: Sequence[Any] = [*inputs, *outputs] if outputs else inputs
    if adjoint:
        prepared = prepared_adjoint(kernel)
        slots = prepared.array_slots
        adj: Sequence[Any] = [*(adj_inputs or [None] * len(inputs)),
                              *(adj_outputs or [None] * len(outputs))]
        args, adj = adapt_args(kernel.key, slots, args), adapt_args(kernel.key, slots, adj)
        prepared.run(_dims(dim), with_gradients(args, adj))
        return
    prepared = prepared_forward(kernel)
    args = adapt_args(kernel.key, prepared.array_slots, args)
    dims = _dims(dim)
    tapes = ACTIVE_TAPES.get() if record_tape else ()
    if not tapes:
        prepared.protect_writes(args)
        prepared.run(dims, args)
        return
    records = [t.begin_launch(kernel, dims, args, prepared.compiled) for t in tapes]
    prepared.protect_writes(args)
    prepared.run(dims, args)
    for tape, record in zip(tapes, records, strict=True):
        tape.end_launch(record)
