"""Tile values against numpy: construction, loads/stores with offsets and padding, views,
elementwise ops, tile_map, reductions, matmul, tiles in @wp.func and in loops/branches.
Runs on warp-lang's CPU too (GL_TEST_BACKEND=warp), which validates the expectations."""

from __future__ import annotations

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

M, N, K = 4, 3, 5


@wp.func
def scaled_sum(t: wp.tile[float, M, N], s: float):
    return t * s + t


@wp.func
def plus_one(x: float):
    return x + 1.0


@wp.kernel
def tiles_k(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float),
            tr: wp.array2d(dtype=float), vals: wp.array(dtype=float),
            idx: wp.array(dtype=int)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(M, N), offset=(i * M, 1))
    wp.tile_store(out, scaled_sum(t, 2.0), offset=(i * M, 0))
    wp.tile_store(tr, wp.tile_transpose(t), offset=(0, i * M))
    if i == 1:
        vals[0] = wp.tile_sum(t)[0]
        vals[1] = wp.tile_max(t)[0]
        vals[2] = wp.tile_min(wp.tile_map(plus_one, t))[0]
        vals[3] = wp.tile_sum(t, axis=0)[2]
        vals[4] = wp.tile_sum(t, axis=1)[3]
        vals[5] = wp.tile_reduce(wp.max, -t)[0]
        vals[6] = t[2, 1]
        v = wp.tile_view(t, offset=(1, 1), shape=(2, 2))
        vals[7] = v[1, 0]
        vals[8] = wp.tile_extract(t, 3, 2)
        c = wp.tile_matmul(t, wp.tile_transpose(t))
        vals[9] = c[0, 3]
        o = wp.tile_ones(shape=(M, M), dtype=float)
        wp.tile_matmul(t, wp.tile_transpose(t), o)
        vals[10] = o[2, 1]
        ar = wp.tile_arange(2, 12, 3, dtype=float)
        vals[11] = ar[3]
        f = wp.tile_full(shape=(2,), value=2.5, dtype=float)
        f[1] = 4.0
        f[0] += 1.0
        vals[12] = f[0] * f[1]
        v0 = vals[0]
        vals[13] = wp.untile(wp.tile(v0) * 3.0)
        idx[0] = wp.tile_argmax(t)[0]
        idx[1] = wp.tile_argmin(t)[0]
        idx[2] = wp.block_dim()
        b = wp.tile_broadcast(wp.tile_sum(t, axis=0), shape=(M, N))
        vals[14] = b[3, 1]


@wp.kernel
def control_k(a: wp.array2d(dtype=float), flag: wp.array(dtype=int), out: wp.array2d(dtype=float)):
    acc = wp.tile_zeros(shape=(M, N), dtype=float)
    for k in range(3):
        t = wp.tile_load(a, shape=(M, N), offset=(k, 0))
        acc = acc * 0.5 + t
    if flag[0] > 0:
        acc = acc - wp.tile_ones(shape=(M, N), dtype=float)
    else:
        acc = acc * 2.0
    wp.tile_store(out, acc)


def _a() -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, (3 * M, N + 2)).astype(np.float32)


def test_tile_values_match_numpy() -> None:
    A = _a()
    a = wp.array(A, dtype=float, device=DEVICE)
    out = wp.zeros((3 * M, N), dtype=float, device=DEVICE)
    tr = wp.zeros((N, 3 * M), dtype=float, device=DEVICE)
    vals = wp.zeros(16, dtype=float, device=DEVICE)
    idx = wp.zeros(4, dtype=int, device=DEVICE)
    wp.launch_tiled(tiles_k, dim=[3], inputs=[a, out, tr, vals, idx], block_dim=32,
                    device=DEVICE)
    T = A[:, 1:1 + N]
    np.testing.assert_allclose(out.numpy(), 3.0 * T, rtol=1e-6)
    np.testing.assert_allclose(tr.numpy(), T.T, rtol=1e-6)
    t = T[M:2 * M]
    want = [t.sum(), t.max(), (t + 1).min(), t.sum(axis=0)[2], t.sum(axis=1)[3], (-t).max(),
            t[2, 1], t[2, 1], t[3, 2], (t @ t.T)[0, 3], (t @ t.T)[2, 1] + 1.0, 11.0,
            14.0, 3 * t.sum(), t.sum(axis=0)[1]]
    np.testing.assert_allclose(vals.numpy()[:15], want, rtol=1e-5, atol=1e-6)
    assert idx.numpy()[:3].tolist() == [int(t.argmax()), int(t.argmin()), 1]


