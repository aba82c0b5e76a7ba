"""wp.launch(adjoint=True) with gradient arrays laid out unlike their arrays (stride 0, strided)."""

import numpy as np
import pytest

import gradloom as wp


@wp.kernel
def affine(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 0.5 - x[i] * 2.0


def _adjoint(adj_y: wp.array) -> np.ndarray:
    n = adj_y.shape[0]
    x, y, adj_x = wp.ones(n), wp.zeros(n), wp.zeros(n)
    wp.launch(affine, dim=n, inputs=[x], outputs=[y], adj_inputs=[adj_x], adj_outputs=[adj_y],
              device="cpu", adjoint=True)
    return adj_x.numpy()


def test_broadcast_gradient_is_read_in_place():
    # a gradient expanded from one value (torch's gradient of y.sum()) has stride 0: it used
    # to be indexed with y's strides, reading and zeroing memory past its one element
    seed = np.full(1, 3.0, dtype=np.float32)
    adj_y = wp.array(np.lib.stride_tricks.as_strided(seed, (64,), (0,)), dtype=float, copy=False)
    np.testing.assert_array_equal(_adjoint(adj_y), np.full(64, -6.0, dtype=np.float32))
    assert seed[0] == 3.0  # a broadcast seed is never written


def test_strided_gradient():
    buf = np.arange(1, 65, dtype=np.float32)
    adj_y = wp.array(buf[::2], dtype=float, copy=False)
    np.testing.assert_array_equal(_adjoint(adj_y), -2.0 * np.arange(1, 65, 2, dtype=np.float32))
    np.testing.assert_array_equal(buf, np.arange(1, 65, dtype=np.float32))  # seed kept, gaps too


def test_seed_of_an_output_is_kept():
    # as Warp's explicit adjoint launch: the caller's gradient of an array the kernel only
    # writes holds its seed afterwards (the adjoint consumes it internally)
    adj_y = wp.array(np.full(8, 3.0, np.float32))
    np.testing.assert_array_equal(_adjoint(adj_y), np.full(8, -6.0, np.float32))
    np.testing.assert_array_equal(adj_y.numpy(), np.full(8, 3.0, np.float32))


@wp.kernel
def scale_in_place(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 3.0


def test_in_out_gradient_is_written_back_through_a_strided_copy():
    buf = np.ones(16, np.float32)
    x = wp.array(np.arange(8, dtype=np.float32))
    adj_x = wp.array(buf[::2], dtype=float, copy=False)
    wp.launch(scale_in_place, dim=8, inputs=[x], adj_inputs=[adj_x], device="cpu", adjoint=True)
    np.testing.assert_array_equal(buf[::2], np.full(8, 3.0, np.float32))  # d(3x)/dx * seed 1
    np.testing.assert_array_equal(buf[1::2], np.ones(8, np.float32))


def test_torch_expanded_gradient():
    torch = pytest.importorskip("torch")
    adj_y = torch.ones(()).expand(32)
    np.testing.assert_array_equal(_adjoint(wp.from_torch(adj_y)), np.full(32, -2.0, np.float32))
    strided = torch.ones(64)[::2]
    np.testing.assert_array_equal(_adjoint(wp.from_torch(strided)), np.full(32, -2.0, np.float32))
    assert bool((strided == 1).all())  # torch's gradient buffer is the caller's: kept
