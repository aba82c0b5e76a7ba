"""`gradloom.sparse` (Warp's `warp.sparse`): block sparse row matrices, their assembly, products and
sums, on gradloom kernels (loaded on first use of `wp.sparse`)."""

from __future__ import annotations

from . import ops as _ops  # noqa: F401  (fills the operators hook)
from ._kernels import bsr_block_index, bsr_row_index
from .build import (
    bsr_assign,
    bsr_compress,
    bsr_copy,
    bsr_diag,
    bsr_from_triplets,
    bsr_get_diag,
    bsr_identity,
    bsr_set_diag,
    bsr_set_from_mapped_values,
    bsr_set_from_triplets,
    bsr_set_identity,
    bsr_set_transpose,
    bsr_transposed,
)
from .matrix import (
    BSR_STATUS_ROW_CAPACITY_EXCEEDED,
    BSR_STATUS_SUCCESS,
    BsrMatrix,
    BsrTripletMap,
    bsr_matrix_t,
    bsr_set_zero,
    bsr_zeros,
)
from .products import bsr_axpy, bsr_axpy_work_arrays, bsr_mm, bsr_mm_work_arrays, bsr_mv, bsr_scale

__all__ = [
    "BSR_STATUS_ROW_CAPACITY_EXCEEDED", "BSR_STATUS_SUCCESS", "BsrMatrix", "BsrTripletMap",
    "bsr_assign", "bsr_axpy", "bsr_axpy_work_arrays", "bsr_block_index", "bsr_compress", "bsr_copy",
    "bsr_diag", "bsr_from_triplets", "bsr_get_diag", "bsr_identity", "bsr_matrix_t", "bsr_mm",
    "bsr_mm_work_arrays", "bsr_mv", "bsr_row_index", "bsr_scale", "bsr_set_diag",
    "bsr_set_from_mapped_values", "bsr_set_from_triplets", "bsr_set_identity",
    "bsr_set_transpose", "bsr_set_zero", "bsr_transposed", "bsr_zeros",
]
