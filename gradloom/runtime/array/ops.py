"""Array constructors and copies (zeros, full, clone, copy, from_numpy, ...) and array1d-4d."""

from __future__ import annotations

import functools
import operator
from typing import Any, ClassVar

import numpy as np

from gradloom.errors import ArrayCopyError, GradloomError
from gradloom.runtime.array.array import NDArray, array, copy_storage, elem_shape, normalize_shape
from gradloom.runtime.array.fabric import FABRIC_CLASSES
from gradloom.runtime.array.indexed import indexedarray
from gradloom.runtime.array.watch import before_write
from gradloom.runtime.capturing import defer, recording_graph
from gradloom.runtime.memops import copy_into
from gradloom.runtime.readmarks import check_copy
from gradloom.runtime.recording import ACTIVE_TAPES, forward_step, on_host, record_copy, record_op
from gradloom.types import (
    VecValue,
    matrix,
    resolve_annotation,
    scalar_from_numpy,
    size_of,
    type_repr,
    vector,
)
from gradloom.types import bool_ as _bool
from gradloom.types import float32 as _float32
from gradloom.types import int32 as _int32
from gradloom.types.scalars import scalar_type_of

from ..backend import transfer_backend
from .array import CLONE

#: arrays whose elements are gathered into a contiguous copy when read in Python scope
_GATHERED = (indexedarray, *FABRIC_CLASSES)


class array1d(array):
    """`wp.array1d(...)`: an array (or annotation) with ndim fixed to 1."""

    _fixed_ndim: ClassVar[int | None] = 1


class array2d(array):
    """`wp.array2d(...)`: an array (or annotation) with ndim fixed to 2."""

    _fixed_ndim: ClassVar[int | None] = 2


class array3d(array):
    """`wp.array3d(...)`: an array (or annotation) with ndim fixed to 3."""

    _fixed_ndim: ClassVar[int | None] = 3


class array4d(array):
    """`wp.array4d(...)`: an array (or annotation) with ndim fixed to 4."""

    _fixed_ndim: ClassVar[int | None] = 4


# --------------------------------------------------------------------------------------------
# Allocation


def _alloc(shape: Any, dtype: Any, device: Any, requires_grad: bool,
           legacy: dict[str, Any] | None = None, retain_grad: bool = False) -> array:
    legacy = dict(legacy or {})
    strides = legacy.pop("strides", None)  # Warp's custom (transposed, gapped) layouts
    legacy.pop("ndim", None)  # accepted by Warp and ignored: the shape says it
    if legacy:
        shape = _legacy_shape(shape, legacy)
    return array(shape=normalize_shape(shape), dtype=dtype, device=device,
                 requires_grad=requires_grad, strides=strides, retain_grad=retain_grad)


def _legacy_shape(shape: Any, legacy: dict[str, Any]) -> Any:
    """Warp still accepts `wp.zeros(n=4, ...)` (and empty/ones/full): n is a 1-D length."""
    extra = set(legacy) - {"n"}
    if extra:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(extra))}")
    return (legacy["n"],)


def _zeroed(out: array) -> array:
    """A new zero-filled array: zeroed now, and — inside a graph capture — again each time the
    graph runs, as Warp's `zeros` records a memset there."""
    if recording_graph() is not None:
        out.zero_()
    return out


def empty(
    shape: Any = None,
    dtype: Any = float,
    device: Any = None,
    requires_grad: bool = False,
    pinned: bool = False,
    retain_grad: bool = False,
    **kwargs: Any,
) -> array:
    """A new array (its memory is zeroed on the CPU, though Warp leaves it undefined)."""
    return _alloc(shape, dtype, device, requires_grad, kwargs, retain_grad)


def zeros(
    shape: Any = None,
    dtype: Any = float,
    device: Any = None,
    requires_grad: bool = False,
    pinned: bool = False,
    retain_grad: bool = False,
    **kwargs: Any,
) -> array:
    """A new zero-filled array; dtype defaults to float32."""
    return _zeroed(_alloc(shape, dtype, device, requires_grad, kwargs, retain_grad))



