"""tile_fft / tile_ifft: values against numpy, gradients against float64 central differences."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp

ROWS = 2


def _kernels(n: int) -> tuple[wp.Kernel, wp.Kernel]:
    @wp.kernel(module="unique")
    def fft(x: wp.array2d(dtype=wp.vec2d), y: wp.array2d(dtype=wp.vec2d)):
        t = wp.tile_load(x, shape=(ROWS, n))
        wp.tile_fft(t)
        wp.tile_store(y, t)

    @wp.kernel(module="unique")
    def ifft(x: wp.array2d(dtype=wp.vec2d), y: wp.array2d(dtype=wp.vec2d)):
        t = wp.tile_load(x, shape=(ROWS, n))
        wp.tile_ifft(t)
        t2 = t * 2.0  # the adjoint flows through later tile operations too
        wp.tile_store(y, t2)

    return fft, ifft


KERNELS = {8: _kernels(8), 6: _kernels(6)}
fft8, ifft8 = KERNELS[8]  # module level: the PTX check (tests/ptx_check.py) compiles them
fft6, ifft6 = KERNELS[6]


def _run(kernel: wp.Kernel, x: np.ndarray) -> np.ndarray:
    xa = wp.array(x, dtype=wp.vec2d)
    ya = wp.zeros_like(xa)
    wp.launch_tiled(kernel, dim=[1], inputs=[xa, ya], block_dim=32)
    return ya.numpy()


@pytest.mark.parametrize("n", [8, 6])  # radix-2, and the direct sum of other lengths
def test_tile_fft_values_and_gradients(n: int) -> None:
    fft, ifft = KERNELS[n]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((ROWS, n, 2))
    xc = x[..., 0] + 1j * x[..., 1]
    for kernel, ref in ((fft, np.fft.fft(xc, axis=-1)), (ifft, 2.0 * n * np.fft.ifft(xc, axis=-1))):
        y = _run(kernel, x)
        np.testing.assert_allclose(y[..., 0] + 1j * y[..., 1], ref, atol=1e-12)

        w = rng.standard_normal(x.shape)  # loss = sum(w * y)
        xa = wp.array(x, dtype=wp.vec2d, requires_grad=True)
        ya = wp.zeros_like(xa, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch_tiled(kernel, dim=[1], inputs=[xa, ya], block_dim=32)
        tape.backward(grads={ya: wp.array(w, dtype=wp.vec2d)})
        grad = xa.grad.numpy()

        d = rng.standard_normal(x.shape)
        h = 1e-6
        fd = (np.sum(w * _run(kernel, x + h * d)) - np.sum(w * _run(kernel, x - h * d))) / (2 * h)
        assert np.sum(grad * d) == pytest.approx(fd, rel=1e-7, abs=1e-9)


def test_tile_fft_refuses_non_complex_tiles() -> None:
    @wp.kernel(module="unique")
    def bad(x: wp.array(dtype=float)) -> None:
        t = wp.tile_load(x, shape=8)
        wp.tile_fft(t)

    with pytest.raises(RuntimeError, match="vec2f or wp.vec2d"):
        wp.launch_tiled(bad, dim=[1], inputs=[wp.zeros(8, dtype=float)], block_dim=1)
