"""Kernel-language types (scalar, vector, matrix, quat, transform, struct, array) and their layout."""

from __future__ import annotations

import builtins
import typing
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# --------------------------------------------------------------------------------------------
# Scalars


@dataclass(frozen=True)
class ScalarType:
    """A scalar type. kind: 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool, 'p' pointer."""

    name: str
    kind: str
    bits: int

    @property
    def np_dtype(self) -> np.dtype[Any]:
        return _NP_DTYPES[self.name]

    @property
    def size(self) -> int:
        return 1 if self.kind == "b" else self.bits // 8

    @property
    def alignment(self) -> int:
        return self.size

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in ("i", "u")

    def __call__(self, value: Any = 0) -> Any:
        """Python-scope construction (`wp.float32(1.5)`) gives a numpy scalar of this type."""
        return self.np_dtype.type(value)

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


bool_ = ScalarType("bool", "b", 8)
int8 = ScalarType("int8", "i", 8)
int16 = ScalarType("int16", "i", 16)
int32 = ScalarType("int32", "i", 32)
int64 = ScalarType("int64", "i", 64)
uint8 = ScalarType("uint8", "u", 8)
uint16 = ScalarType("uint16", "u", 16)
uint32 = ScalarType("uint32", "u", 32)
uint64 = ScalarType("uint64", "u", 64)
float16 = ScalarType("float16", "f", 16)
float32 = ScalarType("float32", "f", 32)
float64 = ScalarType("float64", "f", 64)
#: Internal: a raw address (array data and grad pointers). Never a user-visible type.
ptr = ScalarType("ptr", "p", 64)

SCALAR_TYPES: tuple[ScalarType, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64,
)
FLOAT_TYPES = (float16, float32, float64)
INT_TYPES = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)

_NP_DTYPES: dict[str, np.dtype[Any]] = {
    "bool": np.dtype(np.bool_), "int8": np.dtype(np.int8), "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32), "int64": np.dtype(np.int64), "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16), "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64), "float16": np.dtype(np.float16),
    "float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
    "ptr": np.dtype(np.uint64),
}
_SCALAR_BY_NP = {np.dtype(t.np_dtype): t for t in SCALAR_TYPES}


def scalar_from_numpy(dtype: Any) -> ScalarType | None:
    return _SCALAR_BY_NP.get(np.dtype(dtype))


# --------------------------------------------------------------------------------------------
# Vectors and matrices (quat, transform and spatial types are vectors/matrices with a kind tag)


@dataclass(frozen=True)
class VectorType:
    """A fixed-length vector. kind: 'vec', 'quat', 'transform' or 'spatial'."""

    length: int
    dtype: ScalarType
    kind: str = "vec"

    @property
    def size(self) -> int:
        return self.length * self.dtype.size

    @property
    def alignment(self) -> int:
        return self.dtype.alignment

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.length,)

    def __call__(self, *args: Any) -> VecValue:
        return make_composite_value(self, args)

    def __repr__(self) -> str:
        base = {"vec": "vec", "quat": "quat", "transform": "transform", "spatial": "spatial_vector"}
        suffix = "" if self.kind != "vec" else str(self.length)
        return f"{base[self.kind]}{suffix}{_SUFFIX.get(self.dtype.name, self.dtype.name)}"


@dataclass(frozen=True)
class MatrixType:
    """A rows×cols matrix, stored row-major. kind: 'mat' or 'spatial'."""

    rows: int
    cols: int
    dtype: ScalarType
    kind: str = "mat"

    @property
    def length(self) -> int:
        return self.rows * self.cols

    @property
    def size(self) -> int:
        return self.length * self.dtype.size

    @property
    def alignment(self) -> int:
        return self.dtype.alignment

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.rows, self.cols)

    def __call__(self, *args: Any) -> VecValue:
        return make_composite_value(self, args)

    def __repr__(self) -> str:
        if self.kind == "spatial":
            return f"spatial_matrix{_SUFFIX.get(self.dtype.name, '')}"
        return f"mat{self.rows}{self.cols}{_SUFFIX.get(self.dtype.name, self.dtype.name)}"


_SUFFIX = {"float32": "f", "float64": "d", "float16": "h", "int32": "i"}
CompositeType = VectorType | MatrixType


def vector(length: int, dtype: Any = None) -> VectorType:
    """`wp.vector(length=3, dtype=wp.float32)`: a vector type."""
    return VectorType(length, to_scalar(dtype if dtype is not None else float32))


