"""The launch block's arguments from Python: checked against the parameter types and packed
where abi.py says (the header's layout is abi.HEAD's).

The plan (one `struct` format for the argument block, one value getter per parameter) is built
once per compiled signature, so a launch packs its arguments with one `struct.pack_into` call.
A launch given the same arrays and grid as one of the kernel's recent launches (Warp code
launches the same arrays substep after substep) copies that launch's whole block, header and
arguments, and packs only its numbers (`Packer.fill`).
"""

from __future__ import annotations

import functools
import math
import operator
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...abi import BLOCK_ARGS, HEAD, header
from ...errors import LaunchError, LaunchValueError
from ...types import (
    ArrayType,
    IndexedArrayType,
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    arg_offsets,
    float32_to_bf16_bits,
    leaves,
    type_repr,
)
from ..array.array import array
from ..array.host import HostArray
from ..array.indexed import indexed_words

_FMT = {"bool": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B",
        "uint16": "H", "uint32": "I", "uint64": "Q", "float16": "e", "float32": "f",
        "float64": "d", "ptr": "Q", "bfloat16": "H"}

Getter = Callable[[Any, Any], Sequence[Any]]
#: argument sets a kernel's packer remembers (Warp code often alternates two or three states:
#: `integrate(state_0, state_1)`, then the two swapped)
RECALLED = 4
#: the fewest array parameters a kernel recalls launch blocks for. Since a recalled block holds
#: the header too, the look-up pays from one array on (µs per launch, best of 9 x 5,000, packed
#: afresh -> recalled: 1 array 3.12-3.29 -> 2.81-3.24, 2 arrays 3.46-3.79 -> 2.80-3.37, a
#: float and 2 arrays 4.24-4.48 -> 3.18-3.47; with the arguments' bytes alone, 2 arrays took
#: 2.64 -> 2.78)
RECALL_ARRAYS = 1
#: an array's dtype and launch words (array_words), None until its first launch
_LAUNCH_KEY = operator.attrgetter("_launch_key")


class ArgError(Exception):
    """Internal: why one value does not fit one parameter."""


class ArgValueError(ArgError):
    """An argument value that cannot be converted to its parameter's type (None for a vector):
    Warp raises a ValueError there."""


def describe(v: Any) -> str:
    """A short description of a launch argument, for error messages."""
    if isinstance(v, array):
        return f"array(dtype={v.dtype!r}, ndim={v.ndim})"
    if isinstance(v, np.ndarray):
        return f"numpy.ndarray(dtype={v.dtype}, shape={v.shape})"
    return type(v).__name__


def array_words(value: Any, t: ArrayType) -> Sequence[Any]:
    """data pointer, gradient pointer, shape, strides: an array argument's words (None is an
    empty array, as in Warp: `if not arr:` holds in the kernel)."""
    if value is None:
        return [0] * (2 + 2 * t.ndim)
    # isinstance: wp.array1d-4d(...) build subclasses of array (ndim fixed), launched as often
    if (isinstance(value, array) and value._methods is HostArray and value.dtype is t.dtype
            and value.ndim == t.ndim):
        known = value._words  # dropped by the gradient's setters
        if known is not None:
            return known
        words = value.launch_words()
        value._words, value._launch_key = words, (dtype_token(value.dtype), words)
        return words
    if not isinstance(value, array):
        raise ArgError(f"expects an array of type {type_repr(t)}, but passed value has type "
                       f"{describe(value)}")  # Warp's words
    if value.ndim != t.ndim or value.dtype != t.dtype:
        raise ArgError(f"expected {t!r}, got {describe(value)}")
    if not value.device.backend.host_memory:  # a host launch reads host memory only
        raise ArgError(f"array is on device {value.device}, but the launch is on cpu")
    return value.launch_words()


@functools.cache
def _canonical(dtype: Any) -> Any:
    """The first dtype seen equal to this one, kept alive here (so its id is never reused)."""
    return dtype


def dtype_token(dtype: Any) -> int:
    """An int standing for a dtype in launch keys (equal dtypes, equal tokens): a key hashes it
    in C, where hashing the dtype itself runs its dataclass __hash__ (0.1 µs per array, per
    launch)."""
    return id(_canonical(dtype))


