"""Tile stacks, random tiles, tile_sort, tile_empty, narrow element types, len() of a tile in
wp.static."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp

CAP = wp.constant(4)
M32 = 0xFFFFFFFF


@wp.func
def _push_eight(s: wp.tile_stack(capacity=CAP, dtype=int), val: int):  # type: ignore[valid-type]
    wp.tile_stack_push(s, val, True)


@wp.kernel
def _stack_kernel(out: wp.array(dtype=int), fo: wp.array(dtype=wp.vec3)):
    _i, j = wp.tid()
    s = wp.tile_stack(capacity=CAP, dtype=int)
    out[0] = wp.tile_stack_push(s, 7, True)
    _push_eight(s, 8)  # a @wp.func changes the caller's stack
    out[1] = wp.tile_stack_count(s)
    v, slot = wp.tile_stack_pop(s)
    out[2] = v
    out[3] = slot
    for q in range(5):
        out[4 + q] = wp.tile_stack_push(s, q, q != 2)
    out[9] = wp.tile_stack_count(s)
    wp.tile_stack_clear(s)
    v2, slot2 = wp.tile_stack_pop(s)
    out[10] = v2
    out[11] = slot2
    s2 = wp.tile_stack(capacity=CAP, dtype=wp.vec3)
    if j == 0:
        wp.tile_stack_push(s2, wp.vec3(1.0, 2.0, 3.0), True)
    a, _b = wp.tile_stack_pop(s2)
    fo[0] = a


def test_tile_stack_push_pop_count_clear() -> None:
    out = wp.zeros(12, dtype=int)
    fo = wp.zeros(1, dtype=wp.vec3)
    wp.launch_tiled(_stack_kernel, dim=[1], inputs=[out, fo], block_dim=64)
    # push 7 -> slot 0; func pushes 8; count 2; pop 8 (slot 0 of one thread); pushes of 0, 1
    # (q=2 not pushed), 3 fill the capacity of 4, the push of 4 fails; clear; pop of empty
    np.testing.assert_array_equal(out.numpy(), [0, 2, 8, 0, 1, 2, -1, 3, -1, 4, 0, -1])
    np.testing.assert_array_equal(fo.numpy(), [[1.0, 2.0, 3.0]])


def test_tile_stack_errors() -> None:
    @wp.kernel(module="unique")
    def zero_cap() -> None:
        s = wp.tile_stack(capacity=0, dtype=int)  # noqa: F841

    @wp.kernel(module="unique")
    def mismatch() -> None:
        s = wp.tile_stack(capacity=4, dtype=int)
        wp.tile_stack_push(s, 1.0, True)

    with pytest.raises(RuntimeError, match="positive integer"):
        wp.launch_tiled(zero_cap, dim=[1], inputs=[], block_dim=1)
    with pytest.raises(RuntimeError, match="does not match"):
        wp.launch_tiled(mismatch, dim=[1], inputs=[], block_dim=1)


def _pcg(x: int) -> int:
    """The PCG hash of Jarzynski & Olano (JCGT 2020), Warp's documented generator."""
    s = (x * 747796405 + 2891336453) & M32
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & M32
    return (w >> 22) ^ w


def _draws(seed: int, offset: int, n: int) -> list[int]:
    """Block thread 0's draws: state pcg(0 + rng), each draw advancing it first."""
    rng = _pcg((seed + _pcg(offset)) & M32)
    state, out = _pcg(rng), []
    for _ in range(n):
        state = _pcg(state)
        out.append(state)
    return out


@wp.kernel
def _rand_kernel(seed: int, x: wp.array2d(dtype=int), y: wp.array2d(dtype=float),
                 xr: wp.array2d(dtype=int), yr: wp.array2d(dtype=float)):
    i, j = wp.tid()
    rng = wp.rand_init(seed, i * 2 + j)
    wp.tile_store(x, wp.tile_randi(shape=(2, 2), rng=rng), offset=(i * 2, j * 2))
    wp.tile_store(y, wp.tile_randf(shape=(2, 2), rng=rng), offset=(i * 2, j * 2))
    wp.tile_store(xr, wp.tile_randi(shape=(2, 2), rng=rng, min=-5, max=5), offset=(i * 2, j * 2))
    wp.tile_store(yr, wp.tile_randf(shape=(2, 2), rng=rng, min=-5.0, max=5.0),
                  offset=(i * 2, j * 2))


