"""`array_sum` and `array_inner` (Warp's `warp.utils` reductions), computed with numpy on the host.

Arguments, results, dtypes and errors follow Warp 1.19. Unlike Warp, both are differentiable:
under an active Tape the result's gradient flows back to the inputs (Warp records nothing), and
an `out` array they create requires gradients when an input does.
Inside a graph capture they are recorded and run when the graph runs (an `out=` array is then
required, as in Warp).
"""

from __future__ import annotations

import functools
import operator
from typing import Any

from ..runtime.array.array import NDArray, array
from ..runtime.array.ops import empty
from ..runtime.array.watch import Watch
from ..runtime.capturing import recording_graph
from ..runtime.recording import record_op
from ..types.query import scalar_of, type_name
from ._common import (
    FLOATS,
    UtilsCaptureError,
    UtilsIndexError,
    UtilsRuntimeError,
    UtilsValueError,
    captured,
    check_array,
    check_same_device,
    flat_index,
    taping,
    write,
)


def _axis(operation: str, axis: Any, ndim: int) -> int:
    axis = operator.index(axis)
    if axis < -ndim or axis >= ndim:
        raise UtilsIndexError(f"{operation}() axis {axis} is out of bounds for an array with "
                              f"{ndim} dimensions")
    return int(axis % ndim)


def _out_shape(shape: tuple[int, ...], axis: int | None) -> tuple[int, ...]:
    if axis is None:
        return (1,)
    return tuple(1 if k == axis else n for k, n in enumerate(shape))


def _check_out(out: array, like: array, dtype: Any, shape: tuple[int, ...]) -> None:
    check_array(out, "out")
    if out.device != like.device:
        raise UtilsRuntimeError("out storage device should match values array")
    if out.dtype != dtype:
        raise UtilsRuntimeError(f"out array should have type {type_name(dtype)}")
    if out.shape != shape:
        raise UtilsRuntimeError(f"out array should have shape {shape}")


def _leading(data: NDArray, a: array, count: int, axis: int | None) -> NDArray:
    """The part of a's storage a reduction reads: the first `count` elements (flattened), or
    the first `count` entries along `axis`."""
    if axis is None:
        return data[:count] if a.ndim == 1 else data.reshape((a.size, *data.shape[a.ndim:]))[:count]
    index = [slice(None)] * data.ndim
    index[axis] = slice(0, count)
    return data[tuple(index)]


def _result(out: array, host: bool, axis: int | None) -> Any:
    if host and axis is None:
        return out.numpy()[0]
    return out


def array_sum(values: array, out: array | None = None, value_count: int | None = None,
              axis: int | None = None) -> Any:
    """Sum of the elements (per component for vectors/matrices), of all of them or along `axis`.
    Without `out` and `axis` the sum is returned on the host; otherwise `out` (created when
    None) holds it, shaped like `values` with the reduced axis of size 1."""
    check_array(values, "values")
    if axis is not None:
        axis = _axis("array_sum", axis, values.ndim)
    count = (values.size if axis is None else values.shape[axis]) if value_count is None \
        else operator.index(value_count)
    shape = _out_shape(values.shape, axis)
    if recording_graph() is not None and out is None and count > 0 and all(shape):
        raise UtilsCaptureError("APIC capture requires array_sum() to receive an explicit out "
                                "array")
    host = out is None
    if out is None:
        out = empty(shape, dtype=values.dtype, device=values.device,
                    requires_grad=values.requires_grad)
    else:
        _check_out(out, values, values.dtype, shape)
    if count <= 0:
        out.zero_()
        return _result(out, host, axis)
    if scalar_of(values.dtype) not in FLOATS:
        raise UtilsRuntimeError(f"Unsupported data type: {type_name(values.dtype)}")
    if captured(functools.partial(array_sum, values, out, count, axis), "wp.utils.array_sum()"):
        return out
    _sum_into(values, out, count, axis)
    return _result(out, host, axis)


