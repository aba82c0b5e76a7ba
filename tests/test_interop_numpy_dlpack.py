"""numpy and DLPack interop: zero-copy both ways, numpy arrays passed straight to `wp.launch`.

Zero-copy claims are checked by writing on one side and reading on the other. Expected values
come from numpy computations, never from an earlier gradloom run.
"""

from __future__ import annotations

import numpy as np
import pytest
from wpcompat import BACKEND

if BACKEND != "gradloom":
    pytest.skip("gradloom-specific interop tests", allow_module_level=True)

import gradloom as wp
from gradloom.errors import GradloomError, LaunchError

F64 = wp.array(dtype=wp.float64)


@wp.kernel
def axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def scale_vec(v: wp.array(dtype=wp.vec3), s: float):
    i = wp.tid()
    v[i] = v[i] * s


@wp.kernel
def square(x: F64, y: F64):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def cube_into(x: F64, y: F64):
    i = wp.tid()
    x[i] = y[i] * y[i] * y[i]


@wp.kernel
def sum_into(y: F64, loss: F64):
    i = wp.tid()
    wp.atomic_add(loss, 0, y[i])


# ---- numpy ----------------------------------------------------------------------------------


def test_numpy_view_and_array_interface_are_zero_copy():
    a = wp.array(np.arange(4, dtype=np.float32), dtype=float)
    view = a.numpy()
    view[1] = 10.0
    assert a.numpy()[1] == 10.0
    b = np.asarray(a)  # __array__ / __array_interface__
    b[2] = 20.0
    assert a.numpy()[2] == 20.0
    assert a.__array_interface__["data"][0] == a.ptr


def test_array_over_numpy_data_without_copy_shares_memory():
    data = np.zeros((3, 3), dtype=np.float32)
    a = wp.array(data, dtype=wp.vec3, copy=False)
    data[1, 2] = 7.0
    assert a.numpy()[1, 2] == 7.0


def test_from_numpy_infers_vectors():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = wp.from_numpy(data)
    assert a.dtype == wp.vec3 and a.shape == (2,)
    np.testing.assert_array_equal(a.numpy(), data)


def test_numpy_arrays_passed_to_launch_are_read_and_written_in_place():
    x = np.arange(8, dtype=np.float32)
    y = np.ones(8, dtype=np.float32)
    expected = 2.0 * x + 1.0
    wp.launch(axpy, 8, inputs=[x, y, 2.0])
    np.testing.assert_array_equal(y, expected)


def test_numpy_launch_vectors_from_trailing_dims_and_strided_views():
    v = np.arange(12, dtype=np.float32).reshape(4, 3)
    expected = v * 3.0
    wp.launch(scale_vec, 4, inputs=[v, 3.0])
    np.testing.assert_array_equal(v, expected)
    x = np.arange(10, dtype=np.float32)
    y = np.zeros(10, dtype=np.float32)
    wp.launch(axpy, 5, inputs=[x[::2], y[1::2], 1.0])  # non-contiguous: through strides
    np.testing.assert_array_equal(y[1::2], x[::2])
    np.testing.assert_array_equal(y[::2], 0.0)


def test_numpy_launch_rejects_a_dtype_mismatch_naming_the_argument():
    x = np.zeros(4, dtype=np.float64)
    y = np.zeros(4, dtype=np.float32)
    with pytest.raises(LaunchError, match=r"argument 'x'.*float64"):
        wp.launch(axpy, 4, inputs=[x, y, 1.0])
    with pytest.raises(LaunchError, match=r"argument 'x'.*complex64"):
        wp.launch(axpy, 4, inputs=[np.zeros(4, np.complex64), y, 1.0])
    with pytest.raises(LaunchError, match=r"argument 'v'.*component dims"):
        wp.launch(scale_vec, 4, inputs=[np.zeros((4, 2), np.float32), 1.0])


def test_numpy_under_a_tape_keeps_values_for_the_adjoint():
    """x (raw numpy) is read by one launch, then overwritten by another launch through another
    wrapper: copy-on-write must still give the first launch's adjoint the old values."""
    x = np.array([1.0, 2.0, 3.0])
    y = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    w = wp.array(np.array([0.5, -1.0, 2.0]), dtype=wp.float64, requires_grad=True)
    x_before = x.copy()
    tape = wp.Tape()
    with tape:
        wp.launch(square, 3, inputs=[w], outputs=[y])  # y = w²
        wp.launch(mul_into, 3, inputs=[x, y], outputs=[loss])  # loss = Σ x·y
        wp.launch(cube_into, 3, inputs=[x, w])  # overwrites x in place (numpy again)
    tape.backward(loss=loss)
    np.testing.assert_allclose(w.grad.numpy(), 2.0 * w.numpy() * x_before)
    np.testing.assert_allclose(x, w.numpy() ** 3)


@wp.kernel
def mul_into(x: F64, y: F64, loss: F64):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * y[i])


def test_dtype_from_and_to_numpy():
    assert wp.dtype_from_numpy(np.float32) == wp.float32
    assert wp.dtype_from_numpy(np.dtype("int64")) == wp.int64
    assert wp.dtype_to_numpy(wp.float64) is np.float64
    assert wp.dtype_to_numpy(wp.vec3) is np.float32
    with pytest.raises(GradloomError, match="complex128"):
        wp.dtype_from_numpy(np.complex128)


# ---- DLPack ---------------------------------------------------------------------------------


def test_numpy_from_dlpack_of_a_gradloom_array_shares_memory():
    a = wp.zeros(4, dtype=wp.vec2)
    n = np.from_dlpack(a)
    assert n.shape == (4, 2)
    n[3, 1] = 5.0
    assert a.numpy()[3, 1] == 5.0
    assert a.__dlpack_device__() == (1, 0)


def test_from_dlpack_shares_memory_both_ways():
    data = np.arange(6, dtype=np.float64)
    a = wp.from_dlpack(data)
    assert a.dtype == wp.float64 and a.shape == (6,)
    data[0] = 42.0
    assert a.numpy()[0] == 42.0
    a.numpy()[5] = -1.0
    assert data[5] == -1.0


def test_from_dlpack_with_vector_dtype_and_capsules():
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    a = wp.from_dlpack(data, dtype=wp.vec3)
    assert a.shape == (4,) and a.dtype == wp.vec3
    b = wp.from_dlpack(wp.to_dlpack(a))  # a legacy capsule round trip
    assert b.ptr == a.ptr and b.shape == (4, 3)
    wp.launch(scale_vec, 4, inputs=[a, 2.0])
    np.testing.assert_array_equal(data, np.arange(12, dtype=np.float32).reshape(4, 3) * 2)


def test_from_dlpack_rejects_non_producers():
    with pytest.raises(GradloomError, match="DLPack"):
        wp.from_dlpack([1.0, 2.0])


def test_from_dlpack_dtype_mismatch_is_clear():
    with pytest.raises(GradloomError, match="float64.*vec3"):
        wp.from_dlpack(np.zeros((2, 3)), dtype=wp.vec3)