#: in a kernel, `wp.zeros(shape=..., dtype=...)` makes a fixed-size local array
zeros.__gl_kernel_builtin__ = "zeros"  # type: ignore[attr-defined]


def ones(
    shape: Any = None,
    dtype: Any = float,
    device: Any = None,
    requires_grad: bool = False,
    pinned: bool = False,
    retain_grad: bool = False,
    **kwargs: Any,
) -> array:
    """A new array with every component of every element set to 1."""
    out = _alloc(shape, dtype, device, requires_grad, kwargs, retain_grad)
    out.fill_(1)
    return out


def full(
    shape: Any = None,
    value: Any = 0,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pinned: bool = False,
    retain_grad: bool = False,
    **kwargs: Any,
) -> array:
    """A new array with every element set to `value`; dtype defaults to the value's type."""
    dtype = _value_dtype(value) if dtype is None else dtype
    out = _alloc(shape, dtype, device, requires_grad, kwargs, retain_grad)
    out.fill_(value)
    return out


def _value_dtype(value: Any) -> Any:
    """The element type Warp infers for `full(value=...)`."""
    python_types = {bool: _bool, int: _int32, float: _float32}
    if type(value) in python_types:
        return python_types[type(value)]
    if isinstance(value, VecValue):
        return value.gl_type
    if scalar_type_of(value) is not None:  # `wp.bfloat16(x)`, `wp.bool(x)` included
        return scalar_type_of(value)
    if isinstance(value, np.generic):
        return _scalar_or_fail(value.dtype, value)
    if hasattr(value, "__len__"):
        na = np.asarray(value)
        st = _scalar_or_fail(na.dtype, value)
        if na.ndim == 1:
            return vector(na.size, st)
        if na.ndim == 2:
            return matrix((na.shape[0], na.shape[1]), st)
        raise GradloomError(f"full(): a value with {na.ndim} dimensions is not an element")
    try:
        return resolve_annotation(type(value))
    except TypeError as e:
        raise GradloomError(f"full(): cannot infer an element type from {value!r}") from e


def _scalar_or_fail(npdt: np.dtype[Any], value: Any) -> Any:
    st = scalar_from_numpy(npdt)
    if st is None:
        raise GradloomError(f"cannot infer an element type from {value!r} (numpy {npdt})")
    return st


def _check(a: Any, what: str) -> array:
    if isinstance(a, FABRIC_CLASSES) and a.ndim > 1:  # a template: its shape and dtype
        return array(shape=a.shape, dtype=a.dtype, device=a.device)
    if isinstance(a, _GATHERED):  # read as a template or source: its elements, gathered
        return a.contiguous()
    if not isinstance(a, array):
        raise GradloomError(f"{what} must be a gradloom array, got {type(a).__name__}")
    if a.device.backend.host_memory:
        a.numpy()  # raises for annotation-only arrays
    return a


def _like(src: Any, device: Any, requires_grad: bool | None) -> array:
    s = _check(src, "the template array")
    grad = s.requires_grad if requires_grad is None else requires_grad
    return _alloc(s.shape, s.dtype, s.device if device is None else device, grad)


def empty_like(
    src: array,
    device: Any = None,
    requires_grad: bool | None = None,
    pinned: bool | None = None,
    retain_grad: bool = False,
) -> array:
    return _like(src, device, requires_grad)


def zeros_like(
    src: array,
    device: Any = None,
    requires_grad: bool | None = None,
    pinned: bool | None = None,
    retain_grad: bool = False,
) -> array:
    return _zeroed(_like(src, device, requires_grad))


def ones_like(
    src: array,
    device: Any = None,
    requires_grad: bool | None = None,
    pinned: bool | None = None,
    retain_grad: bool = False,
) -> array:
    out = _like(src, device, requires_grad)
    out.fill_(1)
    return out