@pytest.mark.parametrize("flag", [0, 1])
def test_tiles_through_loops_and_branches(flag: int) -> None:
    A = _a()
    a = wp.array(A, dtype=float, device=DEVICE)
    out = wp.zeros((M, N), dtype=float, device=DEVICE)
    wp.launch(control_k, dim=1, inputs=[a, wp.array([flag], dtype=int, device=DEVICE), out],
              device=DEVICE)
    acc = np.zeros((M, N))
    for k in range(3):
        acc = acc * 0.5 + A[k:k + M, :N]
    acc = acc - 1.0 if flag else acc * 2.0
    np.testing.assert_allclose(out.numpy(), acc, rtol=1e-6)


@wp.kernel
def padding_k(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float),
              sums: wp.array2d(dtype=float), shift: int):
    i, j = wp.tid()
    t = wp.tile_load(a, shape=(3, 4), offset=(i * 3 - shift, j * 4 - 2 * shift))
    wp.tile_store(out, t * 2.0, offset=(i * 3 - shift, j * 4 - 2 * shift))
    sums[i, j] = wp.tile_sum(t)[0]


@pytest.mark.parametrize("shift", [0, pytest.param(1, marks=pytest.mark.skipif(
    BACKEND == "warp", reason="warp-lang 1.19 reads outside the array at negative offsets"))])
def test_out_of_bounds_loads_pad_with_zero_and_stores_skip(shift: int) -> None:
    A = np.arange(5 * 7, dtype=np.float32).reshape(5, 7)
    a = wp.array(A, dtype=float, device=DEVICE)
    out = wp.zeros((5, 7), dtype=float, device=DEVICE)
    sums = wp.zeros((3, 3), dtype=float, device=DEVICE)
    wp.launch_tiled(padding_k, dim=[3, 3], inputs=[a, out, sums, shift], block_dim=16,
                    device=DEVICE)
    np.testing.assert_allclose(out.numpy(), A * 2.0)
    want = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            r0, c0 = i * 3 - shift, j * 4 - 2 * shift
            want[i, j] = A[max(r0, 0):max(r0 + 3, 0), max(c0, 0):max(c0 + 4, 0)].sum()
    np.testing.assert_allclose(sums.numpy(), want)


@wp.kernel
def int_tile_k(out: wp.array(dtype=int)):
    t = wp.tile_arange(6, dtype=int)
    u = wp.tile_map(wp.mul, t, t)
    wp.tile_store(out, u)


@wp.kernel
def arange_default_k(out: wp.array(dtype=float)):
    wp.tile_store(out, wp.tile_arange(1, 7, 2))


def test_tile_arange_defaults_to_float32() -> None:
    out = wp.zeros(3, dtype=float, device=DEVICE)
    wp.launch(arange_default_k, dim=1, inputs=[out], device=DEVICE)
    assert out.numpy().tolist() == [1.0, 3.0, 5.0]


def test_integer_tiles() -> None:
    out = wp.zeros(6, dtype=int, device=DEVICE)
    wp.launch(int_tile_k, dim=1, inputs=[out], device=DEVICE)
    assert out.numpy().tolist() == [0, 1, 4, 9, 16, 25]


