"""Warp's opt-in CPU blocks (`wp.config.enable_cpu_blocks`): a CPU launch's block_dim is the
`wp.block_dim()` of a kernel without tiles and `wp.launch_tiled`'s block extent; tile kernels keep
one thread per block; the width a Tape or a recorded command saw stays when the option goes off;
block_dim above 1024 is refused on the CPU with the option on or off (warp-lang 1.19's
test_cpu_block_dim)."""

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

import gradloom as wp


@contextmanager
def cpu_blocks(on: bool) -> Iterator[None]:
    before = wp.config.enable_cpu_blocks
    wp.config.enable_cpu_blocks = on
    try:
        yield
    finally:
        wp.config.enable_cpu_blocks = before


@wp.kernel
def block_info_k(index: wp.array(dtype=wp.int32), width: wp.array(dtype=wp.int32)):
    i = wp.tid()
    index[i] = i
    width[i] = wp.block_dim()


@wp.func
def scaled(x: float) -> float:
    return x * float(wp.block_dim())


@wp.kernel
def block_scale_k(values: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = scaled(values[i]) * values[i]


@wp.kernel
def count_k(out: wp.array(dtype=wp.int32)):
    wp.atomic_add(out, 0, 1)


@wp.kernel
def tile_width_k(out: wp.array(dtype=float)):
    t = wp.tile_ones(shape=4, dtype=float)
    wp.tile_atomic_add(out, wp.tile_sum(t) * float(wp.block_dim()))


@pytest.mark.parametrize("width", [2, 31, 65, 1024])
def test_block_dim_is_the_launch_width_with_cpu_blocks(width: int) -> None:
    n = width + 3  # a full block and a partial one
    index, got = wp.empty(n, dtype=wp.int32), wp.empty(n, dtype=wp.int32)
    with cpu_blocks(True):
        wp.launch(block_info_k, dim=n, inputs=[index, got], block_dim=width)
    np.testing.assert_array_equal(index.numpy(), np.arange(n))
    np.testing.assert_array_equal(got.numpy(), np.full(n, width))
    with cpu_blocks(False):
        wp.launch(block_info_k, dim=n, inputs=[index, got], block_dim=width)
    np.testing.assert_array_equal(got.numpy(), np.ones(n))


def test_launch_tiled_block_extent() -> None:
    for on, threads in ((False, 2), (True, 8)):
        out = wp.zeros(1, dtype=wp.int32)
        with cpu_blocks(on):
            wp.launch_tiled(count_k, dim=[2], inputs=[out], block_dim=4)
        assert out.numpy()[0] == threads


def test_tile_kernels_keep_one_thread_per_block() -> None:
    # a block shares its tiles in Warp; gradloom runs them per thread, so block_dim() stays 1
    out = wp.zeros(1, dtype=float)
    with cpu_blocks(True):
        wp.launch_tiled(tile_width_k, dim=[3], inputs=[out], block_dim=8)
    assert out.numpy()[0] == 3 * 4.0


def test_the_tape_keeps_the_width_it_recorded() -> None:
    x = np.linspace(-1.0, 2.0, 7).astype(np.float32)
    values = wp.array(x, requires_grad=True)
    out = wp.zeros_like(values, requires_grad=True)
    with cpu_blocks(True), wp.Tape() as tape:
        wp.launch(block_scale_k, dim=7, inputs=[values], outputs=[out], block_dim=4)
    np.testing.assert_allclose(out.numpy(), 4.0 * x * x, rtol=1e-6)
    with cpu_blocks(False):  # not resolved again: the adjoint runs at width 4
        tape.backward(grads={out: wp.ones_like(out)})
    np.testing.assert_allclose(values.grad.numpy(), 8.0 * x, rtol=1e-6)  # d(4 x^2)/dx


def test_recorded_commands_keep_their_width() -> None:
    index, got = wp.empty(5, dtype=wp.int32), wp.zeros(5, dtype=wp.int32)
    with cpu_blocks(True):
        cmd = wp.launch(block_info_k, dim=5, inputs=[index, got], block_dim=4, record_cmd=True)
        assert wp.Launch(block_info_k, "cpu", block_dim=4).block_dim == 4
    assert cmd.block_dim == 4 and wp.Launch(block_info_k, "cpu", block_dim=4).block_dim == 1
    cmd.launch()
    np.testing.assert_array_equal(got.numpy(), np.full(5, 4))


@pytest.mark.parametrize("on", [False, True])
def test_more_than_1024_is_refused_on_the_cpu(on: bool) -> None:
    out = wp.zeros(1, dtype=wp.int32)
    with cpu_blocks(on):
        for run in (lambda: wp.launch(count_k, dim=0, inputs=[out], block_dim=1025),
                    lambda: wp.launch_tiled(count_k, dim=[0], inputs=[out], block_dim=1025),
                    lambda: wp.Launch(count_k, "cpu", block_dim=1025)):
            with pytest.raises(ValueError, match="at most 1024 on CPU"):
                run()


def test_map_and_jacobian_default_to_one_thread_per_block() -> None:
    ones = wp.ones(2, dtype=float, requires_grad=True)
    out = wp.zeros_like(ones, requires_grad=True)
    with cpu_blocks(True):
        np.testing.assert_array_equal(wp.map(scaled, ones).numpy(), [1.0, 1.0])
        np.testing.assert_array_equal(wp.map(scaled, ones, block_dim=2).numpy(), [2.0, 2.0])
        default = wp.autograd.jacobian(block_scale_k, dim=2, inputs=[ones], outputs=[out])
        two = wp.autograd.jacobian(block_scale_k, dim=2, inputs=[ones], outputs=[out],
                                   block_dim=2)
    np.testing.assert_allclose(default[0, 0].numpy(), 2.0 * np.eye(2))  # d(x^2)/dx at 1
    np.testing.assert_allclose(two[0, 0].numpy(), 4.0 * np.eye(2))  # d(2 x^2)/dx at 1