def scalar_words(value: Any, t: ScalarType) -> list[Any]:
    if isinstance(value, (bool, np.bool_)) or t.kind == "b":
        if t.kind != "b" or not isinstance(value, (bool, np.bool_, int, np.integer)):
            raise ArgError(f"expected a {t} value, got {describe(value)} {value!r}")
        return [bool(value)]
    if t.is_float and isinstance(value, (int, float, np.integer, np.floating)):
        if t.name == "bfloat16":  # stored as its bits
            return [int(float32_to_bf16_bits(np.float32(value)))]
        return [float(value)]
    if t.is_int and not isinstance(value, (int, np.integer, float, np.floating)) \
            and hasattr(type(value), "__index__"):
        # an integer-like object that is no int: a pybind11 enum (newton passes MuJoCo's
        # mjtGeom members as int32 arguments); ctypes, and so Warp, take it through __index__
        value = operator.index(value)
    if t.is_int and isinstance(value, (int, np.integer)):
        info = np.iinfo(t.np_dtype)
        if not info.min <= int(value) <= info.max:
            raise ArgError(f"{value} does not fit in {t} [{info.min}, {info.max}]")
        return [int(value)]
    raise ArgError(f"expected a {t} value, got {describe(value)} {value!r}")


def flat_values(value: Any, t: Any) -> Sequence[Any]:
    """The scalar leaves of one argument, in layout order (see types.leaves)."""
    if isinstance(t, ScalarType):
        return scalar_words(value, t)
    if isinstance(t, ArrayType):
        return array_words(value, t)
    if isinstance(t, IndexedArrayType):
        return _indexed_words(value, t)
    if isinstance(t, (VectorType, MatrixType)):
        if value is None:
            raise ArgValueError(f"Failed to convert argument for param {{name}} to {t!r} (got "
                                "None)")
        try:
            comps = np.asarray(value, dtype=t.dtype.host_dtype)
            if t.dtype.name == "bfloat16":
                comps = float32_to_bf16_bits(comps)
        except (TypeError, ValueError):
            raise ArgError(f"expected {t!r}, got {describe(value)}") from None
        if comps.size != t.length or (isinstance(value, array)):
            if comps.ndim == 0 and value is not None:  # Warp's words for the same mistake
                raise ArgError(f"expects {t!r} but got a single value ({describe(value)})")
            raise ArgError(f"expected {t!r} ({t.length} components), got {describe(value)}")
        return comps.ravel().tolist()  # type: ignore[no-any-return]
    if isinstance(t, StructType):
        if value is None:
            raise ArgError(f"expects {t.name} but got None")
        if not isinstance(value, t.cls):
            raise ArgError(f"expected an instance of struct {t.name}, got {describe(value)}")
        out: list[Any] = []
        for name, ft in t.fields:
            try:
                out.extend(flat_values(getattr(value, name), ft))
            except ArgError as exc:
                raise ArgError(f"field '{name}': {exc}") from None
        return out
    raise ArgError(f"unsupported parameter type {t!r}")


def _indexed_words(value: Any, t: IndexedArrayType) -> list[Any]:
    try:
        return indexed_words(value, t)
    except TypeError as exc:
        raise ArgError(str(exc)) from None


def _getter(t: Any) -> Getter:
    if isinstance(t, ArrayType):
        return array_words
    if isinstance(t, IndexedArrayType):
        return _indexed_words
    if isinstance(t, ScalarType):
        return scalar_words
    return flat_values


def _block_format(types: Sequence[Any]) -> tuple[str, int]:
    """One struct format for every leaf of the argument block (padding as 'x'), and its size."""
    offsets, size = arg_offsets(list(types))
    fmt, pos = ["<"], 0
    for t, off in zip(types, offsets, strict=True):
        for lo, st in leaves(t):
            if off + lo > pos:
                fmt.append(f"{off + lo - pos}x")
            fmt.append(_FMT[st.name])
            pos = off + lo + struct.calcsize("<" + _FMT[st.name])
    return "".join(fmt), size


