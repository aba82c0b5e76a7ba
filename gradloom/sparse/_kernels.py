"""The sparse kernels (gather-sums of blocks, products), one specialisation per scalar type and
block shape, built on first use; blocks are read as (n, rows, cols) scalar arrays."""

# mypy: ignore-errors
# (kernel source: its annotations are gradloom types, which mypy cannot read)

import functools
from typing import Any

import gradloom as wp


@wp.func
def bsr_block_index(row: int, col: int, bsr_offsets: wp.array(dtype=int),
                    bsr_columns: wp.array(dtype=int)):
    """Storage index of block (row, col) of a compact matrix with sorted rows, or -1 (Warp's)."""
    if row < 0:
        return -1
    lo = bsr_offsets[row]
    hi = bsr_offsets[row + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        c = bsr_columns[mid]
        if c == col:
            return mid
        if c < col:
            lo = mid + 1
        else:
            hi = mid
    return -1


@wp.func
def bsr_row_index(offsets: wp.array(dtype=int), row_count: int, block_index: int):
    """Row holding storage index `block_index` of a compact matrix, or -1 (Warp's)."""
    if block_index < 0 or block_index >= offsets[row_count]:
        return -1
    lo = int(0)
    hi = row_count
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if offsets[mid] <= block_index:
            lo = mid
        else:
            hi = mid
    return lo


@wp.func
def _block_element(src: wp.array3d(dtype=Any), k: int, r: int, c: int):
    """Element (r, c) of source block k."""
    return src[k, r, c]


@wp.func
def _block_element_transposed(src: wp.array3d(dtype=Any), k: int, r: int, c: int):
    """Element (r, c) of source block k transposed (the block's shape is (cols, rows))."""
    return src[k, c, r]


@functools.cache
def gather(T: Any, BR: int, BC: int, trans: bool) -> Any:
    """dst[slot[b]] = alpha * sum of src[order[k]] over b's segment (+ dst when accumulating);
    the source blocks transposed when `trans` (their shape is then (BC, BR))."""
    element = _block_element_transposed if trans else _block_element

    @wp.kernel
    def gather_blocks(seg_end: wp.array(dtype=int), order: wp.array(dtype=int),
                      src: wp.array3d(dtype=T), slot: wp.array(dtype=int),
                      dst: wp.array3d(dtype=T), alpha: T, accumulate: int):
        b = wp.tid()
        beg = int(0)
        if b > 0:
            beg = seg_end[b - 1]
        end = seg_end[b]
        d = slot[b]
        for r in range(BR):
            for c in range(BC):
                acc = T(0.0)
                if end > beg:  # start from the first block: a lone -0.0 stays -0.0
                    acc = element(src, order[beg], r, c)
                for k in range(beg + 1, end):
                    acc += element(src, order[k], r, c)
                if accumulate != 0:
                    dst[d, r, c] = dst[d, r, c] + alpha * acc
                else:
                    dst[d, r, c] = alpha * acc

    return gather_blocks


@functools.cache
def mv(T: Any, BR: int, BC: int) -> Any:
    """y[i] = alpha * sum over row i's blocks of A_b x[col_b] + beta * y[i] (rows in parallel)."""

    @wp.kernel
    def bsr_mv_rows(begin: wp.array(dtype=int), end: wp.array(dtype=int),
                    columns: wp.array(dtype=int), vals: wp.array3d(dtype=T),
                    x: wp.array2d(dtype=T), y: wp.array2d(dtype=T), alpha: T, beta: T):
        i = wp.tid()
        beg = begin[i]
        stop = end[i]
        for r in range(BR):
            acc = T(0.0)
            for b in range(beg, stop):
                col = columns[b]
                for k in range(BC):
                    acc += vals[b, r, k] * x[col, k]
            if beta != T(0.0):
                y[i, r] = alpha * acc + beta * y[i, r]
            else:
                y[i, r] = alpha * acc

    return bsr_mv_rows


@functools.cache
def mv_scalar(T: Any) -> Any:
    """`mv` for scalar blocks on flat arrays (the common CSR case, kept lean)."""

    @wp.kernel
    def csr_mv_rows(begin: wp.array(dtype=int), end: wp.array(dtype=int),
                    columns: wp.array(dtype=int), vals: wp.array(dtype=T),
                    x: wp.array(dtype=T), y: wp.array(dtype=T), alpha: T, beta: T):
        i = wp.tid()
        acc = T(0.0)
        for b in range(begin[i], end[i]):
            acc += vals[b] * x[columns[b]]
        if beta != T(0.0):
            y[i] = alpha * acc + beta * y[i]
        else:
            y[i] = alpha * acc

    return csr_mv_rows


@functools.cache
def mm(T: Any, BR: int, BK: int, BC: int) -> Any:
    """z[slot[b]] (+)= alpha * sum over b's segment of x[pa[k]] @ y[pb[k]]."""

    @wp.kernel
    def bsr_mm_blocks(seg_end: wp.array(dtype=int), pa: wp.array(dtype=int),
                      pb: wp.array(dtype=int), x: wp.array3d(dtype=T), y: wp.array3d(dtype=T),
                      slot: wp.array(dtype=int), z: wp.array3d(dtype=T), alpha: T,
                      accumulate: int):
        b = wp.tid()
        beg = int(0)
        if b > 0:
            beg = seg_end[b - 1]
        end = seg_end[b]
        d = slot[b]
        for r in range(BR):
            for c in range(BC):
                acc = T(0.0)
                for k in range(beg, end):
                    ia = pa[k]
                    ib = pb[k]
                    for j in range(BK):
                        acc += x[ia, r, j] * y[ib, j, c]
                if accumulate != 0:
                    z[d, r, c] = z[d, r, c] + alpha * acc
                else:
                    z[d, r, c] = alpha * acc

    return bsr_mm_blocks


@functools.cache
def scale(T: Any) -> Any:
    """a[i] = alpha * a[i] on a flat scalar array."""

    @wp.kernel
    def scale_flat(a: wp.array(dtype=T), alpha: T):
        i = wp.tid()
        a[i] = alpha * a[i]

    return scale_flat


@wp.kernel
def mm_count(xoff: wp.array(dtype=int), xcol: wp.array(dtype=int), yoff: wp.array(dtype=int),
             ub: wp.array(dtype=int)):
    """Product terms of row i of x @ y (an upper bound of the row's blocks)."""
    i = wp.tid()
    s = int(0)
    for a in range(xoff[i], xoff[i + 1]):
        k = xcol[a]
        s += yoff[k + 1] - yoff[k]
    ub[i] = s


@wp.kernel
def mm_fill(xoff: wp.array(dtype=int), xcol: wp.array(dtype=int), yoff: wp.array(dtype=int),
            ycol: wp.array(dtype=int), start: wp.array(dtype=int), cols: wp.array(dtype=int),
            pa: wp.array(dtype=int), pb: wp.array(dtype=int), nuniq: wp.array(dtype=int)):
    """Row i's product terms (column, x block, y block), sorted by column (insertion sort: rows
    are short, the caller checks), and its number of distinct columns."""
    i = wp.tid()
    beg = start[i]
    p = beg
    for a in range(xoff[i], xoff[i + 1]):
        k = xcol[a]
        for b in range(yoff[k], yoff[k + 1]):
            cols[p] = ycol[b]
            pa[p] = a
            pb[p] = b
            p += 1
    for m in range(beg + 1, p):
        c = cols[m]
        ca = pa[m]
        cb = pb[m]
        j = m - 1
        while j >= beg and cols[j] > c:
            cols[j + 1] = cols[j]
            pa[j + 1] = pa[j]
            pb[j + 1] = pb[j]
            j -= 1
        cols[j + 1] = c
        pa[j + 1] = ca
        pb[j + 1] = cb
    u = int(0)
    for m in range(beg, p):
        if m == beg or cols[m] != cols[m - 1]:
            u += 1
    nuniq[i] = u


@wp.kernel
def mm_emit(start: wp.array(dtype=int), cols: wp.array(dtype=int), zoff: wp.array(dtype=int),
            zcols: wp.array(dtype=int), seg_end: wp.array(dtype=int)):
    """Row i's distinct columns into z, and where each block's terms end."""
    i = wp.tid()
    q = zoff[i] - 1
    for m in range(start[i], start[i + 1]):
        if m == start[i] or cols[m] != cols[m - 1]:
            q += 1
            zcols[q] = cols[m]
        seg_end[q] = m + 1
