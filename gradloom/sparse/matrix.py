"""The block sparse row matrix (`BsrMatrix`), its scaled/transposed expressions and its layout helpers.

A matrix stores `nrow` rows of blocks. Row `r`'s blocks are `columns[k]`, `values[k]` for `k` in
`offsets[r] .. offsets[r+1]` (compact layout, `row_counts is None`) or in
`offsets[r] .. offsets[r] + row_counts[r]` (padded layout: each row owns a fixed capacity, as in
Warp 1.19). `nnz` is the host's upper bound of the active blocks (Warp's: it is exact after
`nnz_sync()`); arrays may be longer than the active part.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import gradloom as wp

from ..hooks import Hook

#: the functions the operators (`A + B`, `A @ x`, ...) stand for, defined above this module
#: (build.py, products.py): sparse/ops.py fills this hook with a lookup by name
OPS: Hook[Callable[[str], Callable[..., Any]]] = Hook("BsrMatrix operators", "gradloom.sparse.ops")


def _op(name: str) -> Callable[..., Any]:
    return OPS.get()(name)


BSR_STATUS_SUCCESS = 0
BSR_STATUS_ROW_CAPACITY_EXCEEDED = 1
_STATUS_MESSAGES = {BSR_STATUS_SUCCESS: "success",
                    BSR_STATUS_ROW_CAPACITY_EXCEEDED: "row capacity exceeded"}


def block_info(block_type: Any) -> tuple[Any, tuple[int, int], Any]:
    """(block type, block shape, scalar type) of a scalar or matrix block type; a clear error else."""
    if block_type is float:
        block_type = wp.float32
    elif block_type is int:
        block_type = wp.int32
    if wp.types.type_is_matrix(block_type):
        shape = tuple(int(s) for s in block_type._shape_)
        return block_type, (shape[0], shape[1]), wp.types.type_scalar_type(block_type)
    if wp.types.type_is_scalar(block_type):
        return block_type, (1, 1), block_type
    raise ValueError("BsrMatrix block type must be either warp matrix or scalar; "
                     f"got {getattr(block_type, '__name__', block_type)!r}")


def block_type_for(shape: tuple[int, int], scalar_type: Any) -> Any:
    """The block type Warp uses for `shape`: the scalar for (1, 1)... unless asked for a matrix."""
    if shape == (1, 1):
        return scalar_type
    return wp.types.matrix(shape=shape, dtype=scalar_type)


def scalar_view(arr: Any, n: int | None = None) -> Any:
    """`arr` (blocks, or scalars shaped (n, br, bc) or (n,)) as a 3-D scalar array sharing memory
    and gradient: the form every sparse kernel reads."""
    if arr.ndim == 1 and wp.types.type_is_matrix(arr.dtype):
        br, bc = (int(s) for s in arr.dtype._shape_)
        v = arr.view(wp.types.type_scalar_type(arr.dtype))
        return v.reshape((arr.shape[0], br, bc))
    if arr.ndim == 1:
        return arr.reshape((arr.shape[0], 1, 1))
    if arr.ndim == 3:
        return arr
    raise ValueError(f"values: expected blocks or an (n, rows, cols) scalar array, got shape {arr.shape}")


class BsrMatrix:
    """Warp's `BsrMatrix`: a block sparse row matrix of scalar or matrix blocks (see module doc)."""

    def __init__(self, nrow: int, ncol: int, block_type: Any, device: Any = None) -> None:
        self.dtype, self.block_shape, self.scalar_type = block_info(block_type)
        self.device = wp.get_device(device)
        self.nrow = int(nrow)
        self.ncol = int(ncol)
        self.nnz = 0
        self.offsets = wp.zeros(self.nrow + 1, dtype=int, device=self.device)
        self.columns = wp.empty(0, dtype=int, device=self.device)
        self.values = wp.empty(0, dtype=self.dtype, device=self.device)
        self.row_counts: Any = None
        self._status = np.zeros(1, dtype=np.int32)

    # ---- shape and type ------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (self.nrow * self.block_shape[0], self.ncol * self.block_shape[1])

    @property
    def block_size(self) -> int:
        return self.block_shape[0] * self.block_shape[1]

    @property
    def scalar_values(self) -> Any:
        """`values` as an (n, rows, cols) scalar array (same memory)."""
        return scalar_view(self.values)

    @property
    def requires_grad(self) -> bool:
        return bool(self.values.requires_grad)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.values.requires_grad = value

    # ---- non-zero count and status -------------------------------------------------------
    def nnz_sync(self) -> int:
        """The exact number of stored blocks (compact) or the total capacity (padded); sets `nnz`."""
        self.nnz = int(self.offsets.numpy()[self.nrow]) if self.nrow >= 0 else 0
        self._nnz_transfer_pending = False
        return self.nnz

    def notify_nnz_changed(self, nnz: int | None = None) -> None:
        """Tell the matrix its topology arrays were changed from outside (grows storage to `nnz`)."""
        if nnz is None:
            nnz = self.nnz_sync()
        self.nnz = int(nnz)
        ensure_capacity(self, self.nnz)

    def copy_nnz_async(self) -> None:
        warnings.warn("BsrMatrix.copy_nnz_async is deprecated: nnz_sync() reads the count directly",
                      DeprecationWarning, stacklevel=2)
        self._nnz_transfer = None
        self._nnz_transfer_pending = True

    def status_sync(self) -> int:
        return int(self._status[0])

    def status_message(self) -> str:
        return _STATUS_MESSAGES.get(self.status_sync(), "unknown status")

    def clear_status(self) -> None:
        self._status[0] = BSR_STATUS_SUCCESS

    def uncompress_rows(self, out: Any = None) -> Any:
        """The row of each stored block (-1 for storage outside the active blocks)."""
        rows = np.full(max(self.nnz, 0), -1, dtype=np.int32)
        r, _, idx = active_blocks(self)
        keep = idx < rows.shape[0]
        rows[idx[keep]] = r[keep]
        if out is None:
            return wp.array(rows, dtype=int, device=self.device)
        out.numpy()[: rows.shape[0]] = rows
        return out

    # ---- operators (Warp's: expressions are evaluated where they are used) --------------
    def transpose(self) -> BsrMatrix:

        return _op("bsr_transposed")(self)

    def __mul__(self, s: Any) -> BsrScaled:
        return BsrScaled(self, s)

    __rmul__ = __mul__

    def __truediv__(self, s: Any) -> BsrScaled:
        return BsrScaled(self, 1.0 / s)

    def __neg__(self) -> BsrScaled:
        return BsrScaled(self, -1.0)

    def __add__(self, y: Any) -> BsrMatrix:

        return _op("bsr_axpy")(y, _op("bsr_copy")(self))

    def __sub__(self, y: Any) -> BsrMatrix:

        return _op("bsr_axpy")(y, _op("bsr_copy")(self), alpha=-1.0)

    def __iadd__(self, y: Any) -> BsrMatrix:

        return _op("bsr_axpy")(y, self)

    def __isub__(self, y: Any) -> BsrMatrix:

        return _op("bsr_axpy")(y, self, alpha=-1.0)

    def __imul__(self, s: Any) -> BsrMatrix:

        return _op("bsr_scale")(self, s)

    def __matmul__(self, y: Any) -> Any:

        if isinstance(y, (BsrMatrix, BsrScaled)):
            return _op("bsr_mm")(self, y)
        return _op("bsr_mv")(self, y)

    def __rmatmul__(self, x: Any) -> Any:

        return _op("bsr_mv")(self, x, transpose=True)


