"""`wp.from_torch(t, return_ctype=True)`: Warp's `array_t` descriptor of the array the tensor
becomes (data and gradient addresses, shape, byte strides, ndim); the capacity of an array
over a tensor view reaches the end of the tensor's storage, as Warp reports it."""

from __future__ import annotations

import ctypes

import pytest

import gradloom as wp

torch = pytest.importorskip("torch")


def test_descriptor_of_a_scalar_tensor() -> None:
    t = torch.zeros(10, dtype=torch.float16)
    d = wp.from_torch(t, return_ctype=True)
    assert (d.data, d.grad, d.ndim, d.shape[0], d.strides[0]) == (t.data_ptr(), 0, 1, 10, 2)
    assert list(d.shape)[1:] == [0, 0, 0]


def test_descriptor_of_vectors_with_a_new_gradient() -> None:
    t = torch.zeros((6, 3), dtype=torch.float32)
    d = wp.from_torch(t, dtype=wp.vec3, requires_grad=True, return_ctype=True)
    assert t.grad is not None and d.grad == t.grad.data_ptr()
    assert (d.data, d.ndim, d.shape[0], d.strides[0]) == (t.data_ptr(), 1, 6,
                                                          3 * ctypes.sizeof(ctypes.c_float))
    assert isinstance(wp.from_torch(t, dtype=wp.vec3), wp.array)  # the default is the array


def test_capacity_of_a_view_reaches_the_end_of_the_tensors_storage() -> None:
    base = torch.arange(24, dtype=torch.float32).reshape((4, 6))
    for view, capacity in ((base[1:3, 2:5], (24 - 8) * 4), (base[2:, 1::2], (24 - 13) * 4),
                           (base, 24 * 4)):
        assert wp.from_torch(view).capacity == capacity
    assert wp.from_torch(base)[:1].capacity == 6 * 4  # a view of the array: its own span
