"""Products and sums of BSR matrices: `bsr_mv`, `bsr_mm` (host topology, parallel numeric kernel,
reusable through `bsr_mm_work_arrays`), `bsr_axpy` and `bsr_scale`."""

from __future__ import annotations

from typing import Any

import numpy as np

import gradloom as wp

from . import _kernels as K
from .build import bsr_transposed
from .matrix import BsrMatrix, active_blocks, bsr_zeros, row_ranges, scalar_view, split_expr
from .topology import Source, assemble, check_topology, launch_gather, matrix_source, segments


def _vec_view(v: Any, n: int, width: int, scalar_type: Any, name: str) -> Any:
    """`v` (scalars, or vectors) as an (n, width) scalar array sharing memory and gradient."""
    try:
        st = wp.types.type_scalar_type(v.dtype)
        if st != scalar_type:
            raise ValueError(f"scalar type {st.__name__}, expected {scalar_type.__name__}")
        flat = v.view(st) if wp.types.type_is_vector(v.dtype) else v
        if flat.size != n * width:
            raise ValueError(f"{flat.size} scalars, expected {n * width}")
        if not v.is_contiguous:
            raise ValueError("not contiguous")
        return flat.reshape((n, width))
    except ValueError as err:
        raise ValueError(f"Incompatible '{name}' vector for bsr_mv ({err})") from err


def _row_bounds(A: BsrMatrix) -> tuple[Any, Any]:
    if A.row_counts is None:
        return A.offsets[: A.nrow], A.offsets[1: A.nrow + 1]
    begin, count = row_ranges(A)
    return (wp.array(begin.astype(np.int32), dtype=int, device=A.device),
            wp.array((begin + count).astype(np.int32), dtype=int, device=A.device))


def bsr_mv(A: Any, x: Any, y: Any = None, alpha: float = 1.0, beta: float = 0.0,
           transpose: bool = False, work_buffer: Any = None, tile_size: int = 0) -> Any:
    """y = alpha * A x + beta * y (A transposed when `transpose`); returns `y` (allocated when None).

    Recorded on an active Tape: gradients reach `x`, `A.values` and `y`."""
    mat, scale = split_expr(A)
    if transpose:
        mat = bsr_transposed(mat)
    br, bc = mat.block_shape
    st = mat.scalar_type
    xv = _vec_view(x, mat.ncol, bc, st, "x")
    if y is None:
        ytype = st if br == 1 else wp.types.vector(length=br, dtype=st)
        y = wp.zeros(mat.nrow, dtype=ytype, device=mat.device,
                     requires_grad=bool(x.requires_grad or mat.requires_grad))
        beta = 0.0
    yv = _vec_view(y, mat.nrow, br, st, "y")
    if xv.size and yv.size and xv.ptr == yv.ptr:  # y aliases x: read a copy of x
        xv = wp.clone(xv)
    if mat.nrow == 0:
        return y
    begin, end = _row_bounds(mat)
    args = [begin, end, mat.columns]
    a = st(alpha * scale)
    b = st(beta)
    if br == 1 and bc == 1:
        vals = scalar_view(mat.values)
        vals = vals.reshape((vals.shape[0],))
        wp.launch(K.mv_scalar(st), dim=mat.nrow, device=mat.device,
                  inputs=[*args, vals, xv.reshape((mat.ncol,)), yv.reshape((mat.nrow,)), a, b])
    else:
        wp.launch(K.mv(st, br, bc), dim=mat.nrow, device=mat.device,
                  inputs=[*args, scalar_view(mat.values), xv, yv, a, b])
    return y


class bsr_axpy_work_arrays:
    """Warp's work arrays for `bsr_axpy` (accepted; the host topology needs none)."""


class bsr_mm_work_arrays:
    """What `bsr_mm` keeps to redo the same product's numbers with `reuse_topology=True`."""

    def __init__(self) -> None:
        self.plan: dict[str, Any] | None = None


def bsr_axpy(x: Any, y: BsrMatrix | None = None, alpha: float = 1.0, beta: float = 1.0,
             work_arrays: Any = None, topology: str | None = None) -> BsrMatrix:
    """y = alpha * x + beta * y (the union of both topologies unless masked); returns y."""
    xm, xs = split_expr(x)
    if y is None:
        y = bsr_zeros(xm.nrow, xm.ncol, xm.dtype, device=xm.device)
        beta = 0.0
    if (xm.nrow, xm.ncol) != (y.nrow, y.ncol):
        raise ValueError("Matrices must have the same number of rows and columns, got "
                         f"{xm.shape} and {y.shape}")
    if xm.block_shape != y.block_shape:
        raise ValueError(f"Matrices must have the same block shape, got {xm.block_shape} and "
                         f"{y.block_shape}")
    topology = check_topology(topology, y)
    sources = [matrix_source(y, beta), matrix_source(xm, alpha * xs)]
    assemble(y, sources, topology)
    return y