class Packer:
    """Packs a kernel's arguments into its argument block, per its compiled signature."""

    #: whether launches given recent launches' arrays may reuse their packed bytes (`fill`):
    #: not where the getters differ (a device's packer checks where each array lives)
    RECALLS = True

    def __init__(self, kernel_key: str, params: Sequence[tuple[str, Any]]) -> None:
        self.kernel_key = kernel_key
        self.params = list(params)
        self.types = [t for _, t in self.params]
        self.getters = [(_getter(t), t) for t in self.types]
        self.fmt, self.size = _block_format(self.types)
        #: the whole launch block, header (abi.HEAD) and arguments, as one struct: a launch
        #: packs with one call
        self.whole = struct.Struct(HEAD.format + self.fmt[1:])
        #: a launch block's size
        self.block_bytes = BLOCK_ARGS + self.size
        self._plan_recall()

    def _plan_recall(self) -> None:
        """Which kernels `fill` recalls recent launches' arguments for: only kernels whose
        parameters are all arrays and numbers (vectors, matrices and structs are passed as
        objects that may change in place), of RECALL_ARRAYS arrays or more."""
        arrays = [i for i, t in enumerate(self.types) if isinstance(t, ArrayType)]
        self.recalls = self.RECALLS and len(arrays) >= RECALL_ARRAYS and all(
            isinstance(t, (ArrayType, ScalarType)) for t in self.types)
        #: the array arguments of a launch, as a sequence (unused where `recalls` is False; a
        #: slice for one array, where itemgetter would return the array itself)
        self._arrays: Callable[[Sequence[Any]], Any] = (
            tuple if not self.recalls else operator.itemgetter(*arrays) if len(arrays) > 1
            else operator.itemgetter(slice(arrays[0], arrays[0] + 1)))
        offsets, _ = arg_offsets(self.types)
        #: per number: its position, offset in the block, type, struct, and whether a Python
        #: float packs as itself
        self._numbers = [(i, BLOCK_ARGS + off, t, struct.Struct("<" + _FMT[t.name]),
                          t.is_float and t.name != "bfloat16")
                         for i, (t, off) in enumerate(zip(self.types, offsets, strict=True))
                         if isinstance(t, ScalarType)]
        #: whole launch blocks of recent launches, keyed by their arrays' launch words, dims and
        #: stack (`fill`)
        self._recalled: dict[tuple[Any, ...], bytes] = {}
        #: the key and block of the launch recalled or packed last (one tuple, replaced whole:
        #: other threads may launch too)
        self._last: tuple[Any, bytes | None] = (None, None)

    def fill(self, buf: bytearray, args: Sequence[Any], dims: tuple[int, ...],
             stack: tuple[int, int]) -> None:
        """Pack the header of a launch over `dims` (its adjoint stack's (base, capacity):
        `stack`; the thread range: all of it) and the arguments into the launch block `buf`. A
        launch with the arrays (by dtype and words: none given a new gradient since, which drops
        its words), dims and stack of one of the last RECALLED launches copies that launch's
        whole block and packs only its numbers: the block is a function of these values alone,
        and the dtypes were checked when the block was packed."""
        key = None
        if len(args) == len(self.types):
            try:  # noqa: SIM105 (contextlib.suppress costs a third of a launch's packing)
                key = tuple(map(_LAUNCH_KEY, self._arrays(args))), dims, stack
            except AttributeError:  # an array argument that is not a gradloom array
                pass
        if key is not None:
            # the last launch's key first: comparing it costs less than hashing (µs per launch)
            last = self._last
            if key == last[0]:
                known: bytes | None = last[1]
            else:
                known = self._recalled.get(key)
                if known is not None:
                    self._last = key, known
            if known is not None:
                buf[:] = known
                if not self._numbers or self._pack_numbers(buf, args):
                    return
        HEAD.pack_into(buf, 0, *header(dims, stack, 0, math.prod(dims)))
        struct.pack_into(self.fmt, buf, BLOCK_ARGS, *self.values(args))
        # every array launched before (its words known): a kernel relaunched with them; arrays
        # wrapped afresh for each launch (a Tape's adjoint) are not worth remembering
        if key is not None and None not in key[0]:
            if len(self._recalled) >= RECALLED:
                self._recalled.clear()  # start over (one call: other threads may launch too)
            self._recalled[key] = block = bytes(buf)
            self._last = key, block

    def _pack_numbers(self, buf: bytearray, args: Sequence[Any]) -> bool:
        """Pack the numbers among the arguments; False where one does not convert (`values`
        then says why)."""
        try:
            for i, offset, t, packer, plain in self._numbers:
                value = args[i]
                if not (plain and type(value) is float):
                    value = scalar_words(value, t)[0]
                packer.pack_into(buf, offset, value)
        except ArgError:
            return False
        return True

    def values(self, args: Sequence[Any]) -> list[Any]:
        """Every leaf value of the arguments, checked against the parameter types."""
        if len(args) != len(self.params):
            names = ", ".join(n for n, _ in self.params)
            raise LaunchError(f"kernel '{self.kernel_key}' takes {len(self.params)} arguments "
                              f"({names}), got {len(args)}")
        out: list[Any] = []
        i = 0
        try:
            for (get, t), value in zip(self.getters, args):  # lengths checked above
                out += get(value, t)
                i += 1
        except ArgError as exc:
            name = self.params[i][0]
            if isinstance(exc, ArgValueError):  # Warp's words (and a ValueError)
                raise LaunchValueError(f"kernel '{self.kernel_key}' argument '{name}' (position "
                                       f"{i}): {str(exc).format(name=name)}") from None
            if str(exc).startswith("expects "):  # Warp's wording
                raise LaunchError(f"kernel '{self.kernel_key}' argument '{name}' {exc} "
                                  f"(position {i})") from None
            raise LaunchError(f"kernel '{self.kernel_key}' argument '{name}' (position {i}): "
                              f"{exc}") from None
        return out

    def pack(self, args: Sequence[Any], buf: bytearray) -> None:
        struct.pack_into(self.fmt, buf, BLOCK_ARGS, *self.values(args))