class BsrScaled:
    """`scale * mat` (Warp's scaling expression): evaluated lazily by the function it is passed to."""

    def __init__(self, mat: BsrMatrix, scale: Any) -> None:
        self.mat = mat
        self.scale = scale

    def __getattr__(self, name: str) -> Any:
        if name in ("nrow", "ncol", "nnz", "offsets", "columns", "row_counts", "dtype", "device",
                    "block_shape", "block_size", "scalar_type", "shape", "requires_grad"):
            return getattr(self.mat, name)
        raise AttributeError(name)

    def eval(self) -> BsrMatrix:

        return _op("bsr_copy")(self)

    def transpose(self) -> BsrScaled:
        return BsrScaled(self.mat.transpose(), self.scale)

    def __mul__(self, s: Any) -> BsrScaled:
        return BsrScaled(self.mat, self.scale * s)

    __rmul__ = __mul__

    def __truediv__(self, s: Any) -> BsrScaled:
        return BsrScaled(self.mat, self.scale / s)

    def __neg__(self) -> BsrScaled:
        return BsrScaled(self.mat, -self.scale)

    def __add__(self, y: Any) -> BsrMatrix:
        return self.eval() + y

    def __sub__(self, y: Any) -> BsrMatrix:
        return self.eval() - y

    def __matmul__(self, y: Any) -> Any:

        if isinstance(y, (BsrMatrix, BsrScaled)):
            return _op("bsr_mm")(self, y)
        return _op("bsr_mv")(self, y)

    def __rmatmul__(self, x: Any) -> Any:

        return _op("bsr_mv")(self, x, transpose=True)


