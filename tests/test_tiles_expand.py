"""wp.tile of a vector or matrix value expands it into a tile of its scalars, of shape
(length, block_dim) or (rows, cols, block_dim), unless preserve_type=True; wp.untile of such a
tile gives the value back (Warp 1.19 on the CPU, block_dim 1: warp-lang's
tile.test_tile_construction test_tile_tile_vec/mat_expansion_kernel). Gradients analytic."""

import numpy as np

import gradloom as wp


@wp.kernel
def vec_expand_k(x: wp.array(dtype=wp.vec3), y: wp.array2d(dtype=float)):
    a = x[0]
    wp.tile_store(y, wp.tile(a))


@wp.kernel
def mat_expand_k(x: wp.array(dtype=wp.mat22), y: wp.array3d(dtype=float)):
    a = x[0]
    wp.tile_store(y, wp.tile(a))


@wp.kernel
def vec_preserved_k(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3)):
    a = x[0]
    wp.tile_store(y, wp.tile(a, preserve_type=True))


@wp.kernel
def square_k(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3)):
    i, _lane = wp.tid()
    a = x[i]
    t = wp.tile(a)
    y[i] = wp.untile(wp.tile_map(wp.mul, t, t))


@wp.kernel
def mat_roundtrip_k(x: wp.array(dtype=wp.mat22), y: wp.array(dtype=wp.mat22)):
    i, _lane = wp.tid()
    a = x[i]
    y[i] = wp.untile(wp.tile(a) * 3.0)


def test_vectors_and_matrices_expand_into_scalar_tiles() -> None:
    x = wp.array([wp.vec3(1.0, 2.0, 3.0)], dtype=wp.vec3)
    y = wp.zeros((3, 1), dtype=float)
    wp.launch_tiled(vec_expand_k, dim=[1], inputs=[x, y], block_dim=1)
    np.testing.assert_array_equal(y.numpy(), [[1.0], [2.0], [3.0]])
    m = wp.array([wp.mat22(1.0, 2.0, 3.0, 4.0)], dtype=wp.mat22)
    ym = wp.zeros((2, 2, 1), dtype=float)
    wp.launch_tiled(mat_expand_k, dim=[1], inputs=[m, ym], block_dim=1)
    np.testing.assert_array_equal(ym.numpy()[..., 0], [[1.0, 2.0], [3.0, 4.0]])
    yp = wp.zeros(1, dtype=wp.vec3)
    wp.launch_tiled(vec_preserved_k, dim=[1], inputs=[x, yp], block_dim=1)
    np.testing.assert_array_equal(yp.numpy(), [[1.0, 2.0, 3.0]])


def test_untile_gives_the_value_back_with_its_gradient() -> None:
    xs = np.array([[1.0, -2.0, 3.0], [0.5, 5.0, -6.0]], np.float32)
    x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
    y = wp.zeros(2, dtype=wp.vec3, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(square_k, dim=[2], inputs=[x, y], block_dim=1)
    tape.backward(grads={y: wp.ones(2, dtype=wp.vec3)})
    np.testing.assert_allclose(y.numpy(), xs * xs)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * xs)  # d(x^2)/dx
    ms = np.arange(8, dtype=np.float32).reshape(2, 2, 2) - 3.0
    m = wp.array(ms, dtype=wp.mat22)
    ym = wp.zeros(2, dtype=wp.mat22)
    wp.launch_tiled(mat_roundtrip_k, dim=[2], inputs=[m, ym], block_dim=1)
    np.testing.assert_allclose(ym.numpy(), 3.0 * ms)
