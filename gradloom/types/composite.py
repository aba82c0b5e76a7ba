"""Vector and matrix types (quaternions, transforms and spatial types are vectors/matrices with a
kind tag): their layout, Warp's class attributes, the type factories and the named aliases."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..hooks import Hook
from .classlike import ClassLike
from .scalars import (
    ScalarType,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)

#: a value of a composite type, built by calling the type (types/values.py fills it: values
#: sit above the types they are values of)
CONSTRUCT: Hook[Any] = Hook("vector and matrix values", "gradloom.types.values")
#: the scalar type a `dtype=` argument names (types/annotations.py fills it)
TO_SCALAR: Hook[Any] = Hook("dtype arguments", "gradloom.types.annotations")


class _CompositeAttrs(ClassLike):
    """Warp's class attributes of vector/matrix types, and value construction."""

    dtype: ScalarType
    length: int
    kind: str

    @property
    def _length_(self) -> int:
        return self.length

    @property
    def _type_(self) -> Any:
        return self.dtype._type_

    @property
    def _wp_scalar_type_(self) -> ScalarType:
        return self.dtype

    @property
    def _wp_generic_type_str_(self) -> str:
        return _GENERIC.get(self.kind, "vec_t") if isinstance(self, VectorType) else "mat_t"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A value of this type (a types/values.py `VecValue`)."""
        return CONSTRUCT.get()(self, args, kwargs)

    def __instancecheck__(self, obj: Any) -> bool:
        """`isinstance(v, wp.vec3)`: v is a Python-scope value of this type."""
        return getattr(obj, "gl_type", None) == self

    def from_buffer(self, source: Any, offset: int = 0) -> Any:
        """A value sharing memory with a writable buffer (Warp's types are ctypes arrays:
        `wp.transform.from_buffer(a_numpy_array)`), so writes through either show in both."""
        return type(self()).from_buffer(source, offset)

    def from_buffer_copy(self, source: Any, offset: int = 0) -> Any:
        """A value holding a copy of a buffer's bytes (`wp.transform.from_buffer_copy(row)`)."""
        return type(self()).from_buffer_copy(source, offset)

    def from_ptr(self, address: int) -> Any:
        """A value copied from memory at an address (Warp's `vec3.from_ptr`)."""
        if not address:
            raise RuntimeError("NULL pointer exception")
        size = self.length * self.dtype.size
        raw = (ctypes.c_char * size).from_address(address)
        data = np.frombuffer(bytes(raw), dtype=self.dtype.np_dtype)
        return self(data)


def _plain(kind: str) -> str:
    """A vector kind as Warp's type equality sees it: a spatial vector is a vector."""
    return "vec" if kind == "spatial" else kind


_GENERIC = {"vec": "vec_t", "quat": "quat_t", "transform": "transform_t",
            "spatial": "vec_t"}


@dataclass(frozen=True, eq=False)
class VectorType(_CompositeAttrs):
    """A fixed-length vector. kind: 'vec', 'quat', 'transform' or 'spatial'. Equality is Warp's
    `types_equal`: a spatial vector is the plain vector of its length and dtype (the kind still
    names it and picks spatial_matrix @ spatial_vector's result); a quat or transform is not."""

    length: int
    dtype: ScalarType
    kind: str = "vec"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VectorType) and other.length == self.length and \
            other.dtype == self.dtype and _plain(other.kind) == _plain(self.kind)

    def __hash__(self) -> int:
        return hash(("vec", self.length, self.dtype, _plain(self.kind)))

    @property
    def size(self) -> int:
        return self.length * self.dtype.size

    @property
    def alignment(self) -> int:
        return self.dtype.alignment

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.length,)

    @property
    def _shape_(self) -> tuple[int, ...]:
        return (self.length,)

    @property
    def __name__(self) -> str:  # as Warp names its type classes (vec3f, quatd)
        return repr(self)

    def __repr__(self) -> str:
        base = {"vec": "vec", "quat": "quat", "transform": "transform", "spatial": "spatial_vector"}
        suffix = "" if self.kind != "vec" else str(self.length)
        return f"{base[self.kind]}{suffix}{_SUFFIX.get(self.dtype.name, self.dtype.name)}"


@dataclass(frozen=True, eq=False)
class MatrixType(_CompositeAttrs):
    """A rows×cols matrix, stored row-major. kind: 'mat' or 'spatial'; equal by shape and dtype
    alone (Warp's `types_equal`: `spatial_matrixf` is a 6x6 float32 matrix)."""

    rows: int
    cols: int
    dtype: ScalarType
    kind: str = "mat"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MatrixType) and (other.rows, other.cols, other.dtype) == \
            (self.rows, self.cols, self.dtype)

    def __hash__(self) -> int:
        return hash(("mat", self.rows, self.cols, self.dtype))

    @property
    def length(self) -> int:  # type: ignore[override]
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

    @property
    def _shape_(self) -> tuple[int, ...]:
        return (self.rows, self.cols)

    @property
    def _wp_row_type_(self) -> VectorType:
        return VectorType(self.cols, self.dtype)

    @property
    def _wp_col_type_(self) -> VectorType:
        return VectorType(self.rows, self.dtype)

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
           "uint64": "ul", "bfloat16": "bf"}