def test_tile_plus_scalar_is_refused_as_in_warp() -> None:
    @wp.kernel
    def plus_scalar_k(out: wp.array(dtype=float)):
        t = wp.tile_ones(shape=(2,), dtype=float)
        wp.tile_store(out, t + 1.0)

    with pytest.raises(Exception, match="'?add'? .*(tiles|types)"):
        wp.launch(plus_scalar_k, dim=1, inputs=[wp.zeros(2, dtype=float, device=DEVICE)],
                  device=DEVICE)


@wp.kernel
def more_k(a: wp.array2d(dtype=float), acc: wp.array2d(dtype=float), flat: wp.array(dtype=float),
           vals: wp.array(dtype=float), old: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(2, 4))
    r = wp.tile_reshape(t, shape=(4, -1))
    vals[0] = r[3, 0]
    s = wp.tile_squeeze(wp.tile_view(t, offset=(1, 0), shape=(1, 4)))
    vals[1] = s[2]
    vals[2] = wp.tile_dot(t, t)[0]
    u = wp.tile_ones(shape=(2, 4), dtype=float)
    wp.tile_axpy(2.0, t, u)
    vals[3] = u[1, 3]
    wp.tile_store(flat, wp.tile_scan_inclusive(wp.tile_reshape(t, shape=(8,))))
    ex = wp.tile_scan_exclusive(t)
    vals[4] = ex[1, 1]
    vals[5] = wp.tile_scan_max_inclusive(t)[1, 0]
    vals[6] = wp.tile_scan_min_inclusive(t)[0, 3]
    sq = wp.tile_view(t, offset=(0, 0), shape=(2, 2))
    d = wp.tile_diag_add(sq, wp.tile_ones(shape=(2,), dtype=float))
    vals[7] = d[1, 1] + d[0, 1]
    vals[8] = wp.tile_from_thread(shape=(3,), value=vals[1], thread_idx=0)[2]
    vals[9] = float(wp.tile_astype(t * 3.0, dtype=int)[1, 2])
    o = wp.tile_atomic_add(acc, t, offset=(1, 0))
    wp.tile_store(old, o)


