"""Array storage: element types as numpy dtypes, shapes, fitting data to an element type, and
numpy buffers with a given layout (bfloat16 elements are stored as their uint16 bits)."""

from __future__ import annotations

import ctypes
import math
import operator
import weakref
from typing import Any

import numpy as np
import numpy.typing as npt

from gradloom.errors import ArrayTypeError, ArrayValueError, GradloomError
from gradloom.runtime.array.aligned import aligned_copy, aligned_zeros
from gradloom.runtime.memops import copy_into
from gradloom.types import (
    ArrayType,
    IndexedArrayType,
    MatrixType,
    ScalarType,
    StructType,
    VectorType,
    bf16_bits_to_float32,
    float32_to_bf16_bits,
    resolve_annotation,
    scalar_from_numpy,
    size_of,
    type_repr,
)

from ...hooks import Hook
from ..backend import transfer_backend
from ..layout import is_contiguous, span

#: the array class, built on this module (runtime/array/array.py fills it)
ARRAY_CLASS: Hook[Any] = Hook("arrays held in structs", "gradloom.runtime.array.array")
#: an indexed array in a struct packs its words (indexedarray.py fills it)
INDEXED_WORDS: Hook[Any] = Hook("indexed arrays in structs", "gradloom.runtime.array.indexed")
#: an indexed or Fabric array field read back from a struct array: a data-less stub of its type
#: (indexed.py fills it; the memory it viewed is not known from the words)
FIELD_STUB: Hook[Any] = Hook("indexed array field stubs", "gradloom.runtime.array.indexed")

NDArray = npt.NDArray[Any]

#: Arrays have 1 to MAX_DIMS dimensions, as in Warp.
MAX_DIMS = 4



def resolve_dtype(dtype: Any) -> Any:
    """The gradloom element type for a `dtype=` argument; a GradloomError naming it otherwise."""
    try:
        t = resolve_annotation(dtype)
    except TypeError:
        t = None
    ok = isinstance(t, (VectorType, MatrixType, StructType)) or (
        isinstance(t, ScalarType) and t.kind != "p"
    )
    if not ok:
        raise GradloomError(
            f"unsupported array dtype {dtype!r}: expected a scalar, vector, matrix or struct "
            "type (e.g. wp.float32, float, int, wp.vec3, wp.mat33, a @wp.struct class)"
        )
    return t


def elem_shape(t: Any) -> tuple[int, ...]:
    """The trailing storage dimensions of one element: (n,) for vectors, (r, c) for matrices."""
    if isinstance(t, (VectorType, MatrixType)):
        return t.shape
    return ()


def storage_dtype(t: Any) -> np.dtype[Any]:
    """The numpy dtype of the storage: the scalar type, or a structured dtype for structs."""
    if isinstance(t, ScalarType):
        return t.np_dtype
    if isinstance(t, (VectorType, MatrixType)):
        return t.dtype.np_dtype
    if isinstance(t, StructType):
        return _struct_np_dtype(t)
    raise GradloomError(f"{t!r} has no array storage type")


def _struct_np_dtype(st: StructType) -> np.dtype[Any]:
    out: np.dtype[Any] = np.dtype(struct_dtype_spec(st))  # type: ignore[call-overload]
    return out


