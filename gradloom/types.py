"""Kernel-language types (scalar, vector, matrix, quat, transform, struct, array) and their layout."""

from __future__ import annotations

import builtins
import dataclasses
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
        if self.name == "uint64" and getattr(value, "__gl_handle__", False):
            return value  # `wp.uint64(grid.id)` keeps the handle (runtime/handles.py)
        return self.np_dtype.type(value)

    @property
    def __name__(self) -> str:  # Warp's type objects are classes with names
        return self.name

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

    @property
    def __name__(self) -> str:  # as Warp names its type classes (vec3f, quatd)
        return repr(self)

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

    @property
    def __name__(self) -> str:  # as Warp names its type classes (mat33f)
        return repr(self)

    def __repr__(self) -> str:
        if self.kind == "spatial":
            return f"spatial_matrix{_SUFFIX.get(self.dtype.name, '')}"
        return f"mat{self.rows}{self.cols}{_SUFFIX.get(self.dtype.name, self.dtype.name)}"


#: Warp's type-name suffixes (vec3f, vec2ub, mat22h, ...)
_SUFFIX = {"float32": "f", "float64": "d", "float16": "h", "int8": "b", "int16": "s",
           "int32": "i", "int64": "l", "uint8": "ub", "uint16": "us", "uint32": "ui",
           "uint64": "ul"}
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
    """A Python-scope vector/matrix/quat/transform value: a numpy array that remembers its
    gradloom type. Its operators (`+ - * / @`, unary `-`, `==`) compute what they compute in a
    kernel: the builtin library lowers them and the host evaluates the IR (builtins/host.py);
    operands that are not gradloom values (plain numpy arrays, lists) get numpy's behaviour."""

    gl_type: CompositeType

    def __array_finalize__(self, obj: Any) -> None:
        """numpy results keep the type while the shape fits (with numpy's dtype: a float64
        scalar times a vec3f is a vec3d); other shapes are plain arrays in disguise."""
        t = getattr(obj, "gl_type", None)
        if t is not None and self.shape == t.shape and self.dtype != t.dtype.np_dtype:
            st = scalar_from_numpy(self.dtype)
            t = dataclasses.replace(t, dtype=st) if st is not None else None
        self.gl_type = t if t is not None and self.shape == t.shape else None  # type: ignore[assignment]

    def __getitem__(self, index: Any) -> Any:
        """v[i] is a scalar, m[i] a row vector (a copy, as in a kernel), v[a:b] a vector."""
        out = super().__getitem__(index)
        if not isinstance(out, np.ndarray) or self.gl_type is None:
            return out
        basic = all(isinstance(i, (int, np.integer, slice))
                    for i in (index if isinstance(index, tuple) else (index,)))
        if not basic or out.ndim not in (1, 2) or out.size == 0:
            return np.asarray(out)
        dtype = self.gl_type.dtype
        t = VectorType(out.shape[0], dtype) if out.ndim == 1 else \
            MatrixType(out.shape[0], out.shape[1], dtype)
        return make_composite_value(t, (np.array(out),))

    def __iter__(self) -> Any:
        """Components of a vector, rows (vectors) of a matrix."""
        return (self[i] for i in range(len(self)))

    def _component(self, i: int) -> Any:
        return self[i]

    def _set_component(self, i: int, value: Any) -> None:
        self[i] = value

    x = property(lambda self: self._component(0), lambda self, v: self._set_component(0, v))
    y = property(lambda self: self._component(1), lambda self, v: self._set_component(1, v))
    z = property(lambda self: self._component(2), lambda self, v: self._set_component(2, v))
    w = property(lambda self: self._component(3), lambda self, v: self._set_component(3, v))

    @property
    def p(self) -> VecValue:
        """A transform's translation (`xform.p`)."""
        self._require_transform("p")
        return make_composite_value(VectorType(3, self.gl_type.dtype), (np.array(self[:3]),))

    @property
    def q(self) -> VecValue:
        """A transform's rotation quaternion (`xform.q`)."""
        self._require_transform("q")
        return make_composite_value(quaternion(self.gl_type.dtype), (np.array(self[3:]),))

    def _require_transform(self, name: str) -> None:
        if getattr(self.gl_type, "kind", None) != "transform":
            raise AttributeError(f"{self.gl_type!r} has no attribute '{name}'")

    # -- operators: the kernel's definitions, evaluated on the host ----------------------------

    def _op(self, name: str, *operands: Any) -> Any:
        from .builtins.host import host_operator  # the builtin library sits above this module

        return host_operator(name, *operands)

    def __add__(self, o: Any) -> Any:
        return self._op("add", self, o)

    def __radd__(self, o: Any) -> Any:
        return self._op("add", o, self)

    def __sub__(self, o: Any) -> Any:
        return self._op("sub", self, o)

    def __rsub__(self, o: Any) -> Any:
        return self._op("sub", o, self)

    def __mul__(self, o: Any) -> Any:
        return self._op("mul", self, o)

    def __rmul__(self, o: Any) -> Any:
        return self._op("mul", o, self)

    def __truediv__(self, o: Any) -> Any:
        return self._op("div", self, o)

    def __rtruediv__(self, o: Any) -> Any:
        return self._op("div", o, self)

    def __floordiv__(self, o: Any) -> Any:
        return self._op("floordiv", self, o)

    def __mod__(self, o: Any) -> Any:
        return self._op("mod", self, o)

    def __pow__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("pow", self, o)

    def __matmul__(self, o: Any) -> Any:
        return self._op("matmul", self, o)

    def __rmatmul__(self, o: Any) -> Any:
        return self._op("matmul", o, self)

    def __neg__(self) -> Any:
        return self._op("neg", self)

    def __pos__(self) -> Any:
        return self._op("pos", self)

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("eq", self, o)

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("ne", self, o)

    def __lt__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("lt", self, o)

    def __le__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("le", self, o)

    def __gt__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("gt", self, o)

    def __ge__(self, o: Any) -> Any:  # type: ignore[override]
        return self._op("ge", self, o)

    # values, as in kernels and Warp: `v += w` rebinds v to a new value
    __iadd__, __isub__, __imul__ = __add__, __sub__, __mul__
    __itruediv__, __imod__, __imatmul__ = __truediv__, __mod__, __matmul__

    def __repr__(self) -> str:
        if self.gl_type is None:
            return super().__repr__()
        return f"{self.gl_type!r}({self._text()})"

    def __str__(self) -> str:
        return self._text() if self.gl_type is not None else super().__str__()

    def _text(self) -> str:
        """Components as Warp prints them: [1.0, 2.0, 3.0]; matrices one row per line."""
        def item(x: Any) -> str:
            kind = self.dtype.kind
            return repr(float(x) if kind == "f" else bool(x) if kind == "b" else int(x))

        a = np.asarray(self)
        if a.ndim == 1:
            return "[" + ", ".join(item(x) for x in a) + "]"
        rows = ("[" + ", ".join(item(x) for x in r) + "]" for r in a)
        return "[" + ",\n ".join(rows) + "]"


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