def test_more_tile_builtins_match_numpy() -> None:
    A = np.random.default_rng(5).uniform(-2, 2, (2, 4)).astype(np.float32)
    ACC = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = wp.array(A, dtype=float, device=DEVICE)
    acc = wp.array(ACC, dtype=float, device=DEVICE)
    flat = wp.zeros(8, dtype=float, device=DEVICE)
    vals = wp.zeros(10, dtype=float, device=DEVICE)
    old = wp.zeros((2, 4), dtype=float, device=DEVICE)
    wp.launch_tiled(more_k, dim=[1], inputs=[a, acc, flat, vals, old], block_dim=8,
                    device=DEVICE)
    flat_a = A.reshape(-1)
    want = [A.reshape(4, 2)[3, 0], A[1, 2], (A * A).sum(), 1 + 2 * A[1, 3],
            np.concatenate([[0], np.cumsum(flat_a)[:-1]])[5], np.maximum.accumulate(flat_a)[4],
            np.minimum.accumulate(flat_a)[3], A[1, 1] + 1 + A[0, 1], A[1, 2],
            float(np.trunc(A[1, 2] * 3))]
    np.testing.assert_allclose(vals.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(flat.numpy(), np.cumsum(flat_a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(old.numpy(), ACC[1:3])
    np.testing.assert_allclose(acc.numpy()[1:3], ACC[1:3] + A, rtol=1e-6)
    np.testing.assert_allclose(acc.numpy()[0], ACC[0])


@wp.kernel(enable_backward=False)
def print_k(a: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(2, 3))
    print(t)
    print(wp.tile_arange(3, dtype=int))


def test_tile_print_layout(capfd: pytest.CaptureFixture[str]) -> None:
    a = wp.array(np.array([[1.5, -2.25, 3e-5], [1e10, 0.1, 7.0]], dtype=np.float32),
                 device=DEVICE)
    wp.launch_tiled(print_k, dim=[1], inputs=[a], block_dim=1, device=DEVICE)
    wp.synchronize_device(DEVICE)
    out = capfd.readouterr().out
    # the storage word (register/shared) follows Warp's storage inference, not compared here
    assert "[[1.5 -2.25 3e-05]\n [1e+10 0.1 7]] = tile(shape=(2,3), storage=" in out
    assert "[0 1 2] = tile(shape=(3), storage=register)\n" in out


@wp.kernel
def linalg_k(a: wp.array2d(dtype=float), y: wp.array(dtype=float), y2: wp.array2d(dtype=float),
             lo: wp.array2d(dtype=float), up: wp.array2d(dtype=float), x: wp.array(dtype=float),
             x2: wp.array2d(dtype=float), z: wp.array(dtype=float), w: wp.array(dtype=float)):
    A = wp.tile_load(a, shape=(4, 4))
    L = wp.tile_cholesky(A)
    wp.tile_store(lo, L)
    U = wp.tile_load(a, shape=(4, 4))
    wp.tile_cholesky_inplace(U, fill_mode="upper")
    wp.tile_store(up, U)
    b = wp.tile_load(y, shape=4)
    wp.tile_store(x, wp.tile_cholesky_solve(L, b))
    B = wp.tile_load(y2, shape=(4, 2))
    wp.tile_cholesky_solve_inplace(U, B, fill_mode="upper")
    wp.tile_store(x2, B)
    wp.tile_store(z, wp.tile_lower_solve(L, b))
    c = wp.tile_load(y, shape=4)
    wp.tile_upper_solve_inplace(U, c)
    wp.tile_store(w, c)


def test_cholesky_and_triangular_solves_match_numpy() -> None:
    rng = np.random.default_rng(11)
    R = rng.normal(size=(4, 4))
    A = (R @ R.T + 4 * np.eye(4)).astype(np.float32)
    Y, Y2 = rng.normal(size=4).astype(np.float32), rng.normal(size=(4, 2)).astype(np.float32)
    arrs = [wp.array(v, dtype=float, device=DEVICE) for v in (A, Y, Y2)]
    outs = [wp.zeros(s, dtype=float, device=DEVICE)
            for s in ((4, 4), (4, 4), 4, (4, 2), 4, 4)]
    wp.launch_tiled(linalg_k, dim=[1], inputs=arrs + outs, block_dim=16, device=DEVICE)
    Lw = np.linalg.cholesky(A.astype(np.float64))
    want = [Lw, Lw.T, np.linalg.solve(A, Y), np.linalg.solve(A, Y2),
            np.linalg.solve(Lw, Y), np.linalg.solve(Lw.T, Y)]
    for got, w in zip(outs, want, strict=True):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-4, atol=1e-5)


@wp.kernel
def index_views_k(a: wp.array2d(dtype=float), rows: wp.array2d(dtype=float),
                  idx: wp.array(dtype=int), col: wp.array(dtype=float),
                  rev: wp.array(dtype=float), even: wp.array2d(dtype=float),
                  gathered: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(4, 6))
    for i in range(4):
        wp.tile_store(rows[i], t[i])
    wp.tile_store(col, t[:, idx[0]])
    wp.tile_store(rev, t[idx[1]][::-1])
    wp.tile_store(even, t[:, ::2])
    g = wp.tile_load(idx, shape=3)
    wp.tile_store(gathered, t[g])
    u = wp.tile_zeros(shape=(4, 6), dtype=float)
    u[1] = t[-1]
    u[2, 3] = 5.0
    v = wp.tile_view(t, offset=(idx[0], 0), shape=(1, 6))
    wp.tile_assign(u, v, offset=(3, 0))
    wp.tile_store(out, u)


def test_tile_index_views_slices_and_gathers() -> None:
    A = np.arange(24, dtype=np.float32).reshape(4, 6)
    I = np.array([2, 1, 3], dtype=np.int32)
    a, idx = wp.array(A, device=DEVICE), wp.array(I, dtype=int, device=DEVICE)
    outs = [wp.zeros(s, dtype=float, device=DEVICE)
            for s in ((4, 6), 4, 6, (4, 3), (3, 6), (4, 6))]
    rows, col, rev, even, gathered, out = outs
    wp.launch_tiled(index_views_k, dim=[1], inputs=[a, rows, idx, col, rev, even, gathered, out],
                    block_dim=8, device=DEVICE)
    U = np.zeros((4, 6), dtype=np.float32)
    U[1], U[2, 3], U[3] = A[-1], 5.0, A[2]
    for got, want in zip(outs, [A, A[:, 2], A[1][::-1], A[:, ::2], A[I], U], strict=True):
        np.testing.assert_array_equal(got.numpy(), want)


@wp.kernel
def tid_lane_k(o: wp.array2d(dtype=int)):
    i, lane = wp.tid()
    o[i, 0] = i * 10 + lane + wp.block_dim()


@wp.kernel
def tid_grid_k(o: wp.array2d(dtype=int)):
    i, j = wp.tid()
    o[i, j] = i * 10 + j


def test_launch_tiled_adds_the_block_dimension() -> None:
    """As in Warp, the block is the launch's last dimension (of extent 1 on the CPU)."""
    o = wp.zeros((3, 1), dtype=int, device=DEVICE)
    wp.launch_tiled(tid_lane_k, dim=3, inputs=[o], block_dim=8, device=DEVICE)
    assert o.numpy()[:, 0].tolist() == [1, 11, 21]
    g = wp.zeros((2, 3), dtype=int, device=DEVICE)
    wp.launch_tiled(tid_grid_k, dim=[2, 3], inputs=[g], block_dim=8, device=DEVICE)
    assert g.numpy().tolist() == [[0, 1, 2], [10, 11, 12]]


@wp.func
def flip(v: wp.vec3):
    return wp.vec3(v[2], v[1], v[0])


@wp.kernel
def vec_tiles_k(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3),
                out: wp.array(dtype=wp.vec3), total: wp.array(dtype=wp.vec3),
                m: wp.array(dtype=wp.mat22), mout: wp.array(dtype=wp.mat22)):
    x = wp.tile_load(a, shape=4)
    y = wp.tile_load(b, shape=4, offset=1)
    z = wp.tile_map(flip, x + y * 2.0)
    z[0] = wp.vec3(1.0, 2.0, 3.0)
    wp.tile_store(out, z)
    wp.tile_store(total, wp.tile_sum(-z))
    t = wp.tile_load(m, shape=3)
    wp.tile_store(mout, t * 3.0)


def test_vector_and_matrix_element_tiles() -> None:
    rng = np.random.default_rng(2)
    A, B = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(5, 3)).astype(np.float32)
    Mm = rng.normal(size=(3, 2, 2)).astype(np.float32)
    a, b = wp.array(A, dtype=wp.vec3, device=DEVICE), wp.array(B, dtype=wp.vec3, device=DEVICE)
    m = wp.array(Mm, dtype=wp.mat22, device=DEVICE)
    out = wp.zeros(4, dtype=wp.vec3, device=DEVICE)
    total = wp.zeros(1, dtype=wp.vec3, device=DEVICE)
    mout = wp.zeros(3, dtype=wp.mat22, device=DEVICE)
    wp.launch_tiled(vec_tiles_k, dim=[1], inputs=[a, b, out, total, m, mout], block_dim=4,
                    device=DEVICE)
    Z = (A + 2 * B[1:5])[:, ::-1].copy()
    Z[0] = [1, 2, 3]
    np.testing.assert_allclose(out.numpy(), Z, rtol=1e-6)
    np.testing.assert_allclose(total.numpy()[0], -Z.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(mout.numpy(), 3 * Mm, rtol=1e-6)


@wp.func
def add_five(t: wp.tile[float, 2, 3]):
    t += wp.tile_ones(dtype=float, shape=(2, 3)) * 5.0


@wp.kernel
def inplace_func_k(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(2, 3))
    add_five(t)
    wp.tile_store(out, t)


def test_augmented_assignment_updates_a_tile_in_place() -> None:
    """As in Warp, `t += ...` writes t's storage: a @wp.func's caller sees it."""
    a = wp.array(np.full((2, 3), 3.0, dtype=np.float32), device=DEVICE)
    out = wp.zeros((2, 3), dtype=float, device=DEVICE)
    wp.launch_tiled(inplace_func_k, dim=[1], inputs=[a, out], block_dim=4, device=DEVICE)
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 8.0))