def full_like(
    src: array,
    value: Any,
    device: Any = None,
    requires_grad: bool | None = None,
    pinned: bool | None = None,
    retain_grad: bool = False,
) -> array:
    out = _like(src, device, requires_grad)
    out.fill_(value)
    return out


@CLONE.fill
def clone(
    src: array,
    device: Any = None,
    requires_grad: bool | None = None,
    pinned: bool | None = None,
    retain_grad: bool = False,
) -> array:
    """A contiguous copy of `src` (its grad, if any, is a fresh zeroed one, as in Warp)."""
    if isinstance(src, _GATHERED):
        src = src.contiguous()
    out = _like(src, device, requires_grad)
    if not defer(functools.partial(_copy_all, out, src), "wp.clone()"):
        _copy_all(out, src)
    return out


def _copy_all(out: array, src: array) -> None:
    copy_storage(out, src)
    record_copy(out, src)


def from_numpy(
    arr: Any,
    dtype: Any = None,
    shape: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    retain_grad: bool = False,
) -> array:
    """An array copied from numpy data; without dtype, 2-D data gives vectors, 3-D matrices."""
    data = np.asarray(arr)
    if dtype is None:
        st = _scalar_or_fail(data.dtype, "the numpy data")
        if data.ndim == 2:
            dtype = vector(data.shape[1], st)
        elif data.ndim == 3:
            dtype = matrix((data.shape[1], data.shape[2]), st)
        else:
            dtype = st
    return array(data, dtype=dtype, shape=shape, device=device, requires_grad=requires_grad)


# --------------------------------------------------------------------------------------------
# Copies


def copy(
    dest: array,
    src: array,
    dest_offset: int = 0,
    src_offset: int = 0,
    count: int = 0,
    stream: Any = None,
) -> None:
    """Copy `count` elements (0: all of `src`) between arrays, offsets in flattened elements.

    As in Warp, contiguous arrays are copied as flat memory (bit for bit; the element sizes
    must match), and offsets/count on non-contiguous arrays need both arrays to be 1-D.
    """
    _no_indexed_range(dest, src, dest_offset, src_offset, count)
    if isinstance(dest, _GATHERED):  # whole copies only (Warp's non-contiguous rule)
        dest.assign(_check(src, "copy source"))
        return
    d, s = _check(dest, "copy destination"), _check(src, "copy source")
    src_offset, dest_offset, count = _copy_range(src_offset, dest_offset, count)
    count = count or s.size
    if count == 0:
        return
    es_d, es_s = size_of(d.dtype), size_of(s.dtype)
    if es_d != es_s:
        raise ArrayCopyError(
            f"copy: incompatible element sizes ({es_d} and {es_s} bytes): destination "
            f"dtype={type_repr(d.dtype)}, source dtype={type_repr(s.dtype)}"
        )
    if recording_graph() is not None:
        defer(functools.partial(copy, d, s, dest_offset, src_offset, count), "wp.copy()")
        return
    if d.grad is not None and s.grad is not None and d.grad is not s.grad:
        copy(d.grad, s.grad, dest_offset, src_offset, count)  # as Warp: gradients come along
    before_write(d)
    if d.is_contiguous and s.is_contiguous:
        _check_range(d, s, dest_offset, src_offset, count)
        transfer_backend(d.device.backend, s.device.backend).copy_flat(d, s, dest_offset,
                                                                       src_offset, count)
    else:
        _copy_strided(d, s, dest_offset, src_offset, count)
    if ACTIVE_TAPES.get():
        check_copy(d, s)
        _record_range_copy(d, s, dest_offset, src_offset, count)


def _no_indexed_range(dest: Any, src: Any, dest_offset: Any, src_offset: Any,
                      count: Any) -> None:
    """Offsets and count on an indexed array: refused (Warp's words)."""
    if (isinstance(dest, _GATHERED) or isinstance(src, _GATHERED)) and \
            (dest_offset or src_offset or count):
        raise ArrayCopyError("copy: dest_offset, src_offset and count are not supported for "
                             "indexed or Fabric arrays")


