"""Building and restructuring BSR matrices: triplets, compression, assignment and copies (with
block-shape changes), transposition and diagonals."""

from __future__ import annotations

from typing import Any

import numpy as np

import gradloom as wp

from .matrix import (
    BsrMatrix,
    BsrScaled,
    BsrTripletMap,
    active_blocks,
    block_info,
    block_type_for,
    bsr_set_zero,
    bsr_zeros,
    ensure_capacity,
    scalar_view,
    split_expr,
)
from .topology import Source, assemble, check_topology, launch_gather, matrix_source, segments


def _default_topology(dest: BsrMatrix, topology: str | None) -> str:
    return check_topology(topology, dest, "padded" if dest.row_counts is not None else "compact")


def _triplet_values(dest: BsrMatrix, values: Any, n: int) -> Any:
    if values is None:
        return None
    if not values.is_contiguous:
        raise ValueError("bsr_set_from_triplets: values must be contiguous")
    v = scalar_view(values)
    if tuple(v.shape[1:]) != dest.block_shape or v.shape[0] < n:
        raise ValueError(f"values: expected {n} blocks of shape {dest.block_shape}, got "
                         f"an array of shape {values.shape} and type {values.dtype}")
    return v


def _check_mapping(build_mapping: Any, topology: str, prune: bool) -> None:
    if build_mapping is None or build_mapping is False:
        return
    if build_mapping is not True and not isinstance(build_mapping, BsrTripletMap):
        raise TypeError("build_mapping: expected None, a bool or a BsrTripletMap, got "
                        f"{type(build_mapping).__name__}")
    if topology == "masked":
        raise ValueError("build_mapping requires topology 'compact' or 'padded'")
    if prune:
        raise ValueError("build_mapping requires prune_numerical_zeros=False")


def bsr_set_from_triplets(dest: BsrMatrix, rows: Any, columns: Any, values: Any = None,
                          count: Any = None, prune_numerical_zeros: bool = True,
                          topology: str | None = None, build_mapping: Any = None) -> Any:
    """Fill `dest` from (row, column, block) triplets, summing duplicates; triplets out of range
    (and, with `prune_numerical_zeros`, all-zero blocks) are ignored."""
    if rows.dtype != wp.int32 or columns.dtype != wp.int32:
        raise TypeError("Rows and columns arrays must be of type int32")
    topology = _default_topology(dest, topology)
    _check_mapping(build_mapping, topology, prune_numerical_zeros)
    n = min(rows.shape[0], columns.shape[0])
    if count is not None:
        n = min(n, int(count.numpy()[0]))
    v3 = _triplet_values(dest, values, n)
    r = rows.numpy()[:n].astype(np.int64)
    c = columns.numpy()[:n].astype(np.int64)
    if prune_numerical_zeros and v3 is not None and n:
        nonzero = np.any(v3.numpy()[:n].reshape(n, -1) != 0, axis=1)
        r = np.where(nonzero, r, -1)
    src = Source(r, c, np.arange(n, dtype=np.int64), v3)
    placed = assemble(dest, [src], topology, nnz_hint=rows.shape[0])
    if build_mapping is None or build_mapping is False:
        return None
    mapping = build_mapping if isinstance(build_mapping, BsrTripletMap) else \
        BsrTripletMap(capacity=n, device=dest.device)
    blocks = placed["entry_block"]
    ends, order = segments(blocks, placed["slots"].shape[0])
    mapping._bind(blocks, order, ends)
    mapping._slots = placed["slots"]
    return mapping


def bsr_set_from_mapped_values(dest: BsrMatrix, mapping: BsrTripletMap, values: Any,
                               reduction: str = "gather") -> None:
    """Refill `dest`'s values from new triplet values through a `BsrTripletMap`."""
    mapping.validate()
    if reduction not in ("gather", "atomic"):
        raise ValueError(f"reduction: expected 'gather' or 'atomic', got {reduction!r}")
    if not values.is_contiguous:
        raise ValueError("bsr_set_from_mapped_values: values must be contiguous")
    v3 = _triplet_values(dest, values, mapping.triplet_count)
    nb = mapping._nblocks
    ends, order = mapping._storage[2].numpy(), mapping._storage[1].numpy()
    launch_gather(scalar_view(dest.values), mapping._slots, ends[:nb],
                  order[: mapping.triplet_count], v3, 1.0, False)