def test_tile_random_matches_the_generator() -> None:
    x, xr = wp.zeros((4, 4), dtype=int), wp.zeros((4, 4), dtype=int)
    y, yr = wp.zeros((4, 4), dtype=float), wp.zeros((4, 4), dtype=float)
    wp.launch_tiled(_rand_kernel, dim=[2, 2], inputs=[42, x, y, xr, yr], block_dim=32)
    for i in range(2):
        for j in range(2):
            d = np.array(_draws(42, i * 2 + j, 4), dtype=np.uint64).reshape(2, 2)
            blk = np.s_[i * 2:i * 2 + 2, j * 2:j * 2 + 2]
            np.testing.assert_array_equal(x.numpy()[blk], d.astype(np.uint32).view(np.int32))
            u = (d >> 8).astype(np.float32) * np.float32(2.0 ** -24)
            np.testing.assert_array_equal(y.numpy()[blk], u)
            np.testing.assert_array_equal(xr.numpy()[blk], -5 + (d % 10).astype(np.int64))
            np.testing.assert_allclose(yr.numpy()[blk], -5.0 + 10.0 * u, rtol=1e-6)
    # warp-lang 1.19 on the CPU (its test's CPU values): the first row of the unbounded draws
    np.testing.assert_array_equal(x.numpy()[0], [798497746, -1161279442, -955788638, -592663987])


@wp.kernel
def _misc_kernel(a: wp.array2d(dtype=float), h: wp.array(dtype=wp.float16),
                 out: wp.array(dtype=int), hs: wp.array(dtype=wp.float16)):
    x = wp.tile_load(a, shape=(3, 5))
    out[0] = wp.static(len(x))
    e = wp.tile_empty(shape=(4,), dtype=int)
    e = wp.tile_arange(4, dtype=int)
    out[1] = wp.tile_sum(e)[0]
    t = wp.tile_load(h, shape=8)
    wp.tile_store(hs, wp.tile_sum(t))


def test_tile_len_empty_and_float16() -> None:
    a = wp.zeros((3, 5), dtype=float)
    h = wp.array(np.arange(8, dtype=np.float16) * np.float16(0.5), dtype=wp.float16)
    out = wp.zeros(2, dtype=int)
    hs = wp.zeros(1, dtype=wp.float16)
    wp.launch_tiled(_misc_kernel, dim=[1], inputs=[a, h, out, hs], block_dim=1)
    np.testing.assert_array_equal(out.numpy(), [3, 6])
    assert float(hs.numpy()[0]) == 14.0


def test_narrow_and_bool_tiles_refused_where_warp_refuses() -> None:
    @wp.kernel(module="unique")
    def int8_add(src: wp.array(dtype=wp.int8), dst: wp.array(dtype=wp.int8)) -> None:
        wp.tile_atomic_add(dst, wp.tile_load(src, shape=4))

    @wp.kernel(module="unique")
    def bool_arange(out: wp.array(dtype=wp.bool)) -> None:
        wp.tile_store(out, wp.tile_arange(0, 4, dtype=wp.bool))

    src = wp.zeros(4, dtype=wp.int8)
    with pytest.raises(RuntimeError, match="tile_atomic_add.*only supports"):
        wp.launch_tiled(int8_add, dim=[1], inputs=[src, src], block_dim=1)
    with pytest.raises(RuntimeError, match=r"tile_arange\(\) requires a numeric scalar dtype"):
        wp.launch_tiled(bool_arange, dim=[1], inputs=[wp.zeros(4, dtype=wp.bool)], block_dim=1)


@wp.kernel
def _sort_kernel(k: wp.array2d(dtype=float), v: wp.array2d(dtype=wp.vec2),
                 k1: wp.array(dtype=wp.int64)):
    keys = wp.tile_load(k, shape=(3, 7))
    vals = wp.tile_load(v, shape=(3, 7))
    wp.tile_sort(keys, vals)  # a 2-D pair: sorted as its row-major sequence
    wp.tile_store(k, keys)
    wp.tile_store(v, vals)
    one = wp.tile_load(k1, shape=13)
    wp.tile_sort(one, one)  # the same tile as keys and values
    wp.tile_store(k1, one)