@wp.kernel
def components_k(x: wp.array(dtype=float), y: wp.array(dtype=wp.vec3),
                 m: wp.array(dtype=wp.mat22), r: wp.array(dtype=float)):
    i = wp.tid()
    a = wp.tile_zeros(shape=(4,), dtype=wp.vec3)
    a[i][1] = x[i]
    a[i][2] = 2.0
    wp.tile_atomic_add(y, a, offset=(0,))
    t = wp.tile_load(m, shape=2)
    t[1][0, 1] = 9.0
    r[i] = t[1][0, 1] + t[0, 1, 0] + a[i][1] + t[1][1][0]


def test_vector_and_matrix_components_of_tile_elements() -> None:
    X = np.arange(1, 5, dtype=np.float32)
    M = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    x, m = wp.array(X, device=DEVICE), wp.array(M, dtype=wp.mat22, device=DEVICE)
    y = wp.zeros(4, dtype=wp.vec3, device=DEVICE)
    r = wp.zeros(4, dtype=float, device=DEVICE)
    wp.launch(components_k, dim=4, inputs=[x, y, m, r], device=DEVICE)
    want = np.zeros((4, 3), dtype=np.float32)
    want[:, 1], want[:, 2] = X, 2.0
    np.testing.assert_allclose(y.numpy(), want)
    np.testing.assert_allclose(r.numpy(), 9.0 + M[0, 1, 0] + X + M[1, 1, 0])