def _copy_range(src_offset: Any, dest_offset: Any, count: Any) -> tuple[int, int, int]:
    """wp.copy's offsets and count, checked (Warp's words)."""
    try:
        src_offset, dest_offset, count = map(operator.index, (src_offset, dest_offset, count))
    except TypeError:
        raise ArrayCopyError("copy: src_offset, dest_offset and count must be integers, got "
                             f"{src_offset!r}, {dest_offset!r}, {count!r}") from None
    for what, v in (("Source offset", src_offset), ("Destination offset", dest_offset),
                    ("count", count)):
        if v < 0:
            raise ArrayCopyError(f"copy: {what} must be non-negative, got {v}")
    return src_offset, dest_offset, count


def _elements(a: NDArray, es: tuple[int, ...], offset: int, count: int) -> NDArray:
    """Elements [offset, offset + count) of `a` in flattened order, as a writable view."""
    if a.flags.c_contiguous:
        return a.reshape((-1, *es))[offset:offset + count]
    return a[offset:offset + count]  # non-contiguous copies with offsets are 1-D (checked)


def _record_range_copy(d: array, s: array, dest_offset: int, src_offset: int,
                       count: int) -> None:
    """The gradient of dest's copied elements flows to src's, and is consumed in dest; an
    overwritten element passes nothing to what it held before."""
    forward_step("range_copied", d, s, dest_offset, src_offset, count)
    if d.grad is None:
        return
    es = elem_shape(d.dtype)

    def backward() -> None:
        dg, sg = d.grad, s.grad  # the gradients at backward time (the user may replace them)
        if dg is None:
            return
        flows = sg is not None and d.dtype == s.dtype
        if dg.device.backend.range_step(dg, sg if flows else None, dest_offset, src_offset,
                                        count):
            return
        on_host([dg, sg] if flows else [dg], flow)

    def flow(dg: NDArray, sg: NDArray | None = None) -> None:
        taken = _elements(dg, es, dest_offset, count)
        if sg is not None:
            _elements(sg, es, src_offset, count)[...] += taken
        taken[...] = 0

    record_op(backward, [d, s], devices=True, carried=True)


def copy_flat_host(d: array, s: array, dest_offset: int, src_offset: int, count: int
                   ) -> None:
    """`wp.copy` of a flat range between contiguous host arrays (the CPU backend's
    `copy_flat`; ranges checked by the caller)."""
    es = size_of(s.dtype)
    dst_bytes = _flat_bytes(d.numpy())[dest_offset * es : (dest_offset + count) * es]
    copy_into(dst_bytes, _flat_bytes(s.numpy())[src_offset * es : (src_offset + count) * es])


def _check_range(d: array, s: array, dest_offset: int, src_offset: int, count: int) -> None:
    for what, a, off in (("source", s, src_offset), ("destination", d, dest_offset)):
        if off + count > a.size:
            raise ArrayCopyError(
                f"copy: {count} element(s) from offset {off} exceeds the {what} size ({a.size})"
            )


def _flat_bytes(a: NDArray) -> NDArray:
    return a.reshape(-1).view(np.uint8)


def _copy_strided(d: array, s: array, dest_offset: int, src_offset: int, count: int) -> None:
    if src_offset or dest_offset or count != s.size or count != d.size:
        if s.ndim != 1 or d.ndim != 1:
            raise ArrayCopyError(
                "copy: dest_offset, src_offset and count are only supported for 1-D arrays "
                "when either array is non-contiguous"
            )
        _check_range(d, s, dest_offset, src_offset, count)
        s = s[src_offset : src_offset + count]
        d = d[dest_offset : dest_offset + count]
    if s.shape != d.shape:
        raise ArrayCopyError(
            f"copy: incompatible array shapes: destination shape={d.shape}, source "
            f"shape={s.shape}"
        )
    copy_storage(d, s)