def matrix(shape: tuple[int, int], dtype: Any = None) -> MatrixType:
    """`wp.matrix(shape=(3, 3), dtype=wp.float32)`: a matrix type."""
    return MatrixType(shape[0], shape[1], to_scalar(dtype if dtype is not None else float32))


def quaternion(dtype: Any = None) -> VectorType:
    return VectorType(4, to_scalar(dtype if dtype is not None else float32), "quat")


def transformation(dtype: Any = None) -> VectorType:
    return VectorType(7, to_scalar(dtype if dtype is not None else float32), "transform")


class VecValue(np.ndarray):  # type: ignore[type-arg]
    """A Python-scope vector/matrix value: a numpy array that remembers its gradloom type."""

    gl_type: CompositeType

    def __array_finalize__(self, obj: Any) -> None:
        self.gl_type = getattr(obj, "gl_type", None)  # type: ignore[assignment]

    def _component(self, i: int) -> Any:
        return self[i]

    x = property(lambda self: self._component(0))
    y = property(lambda self: self._component(1))
    z = property(lambda self: self._component(2))
    w = property(lambda self: self._component(3))


def make_composite_value(t: CompositeType, args: tuple[Any, ...]) -> VecValue:
    """Python-scope constructor: no args gives zeros, one scalar fills, else the components."""
    if len(args) == 0:
        flat = np.zeros(t.length, dtype=t.dtype.np_dtype)
    elif len(args) == 1 and np.ndim(args[0]) == 0:
        flat = np.full(t.length, args[0], dtype=t.dtype.np_dtype)
    else:
        flat = np.concatenate([np.ravel(np.asarray(a)) for a in args]).astype(t.dtype.np_dtype)
    if flat.size != t.length:
        raise TypeError(f"{t!r} takes {t.length} components, got {flat.size}")
    out = flat.reshape(t.shape).view(VecValue)
    out.gl_type = t
    return out


# --------------------------------------------------------------------------------------------
# Structs


@dataclass(frozen=True, eq=False)
class StructType:
    """A `@wp.struct` class's type: ordered fields with their byte offsets (C layout)."""

    name: str
    fields: tuple[tuple[str, Any], ...]
    cls: type = field(repr=False, compare=False)

    @property
    def offsets(self) -> dict[str, int]:
        return _struct_offsets(self)[0]

    @property
    def size(self) -> int:
        return _struct_offsets(self)[1]

    @property
    def alignment(self) -> int:
        return max((alignment_of(t) for _, t in self.fields), default=1)

    def field_type(self, name: str) -> Any:
        for fname, ftype in self.fields:
            if fname == name:
                return ftype
        raise KeyError(name)

    def __repr__(self) -> str:
        return self.name


def _struct_offsets(st: StructType) -> tuple[dict[str, int], int]:
    offsets: dict[str, int] = {}
    pos = 0
    for name, ftype in st.fields:
        align = alignment_of(ftype)
        pos = (pos + align - 1) // align * align
        offsets[name] = pos
        pos += size_of(ftype)
    align = st.alignment
    return offsets, (pos + align - 1) // align * align


# --------------------------------------------------------------------------------------------
# Arrays


@dataclass(frozen=True)
class ArrayType:
    """The type of an array argument. Passed as {data, grad, shape[ndim], strides[ndim]}."""

    dtype: Any
    ndim: int = 1

    @property
    def size(self) -> int:
        return 16 + 16 * self.ndim

    @property
    def alignment(self) -> int:
        return 8

    def __repr__(self) -> str:
        return f"array(dtype={self.dtype!r}, ndim={self.ndim})"


def size_of(t: Any) -> int:
    return int(t.size)


def alignment_of(t: Any) -> int:
    return int(t.alignment)


def leaves(t: Any, offset: int = 0) -> list[tuple[int, ScalarType]]:
    """The scalar leaves of a value type in memory order: (byte offset, scalar type)."""
    if isinstance(t, ScalarType):
        return [(offset, t)]
    if isinstance(t, (VectorType, MatrixType)):
        return [(offset + i * t.dtype.size, t.dtype) for i in range(t.length)]
    if isinstance(t, StructType):
        out: list[tuple[int, ScalarType]] = []
        for name, ftype in t.fields:
            out.extend(leaves(ftype, offset + t.offsets[name]))
        return out
    if isinstance(t, ArrayType):
        n = t.ndim
        words = [ptr, ptr] + [int64] * (2 * n)
        return [(offset + 8 * i, w) for i, w in enumerate(words)]
    raise TypeError(f"{t!r} has no memory layout")


# --------------------------------------------------------------------------------------------
# Annotations and Python values