def _values_block_type(values: Any) -> Any:
    if wp.types.type_is_matrix(values.dtype) or values.ndim == 1:
        return values.dtype
    return wp.types.matrix(shape=tuple(values.shape[1:]), dtype=values.dtype)


def bsr_from_triplets(rows_of_blocks: int, cols_of_blocks: int, rows: Any, columns: Any,
                      values: Any, prune_numerical_zeros: bool = True) -> BsrMatrix:
    """A new compact matrix from triplets (block type from `values`)."""
    A = bsr_zeros(rows_of_blocks, cols_of_blocks, _values_block_type(values), device=values.device)
    A.values.requires_grad = bool(values.requires_grad)
    bsr_set_from_triplets(A, rows, columns, values, prune_numerical_zeros=prune_numerical_zeros)
    return A


def bsr_compress(src: BsrMatrix, prune_numerical_zeros: bool = True, inplace: bool = False,
                 topology: str | None = None, structure_only: bool = False) -> BsrMatrix:
    """Sort and merge the active blocks of `src` (duplicates summed) in place; returns `src`."""
    topology = check_topology(topology, src)
    if topology == "masked":
        raise ValueError("bsr_compress: topology must be 'compact' or 'padded'")
    s = matrix_source(src, structure_only=structure_only)
    if structure_only:
        s.src = None
    elif prune_numerical_zeros and s.rows.shape[0]:
        vals = s.src.numpy()[s.index].reshape(s.index.shape[0], -1)
        s.rows = np.where(np.any(vals != 0, axis=1), s.rows, -1)
    if s.src is not None:  # the result goes to fresh storage: `src` is read while written
        s.src = wp.clone(s.src)
    if topology == "padded":
        src.row_counts.zero_()
    assemble(src, [s], topology)
    if topology == "compact":
        src.nnz_sync()
    return src


