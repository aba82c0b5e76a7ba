"""Linear operators for the Krylov solvers (Warp's `LinearOperator`, `aslinearoperator`) and the
vector helpers the solvers share (flat views, dot products, axpby)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradloom as wp

from . import _kernels as K


class LinearOperator:
    """An operator known by its product `matvec(x, y, z, alpha, beta)`: z = alpha A x + beta y."""

    def __init__(self, shape: tuple[int, ...], dtype: Any, device: Any, matvec: Callable[..., Any],
                 batch_offsets: Any = None, max_batch_length: int | None = None) -> None:
        if max_batch_length is not None and batch_offsets is None:
            raise ValueError("max_batch_length requires batch_offsets")
        self._shape = tuple(shape)
        self._dtype = dtype
        self._device = device
        self._matvec = matvec
        self._batch_offsets = batch_offsets
        self._max_batch_length = max_batch_length

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def scalar_type(self) -> Any:
        return wp.types.type_scalar_type(self._dtype)

    @property
    def device(self) -> Any:
        return self._device

    @property
    def matvec(self) -> Callable[..., Any]:
        return self._matvec

    @property
    def batch_offsets(self) -> Any:
        return self._batch_offsets

    @property
    def batch_count(self) -> int:
        return 1 if self._batch_offsets is None else int(self._batch_offsets.shape[0]) - 1

    @property
    def max_batch_length(self) -> int | None:
        return self._max_batch_length


def flat(v: Any) -> Any:
    """`v` (scalars or vectors) as a flat scalar array sharing memory."""
    if wp.types.type_is_vector(v.dtype):
        v = v.view(wp.types.type_scalar_type(v.dtype))
    return v.reshape((v.size,))


def dot(a: Any, b: Any) -> float:
    """a . b in float64 (chunks in parallel, partial sums added on the host)."""
    fa, fb = flat(a), flat(b)
    n = fa.size
    if n == 0:
        return 0.0
    chunks = (n + K.DOT_CHUNK - 1) // K.DOT_CHUNK
    out = wp.empty(chunks, dtype=wp.float64, device=fa.device)
    wp.launch(K.dot(fa.dtype), dim=chunks, device=fa.device,
              inputs=[fa, fb, n, K.DOT_CHUNK, out])
    return float(out.numpy().sum())


def axpby(a: float, x: Any, b: float, y: Any, out: Any) -> None:
    """out = a x + b y."""
    fo = flat(out)
    st = fo.dtype
    wp.launch(K.axpby(st), dim=fo.size, device=fo.device,
              inputs=[flat(x), flat(y), fo, st(a), st(b)])


def _copy_if_needed(y: Any, z: Any, beta: float) -> None:
    if beta != 0.0 and y is not None and y.ptr != z.ptr:
        wp.copy(z, y)


def _bsr_operator(A: Any, batch_offsets: Any, max_batch_length: int | None) -> LinearOperator:
    from ...sparse import bsr_mv

    def matvec(x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        _copy_if_needed(y, z, beta)
        bsr_mv(A, x=x, y=z, alpha=alpha, beta=beta)

    return LinearOperator(A.shape, A.dtype, A.device, matvec, batch_offsets, max_batch_length)


def _array_operator(A: Any, batch_offsets: Any, max_batch_length: int | None) -> LinearOperator:
    st = wp.types.type_scalar_type(A.dtype)
    if A.ndim == 2:
        def matvec(x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
            fz = flat(z)
            wp.launch(K.dense_mv(st), dim=A.shape[0], device=A.device,
                      inputs=[A, flat(x), flat(y if y is not None else z), fz, st(alpha), st(beta)])

        return LinearOperator(tuple(A.shape), A.dtype, A.device, matvec, batch_offsets,
                              max_batch_length)
    d = flat(A)

    def diag(x: Any, y: Any, z: Any, alpha: float, beta: float) -> None:
        fz = flat(z)
        wp.launch(K.diag_mv(st), dim=fz.size, device=A.device,
                  inputs=[d, flat(x), flat(y if y is not None else z), fz, st(alpha), st(beta)])

    return LinearOperator((d.size, d.size), A.dtype, A.device, diag, batch_offsets, max_batch_length)


def aslinearoperator(A: Any, batch_offsets: Any = None,
                     max_batch_length: int | None = None) -> LinearOperator:
    """`A` (a BsrMatrix, a dense 2-D array, a 1-D array meaning a diagonal, or a LinearOperator)
    as a LinearOperator."""
    from ...sparse.matrix import BsrMatrix, BsrScaled

    if max_batch_length is not None and batch_offsets is None:
        raise ValueError("max_batch_length requires batch_offsets")
    if A is None:
        return None  # type: ignore[return-value]
    if isinstance(A, LinearOperator):
        if batch_offsets is None:
            return A
        return LinearOperator(A.shape, A.dtype, A.device, A.matvec, batch_offsets, max_batch_length)
    if isinstance(A, (BsrMatrix, BsrScaled)):
        return _bsr_operator(A, batch_offsets, max_batch_length)
    if isinstance(A, wp.array):
        return _array_operator(A, batch_offsets, max_batch_length)
    raise TypeError(f"aslinearoperator: A must be a BsrMatrix, an array or a LinearOperator, "
                    f"got {type(A).__name__}")
