"""Forward mode without a zeroing pass: a large tangent buffer that a launch writes at each
thread's own element is left unzeroed and zeroed by the tangent kernel's threads (the ZEROED
variant, passes/fresh_gradients.zeroed_ir); `jvp` hands back the tape's own tangent memory
where no copy is needed. Expected tangents are analytic derivatives in float64; elements a
kernel never writes must come back exactly zero even where the buffer's memory held NaNs."""

from __future__ import annotations

import numpy as np

import gradloom as wp
from gradloom.autograd import hvp, jvp
from gradloom.runtime.array.lazy_zero import MIN_BYTES

N = MIN_BYTES // 4 + 1000  # float32 elements: large enough for the unzeroed buffers


@wp.kernel
def positive_square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    if x[i] > 0.0:
        y[i] = x[i] * x[i]


@wp.kernel
def add_square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = y[i] + wp.sin(x[i]) * x[i]


@wp.kernel
def reversed_copy(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    n = x.shape[0]
    if i % 2 == 0:
        y[n - 1 - i] = 3.0 * x[i]


def _dirty_heap() -> None:
    """Leave NaNs in freed memory of the sizes the tangent buffers take."""
    for _ in range(4):
        junk = np.full(N + 64, np.nan, np.float32)
        del junk


def _inputs(seed: int) -> tuple[wp.array, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = rng.uniform(-1, 1, N).astype(np.float32)
    return wp.array(xs, dtype=float), rng.normal(size=N).astype(np.float32), xs


def _program(kernel):
    def run(x):
        y = wp.zeros(N, dtype=float)
        wp.launch(kernel, N, inputs=[x, y])
        return y
    return run


def test_conditional_store_leaves_exact_zeros() -> None:
    x, v, xs = _inputs(0)
    for _ in range(3):
        _dirty_heap()
        _, t = jvp(_program(positive_square), [x], [v])
        want = np.where(xs > 0, 2.0 * xs.astype(np.float64) * v, 0.0)
        got = t.numpy()
        assert np.all(got[xs <= 0] == 0.0) and not np.isnan(got).any()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_read_before_write_sees_zero_tangent() -> None:
    x, v, xs = _inputs(1)
    _dirty_heap()
    _, t = jvp(_program(add_square), [x], [v])
    xd = xs.astype(np.float64)
    np.testing.assert_allclose(t.numpy(), (np.cos(xd) * xd + np.sin(xd)) * v,
                               rtol=1e-5, atol=1e-6)


def test_other_threads_elements_keep_the_zeroing_pass() -> None:
    x, v, _ = _inputs(2)
    _dirty_heap()
    _, t = jvp(_program(reversed_copy), [x], [v])
    want = np.zeros(N)
    idx = np.arange(0, N, 2)
    want[N - 1 - idx] = 3.0 * v[idx]
    np.testing.assert_array_equal(t.numpy(), want.astype(np.float32))
    dual = reversed_copy.tangent_kernel()
    assert dual.zeroed_variant(frozenset({3})) is None
    assert positive_square.tangent_kernel().zeroed_variant(frozenset({3})) == "zeroed:3"


def test_results_are_never_the_seed_nor_shared() -> None:
    x, v, _ = _inputs(3)

    def two_views(a):
        y = wp.zeros(2 * N, dtype=float)
        wp.launch(add_square, N, inputs=[a, y[:N]])
        wp.launch(add_square, N, inputs=[a, y[N:]])
        return [a, y[:N], y[N:]]

    _, (ta, t1, t2) = jvp(two_views, [x], [v])
    np.testing.assert_array_equal(ta.numpy(), v)
    assert not np.shares_memory(ta.numpy(), v)
    np.testing.assert_array_equal(t1.numpy(), t2.numpy())
    assert not np.shares_memory(t1.numpy(), t2.numpy())
    t1.numpy()[:] = 0  # each result is the caller's own
    assert np.abs(t2.numpy()).max() > 0


def test_hvp_result_is_exact() -> None:
    x, v, xs = _inputs(4)

    def loss(a):
        y = wp.zeros(N, dtype=float)
        wp.launch(add_square, N, inputs=[a, y])
        e = wp.zeros(1, dtype=float)
        wp.launch(sum_squares, N, inputs=[y, e])
        return e

    (h,) = hvp(loss, [x], [v])
    xd, vd = xs.astype(np.float64), v.astype(np.float64)
    f, df = np.sin(xd) * xd, np.cos(xd) * xd + np.sin(xd)
    d2f = 2.0 * np.cos(xd) - np.sin(xd) * xd
    want = 2.0 * (df * df + f * d2f) * vd  # L = sum f(x)^2
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-3, atol=1e-4)


@wp.kernel
def sum_squares(y: wp.array(dtype=float), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, 0, y[i] * y[i])


@wp.kernel
def positive_vec3(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    if x[i][0] > 0.0:
        y[i] = wp.vec3(x[i][0] * x[i][1], wp.sin(x[i][2]), 2.0 * x[i][0])


def test_vec3_components_conditional_store() -> None:
    n = MIN_BYTES // 12 + 100
    rng = np.random.default_rng(5)
    xs = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    v = rng.normal(size=(n, 3)).astype(np.float32)

    def run(x):
        y = wp.zeros(n, dtype=wp.vec3)
        wp.launch(positive_vec3, n, inputs=[x, y])
        return y

    _dirty_heap()
    _, t = jvp(run, [wp.array(xs, dtype=wp.vec3)], [v])
    xd, vd, m = xs.astype(np.float64), v.astype(np.float64), xs[:, 0] > 0
    want = np.zeros((n, 3))
    want[m, 0] = (vd[:, 0] * xd[:, 1] + xd[:, 0] * vd[:, 1])[m]
    want[m, 1] = (np.cos(xd[:, 2]) * vd[:, 2])[m]
    want[m, 2] = 2.0 * vd[m, 0]
    got = t.numpy()
    assert np.all(got[~m] == 0.0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert positive_vec3.tangent_kernel().zeroed_variant(frozenset({3})) == "zeroed:3"
