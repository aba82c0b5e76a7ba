"""Tile kernels in SIMD lanes (passes/lanes.py `_tile_refusal`): a tile every lane holds alike
(loaded at a thread-invariant offset, n-body's) runs with one buffer per vector of threads, bit
for bit the scalar loop's results; tiles that differ between lanes keep the scalar loop."""

import numpy as np
import pytest

import gradloom as wp
from gradloom import config

T = 16


@pytest.fixture(autouse=True)
def _serial():
    saved = config.num_threads, config.simd, config.simd_width
    config.num_threads = 1
    yield
    config.num_threads = saved[0]
    config.simd, config.simd_width = saved[1], saved[2]


@wp.kernel(enable_backward=False, module="unique")
def nbody_k(pos: wp.array(dtype=wp.vec3), acc: wp.array(dtype=wp.vec3), n: int):
    i = wp.tid()
    p0 = pos[i]
    a = wp.vec3(0.0, 0.0, 0.0)
    for k in range(n // T):
        tile = wp.tile_load(pos, shape=T, offset=k * T)
        for q in range(T):
            r = tile[q] - p0
            d = wp.length_sq(r) + 0.01
            a += r / (d * wp.sqrt(d))
    acc[i] = a


@wp.kernel(enable_backward=False, module="unique")
def own_tile_k(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x, shape=4, offset=i * 4)  # each thread's own tile
    y[i] = wp.tile_sum(t)[0]


@wp.kernel(enable_backward=False, module="unique")
def branch_write_k(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_zeros(shape=2, dtype=float)
    if x[i] > 0.0:  # lanes differ: the write must not reach the lanes that skip it
        t[0] = 1.0
    y[i] = t[0] + t[1]


def _reason(kernel: wp.Kernel) -> str | None:
    return kernel._codegen("gl_test_tile_lanes", False)[1]["lanes"]


def _run(kernel: wp.Kernel, dim: int, args: list, simd: bool) -> list[np.ndarray]:
    config.simd, config.simd_width = simd, 16
    arrays = [(wp.array(a, dtype=wp.vec3) if a.ndim == 2 else wp.array(a))
              if isinstance(a, np.ndarray) else a for a in args]
    wp.launch(kernel, dim=dim, inputs=arrays)
    return [a.numpy().copy() for a in arrays if isinstance(a, wp.array)]


def test_a_tile_every_lane_shares_runs_in_lanes_bit_for_bit() -> None:
    config.simd, config.simd_width = True, 16
    if wp.codegen.cpu.lane_width() == 0:  # type: ignore[attr-defined]
        pytest.skip("no SIMD lanes on this CPU")
    assert _reason(nbody_k) is None
    n = 64
    pos = np.random.default_rng(1).normal(size=(n, 3)).astype(np.float32)
    args = [pos, np.zeros((n, 3), np.float32), n]
    scalar, lanes = _run(nbody_k, n, args, False), _run(nbody_k, n, args, True)
    for s, v in zip(scalar, lanes, strict=True):
        assert np.array_equal(s.view(np.uint8), v.view(np.uint8))
    p = pos.astype(np.float64)
    r = p[None, :, :] - p[:, None, :]
    d = (r ** 2).sum(-1) + 0.01
    ref = (r / (d * np.sqrt(d))[..., None]).sum(1)
    np.testing.assert_allclose(lanes[1], ref, rtol=1e-4, atol=1e-3)


def test_tiles_that_differ_between_lanes_keep_the_scalar_loop() -> None:
    config.simd, config.simd_width = True, 16
    assert "tiles whose contents differ" in str(_reason(own_tile_k))
    assert "tiles whose contents differ" in str(_reason(branch_write_k))
    x = np.arange(64, dtype=np.float32)
    y = _run(own_tile_k, 16, [x, np.zeros(16, np.float32)], True)[1]
    np.testing.assert_array_equal(y, x.reshape(16, 4).sum(1))
    xs = np.where(np.arange(32) % 3 == 0, 1.0, -1.0).astype(np.float32)
    y = _run(branch_write_k, 32, [xs, np.zeros(32, np.float32)], True)[1]
    np.testing.assert_array_equal(y, (xs > 0).astype(np.float32))