def _block_shape_change(src: BsrMatrix, scale: float, block_shape: tuple[int, int]) -> Source:
    """`src`'s active blocks re-cut into `block_shape` blocks (host arithmetic, not recorded)."""
    sr, sc = src.block_shape
    dr, dc = block_shape
    for s, d in ((sr, dr), (sc, dc)):
        if s % d and d % s:
            raise ValueError(f"Incompatible dest and src block shapes {(dr, dc)} and {(sr, sc)}")
    if src.shape[0] % dr or src.shape[1] % dc:
        raise ValueError(f"The requested block shape {tuple(block_shape)} does not evenly divide "
                         f"the source matrix of total size {src.shape}")
    r, c, idx = active_blocks(src)
    vals = src.scalar_values.numpy()[idx] * scale
    ii, jj = np.meshgrid(np.arange(sr), np.arange(sc), indexing="ij")
    grow = (r[:, None, None] * sr + ii[None]).reshape(-1)
    gcol = (c[:, None, None] * sc + jj[None]).reshape(-1)
    ncol = src.shape[1] // dc
    keys = (grow // dr) * ncol + gcol // dc
    ukeys, inv = np.unique(keys, return_inverse=True)
    out = np.zeros((ukeys.shape[0], dr, dc), dtype=vals.dtype)
    np.add.at(out, (inv.reshape(-1), grow % dr, gcol % dc), vals.reshape(-1))
    arr = wp.array(out, dtype=src.scalar_type, device=src.device)
    return Source(ukeys // ncol, ukeys % ncol, np.arange(ukeys.shape[0]), arr)


def bsr_assign(dest: BsrMatrix, src: Any, structure_only: bool = False,
               topology: str | None = None) -> None:
    """Copy `src` (a matrix or scaled matrix) into `dest`, casting the scalar type and re-cutting
    blocks when `dest`'s differ."""
    mat, scale = split_expr(src)
    topology = check_topology(topology, dest)
    if dest.block_shape == mat.block_shape:
        s = matrix_source(mat, scale, structure_only=structure_only)
    else:
        s = _block_shape_change(mat, scale, dest.block_shape)
        if structure_only:
            s.src = None
    nrow = mat.shape[0] // dest.block_shape[0]
    ncol = mat.shape[1] // dest.block_shape[1]
    if topology == "compact" and not structure_only:
        dest.row_counts = None
    assemble(dest, [s], topology, nrow=nrow, ncol=ncol)
    if structure_only:
        ensure_capacity(dest, dest.nnz)


def bsr_copy(A: Any, scalar_type: Any = None, block_shape: tuple[int, int] | None = None,
             structure_only: bool = False, topology: str = "compact") -> BsrMatrix:
    """A copy of `A` (a matrix or scaled matrix), optionally with another scalar type or block shape."""
    mat, _ = split_expr(A)
    st = mat.scalar_type if scalar_type is None else block_info(scalar_type)[2]
    bs = mat.block_shape if block_shape is None else (int(block_shape[0]), int(block_shape[1]))
    bt = mat.dtype if (st == mat.scalar_type and bs == mat.block_shape) else block_type_for(bs, st)
    if topology not in ("compact", "padded"):
        raise ValueError(f"bsr_copy: topology must be 'compact' or 'padded', got {topology!r}")
    nrow = mat.shape[0] // bs[0] if mat.shape[0] % bs[0] == 0 else mat.nrow
    ncol = mat.shape[1] // bs[1] if mat.shape[1] % bs[1] == 0 else mat.ncol
    dest = bsr_zeros(nrow, ncol, bt, device=mat.device)
    if topology == "padded" and mat.row_counts is not None and bs == mat.block_shape:
        dest.offsets = wp.clone(mat.offsets)
        dest.row_counts = wp.zeros(mat.nrow, dtype=int, device=mat.device)
        ensure_capacity(dest, int(mat.offsets.numpy()[-1]))
    bsr_assign(dest, A, structure_only=structure_only, topology=topology)
    return dest


def bsr_set_transpose(dest: BsrMatrix, src: Any, topology: str | None = None) -> None:
    """Set `dest` to the transpose of `src` (blocks transposed)."""
    mat, scale = split_expr(src)
    want = (mat.block_shape[1], mat.block_shape[0])
    if dest.block_shape != want:
        raise ValueError(f"Destination block shape must be {want}, got {dest.block_shape}")
    topology = check_topology(topology, dest)
    s = matrix_source(mat, scale, trans=True)
    if s.src is not None:
        s.src = _detach_alias(s.src, dest)
    assemble(dest, [s], topology, nrow=mat.ncol, ncol=mat.nrow)
    if topology == "compact":
        dest.nnz_sync()


def _detach_alias(src3d: Any, dest: BsrMatrix) -> Any:
    return wp.clone(src3d) if src3d.ptr == scalar_view(dest.values).ptr and src3d.size else src3d


def bsr_transposed(A: Any) -> BsrMatrix:
    """A new matrix, the transpose of `A`."""
    mat, _ = split_expr(A)
    bt = mat.dtype
    if wp.types.type_is_matrix(mat.dtype):
        bt = wp.types.matrix(shape=(mat.block_shape[1], mat.block_shape[0]), dtype=mat.scalar_type)
    dest = bsr_zeros(mat.ncol, mat.nrow, bt, device=mat.device)
    bsr_set_transpose(dest, A)
    return dest


def _diag_block_type(diag: Any, block_type: Any) -> Any:
    if block_type is not None:
        return block_info(block_type)[0]
    if isinstance(diag, (int, float, np.floating)):
        return wp.float32
    shape = getattr(diag, "_shape_", None)
    if shape is not None and len(shape) == 2:  # a matrix value: its matrix type
        return wp.types.matrix(shape=tuple(shape), dtype=diag._wp_scalar_type_)
    return block_info(type(diag))[0]  # a vector or other value: the block-type error


def bsr_set_diag(A: BsrMatrix, diag: Any, rows_of_blocks: int | None = None,
                 cols_of_blocks: int | None = None) -> None:
    """Make `A` block diagonal: `diag` is an array of blocks, or one block repeated."""
    is_array = hasattr(diag, "numpy") and hasattr(diag, "shape") and hasattr(diag, "ptr")
    if rows_of_blocks is None:
        rows_of_blocks = diag.shape[0] if is_array else A.nrow
    if cols_of_blocks is None:
        cols_of_blocks = rows_of_blocks
    bsr_set_zero(A, rows_of_blocks, cols_of_blocks)
    n = min(A.nrow, A.ncol)
    idx = np.arange(n, dtype=np.int64)
    if is_array:
        assemble(A, [Source(idx, idx, idx, scalar_view(diag))], "compact")
        return
    assemble(A, [Source(idx, idx, idx, None)], "compact")
    if diag is not None:
        block = np.asarray(diag if not hasattr(diag, "_shape_") else np.array(diag), dtype=float)
        A.scalar_values.numpy()[:n] = block.reshape(1, *A.block_shape)


def bsr_diag(diag: Any = None, rows_of_blocks: int | None = None, cols_of_blocks: int | None = None,
             block_type: Any = None, device: Any = None) -> BsrMatrix:
    """A new block-diagonal matrix (see `bsr_set_diag`); zero blocks when `diag` is None."""
    is_array = hasattr(diag, "numpy") and hasattr(diag, "ptr")
    if is_array:
        bt, device = diag.dtype, diag.device
        rows_of_blocks = diag.shape[0] if rows_of_blocks is None else rows_of_blocks
    else:
        if rows_of_blocks is None:
            raise ValueError("bsr_diag: rows_of_blocks is required when diag is not an array")
        bt = _diag_block_type(diag, block_type)
    A = bsr_zeros(rows_of_blocks, cols_of_blocks or rows_of_blocks, bt, device=device)
    if diag is None:
        bsr_set_diag(A, None, rows_of_blocks, cols_of_blocks)
        A.values.zero_()
    else:
        bsr_set_diag(A, diag, rows_of_blocks, cols_of_blocks)
    return A


def _identity_block(A: BsrMatrix) -> Any:
    if A.block_shape[0] != A.block_shape[1]:
        raise ValueError(f"bsr_identity: blocks must be square, got {A.block_shape}")
    return np.eye(A.block_shape[0])


def bsr_set_identity(A: BsrMatrix, rows_of_blocks: int | None = None) -> None:
    """Make `A` the identity."""
    rows = A.nrow if rows_of_blocks is None else rows_of_blocks
    bsr_set_diag(A, _identity_block(A), rows, rows)


def bsr_identity(rows_of_blocks: int, block_type: Any, device: Any = None) -> BsrMatrix:
    """A new identity matrix of `rows_of_blocks` square blocks."""
    A = bsr_zeros(rows_of_blocks, rows_of_blocks, block_type, device=device)
    bsr_set_identity(A)
    return A


def bsr_get_diag(A: Any, out: Any = None) -> Any:
    """The diagonal blocks of `A` (zero where absent), into `out` if given."""
    mat, scale = split_expr(A)
    n = min(mat.nrow, mat.ncol)
    if out is None:
        out = wp.empty(n, dtype=mat.dtype, device=mat.device, requires_grad=mat.requires_grad)
    r, c, idx = active_blocks(mat)
    on = r == c
    block = np.full(r.shape[0], -1, dtype=np.int64)
    block[on] = r[on]
    seg_end, pos = segments(block, n)
    launch_gather(scalar_view(out), np.arange(n), seg_end, idx[pos].astype(np.int32),
                  scalar_view(mat.values), scale, False)
    return out


__all__ = ["BsrScaled", "bsr_assign", "bsr_compress", "bsr_copy", "bsr_diag", "bsr_from_triplets",
           "bsr_get_diag", "bsr_identity", "bsr_set_diag", "bsr_set_from_mapped_values",
           "bsr_set_from_triplets", "bsr_set_identity", "bsr_set_transpose", "bsr_transposed"]