def test_tile_sort_pairs_2d_and_aliased() -> None:
    rng = np.random.default_rng(3)
    keys = rng.integers(-4, 4, size=(3, 7)).astype(np.float32)  # many equal keys
    vals = rng.standard_normal((3, 7, 2)).astype(np.float32)
    k1 = rng.integers(-(10 ** 12), 10 ** 12, size=13)
    ka, va, k1a = wp.array(keys), wp.array(vals, dtype=wp.vec2), wp.array(k1, dtype=wp.int64)
    wp.launch_tiled(_sort_kernel, dim=[1], inputs=[ka, va, k1a], block_dim=32)
    order = np.argsort(keys.ravel(), kind="stable")
    np.testing.assert_array_equal(ka.numpy().ravel(), keys.ravel()[order])
    np.testing.assert_array_equal(va.numpy().reshape(-1, 2), vals.reshape(-1, 2)[order])
    np.testing.assert_array_equal(k1a.numpy(), np.sort(k1))


@wp.kernel
def _beta_zero_kernel(a: wp.array2d(dtype=float), c: wp.array2d(dtype=float), beta: float):
    x = wp.tile_load(a, shape=(3, 4))
    out = wp.tile_load(c, shape=(3, 3))
    wp.tile_matmul(x, wp.tile_transpose(x), out, beta=beta)
    wp.tile_store(c, out)


def test_tile_matmul_beta_zero_does_not_read_out() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    c0 = np.full((3, 3), np.nan, dtype=np.float32)
    c0[0] = np.inf
    c = wp.array(c0)
    wp.launch_tiled(_beta_zero_kernel, dim=[1], inputs=[wp.array(a), c, 0.0], block_dim=1)
    np.testing.assert_allclose(c.numpy(), a @ a.T)
    c = wp.array(np.ones((3, 3), dtype=np.float32))
    wp.launch_tiled(_beta_zero_kernel, dim=[1], inputs=[wp.array(a), c, 2.0], block_dim=1)
    np.testing.assert_allclose(c.numpy(), a @ a.T + 2.0)


@wp.kernel
def _scatter_kernel(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float),
                    z: wp.array2d(dtype=float)):
    t = wp.tile_load(x, shape=(2, 3))
    rows = wp.tile_arange(2, dtype=int) * 2 + wp.tile_ones(2, dtype=int)  # 1, 3
    wp.tile_store_indexed(y, indices=rows, t=t, offset=(0, 0), axis=0)
    cols = wp.tile_arange(3, dtype=int) - wp.tile_ones(3, dtype=int)  # -1 (skipped), 0, 1
    wp.tile_atomic_add_indexed(z, indices=cols, t=t * 3.0, offset=(0, 0), axis=1)
    wp.tile_atomic_add_indexed(z, indices=cols, t=t, offset=(0, 0), axis=1)


def test_tile_store_and_atomic_add_indexed() -> None:
    xv = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    x = wp.array(xv, requires_grad=True)
    y = wp.zeros((4, 3), dtype=float, requires_grad=True)
    z = wp.zeros((2, 2), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(_scatter_kernel, dim=[1], inputs=[x, y, z], block_dim=1)
    ye = np.zeros((4, 3), dtype=np.float32)
    ye[[1, 3]] = xv
    np.testing.assert_array_equal(y.numpy(), ye)
    np.testing.assert_array_equal(z.numpy(), 4.0 * xv[:, 1:])
    gy, gz = np.arange(12.0).reshape(4, 3), np.array([[1.0, 2.0], [3.0, 4.0]])
    tape.backward(grads={y: wp.array(gy, dtype=float), z: wp.array(gz, dtype=float)})
    ge = gy[[1, 3]].copy()
    ge[:, 1:] += 4.0 * gz  # column c of the tile went to column c - 1 (column 0: nowhere)
    np.testing.assert_allclose(x.grad.numpy(), ge)


def test_tile_operator_and_shape_errors_in_warps_words() -> None:
    @wp.kernel(module="unique")
    def vec_by_vec(a: wp.array(dtype=wp.vec3)) -> None:
        t = wp.tile_load(a, shape=4)
        wp.tile_store(a, t / wp.vec3(1.0, 2.0, 3.0))

    @wp.kernel(module="unique")
    def five_dims(a: wp.array(dtype=float)) -> None:
        wp.tile_broadcast(wp.tile_load(a, shape=1), shape=(1, 1, 1, 1, 1))

    @wp.kernel(module="unique")
    def squeeze_axis(a: wp.array(dtype=float)) -> None:
        wp.tile_squeeze(wp.tile_zeros(shape=(1, 2, 1), dtype=float), axis=(3,))

    @wp.kernel(module="unique")
    def vec_times_scalar_tile(a: wp.array(dtype=wp.vec3), s: wp.array(dtype=float)) -> None:
        wp.tile_store(a, wp.tile_load(a, shape=4) * wp.tile_load(s, shape=4))  # allowed

    v = wp.array(np.ones((4, 3), dtype=np.float32), dtype=wp.vec3)
    f = wp.zeros(4, dtype=float)
    with pytest.raises(TypeError, match=r"Cannot divide tile<.*> by .*: at least one operand"):
        wp.launch_tiled(vec_by_vec, dim=[1], inputs=[v], block_dim=1)
    with pytest.raises(ValueError, match=r"between one and four dimensions, got 5"):
        wp.launch_tiled(five_dims, dim=[1], inputs=[f], block_dim=1)
    with pytest.raises(ValueError, match=r"axis 3 is out of bounds for tile with 3 dimensions"):
        wp.launch_tiled(squeeze_axis, dim=[1], inputs=[f], block_dim=1)
    wp.launch_tiled(vec_times_scalar_tile, dim=[1], inputs=[v, wp.full(4, 2.0, dtype=float)],
                    block_dim=1)
    np.testing.assert_array_equal(v.numpy(), np.full((4, 3), 2.0))


@wp.kernel
def _blocked_kernel(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float),
                    c: wp.array2d(dtype=float), d: wp.array2d(dtype=float)):
    x = wp.tile_load(a, shape=(8, 3))
    y = wp.tile_load(b, shape=(3, 12))
    acc = wp.tile_load(c, shape=(8, 12))
    wp.tile_matmul(x, y, acc, alpha=0.5)  # 4 x 4 register blocks
    wp.tile_store(c, acc)
    odd = wp.tile_matmul(wp.tile_load(a, shape=(7, 3)), wp.tile_load(b, shape=(3, 5)))
    wp.tile_store(d, odd)  # 1 x 1 blocks