@dataclass(frozen=True)
class IndexedArrayType:
    """The type of an indexed array argument (`wp.indexedarray`): element (i, j, ...) is
    data[idx0[i], idx1[j], ...], a dimension without an index array passing its index through.
    Passed as {data, grad, shape[ndim] (the indexed shape), strides[ndim] (the data's),
    indices[ndim] (int32 pointers, null for a dimension that is not indexed)}."""

    dtype: Any
    ndim: int = 1

    @property
    def size(self) -> int:
        return 16 + 24 * self.ndim

    @property
    def alignment(self) -> int:
        return 8

    def __repr__(self) -> str:
        return f"indexedarray(dtype={self.dtype!r}, ndim={self.ndim})"


@dataclass(frozen=True)
class FixedArrayType:
    """A fixed-size array local to a kernel thread (`wp.zeros(shape=..., dtype=...)` inside a
    kernel). A value, like a vector: its elements are SSA values (builtins/fixedarray.py)."""

    shape: tuple[int, ...]
    dtype: Any

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def count(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self) -> str:
        return f"fixedarray(shape={self.shape}, dtype={self.dtype!r})"


def fixedarray(shape: Any = None, dtype: Any = None) -> FixedArrayType:
    """`wp.fixedarray(shape=(2, 3), dtype=int)`: the type of a kernel-local fixed-size array."""
    dims = (shape,) if isinstance(shape, builtins.int) else tuple(shape or ())
    if not dims or any(not isinstance(d, builtins.int) or d <= 0 for d in dims):
        raise TypeError(f"wp.fixedarray() needs a shape of positive ints, got {shape!r}")
    return FixedArrayType(dims, resolve_annotation(float if dtype is None else dtype))


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
    if isinstance(t, (ArrayType, IndexedArrayType)):
        n = t.ndim
        words = [ptr, ptr] + [int64] * (2 * n) + [ptr] * (n if isinstance(t, IndexedArrayType)
                                                            else 0)
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
    if isinstance(obj, (ScalarType, VectorType, MatrixType, StructType, ArrayType,
                        IndexedArrayType, FixedArrayType)):
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
# The remaining aliases Warp 1.19 exports (integer vectors, half spatial types).
vec2b, vec3b, vec4b = (vector(n, int8) for n in (2, 3, 4))
vec2s, vec3s, vec4s = (vector(n, int16) for n in (2, 3, 4))
vec2l, vec3l, vec4l = (vector(n, int64) for n in (2, 3, 4))
vec2ub, vec3ub, vec4ub = (vector(n, uint8) for n in (2, 3, 4))
vec2us, vec3us, vec4us = (vector(n, uint16) for n in (2, 3, 4))
vec2ul, vec3ul, vec4ul = (vector(n, uint64) for n in (2, 3, 4))
spatial_vectorh = VectorType(6, float16, "spatial")
spatial_matrixh = MatrixType(6, 6, float16, "spatial")


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