def bsr_scale(x: Any, alpha: float) -> BsrMatrix:
    """x = alpha * x, in place; returns the matrix."""
    mat, s = split_expr(x)
    flat = scalar_view(mat.values)
    flat = flat.reshape((flat.size,))
    if flat.size:
        wp.launch(K.scale(mat.scalar_type), dim=flat.size, device=mat.device,
                  inputs=[flat, mat.scalar_type(alpha * s)])
    return mat


def _product_entries(x: BsrMatrix, y: BsrMatrix) -> tuple[np.ndarray, ...]:
    """(row, col, x block, y block) of every product term x[r, k] y[k, c]."""
    xr, xc, xi = active_blocks(x)
    yr, yc, yi = active_blocks(y)
    keep = (xc >= 0) & (xc < x.ncol)
    xr, xc, xi = xr[keep], xc[keep], xi[keep]
    ycount = np.bincount(yr, minlength=y.nrow)[: y.nrow]
    yfirst = np.cumsum(ycount) - ycount
    cnt = ycount[xc]
    total = int(cnt.sum())
    start = np.cumsum(cnt) - cnt
    pos = np.repeat(yfirst[xc] - start, cnt) + np.arange(total, dtype=np.int64)
    return np.repeat(xr, cnt), yc[pos], np.repeat(xi, cnt), yi[pos]


def _check_mm(x: BsrMatrix, y: BsrMatrix, z: BsrMatrix | None) -> None:
    if x.block_shape[1] != y.block_shape[0] or (
            z is not None and z.block_shape != (x.block_shape[0], y.block_shape[1])):
        raise ValueError(f"Incompatible block sizes for matrix multiplication: {x.block_shape}, "
                         f"{y.block_shape}" + ("" if z is None else f" into {z.block_shape}"))
    if x.ncol != y.nrow or (z is not None and (z.nrow, z.ncol) != (x.nrow, y.ncol)):
        raise ValueError("Incompatible number of rows/columns for matrix multiplication, got "
                         f"{x.shape} and {y.shape}")


def _limit_new_nnz(pr: np.ndarray, pc: np.ndarray, ncol: int, max_new_nnz: int) -> np.ndarray:
    """Drop the product terms of blocks past the first `max_new_nnz` (Warp's bound), warning."""
    keys = pr * max(ncol, 1) + pc
    ukeys = np.unique(keys)
    if ukeys.shape[0] <= max_new_nnz:
        return pr
    print(f"Warning: bsr_mm: the product has {ukeys.shape[0]} blocks; max_new_nnz="
          f"{max_new_nnz} exceeded, blocks past the bound are dropped")
    return np.where(keys <= ukeys[max_new_nnz - 1] if max_new_nnz else False, pr, -1)


#: longest row of product terms the parallel symbolic phase sorts in place (insertion sort)
_KERNEL_ROW_TERMS = 512


def _mm_plan_parallel(x: BsrMatrix, y: BsrMatrix, z: BsrMatrix) -> dict[str, Any] | None:
    """The compact product topology of two compact matrices, built by parallel kernels (count,
    fill and sort each row, emit); None when a row is too long for it (the host path then)."""
    dev = z.device
    xoff, yoff = x.offsets[: x.nrow + 1], y.offsets[: y.nrow + 1]
    ub = wp.empty(x.nrow, dtype=int, device=dev)
    wp.launch(K.mm_count, dim=x.nrow, device=dev, inputs=[xoff, x.columns, yoff, ub])
    ubn = ub.numpy()
    if ubn.size and int(ubn.max()) > _KERNEL_ROW_TERMS:
        return None
    start_np = np.zeros(x.nrow + 1, dtype=np.int64)
    np.cumsum(ubn, out=start_np[1:])
    total = int(start_np[-1])
    if total >= 2**31:
        return None
    start = wp.array(start_np.astype(np.int32), dtype=int, device=dev)
    cols, pa, pb = (wp.empty(max(total, 1), dtype=int, device=dev) for _ in range(3))
    nuniq = wp.empty(x.nrow, dtype=int, device=dev)
    wp.launch(K.mm_fill, dim=x.nrow, device=dev,
              inputs=[xoff, x.columns, yoff, y.columns, start, cols, pa, pb, nuniq])
    zoff = np.zeros(x.nrow + 1, dtype=np.int32)
    np.cumsum(nuniq.numpy(), out=zoff[1:])
    nblocks = int(zoff[-1])
    z.row_counts = None
    z.offsets = wp.array(zoff, dtype=int, device=dev)
    if z.columns.shape[0] < nblocks:
        z.columns = wp.empty(nblocks, dtype=int, device=dev)
    z.nnz = nblocks
    seg_end = wp.empty(max(nblocks, 1), dtype=int, device=dev)
    wp.launch(K.mm_emit, dim=x.nrow, device=dev, inputs=[start, cols, z.offsets, z.columns, seg_end])
    return {"slots": np.arange(nblocks, dtype=np.int64), "seg_end": seg_end, "pa": pa, "pb": pb}