@wp.func
def scale_shift(x: float, s: float, d: float):
    return x * s + d


@wp.kernel
def map_constants_k(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=4)
    s = wp.float32(3.0)
    wp.tile_store(out, wp.tile_map(scale_shift, t, s, t))


def test_tile_map_passes_constants_through() -> None:
    A = np.arange(4, dtype=np.float32)
    a, out = wp.array(A, device=DEVICE), wp.zeros(4, dtype=float, device=DEVICE)
    wp.launch_tiled(map_constants_k, dim=[1], inputs=[a, out], block_dim=4, device=DEVICE)
    np.testing.assert_allclose(out.numpy(), A * 3.0 + A)


@wp.kernel
def arange_float32_k(o: wp.array(dtype=float), p: wp.array(dtype=float)):
    wp.tile_store(o, wp.tile_arange(0.0, 3.0000001, 0.99999999, dtype=wp.float32))
    wp.tile_store(p, wp.tile_arange(0.0, 0.3, 0.1, dtype=float))


def test_tile_arange_counts_in_the_tile_type() -> None:
    """Regression: the element count is computed in float32 as Warp does (0.3 / 0.1 is 3)."""
    o = wp.full(4, -1.0, dtype=float, device=DEVICE)
    p = wp.full(4, -1.0, dtype=float, device=DEVICE)
    wp.launch_tiled(arange_float32_k, dim=[1], inputs=[o, p], block_dim=8, device=DEVICE)
    np.testing.assert_allclose(o.numpy(), [0.0, 1.0, 2.0, -1.0])
    np.testing.assert_allclose(p.numpy(), [0.0, 0.1, 0.2, -1.0], rtol=1e-6)