CompositeType = VectorType | MatrixType


def _scalar(dtype: Any) -> ScalarType:
    return TO_SCALAR.get()(dtype if dtype is not None else float32)  # type: ignore[no-any-return]


#: one object per composite type, so the factories return Warp's named aliases themselves
#: (`wp.types.vector(3, wp.float32) is wp.vec3`, as Warp caches its type classes)
_INTERNED: dict[Any, Any] = {}


def _interned(t: Any) -> Any:
    # keyed by kind too: a spatial type equals the plain one but keeps its own name
    return _INTERNED.setdefault((t, getattr(t, "kind", None)), t)


def vector(length: int, dtype: Any = None) -> VectorType:
    """`wp.vector(length=3, dtype=wp.float32)`: a vector type."""
    return _interned(VectorType(length, _scalar(dtype)))  # type: ignore[no-any-return]


def matrix(shape: tuple[int, int], dtype: Any = None) -> MatrixType:
    """`wp.matrix(shape=(3, 3), dtype=wp.float32)`: a matrix type."""
    if len(shape) != 2:
        n = len(shape)
        raise ValueError(f"Matrix shape must have exactly two dimensions, got {n} "
                         f"dimension{'s' if n != 1 else ''} in shape {tuple(shape)}")
    return _interned(MatrixType(shape[0], shape[1], _scalar(dtype)))  # type: ignore[no-any-return]


def quaternion(dtype: Any = None) -> VectorType:
    """`wp.types.quaternion(dtype=wp.float32)`: a quaternion type."""
    return _interned(VectorType(4, _scalar(dtype), "quat"))  # type: ignore[no-any-return]


def transformation(dtype: Any = None) -> VectorType:
    """`wp.types.transformation(dtype=wp.float32)`: a rigid transform type."""
    return _interned(VectorType(7, _scalar(dtype), "transform"))  # type: ignore[no-any-return]


# In a kernel, the factories construct values: they are the builtins of the same names
# (frontend/expr.py follows `__gl_kernel_builtin__`).
quaternion.__gl_kernel_builtin__ = "quaternion"  # type: ignore[attr-defined]
transformation.__gl_kernel_builtin__ = "transformation"  # type: ignore[attr-defined]

# Named aliases, as Warp has them.
vec2, vec3, vec4 = (VectorType(n, float32) for n in (2, 3, 4))
vec2f, vec3f, vec4f = vec2, vec3, vec4
vec2d, vec3d, vec4d = (VectorType(n, float64) for n in (2, 3, 4))
vec2h, vec3h, vec4h = (VectorType(n, float16) for n in (2, 3, 4))
vec2i, vec3i, vec4i = (VectorType(n, int32) for n in (2, 3, 4))
vec2ui, vec3ui, vec4ui = (VectorType(n, uint32) for n in (2, 3, 4))
mat22, mat33, mat44 = (MatrixType(n, n, float32) for n in (2, 3, 4))
mat22f, mat33f, mat44f = mat22, mat33, mat44
mat22d, mat33d, mat44d = (MatrixType(n, n, float64) for n in (2, 3, 4))
mat22h, mat33h, mat44h = (MatrixType(n, n, float16) for n in (2, 3, 4))
quat, quatf, quatd, quath = (VectorType(4, t, "quat") for t in (float32, float32, float64, float16))
transform, transformf, transformd, transformh = (
    VectorType(7, t, "transform") for t in (float32, float32, float64, float16)
)
spatial_vector = spatial_vectorf = VectorType(6, float32, "spatial")
spatial_vectord = VectorType(6, float64, "spatial")
spatial_matrix = spatial_matrixf = MatrixType(6, 6, float32, "spatial")
spatial_matrixd = MatrixType(6, 6, float64, "spatial")
# The remaining aliases Warp 1.19 exports (integer vectors, half spatial types).
vec2b, vec3b, vec4b = (VectorType(n, int8) for n in (2, 3, 4))
vec2s, vec3s, vec4s = (VectorType(n, int16) for n in (2, 3, 4))
vec2l, vec3l, vec4l = (VectorType(n, int64) for n in (2, 3, 4))
vec2ub, vec3ub, vec4ub = (VectorType(n, uint8) for n in (2, 3, 4))
vec2us, vec3us, vec4us = (VectorType(n, uint16) for n in (2, 3, 4))
vec2ul, vec3ul, vec4ul = (VectorType(n, uint64) for n in (2, 3, 4))
spatial_vectorh = VectorType(6, float16, "spatial")
spatial_matrixh = MatrixType(6, 6, float16, "spatial")

for _t in list(globals().values()):
    if isinstance(_t, (VectorType, MatrixType)):
        _interned(_t)