def split_expr(x: Any) -> tuple[BsrMatrix, float]:
    """(matrix, scale) of a matrix or a scaling expression."""
    if isinstance(x, BsrScaled):
        return x.mat, float(x.scale)
    if isinstance(x, BsrMatrix):
        return x, 1.0
    raise TypeError(f"expected a BsrMatrix or a scaled BsrMatrix, got {type(x).__name__}")


def bsr_matrix_t(dtype: Any) -> type:
    """Warp's `bsr_matrix_t(block_type)`: the matrix type (here one class for every block type)."""
    block_info(dtype)
    return BsrMatrix


# ---- layout helpers ------------------------------------------------------------------------


def row_ranges(A: BsrMatrix) -> tuple[np.ndarray, np.ndarray]:
    """(begin, count) of each row's active blocks."""
    off = A.offsets.numpy()[: A.nrow + 1].astype(np.int64)
    if A.row_counts is None:
        return off[:-1], np.maximum(np.diff(off), 0)
    return off[:-1], np.asarray(A.row_counts.numpy()[: A.nrow], dtype=np.int64)


def active_blocks(A: BsrMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, storage index) of every active block, rows in order."""
    if A.nrow == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e, e
    begin, count = row_ranges(A)
    total = int(count.sum())
    rows = np.repeat(np.arange(A.nrow, dtype=np.int64), count)
    first = np.cumsum(count) - count
    idx = begin[rows] + (np.arange(total, dtype=np.int64) - first[rows])
    cols = A.columns.numpy()[idx].astype(np.int64) if total else idx
    return rows, cols, idx


def ensure_capacity(A: BsrMatrix, n: int, requires_grad: bool | None = None) -> None:
    """Grow `columns`/`values` to hold `n` blocks (kept when large enough, as Warp does)."""
    rg = A.values.requires_grad if requires_grad is None else requires_grad
    if A.columns.shape[0] < n:
        A.columns = wp.empty(n, dtype=int, device=A.device)
    if A.values.shape[0] < n or (rg and not A.values.requires_grad):
        A.values = wp.zeros(max(n, A.values.shape[0]), dtype=A.dtype, device=A.device,
                            requires_grad=rg)


def bsr_zeros(rows_of_blocks: int, cols_of_blocks: int, block_type: Any, device: Any = None, *,
              topology: str | None = None, row_capacity: Any = None,
              nnz_capacity: int | None = None) -> BsrMatrix:
    """An empty matrix (compact), or a padded one with `row_capacity` blocks per row."""
    A = BsrMatrix(rows_of_blocks, cols_of_blocks, block_type, device)
    bsr_set_zero(A, topology=topology or ("padded" if row_capacity is not None else "compact"),
                 row_capacity=row_capacity, nnz_capacity=nnz_capacity)
    return A


def bsr_set_zero(bsr: BsrMatrix, rows_of_blocks: int | None = None,
                 cols_of_blocks: int | None = None, *, topology: str = "compact",
                 row_capacity: Any = None, nnz_capacity: int | None = None) -> None:
    """Make `bsr` empty (optionally resized); padded: keep a fixed capacity per row."""
    if rows_of_blocks is not None:
        bsr.nrow = int(rows_of_blocks)
    if cols_of_blocks is not None:
        bsr.ncol = int(cols_of_blocks)
    if topology not in ("compact", "padded", "masked"):
        raise ValueError(f"topology: expected 'compact', 'padded' or 'masked', got {topology!r}")
    bsr.clear_status()
    if topology == "masked":  # keep the topology, zero the values
        bsr.values.zero_()
        return
    if topology == "padded" or row_capacity is not None:
        if row_capacity is None:
            caps = np.diff(bsr.offsets.numpy()[: bsr.nrow + 1])  # the current row storage
        elif isinstance(row_capacity, (int, np.integer)):
            caps = np.full(bsr.nrow, int(row_capacity), dtype=np.int64)
        else:
            caps = np.asarray(row_capacity.numpy(), dtype=np.int64)
        off = np.concatenate(([0], np.cumsum(caps))).astype(np.int32)
        bsr.offsets = wp.array(off, dtype=int, device=bsr.device)
        bsr.row_counts = wp.zeros(bsr.nrow, dtype=int, device=bsr.device)
        bsr.nnz = max(int(off[-1]), int(nnz_capacity or 0))
        ensure_capacity(bsr, bsr.nnz)
        bsr.columns.numpy()[:] = -1
        return
    bsr.row_counts = None
    if bsr.offsets.shape[0] != bsr.nrow + 1:
        bsr.offsets = wp.zeros(bsr.nrow + 1, dtype=int, device=bsr.device)
    else:
        bsr.offsets.zero_()
    ensure_capacity(bsr, int(nnz_capacity or 0))
    bsr.nnz = 0


class BsrTripletMap:
    """Warp's `BsrTripletMap`: which block each triplet of a `bsr_set_from_triplets` call went to,
    so that new values for the same triplets can be summed without rebuilding the topology."""

    def __init__(self, capacity: int = 0, device: Any = None) -> None:
        self.device = wp.get_device(device)
        self.capacity = int(capacity)
        self.triplet_count = 0
        self._built = False
        self._nblocks = 0
        self._slots = np.zeros(0, dtype=np.int64)
        self._allocate_storage(self.capacity)

    def _allocate_storage(self, n: int) -> None:
        self._storage = [wp.zeros(n, dtype=int, device=self.device) for _ in range(3)]
        self._view(n if not self._built else self.triplet_count)

    def _view(self, n: int) -> None:
        """The map's arrays: the first `n` entries of the storage (same memory)."""
        blocks, indices, ends = self._storage
        self._triplet_blocks, self._triplet_indices, self._block_ends = blocks[:n], indices[:n], ends[:n]

    def _bind(self, blocks: np.ndarray, order: np.ndarray, ends: np.ndarray) -> None:
        """Store a mapping (grows the storage when too small; reuses it otherwise)."""
        n = blocks.shape[0]
        if n > self.capacity:
            self.capacity = n
            self._allocate_storage(n)
        sb, si, se = (a.numpy() for a in self._storage)
        sb[:n] = blocks
        si[: order.shape[0]] = order
        se[: ends.shape[0]] = ends
        self._nblocks = ends.shape[0]
        self.triplet_count = n
        self._built = True
        self._view(n)

    def validate(self) -> None:
        if not self._built:
            raise ValueError("BsrTripletMap has not been built (pass it to bsr_set_from_triplets "
                             "as build_mapping first)")
