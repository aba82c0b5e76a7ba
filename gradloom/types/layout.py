"""Memory layout: struct, array, indexed-array and fixed-array types, scalar leaves, the job of a
chunked launch and the HashGrid descriptor's fields (the launch block itself: abi.py)."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

from ..abi import arg_offsets as arg_offsets  # the launch ABI owns the argument layout
from ..abi import array_bytes, array_words
from ..hooks import Hook
from .composite import MatrixType, VectorType
from .scalars import ScalarType, int64, ptr

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

    def __eq__(self, other: object) -> bool:
        """A struct type equals its class (`arr.dtype == MyStruct`, as in Warp)."""
        return other is self or other is self.cls

    def __hash__(self) -> int:
        return id(self)


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
        return array_bytes(self.ndim)

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
        return array_bytes(self.ndim, indexed=True)

    @property
    def alignment(self) -> int:
        return 8

    def __repr__(self) -> str:
        return f"indexedarray(dtype={self.dtype!r}, ndim={self.ndim})"


@dataclass(frozen=True)
class FabricArrayType(IndexedArrayType):
    """The type of a Fabric array argument (`wp.fabricarray`, `wp.indexedfabricarray`): buckets
    of memory addressed by one flat index. Packed in an indexed array's words, read differently:
    data is a table of one uint64 address per element (ndim 2: the address of the element's
    sub-array pointer), shape[0] the element count, strides[0] the table's stride (8), indices[0]
    an int32 index array (null: not indexed); for ndim 2 strides[1] holds the address of a table
    of the sub-arrays' length addresses. There is no gradient (as in Warp)."""

    indexed: bool = False

    def __repr__(self) -> str:
        kind = "indexedfabricarray" if self.indexed else "fabricarray"
        return f"{kind}(dtype={self.dtype!r}, ndim={self.ndim})"


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


class fixedarray:
    """`wp.fixedarray(shape=(2, 3), dtype=int)`: the type of a kernel-local fixed-size array.
    A class (Warp's is one, and programs subclass it); calling it or a subclass gives the
    FixedArrayType."""

    def __new__(cls, shape: Any = None, dtype: Any = None) -> Any:
        if shape is None:  # `wp.fixedarray(dtype=int)`: a shapeless annotation, as Warp's
            return FixedArrayType((), _resolve(float if dtype is None else dtype))
        dims = (shape,) if isinstance(shape, builtins.int) else tuple(shape or ())
        if not dims or any(not isinstance(d, builtins.int) or d <= 0 for d in dims):
            raise TypeError(f"wp.fixedarray() needs a shape of positive ints, got {shape!r}")
        return FixedArrayType(dims, _resolve(float if dtype is None else dtype))


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
        return [(offset + at, ptr if kind == "ptr" else int64)
                for at, kind in array_words(t.ndim, isinstance(t, IndexedArrayType))]
    raise TypeError(f"{t!r} has no memory layout")




#: the type an annotation or `dtype=` names (types/annotations.py fills it)
RESOLVE: Hook[Any] = Hook("type annotations", "gradloom.types.annotations")


def _resolve(obj: Any) -> Any:
    return RESOLVE.get()(obj)


#: a native pool's control memory (its layout: codegen/native_pool.py)
POOL_CONTROL_BYTES = 256


# The HashGrid descriptor a `HashGrid.id` points to (runtime/geometry/hash_grid.py writes it, the
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
