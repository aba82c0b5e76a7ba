"""Adjoints of bfloat16 tiles: the adjoint half of a bfloat16 tile buffer is zeroed as its 16-bit
pattern (codegen/llvm_tiles.ltake stored a float constant into an i16 slot: LLVM refused the
adjoint of warp-lang's tile.test_tile_reduce tile_sum_bfloat16_kernel on the CPU and in PTX).
Expected gradients are analytic, with values exact in bfloat16."""

import numpy as np

import gradloom as wp


@wp.kernel
def bf16_sum_k(x: wp.array(dtype=wp.bfloat16), out: wp.array(dtype=wp.bfloat16)):
    t = wp.tile_load(x, shape=8)
    wp.tile_store(out, wp.tile_sum(t * t))


def _bf16(values: np.ndarray) -> wp.array:
    return wp.array(values.astype(np.float32), dtype=wp.bfloat16, requires_grad=True)


def _float(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def test_bfloat16_tile_sum_of_squares_gradient() -> None:
    x_np = np.arange(-3.0, 5.0, dtype=np.float32)  # squares and sums exact in bfloat16
    x, out = _bf16(x_np), wp.zeros(1, dtype=wp.bfloat16, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(bf16_sum_k, dim=[1], inputs=[x, out], block_dim=1)
    tape.backward(grads={out: _bf16(np.ones(1, np.float32))})
    assert _float(out.numpy())[0] == float(np.sum(x_np * x_np))
    np.testing.assert_array_equal(_float(x.grad.numpy()), 2.0 * x_np)  # d(sum x^2)/dx