def _mm_plan(x: BsrMatrix, y: BsrMatrix, z: BsrMatrix, beta: float, topology: str,
             max_new_nnz: int | None) -> dict[str, Any]:
    if topology == "compact" and beta == 0.0 and max_new_nnz is None and x.nrow and \
            x.row_counts is None and y.row_counts is None:
        plan = _mm_plan_parallel(x, y, z)
        if plan is not None:
            plan["topology"] = (wp.clone(z.offsets), None, wp.clone(z.columns), z.nnz)
            return plan
    pr, pc, pa, pb = _product_entries(x, y)
    if max_new_nnz is not None and topology == "compact":
        pr = _limit_new_nnz(pr, pc, z.ncol, int(max_new_nnz))
    zsrc = matrix_source(z, beta, structure_only=True)
    sources = [Source(pr, pc, np.zeros(0), None), zsrc] if beta != 0.0 else \
        [Source(pr, pc, np.zeros(0), None)]
    placed = assemble(z, sources, topology)
    slots = placed["slots"]
    nprod = pr.shape[0]
    seg_end, order = segments(placed["entry_block"][:nprod], slots.shape[0])
    plan = {"slots": slots, "seg_end": seg_end, "pa": pa[order].astype(np.int32),
            "pb": pb[order].astype(np.int32)}
    if beta != 0.0:
        zseg, zorder = segments(placed["entry_block"][nprod:], slots.shape[0])
        plan.update(zseg=zseg, zidx=zsrc.index[zorder].astype(np.int32))
    plan["topology"] = (wp.clone(z.offsets), None if z.row_counts is None else wp.clone(z.row_counts),
                        wp.clone(z.columns), z.nnz)
    return plan


def _mm_numbers(xv: Any, yv: Any, z: BsrMatrix, old_values: Any, alpha: float, beta: float,
                plan: dict[str, Any]) -> None:
    """z's values from the operands' value arrays (taken before z's topology was rewritten:
    z may be x or y)."""
    slots = plan["slots"]
    rg = bool(xv.requires_grad or yv.requires_grad or (beta != 0.0 and old_values.requires_grad))
    z.values = wp.zeros(max(z.values.shape[0], z.nnz, 1), dtype=z.dtype, device=z.device,
                        requires_grad=rg or z.values.requires_grad)
    if slots.shape[0] == 0:
        return
    z3 = scalar_view(z.values)
    if beta != 0.0:
        launch_gather(z3, slots, plan["zseg"], plan["zidx"], scalar_view(old_values), beta, False)
    st = z.scalar_type
    dev = z.device
    x3, y3 = scalar_view(xv), scalar_view(yv)
    wp.launch(K.mm(st, x3.shape[1], x3.shape[2], y3.shape[2]), dim=slots.shape[0],
              device=dev, inputs=[_device_ints(plan["seg_end"], dev), _device_ints(plan["pa"], dev),
                                  _device_ints(plan["pb"], dev), x3, y3,
                                  wp.array(slots.astype(np.int32), dtype=int, device=dev), z3,
                                  st(alpha), int(beta != 0.0)])


def _device_ints(a: Any, device: Any) -> Any:
    return a if isinstance(a, wp.array) else wp.array(a, dtype=int, device=device)


def bsr_mm(x: Any, y: Any, z: BsrMatrix | None = None, alpha: float = 1.0, beta: float = 0.0,
           work_arrays: bsr_mm_work_arrays | None = None, reuse_topology: bool = False,
           tile_size: int = 0, max_new_nnz: int | None = None,
           topology: str | None = None) -> BsrMatrix:
    """z = alpha * x @ y + beta * z; returns z (allocated when None)."""
    xm, xs = split_expr(x)
    ym, ys = split_expr(y)
    _check_mm(xm, ym, z)
    if z is None:
        bt = xm.scalar_type if (xm.block_shape[0], ym.block_shape[1]) == (1, 1) and \
            not wp.types.type_is_matrix(xm.dtype) else \
            wp.types.matrix(shape=(xm.block_shape[0], ym.block_shape[1]), dtype=xm.scalar_type)
        z = bsr_zeros(xm.nrow, ym.ncol, bt, device=xm.device)
        beta = 0.0
    topology = check_topology(topology, z)
    old_values, xv, yv = z.values, xm.values, ym.values
    if reuse_topology:
        if work_arrays is None or work_arrays.plan is None:
            raise ValueError("bsr_mm: reuse_topology=True needs work_arrays from an earlier call")
        plan = work_arrays.plan
        off, counts, cols, nnz = plan["topology"]
        z.offsets, z.row_counts, z.columns, z.nnz = off, counts, cols, nnz
    else:
        plan = _mm_plan(xm, ym, z, beta, topology, max_new_nnz)
        if work_arrays is not None:
            work_arrays.plan = plan
    _mm_numbers(xv, yv, z, old_values, alpha * xs * ys, beta, plan)
    return z