def test_tile_matmul_register_blocks_and_odd_shapes() -> None:
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((8, 3)), rng.standard_normal((3, 12))
    c0 = rng.standard_normal((8, 12))
    c, d = wp.array(c0, dtype=float), wp.zeros((7, 5), dtype=float)
    wp.launch_tiled(_blocked_kernel, dim=[1], inputs=[wp.array(a, dtype=float),
                                                      wp.array(b, dtype=float), c, d], block_dim=1)
    np.testing.assert_allclose(c.numpy(), 0.5 * a @ b + c0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d.numpy(), a[:7] @ b[:, :5], rtol=1e-5, atol=1e-6)


@wp.kernel
def _mixed_kernel(a: wp.array2d(dtype=wp.float16), b: wp.array2d(dtype=wp.float32),
                  c: wp.array2d(dtype=wp.float64)):
    x = wp.tile_load(a, shape=(4, 3))
    y = wp.tile_load(b, shape=(3, 2))
    acc = wp.tile_load(c, shape=(4, 2))
    wp.tile_matmul(x, y, acc, alpha=0.5, beta=-1.5)  # computed in float64, out's type
    wp.tile_store(c, acc)


def test_tile_matmul_mixed_precision() -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 3)).astype(np.float16)
    b = rng.standard_normal((3, 2)).astype(np.float32)
    c0 = rng.standard_normal((4, 2))
    aw, bw = wp.array(a, dtype=wp.float16, requires_grad=True), wp.array(b, requires_grad=True)
    cw = wp.array(c0, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(_mixed_kernel, dim=[1], inputs=[aw, bw, cw], block_dim=1)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(cw.numpy(), 0.5 * a64 @ b64 - 1.5 * c0, rtol=1e-12)
    g = np.ones((4, 2))
    tape.backward(grads={cw: wp.array(g, dtype=wp.float64)})
    np.testing.assert_allclose(bw.grad.numpy(), 0.5 * a64.T @ g, rtol=1e-6)
    np.testing.assert_allclose(aw.grad.numpy().astype(np.float64), 0.5 * g @ b64.T, rtol=1e-2)


@wp.kernel
def _scatter_literal_kernel(out: wp.array(dtype=float)):
    t = wp.tile_zeros(shape=4, dtype=float)
    wp.tile_scatter_add(t, 1, 1.0, True)  # a literal value
    wp.tile_scatter_add(t, 1, 2.5, True)
    wp.tile_scatter_masked(t, 3, 7.0, True)
    wp.tile_store(out, t)


def test_tile_scatter_with_literal_values() -> None:
    out = wp.zeros(4, dtype=float)
    wp.launch_tiled(_scatter_literal_kernel, dim=[1], inputs=[out], block_dim=1)
    np.testing.assert_array_equal(out.numpy(), [0.0, 3.5, 0.0, 7.0])


def test_tile_matmul_refuses_complex_and_bfloat16_out() -> None:
    @wp.kernel(module="unique")
    def cplx(a: wp.array2d(dtype=wp.vec2)) -> None:
        t = wp.tile_load(a, shape=(2, 2))
        wp.tile_matmul(t, t)

    @wp.kernel(module="unique")
    def bf16_out(a: wp.array2d(dtype=float)) -> None:
        t = wp.tile_load(a, shape=(2, 2))
        c = wp.tile_zeros(shape=(2, 2), dtype=wp.bfloat16)
        wp.tile_matmul(t, t, c)

    with pytest.raises(TypeError, match="does not support complex tiles"):
        wp.launch_tiled(cplx, dim=[1], inputs=[wp.zeros((2, 2), dtype=wp.vec2)], block_dim=1)
    with pytest.raises(TypeError, match="does not support a bfloat16 'out' tile"):
        wp.launch_tiled(bf16_out, dim=[1], inputs=[wp.zeros((2, 2), dtype=float)], block_dim=1)


def _bf16_operand_kernel(enable_backward: bool | None) -> wp.Kernel:
    def bf16_a(a: wp.array2d(dtype=wp.bfloat16), b: wp.array2d(dtype=float),
               c: wp.array2d(dtype=float)) -> None:
        x = wp.tile_load(a, shape=(2, 2))
        y = wp.tile_load(b, shape=(2, 2))
        out = wp.tile_zeros(shape=(2, 2), dtype=float)
        wp.tile_matmul(x, y, out)
        wp.tile_store(c, out)
    return wp.kernel(bf16_a, module="unique", enable_backward=enable_backward)


def test_tile_matmul_bfloat16_operands_need_backward_off() -> None:
    """As Warp (tile.test_tile_matmul bf16_a/b_with_backward_rejected): bfloat16 a or b tiles
    refuse to compile while the kernel has a backward pass (their adjoints would accumulate in
    bfloat16); with enable_backward=False the product is computed."""
    a = wp.array(np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32), dtype=wp.bfloat16)
    b = wp.array(np.array([[0.5, 0.0], [1.0, 2.0]], dtype=np.float32))
    c = wp.zeros((2, 2), dtype=float)
    with pytest.raises(TypeError, match="bfloat16 'a' or 'b' tiles when the backward pass"):
        wp.launch_tiled(_bf16_operand_kernel(None), dim=[1], inputs=[a, b, c], block_dim=1)
    wp.launch_tiled(_bf16_operand_kernel(False), dim=[1], inputs=[a, b, c], block_dim=1)
    np.testing.assert_array_equal(c.numpy(), [[2.5, 4.0], [5.5, 8.0]])