def _sum_into(values: array, out: array, count: int, axis: int | None) -> None:
    st = scalar_of(values.dtype)
    assert st is not None
    part = _leading(values.numpy(), values, count, axis)
    total = part.sum(axis=0 if axis is None else axis, keepdims=axis is not None,
                     dtype=st.np_dtype)
    write(out, 0 if axis is None else ..., total)
    if taping() and values.grad is not None and out.grad is not None:
        _record_sum(values, out, count, axis)


def _record_sum(values: array, out: array, count: int, axis: int | None) -> None:
    vg, og = values.grad, out.grad
    assert vg is not None and og is not None

    def backward() -> None:
        g = og.numpy()
        if axis is None:
            vg.numpy()[flat_index(values, count)] += g[0]
        else:
            _leading(vg.numpy(), values, count, axis)[...] += g
        g[...] = 0

    record_op(backward, [values, out])


def array_inner(a: array, b: array, out: array | None = None, count: int | None = None,
                axis: int | None = None) -> Any:
    """Inner product of two arrays of the same shape and dtype: the sum of their elementwise
    products (over vector/matrix components too), of everything or along `axis`."""
    check_array(a, "a")
    check_array(b, "b")
    if a.shape != b.shape:
        raise UtilsValueError(f"array_inner() arguments must have the same shape, got {a.shape} "
                              f"and {b.shape}")
    check_same_device(a, b, message=f"A and b array storage devices do not match ({a.device} "
                                    f"vs {b.device})")
    if a.dtype != b.dtype:
        raise UtilsRuntimeError(f"A and b array data types do not match ({type_name(a.dtype)} vs "
                                f"{type_name(b.dtype)})")
    if axis is not None:
        axis = _axis("array_inner", axis, a.ndim)
    n = (a.size if axis is None else a.shape[axis]) if count is None else operator.index(count)
    shape = _out_shape(a.shape, axis)
    st = scalar_of(a.dtype)
    if recording_graph() is not None and out is None and n > 0 and all(shape):
        raise UtilsCaptureError("APIC capture requires array_inner() to receive an explicit out "
                                "array")
    host = out is None
    if out is None:
        out = empty(shape, dtype=st, device=a.device,
                    requires_grad=a.requires_grad or b.requires_grad)
    else:
        _check_out(out, a, st, shape)
    if n <= 0:
        if host and axis is None:
            return 0.0
        out.zero_()
        return out
    if st not in FLOATS:
        raise UtilsRuntimeError(f"Unsupported data type: {type_name(a.dtype)}")
    if captured(functools.partial(array_inner, a, b, out, n, axis), "wp.utils.array_inner()"):
        return out
    _inner_into(a, b, out, n, axis)
    return _result(out, host, axis)


def _inner_into(a: array, b: array, out: array, n: int, axis: int | None) -> None:
    st = scalar_of(a.dtype)
    assert st is not None
    pa, pb = _leading(a.numpy(), a, n, axis), _leading(b.numpy(), b, n, axis)
    prod = pa * pb
    comp = tuple(range(a.ndim, prod.ndim))  # vector/matrix components
    if axis is None:
        total = prod.sum(dtype=st.np_dtype)
        write(out, 0, total)
    else:
        total = prod.sum(axis=(axis, *comp), keepdims=True, dtype=st.np_dtype)
        write(out, ..., total.reshape(out.shape))
    if taping() and out.grad is not None and (a.grad is not None or b.grad is not None):
        _record_inner(a, b, out, n, axis)


def _record_inner(a: array, b: array, out: array, n: int, axis: int | None) -> None:
    og = out.grad
    assert og is not None
    keep_a, keep_b = Watch(a), Watch(b)  # the values the products were formed from

    def backward() -> None:
        g = og.numpy()
        va = _leading(keep_a.contents(), a, n, axis)
        vb = _leading(keep_b.contents(), b, n, axis)
        extra = va.ndim - a.ndim
        scale = g[0] if axis is None else g.reshape(g.shape + (1,) * extra)
        for mine, src in ((a, vb), (b, va)):
            grad = mine.grad
            if grad is None:
                continue
            if axis is None:
                grad.numpy()[flat_index(mine, n)] += src * scale
            else:
                _leading(grad.numpy(), mine, n, axis)[...] += src * scale
        g[...] = 0

    record_op(backward, [a, b, out])

