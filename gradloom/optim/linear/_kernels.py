"""The vector kernels of the Krylov solvers (flat scalar arrays), one specialisation per scalar type."""

# mypy: ignore-errors
# (kernel source: its annotations are gradloom types, which mypy cannot read)

import functools
from typing import Any

import gradloom as wp

#: elements per thread of a dot product: partial sums stay in float64, the host adds the partials
DOT_CHUNK = 8192


@functools.cache
def dot(T: Any) -> Any:
    """out[t] = sum of a[i] * b[i] over chunk t (in float64)."""

    @wp.kernel
    def dot_chunks(a: wp.array(dtype=T), b: wp.array(dtype=T), n: int, chunk: int,
                   out: wp.array(dtype=wp.float64)):
        t = wp.tid()
        beg = t * chunk
        end = wp.min(beg + chunk, n)
        acc = wp.float64(0.0)
        for i in range(beg, end):
            acc += wp.float64(a[i]) * wp.float64(b[i])
        out[t] = acc

    return dot_chunks


@functools.cache
def axpby(T: Any) -> Any:
    """out = a * x + b * y."""

    @wp.kernel
    def axpby_k(x: wp.array(dtype=T), y: wp.array(dtype=T), out: wp.array(dtype=T), a: T, b: T):
        i = wp.tid()
        out[i] = a * x[i] + b * y[i]

    return axpby_k


@functools.cache
def update_xr(T: Any) -> Any:
    """x += alpha * p; r -= alpha * q (the CG/CR step, fused)."""

    @wp.kernel
    def update_xr_k(x: wp.array(dtype=T), r: wp.array(dtype=T), p: wp.array(dtype=T),
                    q: wp.array(dtype=T), alpha: T):
        i = wp.tid()
        x[i] = x[i] + alpha * p[i]
        r[i] = r[i] - alpha * q[i]

    return update_xr_k


@functools.cache
def diag_mv(T: Any) -> Any:
    """z = alpha * d * x + beta * y (a diagonal operator)."""

    @wp.kernel
    def diag_mv_k(d: wp.array(dtype=T), x: wp.array(dtype=T), y: wp.array(dtype=T),
                  z: wp.array(dtype=T), alpha: T, beta: T):
        i = wp.tid()
        v = alpha * d[i] * x[i]
        if beta != T(0.0):
            v += beta * y[i]
        z[i] = v

    return diag_mv_k


@functools.cache
def dense_mv(T: Any) -> Any:
    """z = alpha * A x + beta * y for a dense 2-D A (rows in parallel)."""

    @wp.kernel
    def dense_mv_k(A: wp.array2d(dtype=T), x: wp.array(dtype=T), y: wp.array(dtype=T),
                   z: wp.array(dtype=T), alpha: T, beta: T):
        i = wp.tid()
        acc = T(0.0)
        for j in range(A.shape[1]):
            acc += A[i, j] * x[j]
        v = alpha * acc
        if beta != T(0.0):
            v += beta * y[i]
        z[i] = v

    return dense_mv_k


@functools.cache
def inverse_diag(T: Any, absolute: bool) -> Any:
    """d[i] = 1 / a[i] (1 where a[i] is 0), of |a[i]| when `absolute`."""

    @wp.kernel
    def inverse_diag_k(a: wp.array(dtype=T), d: wp.array(dtype=T)):
        i = wp.tid()
        v = a[i]
        if absolute:
            v = wp.abs(v)
        if v == T(0.0):
            d[i] = T(1.0)
        else:
            d[i] = T(1.0) / v

    return inverse_diag_k


@functools.cache
def csr_mv(S: Any, T: Any) -> Any:
    """z = alpha * G x + beta * y for a scalar CSR G stored in S, accumulated in T; `alpha` 0
    leaves x unread and `beta` 0 leaves y unread (NaNs there stay out)."""

    @wp.kernel
    def csr_mv_k(offsets: wp.array(dtype=int), columns: wp.array(dtype=int),
                 values: wp.array(dtype=S), x: wp.array(dtype=T), y: wp.array(dtype=T),
                 z: wp.array(dtype=T), alpha: T, beta: T):
        i = wp.tid()
        v = T(0.0)
        if alpha != T(0.0):
            acc = T(0.0)
            for k in range(offsets[i], offsets[i + 1]):
                acc += T(values[k]) * x[columns[k]]
            v = alpha * acc
        if beta != T(0.0):
            v += beta * y[i]
        z[i] = v

    return csr_mv_k