@wp.kernel(module="unique")
def _bitwise_tiles_k(a: wp.array(dtype=wp.uint32), b: wp.array(dtype=wp.uint32),
                     c: wp.array2d(dtype=wp.uint32)):
    s1 = wp.tile_load(a, shape=4)
    s2 = wp.tile_load(b, shape=4)
    wp.tile_store(c[0], s1 & s2)
    wp.tile_store(c[1], s1 | s2)
    wp.tile_store(c[2], s1 ^ s2)
    s1 &= s2
    wp.tile_store(c[3], s1)


def test_bitwise_operators_of_integer_tiles() -> None:
    """Warp's tile.test_tile_atomic_bitwise tilewise kernels: &, |, ^ (and &=) of two tiles."""
    x = np.array([1, 3, 7, 0xF0], dtype=np.uint32)
    y = np.array([2, 6, 5, 0x3C], dtype=np.uint32)
    c = wp.zeros((4, 4), dtype=wp.uint32)
    wp.launch_tiled(_bitwise_tiles_k, dim=[1], inputs=[wp.array(x), wp.array(y), c], block_dim=1)
    np.testing.assert_array_equal(c.numpy(), [x & y, x | y, x ^ y, x & y])


@wp.struct
class _Pair:
    a: wp.int32
    b: wp.float32


def test_bitwise_operators_refuse_struct_tiles() -> None:
    @wp.kernel(module="unique")
    def struct_and(x: wp.array(dtype=_Pair)) -> None:
        s1 = wp.tile_load(x, shape=2)
        s2 = wp.tile_load(x, shape=2)
        s1 &= s2

    with pytest.raises(TypeError, match="bitwise inplace or other.*Warp struct"):
        wp.launch_tiled(struct_and, dim=[1], inputs=[wp.zeros(2, dtype=_Pair)], block_dim=1)
