"""Building a matrix from (row, column, source block) entries: the topology on the host (numpy
sorts), the values by differentiable gather-sum kernels (one launch per source array)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import gradloom as wp

from . import _kernels as K
from .matrix import (
    BSR_STATUS_ROW_CAPACITY_EXCEEDED,
    BsrMatrix,
    active_blocks,
    ensure_capacity,
    row_ranges,
    scalar_view,
)

TOPOLOGIES = ("compact", "masked", "padded")


@dataclass
class Source:
    """Entries (row, col) of the result that sum `alpha * src[index]` (transposed when `trans`)."""

    rows: np.ndarray
    cols: np.ndarray
    index: np.ndarray
    src: Any  # (n, rows, cols) scalar array, or None (structure only)
    alpha: float = 1.0
    trans: bool = False


def check_topology(topology: str | None, dest: BsrMatrix, default: str = "compact") -> str:
    if topology is None:
        return default
    if topology not in TOPOLOGIES:
        raise ValueError(f"topology: expected one of {TOPOLOGIES}, got {topology!r}")
    return topology


def segments(block: np.ndarray, nblocks: int) -> tuple[np.ndarray, np.ndarray]:
    """(end of each block's segment, entry positions sorted by block); block -1 = dropped."""
    keep = np.nonzero(block >= 0)[0]
    order = keep[np.argsort(block[keep], kind="stable")]
    counts = np.bincount(block[keep], minlength=nblocks)
    return np.cumsum(counts).astype(np.int32), order.astype(np.int32)


def launch_gather(dst3d: Any, slots: np.ndarray, seg_end: np.ndarray, order: np.ndarray,
                  src3d: Any, alpha: float, accumulate: bool, trans: bool = False) -> None:
    """dst3d[slots[b]] (+)= alpha * sum of src3d over segment b (a recorded, differentiable launch)."""
    nb = int(slots.shape[0])
    if nb == 0:
        return
    T = dst3d.dtype
    if src3d.dtype != T:  # a cast copy (not differentiable, as in Warp's casting copies)
        src3d = wp.array(src3d.numpy().astype(wp.dtype_to_numpy(T)), dtype=T, device=dst3d.device)
    br, bc = int(dst3d.shape[1]), int(dst3d.shape[2])
    dev = dst3d.device
    wp.launch(K.gather(T, br, bc, trans), dim=nb, device=dev,
              inputs=[wp.array(seg_end, dtype=int, device=dev), wp.array(order, dtype=int, device=dev),
                      src3d, wp.array(slots.astype(np.int32), dtype=int, device=dev), dst3d,
                      T(alpha), int(accumulate)])


def _place_compact(dest: BsrMatrix, rows: np.ndarray, cols: np.ndarray, nnz_hint: int) -> np.ndarray:
    n = rows.shape[0]
    counts = np.bincount(rows, minlength=dest.nrow)[: dest.nrow]
    dest.offsets = wp.array(np.concatenate(([0], np.cumsum(counts))).astype(np.int32), dtype=int,
                            device=dest.device)
    dest.row_counts = None
    ensure_capacity(dest, max(n, nnz_hint))
    dest.columns.numpy()[:n] = cols
    dest.nnz = max(n, nnz_hint)
    return np.arange(n, dtype=np.int64)


def _place_padded(dest: BsrMatrix, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if dest.row_counts is None:  # a compact matrix keeps its row storage as the capacity
        dest.row_counts = wp.zeros(dest.nrow, dtype=int, device=dest.device)
    off = dest.offsets.numpy()[: dest.nrow + 1].astype(np.int64)
    caps = np.diff(off)
    counts = np.bincount(rows, minlength=dest.nrow)[: dest.nrow]
    first = np.cumsum(counts) - counts
    rank = np.arange(rows.shape[0], dtype=np.int64) - first[rows]
    keep = rank < caps[rows]
    if not keep.all():
        dest._status[0] = BSR_STATUS_ROW_CAPACITY_EXCEEDED
    slots = off[rows] + rank
    dest.row_counts.numpy()[:] = np.minimum(counts, caps)
    ensure_capacity(dest, int(off[-1]))
    dest.columns.numpy()[slots[keep]] = cols[keep]
    dest.nnz = max(dest.nnz, int(off[-1]))
    block = np.where(keep, np.cumsum(keep) - 1, -1)
    return slots[keep], block


def _place_masked(dest: BsrMatrix, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dr, dc, didx = active_blocks(dest)
    valid = (dc >= 0) & (dc < dest.ncol)
    dr, dc, didx = dr[valid], dc[valid], didx[valid]
    dkeys = dr * max(dest.ncol, 1) + dc
    order = np.argsort(dkeys, kind="stable")
    skeys = dkeys[order]
    keys = rows * max(dest.ncol, 1) + cols
    pos = np.searchsorted(skeys, keys)
    pos_c = np.minimum(pos, max(skeys.shape[0] - 1, 0))
    hit = (pos < skeys.shape[0]) & (skeys[pos_c] == keys) if skeys.shape[0] else pos < 0
    block = np.where(hit, order[pos_c] if skeys.shape[0] else -1, -1)
    return didx, block


def assemble(dest: BsrMatrix, sources: list[Source], topology: str, nnz_hint: int = 0,
             nrow: int | None = None, ncol: int | None = None) -> dict[str, Any]:
    """Set `dest` to the sum of `sources` with the given topology; returns the placement
    (`slots`: storage index per block, `block_of`: block per source entry, per source)."""
    nrow = dest.nrow if nrow is None else nrow
    ncol = dest.ncol if ncol is None else ncol
    dest.nrow, dest.ncol = nrow, ncol
    rows = np.concatenate([s.rows for s in sources]).astype(np.int64) if sources else np.zeros(0, np.int64)
    cols = np.concatenate([s.cols for s in sources]).astype(np.int64) if sources else np.zeros(0, np.int64)
    valid = (rows >= 0) & (rows < nrow) & (cols >= 0) & (cols < ncol)
    keys = np.where(valid, rows * max(ncol, 1) + cols, -1)
    ukeys, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.reshape(-1)
    if ukeys.shape[0] and ukeys[0] < 0:  # the invalid entries
        ukeys = ukeys[1:]
        inverse = inverse - 1
    urows, ucols = ukeys // max(ncol, 1), ukeys % max(ncol, 1)
    if topology == "compact":
        slots = _place_compact(dest, urows, ucols, nnz_hint)
        ublock = np.arange(urows.shape[0], dtype=np.int64)
    elif topology == "padded":
        slots, ublock = _place_padded(dest, urows, ucols)
    else:
        slots, ublock = _place_masked(dest, urows, ucols)
    entry_block = np.full(inverse.shape[0], -1, dtype=np.int64)
    ok = inverse >= 0
    entry_block[ok] = ublock[inverse[ok]]
    _write_values(dest, sources, slots, entry_block)
    return {"slots": slots, "entry_block": entry_block}


def _write_values(dest: BsrMatrix, sources: list[Source], slots: np.ndarray,
                  entry_block: np.ndarray) -> None:
    if not sources or any(s.src is None for s in sources):
        return
    rg = any(bool(s.src.requires_grad) for s in sources)
    if rg and not dest.values.requires_grad:
        dest.values.requires_grad = True
    if any(_aliases(s.src, dest.values) for s in sources):  # write into fresh storage
        dest.values = wp.zeros(dest.values.shape[0], dtype=dest.dtype, device=dest.device,
                               requires_grad=dest.values.requires_grad)
    dst3d = scalar_view(dest.values)
    start = 0
    for i, s in enumerate(sources):
        n = s.rows.shape[0]
        seg_end, pos = segments(entry_block[start: start + n], slots.shape[0])
        launch_gather(dst3d, slots, seg_end, s.index[pos].astype(np.int32), s.src, s.alpha,
                      accumulate=i > 0, trans=s.trans)
        start += n


def _aliases(a: Any, b: Any) -> bool:
    if a.size == 0 or b.size == 0:
        return False
    a0, b0 = a.ptr, b.ptr
    a1 = a0 + a.size * (a.strides[-1] if a.strides else 1)
    b1 = b0 + b.size * (b.strides[-1] if b.strides else 1)
    return a0 < b1 and b0 < a1


def matrix_source(A: BsrMatrix, alpha: float = 1.0, trans: bool = False,
                  structure_only: bool = False) -> Source:
    """The active blocks of `A` as a source (transposed: at (col, row))."""
    r, c, idx = active_blocks(A)
    keep = (c >= 0) & (c < A.ncol)
    r, c, idx = r[keep], c[keep], idx[keep]
    src = None if structure_only else scalar_view(A.values)
    if trans:
        return Source(c, r, idx, src, alpha, True)
    return Source(r, c, idx, src, alpha, False)


__all__ = ["Source", "assemble", "check_topology", "launch_gather", "matrix_source", "row_ranges",
           "segments"]