# The job of a chunked launch: the thread range cut into chunks that the calling thread and the
# pool's workers claim one at a time (codegen/native_pool.py runs it, runtime/parallel.py fills
# it). 8-byte words at these offsets:
JOB_FN = 0  # the entry function
JOB_CHUNKS = 8  # how many chunks
JOB_TOTAL = 16  # threads in the launch
JOB_BLOCKS = 24  # pointer to one launch block per pool thread (index 0: the caller's)
JOB_THREADS = 32  # how many blocks there
JOB_NSCATTER = 40  # pointer slots that threads add through (passes/threads.py `scatter`)
JOB_OFFSETS = 48  # pointer to their byte offsets in a launch block
JOB_PTRS = 56  # pointer to chunks x nscatter pointers: row c is what chunk c adds into
JOB_RECORDS = 64  # pointer to one JOB_RECORD-byte record per chunk: its status if it stopped
JOB_BLOCK_BYTES = 72  # size of a launch block (what is copied from the caller's)
JOB_NREDUCE = 80  # entries in the reduce table
JOB_REDUCE = 88  # pointer to (slot, count, JOB_SUM_* code) triples: what the run sums
JOB_FLAGS = 96  # JOB_WAKE | JOB_RUN | JOB_SUM
JOB_SPIN_NS = 104  # how long the caller spins for a worker's last chunk before sleeping
JOB_CALLER_CHUNKS = 112  # out: chunks the calling thread ran,
JOB_CALLER_THREADS = 120  # the threads in them,
JOB_CALLER_NS = 128  # and the nanoseconds they took
JOB_STOPPED = 136  # out: chunks that stopped early (an error, a full stack, Ctrl-C)
JOB_BYTES = 192  # (the words after JOB_STOPPED are the native run's own)
JOB_RECORD = 64  # a record: the block's status words (32 bytes), then the thread's index
JOB_WAKE, JOB_RUN, JOB_SUM = 1, 2, 4
JOB_SUM_F32, JOB_SUM_F64, JOB_SUM_I32, JOB_SUM_I64 = 1, 2, 3, 4
#: a native pool's control memory (its layout: codegen/native_pool.py)
POOL_CONTROL_BYTES = 256


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


# The HashGrid descriptor a `HashGrid.id` points to (runtime/hash_grid.py writes it, the
# builtins in builtins/hash_grid.py read it in kernels): byte offsets of its fields.
GRID_POINT_IDS = 0  # ptr: int32 original point index, in cell-sorted order
GRID_CELL_STARTS = 8  # ptr: int32 per cell, first sorted position of the cell's points
GRID_CELL_ENDS = 16  # ptr: int32 per cell, one past the last
GRID_KEYS = 24  # ptr: uint64 (cell << 32 | group) per sorted point, grouped builds only
GRID_DIMS = 32  # 3 x int32: cells along x, y, z
GRID_NUM_POINTS = 44  # int32
GRID_READY = 48  # int32: 1 once built or reserved (point_ids valid)
GRID_HAS_GROUPS = 52  # int32: 1 when the last build was grouped
GRID_INV_WIDTH = {"float64": 56, "float32": 64, "float16": 68}  # 1 / cell width, per precision
GRID_DESCRIPTOR_SIZE = 72