def struct_dtype_spec(st: StructType) -> dict[str, Any]:
    """A struct's numpy layout as the dict numpy takes (Warp's `Struct.numpy_dtype()`): field
    names, formats (an array field as its uint64 words), byte offsets and the item size."""
    offsets = st.offsets
    formats: list[np.dtype[Any]] = []
    for _, ftype in st.fields:
        if isinstance(ftype, (ArrayType, IndexedArrayType)):
            formats.append(np.dtype((np.uint64, (ftype.size // 8,))))
        else:
            es = elem_shape(ftype)
            formats.append(np.dtype((storage_dtype(ftype), es)) if es else storage_dtype(ftype))
    return {
        "names": [name for name, _ in st.fields],
        "formats": formats,
        "offsets": [offsets[name] for name, _ in st.fields],
        "itemsize": st.size,
    }


def normalize_shape(shape: Any, what: str = "shape", infer: bool = False) -> tuple[int, ...]:
    """An int or a sequence of ints as a shape tuple (None gives (0,), as in Warp); a negative
    size is an error naming `what` (with `infer`, one -1 may stand for the remaining size)."""
    if shape is None:
        return (0,)
    try:
        if isinstance(shape, (bool, np.bool_)) or any(isinstance(d, (bool, np.bool_))
                                                       for d in np.ravel(shape)):
            raise TypeError
        dims = (
            (operator.index(shape),) if np.ndim(shape) == 0 else tuple(map(operator.index, shape))
        )
    except (TypeError, ValueError):
        raise GradloomError(f"invalid {what}={shape!r}: expected an int or a sequence of "
                            "non-negative ints") from None
    if len(dims) > MAX_DIMS:
        raise GradloomError(f"arrays have at most {MAX_DIMS} dimensions, got {what}={dims}")
    holes = [d for d in dims if d < 0]
    if holes and not (infer and holes == [-1]):
        raise ArrayValueError(f"invalid {what}={dims}: Array shapes must be non-negative"
                              + (" (one -1 may stand for the remaining size)" if infer else ""))
    check_int32_dims(dims, what)
    return dims


_INT32_MAX = 2**31 - 1


def check_int32_dims(dims: tuple[int, ...], what: str = "shape") -> None:
    """Kernels index and read `.shape` in int32 (as Warp's), so no dimension may exceed it."""
    if any(d > _INT32_MAX for d in dims):
        raise ArrayValueError(f"invalid {what}={dims}: Array shapes must not exceed the maximum "
                              f"representable value of a signed 32-bit integer ({_INT32_MAX})")


def infer_dtype(arr: NDArray) -> ScalarType:
    t = scalar_from_numpy(arr.dtype) if arr.dtype.names is None else None
    if t is None:
        raise GradloomError(
            f"cannot infer an array dtype from data of numpy dtype {arr.dtype}; pass dtype="
        )
    return t


def to_numpy(data: Any, npdt: np.dtype[Any] | None, copy: bool, t: Any = None) -> NDArray:
    """Data (a gradloom array, numpy array, nested sequences) as numpy values of npdt (the
    storage of element type t: bfloat16 values become their bits, unless they are uint16)."""
    if hasattr(data, "__gl_type__") and hasattr(data, "numpy"):
        data = data.numpy()
    if is_bf16(t) and not (isinstance(data, np.ndarray) and data.dtype == np.uint16):
        data = bf16_storage(data)
    try:
        if copy:
            return aligned_copy(np.array(data, dtype=npdt, order="C", copy=True))
        return np.asarray(data, dtype=npdt)
    except (TypeError, ValueError) as e:
        what = "numpy data" if npdt is None else f"elements of numpy type {npdt}"
        raise GradloomError(f"cannot convert the array data to {what}: {e}") from e


def fit_data(arr: NDArray, t: Any, shape: tuple[int, ...] | None) -> NDArray:
    """Reshape data to `shape + elem_shape(t)`, taking the element's trailing dims as Warp does."""
    es = elem_shape(t)
    if shape is not None and -1 in shape:  # `shape=(1, -1)`: the size the data leaves, as Warp
        known = math.prod(d for d in shape if d != -1) * math.prod(es)
        fill = arr.size // known if known and arr.size % known == 0 else -1
        shape = tuple(fill if d == -1 else d for d in shape)
        if fill < 0:
            raise GradloomError(f"data of shape {arr.shape} ({arr.size} values) does not fit an "
                                f"array of shape {shape} with dtype {t!r}")
    if shape is not None:
        target = shape + es
        if arr.size != math.prod(target):
            raise GradloomError(
                f"data of shape {arr.shape} ({arr.size} values) does not fit an array of shape "
                f"{shape} with dtype {t!r}"
            )
        return arr.reshape(target)
    if arr.ndim == 0:
        raise GradloomError("array data must have at least one dimension")
    if es:
        n = math.prod(es)
        while arr.ndim > 1 and arr.shape[-1] == 1 and arr.shape[-len(es):] != es:
            arr = arr[..., 0]  # inner dims of length 1 are dropped first, as Warp does
        if arr.shape == es:  # exactly one element (as Warp: one matrix from 2x2 data)
            arr = arr.reshape((1, *es))
        elif arr.shape[-len(es) :] == es and arr.ndim > len(es):
            pass
        elif arr.shape[-1] == n and arr.ndim > 1:
            arr = arr.reshape((*arr.shape[:-1], *es))
        elif arr.shape[-1] % n == 0:
            arr = arr.reshape((*arr.shape[:-1], arr.shape[-1] // n, *es))
        else:
            raise GradloomError(
                f"data of shape {arr.shape} does not fit dtype {t!r}: its trailing dimensions "
                f"must be {es} or a last dimension that is a multiple of {n}"
            )
    check_int32_dims(arr.shape[:arr.ndim - len(es)], "data shape")
    return _trailing_contiguous(arr, len(es))


def _trailing_contiguous(arr: NDArray, k: int) -> NDArray:
    """`arr`, or a contiguous copy when an element's components are not adjacent in memory."""
    expected = arr.itemsize
    for n, s in zip(reversed(arr.shape[arr.ndim - k :]), reversed(arr.strides[arr.ndim - k :])):
        if n > 1 and s != expected:
            return np.ascontiguousarray(arr)
        expected *= n
    return arr


def zeros_same_layout(a: NDArray) -> NDArray:
    """Zeroed memory with exactly `a`'s shape and strides (a gradient must share its layout)."""
    return _same_layout(a, zero=True)


def copy_same_layout(a: NDArray) -> NDArray:
    """A copy of `a` with exactly its shape and strides (a Tape's snapshot of an array)."""
    out = _same_layout(a, zero=False)
    copy_into(out, a)
    return out


def _same_layout(a: NDArray, zero: bool) -> NDArray:
    """New memory laid out as `a`, zeroed or not: packed layouts get an aligned allocation,
    others one of exactly their byte span, viewed with their strides."""
    if a.size == 0 or is_contiguous(a.shape, a.strides, a.itemsize):
        return aligned_zeros(a.shape, a.dtype) if zero else np.empty_like(a)
    lo, hi = span(a.shape, a.strides, a.itemsize)
    buf = (np.zeros if zero else np.empty)(hi - lo, dtype=np.uint8)
    return np.ndarray(a.shape, dtype=a.dtype, buffer=buf, offset=-lo, strides=a.strides)


def storage_from_ptr(ptr: int, t: Any, shape: Any, strides: Any, capacity: int | None,
                     deleter: Any = None) -> NDArray:
    """Host storage over the memory at `ptr`; `deleter(ptr, nbytes)` (Warp's) runs once no
    view of it is left, numpy's included."""
    dims = normalize_shape(shape)
    es, npdt = elem_shape(t), storage_dtype(t)
    inner = np.zeros(es, dtype=npdt).strides if es else ()
    full_strides = None if strides is None else (*map(int, strides), *inner)
    elem = size_of(t)
    if strides is None:
        nbytes = elem * math.prod(dims)
    else:  # at least one element's bytes, as a view of nothing still has an address
        nbytes = max(elem, span(dims, tuple(map(int, strides)), elem)[1])
    size = max(int(capacity or 0), nbytes)
    memory = (ctypes.c_byte * size).from_address(int(ptr))
    if deleter is not None:  # every view keeps `memory` alive through the memoryview below
        weakref.finalize(memory, deleter, int(ptr), size)
    buf = memoryview(memory)
    return np.ndarray(dims + es, dtype=npdt, buffer=buf, strides=full_strides)


def strided_zeros(dims: tuple[int, ...], t: Any, strides: Any) -> NDArray:
    """Zeroed storage for elements of type t laid out with the given byte strides (Warp's
    `wp.zeros(shape, strides=...)`: transposed or gapped layouts)."""
    es, npdt = elem_shape(t), storage_dtype(t)
    inner = np.zeros(es, dtype=npdt).strides if es else ()
    outer = tuple(int(s) for s in strides)
    if len(outer) != len(dims) or any(s < 0 for s in outer):
        raise ArrayValueError(f"strides={tuple(strides)} must be {len(dims)} non-negative "
                              f"byte strides for shape {dims}")
    elem = size_of(t)
    buf = aligned_zeros((max(span(dims, outer, elem)[1], elem, 1),), np.uint8)
    return np.ndarray(dims + es, dtype=npdt, buffer=buf, strides=outer + inner)


def copy_storage(dest: Any, src: Any) -> None:
    """Copy the elements of `src` into `dest` (same shape), bit for bit as Warp does."""
    transfer_backend(dest.device.backend, src.device.backend).copy_arrays(dest, src)


def copy_host(dest: Any, src: Any) -> None:
    """`copy_storage` between arrays in host memory (the CPU backend's `copy_arrays`)."""
    d, s = dest.numpy(), src.numpy()
    if d.dtype == s.dtype and d.shape == s.shape:
        copy_into(d, s)
        return
    if d.itemsize * d.size != s.itemsize * s.size:
        raise GradloomError(
            f"incompatible array element types: destination {dest.dtype!r}, source {src.dtype!r}"
        )
    raw = np.ascontiguousarray(s).reshape(-1).view(np.uint8)
    copy_into(d, raw.view(d.dtype).reshape(d.shape))




def is_bf16(t: Any) -> bool:
    """Whether element type t is bfloat16, or a vector/matrix of it."""
    st = t.dtype if isinstance(t, (VectorType, MatrixType)) else t
    return isinstance(st, ScalarType) and st.name == "bfloat16"


def bf16_storage(values: Any) -> NDArray:
    """Float values (any numeric data) as bfloat16 bits, rounded to nearest even."""
    try:
        as_float = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise GradloomError(f"cannot convert the array data to bfloat16 values: {e}") from e
    return float32_to_bf16_bits(as_float)


def element_value(t: Any, raw: Any) -> Any:
    """The Python value of one stored element: bfloat16 bits as a float32, a struct record as
    an instance of its class (an array field is left unset)."""
    if isinstance(t, StructType):
        return struct_instance(t, raw)
    return bf16_bits_to_float32(raw)[()] if is_bf16(t) else raw


def _array_from_words(t: ArrayType, words: list[int]) -> Any:
    """An array field's value from its stored words (a view of memory the struct points at;
    None for a null pointer)."""
    if not words[0]:
        return None
    n = t.ndim
    return ARRAY_CLASS.get()(ptr=words[0], dtype=t.dtype, shape=tuple(words[2:2 + n]),
                 strides=tuple(words[2 + n:2 + 2 * n]))


def struct_instance(t: StructType, record: Any) -> Any:
    """A struct instance holding one structured numpy element's field values."""
    out = t.cls()
    for name, ft in t.fields:
        if isinstance(ft, IndexedArrayType):
            setattr(out, name, FIELD_STUB.get()(ft))
            continue
        v = record[name]
        if isinstance(ft, ArrayType):
            setattr(out, name, _array_from_words(ft, [int(w) for w in v]))
            continue
        if isinstance(ft, StructType):
            v = struct_instance(ft, v)
        elif isinstance(ft, ScalarType):
            v = element_value(ft, v)
            v = ft(v) if ft.kind in "iub" else v
        else:
            v = ft(element_value(ft, np.array(v)))
        setattr(out, name, v)
    return out


def view_storage(storage: NDArray, src: Any, dst: Any, ndim: int) -> NDArray:
    """The storage of an array (`ndim` dimensions, element type src) seen as elements of type
    dst without a copy, as Warp's `array.view(dtype)`: the same element size keeps the shape;
    a vector/matrix seen as its scalars adds its dims; scalars seen as vectors/matrices take
    the trailing dims. A TypeError (Warp's words) where the sizes do not fit."""
    src_sc = src.dtype if isinstance(src, (VectorType, MatrixType)) else src
    dst_sc = dst.dtype if isinstance(dst, (VectorType, MatrixType)) else dst
    what = f"cannot create an array view with dtype {type_repr(dst)} from source dtype " \
           f"{type_repr(src)}"
    npdt = storage_dtype(dst)
    if size_of(src) == size_of(dst):
        es = elem_shape(dst)
        inner = np.zeros(es, dtype=npdt).strides if es else ()
        return _reinterpret(storage, storage.shape[:ndim] + es, storage.strides[:ndim] + inner,
                            npdt)
    if isinstance(dst, ScalarType) and src_sc is not src:
        if size_of(src_sc) != size_of(dst):
            raise ArrayTypeError(f"{what}: source scalar dtype {type_repr(src_sc)} has size "
                                 f"{size_of(src_sc)} bytes, but target dtype has size "
                                 f"{size_of(dst)} bytes")
        return storage.view(npdt)
    if isinstance(src, ScalarType) and dst_sc is not dst:
        es = elem_shape(dst)
        if size_of(dst_sc) != size_of(src):
            raise ArrayTypeError(f"{what}: source dtype has size {size_of(src)} bytes, but "
                                 f"target scalar dtype {type_repr(dst_sc)} has size "
                                 f"{size_of(dst_sc)} bytes")
        if storage.shape[storage.ndim - len(es):] != es:
            raise ArrayTypeError(f"{what}: the array's trailing dimensions "
                                 f"{storage.shape[storage.ndim - len(es):]} are not {es}")
        out = storage.view(npdt)
        return out.reshape((1, *es)) if out.ndim == len(es) else out  # one element: 1-D
    raise ArrayTypeError(f"{what}: source dtype has size {size_of(src)} bytes, but target "
                         f"dtype has size {size_of(dst)} bytes")


def _reinterpret(storage: NDArray, shape: tuple[int, ...], strides: tuple[int, ...],
                 npdt: np.dtype[Any]) -> NDArray:
    """The memory under `storage` as an array of npdt with the given shape and strides."""
    root = storage
    while isinstance(root.base, np.ndarray):
        root = root.base
    offset = int(storage.ctypes.data) - int(root.ctypes.data)
    return np.ndarray(shape, dtype=npdt, buffer=root, offset=offset, strides=strides)


def struct_record(item: Any, t: StructType) -> Any:
    """A struct instance as the nested tuple numpy uses for one structured element (an array
    field as its words: data and grad pointers, shape, strides)."""
    if not isinstance(item, t.cls):
        return item  # tuples and the like go to numpy unchanged
    fields = []
    for name, ft in t.fields:
        v = getattr(item, name)
        if isinstance(ft, StructType):
            v = struct_record(v, ft)
        elif isinstance(ft, (ArrayType, IndexedArrayType)):
            v = _array_field_words(v, ft)
        elif is_bf16(ft):
            v = bf16_storage(v)
        fields.append(v)
    return tuple(fields)


def _array_field_words(v: Any, t: ArrayType | IndexedArrayType) -> list[int]:
    if v is None:
        return [0] * (t.size // 8)
    if isinstance(t, IndexedArrayType):
        return [int(w) for w in INDEXED_WORDS.get()(v, t)]
    return list(v.launch_words())


def fill_value(t: Any, value: Any) -> Any:
    """`value` shaped to broadcast over a storage of element type `t`."""
    if isinstance(value, ARRAY_CLASS.get()):
        raise TypeError("fill_ takes an element value; use assign() to copy an array")
    es = elem_shape(t)
    if isinstance(t, StructType) and isinstance(value, t.cls):
        return np.array(struct_record(value, t), dtype=storage_dtype(t))
    if not es:
        if isinstance(t, ScalarType) and np.ndim(value) != 0:
            raise TypeError(f"a {t!r} element takes a scalar")
        return bf16_storage(value) if is_bf16(t) else value
    v = bf16_storage(value) if is_bf16(t) else np.asarray(value, dtype=storage_dtype(t))
    if v.ndim == 0:
        return v
    if v.size != math.prod(es):
        raise TypeError(f"{t!r} has {math.prod(es)} components, the value has {v.size}")
    return v.reshape(es)