def to_scalar(obj: Any) -> ScalarType:
    t = resolve_annotation(obj)
    if not isinstance(t, ScalarType):
        raise TypeError(f"expected a scalar type, got {obj!r}")
    return t


def resolve_annotation(obj: Any) -> Any:
    """Turn what a user writes in an annotation or `dtype=` into a gradloom type."""
    if obj is builtins.float:
        return float32
    if obj is builtins.int:
        return int32
    if obj is builtins.bool:
        return bool_
    if isinstance(obj, (ScalarType, VectorType, MatrixType, StructType, ArrayType)):
        return obj
    if obj is typing.Any:
        return typing.Any
    gl = getattr(obj, "__gl_type__", None)
    if gl is not None:
        return gl() if callable(gl) else gl
    if isinstance(obj, (np.dtype, type)):
        try:
            st = scalar_from_numpy(obj)
        except TypeError:
            st = None
        if st is not None:
            return st
    raise TypeError(f"{obj!r} is not a gradloom type")


def is_value_type(t: Any) -> bool:
    return isinstance(t, (ScalarType, VectorType, MatrixType, StructType))


def type_of_constant(value: Any) -> Any:
    """The kernel type of a Python constant captured by a kernel, or None if it has none."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return bool_
    if isinstance(value, builtins.int):
        return int32
    if isinstance(value, builtins.float):
        return float32
    if isinstance(value, np.generic):
        return scalar_from_numpy(value.dtype)
    if isinstance(value, VecValue):
        return value.gl_type
    return None


def constant(value: Any) -> Any:
    """`wp.constant(x)`: marks a global as a compile-time constant (it is captured by value)."""
    if type_of_constant(value) is None:
        raise TypeError(f"wp.constant() takes a scalar, vector or matrix value, got {value!r}")
    return value


# Named aliases, as Warp has them.
vec2, vec3, vec4 = (vector(n, float32) for n in (2, 3, 4))
vec2f, vec3f, vec4f = vec2, vec3, vec4
vec2d, vec3d, vec4d = (vector(n, float64) for n in (2, 3, 4))
vec2h, vec3h, vec4h = (vector(n, float16) for n in (2, 3, 4))
vec2i, vec3i, vec4i = (vector(n, int32) for n in (2, 3, 4))
vec2ui, vec3ui, vec4ui = (vector(n, uint32) for n in (2, 3, 4))
mat22, mat33, mat44 = (matrix((n, n), float32) for n in (2, 3, 4))
mat22f, mat33f, mat44f = mat22, mat33, mat44
mat22d, mat33d, mat44d = (matrix((n, n), float64) for n in (2, 3, 4))
mat22h, mat33h, mat44h = (matrix((n, n), float16) for n in (2, 3, 4))
quat, quatf, quatd, quath = (quaternion(t) for t in (float32, float32, float64, float16))
transform, transformf, transformd, transformh = (
    transformation(t) for t in (float32, float32, float64, float16)
)
spatial_vector = spatial_vectorf = VectorType(6, float32, "spatial")
spatial_vectord = VectorType(6, float64, "spatial")
spatial_matrix = spatial_matrixf = MatrixType(6, 6, float32, "spatial")
spatial_matrixd = MatrixType(6, 6, float64, "spatial")


# The launch block: the one argument of a compiled entry (codegen/llvm.py reads it, the runtime
# fills it; each worker thread of a split launch gets its own).
BLOCK_DIMS = 0  # 4 x int64: the launch's dims, padded with 1s
BLOCK_STATUS = 32  # int32 error word; stack base (ptr) at +8, capacity at +16, failed thread +24
BLOCK_START = 64  # int64: the first linear thread index this call runs
BLOCK_END = 72  # int64: one past the last
BLOCK_ARGS = 80  # the kernel arguments, packed as arg_offsets lays them out
#: the error word's code for "the adjoint stack is full" (other nonzero codes: 1 + the index of
#: the source location whose bounds check failed)
STATUS_STACK_FULL = -1
#: the error word's code for "a SIGINT arrived while the launch ran" (codegen/signals.py)
STATUS_INTERRUPTED = -2


def arg_offsets(arg_types: list[Any]) -> tuple[list[int], int]:
    """Byte offset of each kernel argument in the packed argument block, and its total size."""
    offsets = []
    pos = 0
    for t in arg_types:
        align = alignment_of(t)
        pos = (pos + align - 1) // align * align
        offsets.append(pos)
        pos += size_of(t)
    return offsets, (pos + 7) // 8 * 8
