"""`wp.utils` array utilities against numpy references (also run on warp-lang with
GL_TEST_BACKEND=warp), their errors, graph capture, and (gradloom) their gradients."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

utils = importlib.import_module(f"{wp.__name__}.utils")
gradloom_only = pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom behaviour (superset)")
rng = np.random.default_rng(11)


def warr(data, dtype, **kw):
    return wp.array(data, dtype=dtype, device=DEVICE, **kw)


# --------------------------------------------------------------------------------------------
# Reductions


@pytest.mark.parametrize("dtype, np_dtype", [(wp.float32, np.float32), (wp.float64, np.float64)])
def test_array_sum_and_inner_scalars(dtype, np_dtype):
    x = rng.uniform(-1, 1, 1000).astype(np_dtype)
    y = rng.uniform(-1, 1, 1000).astype(np_dtype)
    a, b = warr(x, dtype), warr(y, dtype)
    tol = 1e-4 if np_dtype == np.float32 else 1e-12
    np.testing.assert_allclose(utils.array_sum(a), x.astype(np.float64).sum(), rtol=tol)
    np.testing.assert_allclose(utils.array_inner(a, b), x.astype(np.float64) @ y, rtol=tol)
    out = wp.zeros(1, dtype=dtype, device=DEVICE)
    assert utils.array_sum(a, out=out, value_count=10) is out
    np.testing.assert_allclose(out.numpy()[0], x[:10].astype(np.float64).sum(), rtol=tol)
    assert utils.array_inner(a, b, out=out, count=7) is out
    np.testing.assert_allclose(out.numpy()[0], x[:7].astype(np.float64) @ y[:7], rtol=tol)


def test_array_sum_and_inner_vectors():
    x = rng.uniform(-1, 1, (50, 3))
    y = rng.uniform(-1, 1, (50, 3))
    a, b = warr(x, wp.vec3d), warr(y, wp.vec3d)
    np.testing.assert_allclose(utils.array_sum(a), x.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(utils.array_inner(a, b), np.sum(x * y), rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_reductions_along_an_axis(axis):
    x = rng.uniform(-1, 1, (4, 5, 3)).astype(np.float32)
    y = rng.uniform(-1, 1, (4, 5, 3)).astype(np.float32)
    a, b = warr(x, float), warr(y, float)
    s = utils.array_sum(a, axis=axis)
    np.testing.assert_allclose(s.numpy(), x.sum(axis=axis, keepdims=True), rtol=1e-5)
    i = utils.array_inner(a, b, axis=axis)
    np.testing.assert_allclose(i.numpy(), (x * y).sum(axis=axis, keepdims=True), rtol=1e-5,
                               atol=1e-6)
    count = x.shape[axis] - 1
    part = np.take(x, range(count), axis=axis)
    out = wp.full(s.shape, -1.0, dtype=float, device=DEVICE)
    utils.array_sum(a, out=out, value_count=count, axis=axis)
    np.testing.assert_allclose(out.numpy(), part.sum(axis=axis, keepdims=True), rtol=1e-5)


def test_reductions_of_nothing():
    empty = wp.array(np.zeros((0, 2)), dtype=wp.vec2, device=DEVICE)
    np.testing.assert_array_equal(utils.array_sum(empty), np.zeros(2))
    assert utils.array_inner(empty, empty) == 0.0
    ones = wp.ones((2, 3), dtype=float, device=DEVICE)
    np.testing.assert_array_equal(utils.array_sum(ones, value_count=0, axis=-1).numpy(),
                                  np.zeros((2, 1), np.float32))


def test_reduction_errors():
    a = warr([1.0, 2.0, 3.0], wp.float32)
    with pytest.raises(RuntimeError, match=r"out array should have type float32$"):
        utils.array_sum(a, out=wp.empty(1, dtype=wp.float64, device=DEVICE))
    with pytest.raises(RuntimeError, match=r"out array should have shape \(1,\)$"):
        utils.array_sum(a, out=wp.empty(2, dtype=wp.float32, device=DEVICE))
    with pytest.raises(RuntimeError, match=r"Unsupported data type: int32$"):
        utils.array_sum(warr([1, 2, 3], wp.int32))
    with pytest.raises(ValueError, match=r"must have the same shape, got \(3,\) and \(2,\)"):
        utils.array_inner(a, warr([1.0, 2.0], wp.float32))
    with pytest.raises(RuntimeError, match=r"data types do not match \(float32 vs float64\)$"):
        utils.array_inner(a, warr([1.0, 2.0, 3.0], wp.float64))
    with pytest.raises(IndexError, match=r"array_sum\(\) axis 1 is out of bounds"):
        utils.array_sum(a, axis=1)


# --------------------------------------------------------------------------------------------
# Scan


@pytest.mark.parametrize("dtype, np_dtype", [(wp.int32, np.int32), (wp.int64, np.int64),
                                             (wp.float32, np.float32), (wp.float64, np.float64)])
def test_array_scan(dtype, np_dtype):
    x = (rng.integers(-100, 100, 500) if np.dtype(np_dtype).kind == "i"
         else rng.uniform(-1, 1, 500)).astype(np_dtype)
    a = warr(x, dtype)
    inc, exc = wp.zeros_like(a), wp.zeros_like(a)
    utils.array_scan(a, inc, True)
    utils.array_scan(a, exc, False)
    want = np.cumsum(x.astype(np.float64))
    tol = 1e-4 if np_dtype == np.float32 else 1e-12
    np.testing.assert_allclose(inc.numpy(), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(exc.numpy(), np.concatenate([[0], want[:-1]]), rtol=tol, atol=tol)


def test_array_scan_vectors_and_strided_views():
    x = rng.integers(-10, 10, (20, 3)).astype(np.int32)
    a = warr(x, wp.vec3i)
    out = wp.zeros_like(a)
    utils.array_scan(a, out)
    np.testing.assert_array_equal(out.numpy(), np.cumsum(x, axis=0))
    base = warr(np.arange(12, dtype=np.int64), wp.int64)
    dest = warr(np.full(12, -1, np.int64), wp.int64)
    utils.array_scan(base[::2], dest[1::2], False)
    want = np.full(12, -1, np.int64)
    want[1::2] = np.concatenate([[0], np.cumsum(np.arange(0, 12, 2))[:-1]])
    np.testing.assert_array_equal(dest.numpy(), want)


def test_array_scan_errors():
    with pytest.raises(RuntimeError, match=r"sizes do not match \(3 vs 4\)$"):
        utils.array_scan(wp.zeros(3, dtype=int, device=DEVICE), wp.zeros(4, dtype=int,
                                                                          device=DEVICE))
    with pytest.raises(RuntimeError, match=r"data types do not match \(int32 vs float32\)$"):
        utils.array_scan(wp.zeros(3, dtype=int, device=DEVICE), wp.zeros(3, dtype=float,
                                                                          device=DEVICE))
    with pytest.raises(RuntimeError, match=r"Unsupported data type: vec3h$"):
        utils.array_scan(wp.zeros(3, dtype=wp.vec3h, device=DEVICE),
                         wp.zeros(3, dtype=wp.vec3h, device=DEVICE))


# --------------------------------------------------------------------------------------------
# Sorting and run-length encoding


def _radix_order(keys: np.ndarray, begin: int, end: int) -> np.ndarray:
    """Reference order of a stable LSD radix sort over key bits [begin, end)."""
    bits = keys.dtype.itemsize * 8
    u = keys.view(f"u{keys.dtype.itemsize}").astype(object)
    if keys.dtype.kind == "i":
        u = [k ^ (1 << (bits - 1)) for k in u]
    elif keys.dtype.kind == "f":
        u = [(~k & ((1 << bits) - 1)) if k >> (bits - 1) else k | (1 << (bits - 1)) for k in u]
    digits = [(int(k) >> begin) & ((1 << (end - begin)) - 1) for k in u]
    return np.array(sorted(range(len(digits)), key=lambda i: digits[i]))


_KEYS = [(wp.int32, np.int32), (wp.uint32, np.uint32), (wp.float32, np.float32),
         (wp.int64, np.int64), (wp.uint64, np.uint64), (wp.float64, np.float64)]


@pytest.mark.parametrize("key_type, np_dtype, bits", [
    (k, n, bits) for k, n in _KEYS for bits in (None, (0, 3), (2, 6))
    if bits is None or np.dtype(n).kind != "f"])  # (bit ranges of float keys: full width only)
def test_radix_sort_pairs(key_type, np_dtype, bits):
    n = 40
    if np.dtype(np_dtype).kind == "f":
        keys_np = rng.uniform(-4, 4, n).round(1).astype(np_dtype)
        keys_np[:3] = [-0.0, 0.0, -0.0]
    elif np.dtype(np_dtype).kind == "u":
        keys_np = rng.integers(0, 50, n).astype(np_dtype)
    else:
        keys_np = rng.integers(-25, 25, n).astype(np_dtype)
    values_np = np.arange(n, dtype=np.int32)
    keys = warr(np.concatenate([keys_np, np.zeros(n, np_dtype)]), key_type)
    values = warr(np.concatenate([values_np, np.zeros(n, np.int32)]), wp.int32)
    begin, end = bits if bits else (0, np.dtype(np_dtype).itemsize * 8)
    if bits:
        utils.radix_sort_pairs(keys, values, n, begin_bit=begin, end_bit=end)
    else:
        utils.radix_sort_pairs(keys, values, n)
    order = _radix_order(keys_np, begin, end)
    np.testing.assert_array_equal(values.numpy()[:n], values_np[order])
    np.testing.assert_array_equal(keys.numpy()[:n].view(f"u{keys_np.dtype.itemsize}"),
                                  keys_np[order].view(f"u{keys_np.dtype.itemsize}"))


def test_radix_sort_errors():
    keys = warr((1, 2, 3), wp.int32)
    with pytest.raises(RuntimeError, match=r"large enough to contain 2\*count elements$"):
        utils.radix_sort_pairs(keys, warr((1, 2, 3), wp.int32), 3)
    with pytest.raises(RuntimeError, match=r"Unsupported keys and values data types: int32, "
                                           r"float16$"):
        utils.radix_sort_pairs(keys, warr((1.0, 2.0, 3.0), wp.float16), 1)
    with pytest.raises(RuntimeError, match=r"Invalid radix sort bit range \[0, 33\) for 32-bit"):
        utils.radix_sort_pairs(warr((1, 0), wp.int32), warr((1, 0), wp.int32), 1, end_bit=33)
    with pytest.raises(RuntimeError, match="requires a contiguous keys array"):
        utils.radix_sort_pairs(warr(tuple(range(16)), wp.int32)[::2],
                               warr(tuple(range(16)), wp.int32), 4)


def test_segmented_sort_pairs():
    n = 30
    keys_np = rng.uniform(0, 1, n).astype(np.float32)
    values_np = np.arange(n, dtype=np.int32)
    starts, ends = np.array([0, 5, 12], np.int32), np.array([5, 12, 30], np.int32)
    keys = warr(np.concatenate([keys_np, np.zeros(n, np.float32)]), wp.float32)
    values = warr(np.concatenate([values_np, np.zeros(n, np.int32)]), wp.int32)
    utils.segmented_sort_pairs(keys, values, n, warr(starts, wp.int32), warr(ends, wp.int32))
    want_k, want_v = keys_np.copy(), values_np.copy()
    for lo, hi in zip(starts, ends):
        order = np.argsort(keys_np[lo:hi], kind="stable")
        want_k[lo:hi], want_v[lo:hi] = keys_np[lo:hi][order], values_np[lo:hi][order]
    np.testing.assert_array_equal(keys.numpy()[:n], want_k)
    np.testing.assert_array_equal(values.numpy()[:n], want_v)
    # offsets only: consecutive starts delimit the segments
    k2 = warr((3, 1, 2, 9, 8, 0, 0, 0, 0, 0), wp.int32)
    v2 = warr((0, 1, 2, 3, 4, 0, 0, 0, 0, 0), wp.int32)
    utils.segmented_sort_pairs(k2, v2, 5, warr((0, 3, 5), wp.int32))
    np.testing.assert_array_equal(k2.numpy()[:5], [1, 2, 3, 8, 9])
    np.testing.assert_array_equal(v2.numpy()[:5], [1, 2, 0, 4, 3])


def test_segmented_sort_errors_leave_inputs_alone():
    keys_np = np.array((2, 1, 4, 3, 0, 0, 0, 0), np.int32)
    keys, values = warr(keys_np, wp.int32), warr(keys_np * 10, wp.int32)
    with pytest.raises(ValueError, match="Invalid segment range at index 1"):
        utils.segmented_sort_pairs(keys, values, 4, warr((0, 2), wp.int32), warr((2, 5),
                                                                                   wp.int32))
    np.testing.assert_array_equal(keys.numpy(), keys_np)
    with pytest.raises(ValueError, match="count must be non-negative, got -1"):
        utils.segmented_sort_pairs(keys, values, -1, warr((0,), wp.int32))
    with pytest.raises(TypeError, match="count must be an integer"):
        utils.segmented_sort_pairs(keys, values, 1.5, warr((0,), wp.int32))


def test_runlength_encode():
    x = np.sort(rng.integers(-5, 5, 100)).astype(np.int32)
    uniq, counts = np.unique(x, return_counts=True)
    values = warr(x, wp.int32)
    run_values, run_lengths = wp.empty_like(values), wp.empty_like(values)
    runs = utils.runlength_encode(values, run_values, run_lengths)
    assert runs == len(uniq)
    np.testing.assert_array_equal(run_values.numpy()[:runs], uniq)
    np.testing.assert_array_equal(run_lengths.numpy()[:runs], counts)
    run_count = wp.zeros(1, dtype=wp.int32, device=DEVICE)
    assert utils.runlength_encode(values, run_values, run_lengths, run_count=run_count,
                                  value_count=10) is run_count
    assert run_count.numpy()[0] == len(np.unique(x[:10]))
    with pytest.raises(RuntimeError, match=r"Unsupported data type: float32$"):
        utils.runlength_encode(wp.zeros(3, dtype=float, device=DEVICE),
                               wp.zeros(3, dtype=float, device=DEVICE),
                               wp.zeros(3, dtype=wp.int32, device=DEVICE))


# --------------------------------------------------------------------------------------------
# Casts


def test_array_cast():
    ints = warr((1, 2, 3, 4), wp.int32)
    floats = wp.empty((2, 2), dtype=float, device=DEVICE)
    utils.array_cast(ints, floats)  # different ranks: element by element as flat lists
    np.testing.assert_array_equal(floats.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    vecs = warr([[1.5, -2.5], [3.5, 4.0]], wp.vec2)
    out = wp.zeros(4, dtype=wp.int32, device=DEVICE)
    utils.array_cast(vecs, out, count=1)  # count elements of the input: 2 scalars
    np.testing.assert_array_equal(out.numpy(), [1, -2, 0, 0])  # truncation toward zero
    src = warr(np.arange(6, dtype=np.float32).reshape(2, 3), wp.float32)
    dst = wp.zeros((2, 3), dtype=wp.float64, device=DEVICE)
    utils.array_cast(src, dst)
    np.testing.assert_array_equal(dst.numpy(), np.arange(6).reshape(2, 3))
    with pytest.raises(RuntimeError, match=r"Array shapes do not match \(\(2, 3\) vs \(3, 2\)\)"):
        utils.array_cast(src, wp.zeros((3, 2), dtype=wp.float64, device=DEVICE))
    with pytest.raises(RuntimeError, match=r"Cast count \(5\) exceeds the input size \(3\)"):
        utils.array_cast(warr((1.0, 2.0, 3.0), float), wp.zeros(10, dtype=int, device=DEVICE),
                         count=5)
    with pytest.raises(RuntimeError, match="Partial cast is not supported"):
        utils.array_cast(src, dst, count=1)


# --------------------------------------------------------------------------------------------
# Inside a graph capture: recorded, run on replay (Warp 1.19 records these on the CPU too)


def test_utilities_run_when_the_graph_runs():
    x = warr((3.0, 1.0, 2.0), wp.float32)
    total, scanned = wp.zeros(1, dtype=float, device=DEVICE), wp.zeros(3, dtype=float,
                                                                       device=DEVICE)
    keys, values = warr((3, 1, 2, 0, 0, 0), wp.int32), warr((0, 1, 2, 0, 0, 0), wp.int32)
    with wp.ScopedCapture(device=DEVICE) as capture:
        utils.array_sum(x, out=total)
        utils.array_scan(x, scanned)
        utils.radix_sort_pairs(keys, values, 3)
        with pytest.raises(NotImplementedError, match="explicit out"):
            utils.array_sum(x)
    assert total.numpy()[0] == 0 and keys.numpy()[0] == 3
    wp.capture_launch(capture.graph)
    assert total.numpy()[0] == 6
    np.testing.assert_array_equal(scanned.numpy(), [3, 4, 6])
    np.testing.assert_array_equal(values.numpy()[:3], [1, 2, 0])
    x.assign(np.array((1.0, 1.0, 1.0), np.float32))
    wp.capture_launch(capture.graph)
    assert total.numpy()[0] == 3


# --------------------------------------------------------------------------------------------
# Gradients (gradloom: Warp records nothing for these on a Tape)


def _fd_check(program, x_np, seed_np, h=1e-6):
    """Reverse-mode gradient of sum(seed * program(x)) against central differences (float64)."""
    x = warr(x_np, wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        out = program(x)
    tape.backward(grads={out: warr(seed_np, wp.float64)})
    fd = np.zeros(x_np.size)
    for i in range(x_np.size):
        vals = []
        for sign in (1, -1):
            xp = x_np.copy().reshape(-1)
            xp[i] += sign * h
            vals.append(np.sum(seed_np * program(warr(xp.reshape(x_np.shape), wp.float64))
                               .numpy()))
        fd[i] = (vals[0] - vals[1]) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy().reshape(-1), fd, rtol=1e-6, atol=1e-8)


@gradloom_only
def test_gradients_of_sum_inner_scan_cast():
    x_np = rng.uniform(-1, 1, (3, 4))
    y = warr(rng.uniform(-1, 1, (3, 4)), wp.float64)

    def total(x):
        out = wp.zeros(1, dtype=wp.float64, device=DEVICE, requires_grad=True)
        return utils.array_sum(x, out=out)

    def along(x):
        return utils.array_sum(x, axis=1)

    def inner(x):
        return utils.array_inner(x, y, axis=0)

    def inner_self(x):
        out = wp.zeros(1, dtype=wp.float64, device=DEVICE, requires_grad=True)
        return utils.array_inner(x, x, out=out)

    def scan(x):
        out = wp.zeros(x.size, dtype=wp.float64, device=DEVICE, requires_grad=True)
        utils.array_scan(x.flatten(), out, False)
        return out

    def cast(x):
        out = wp.zeros(x.shape, dtype=wp.float32, device=DEVICE, requires_grad=True)
        utils.array_cast(x, out)
        back = wp.zeros(x.shape, dtype=wp.float64, device=DEVICE, requires_grad=True)
        utils.array_cast(out, back)
        return back

    for program, out_shape in ((total, (1,)), (along, (3, 1)), (inner, (1, 4)),
                               (inner_self, (1,)), (scan, (12,)), (cast, (3, 4))):
        seed = rng.uniform(-1, 1, out_shape)
        if program is cast:  # the float32 round trip: compare at float32 precision
            x = warr(x_np, wp.float64, requires_grad=True)
            tape = wp.Tape()
            with tape:
                out = cast(x)
            tape.backward(grads={out: warr(seed, wp.float64)})
            np.testing.assert_allclose(x.grad.numpy(), seed)
            continue
        _fd_check(program, x_np, seed)


@gradloom_only
def test_sorting_float_values_that_need_gradients_is_refused():
    keys = warr((2, 1, 0, 0), wp.int32)
    values = warr((1.0, 2.0, 0.0, 0.0), wp.float32, requires_grad=True)
    with wp.Tape(), pytest.raises(RuntimeError, match="not differentiable"):
        utils.radix_sort_pairs(keys, values, 2)


# --------------------------------------------------------------------------------------------
# Transform helpers


@wp.kernel
def rotate_between(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3),
                   out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.quat_between_vectors(a[i], b[i])
    out[i] = wp.quat_rotate(q, wp.normalize(a[i]))


def test_quat_between_vectors_and_transform_expand():
    a_np, b_np = rng.normal(size=(6, 3)), rng.normal(size=(6, 3)) * 3.0
    out = wp.zeros(6, dtype=wp.vec3, device=DEVICE)
    wp.launch(rotate_between, dim=6, inputs=[warr(a_np, wp.vec3), warr(b_np, wp.vec3), out],
              device=DEVICE)
    want = b_np / np.linalg.norm(b_np, axis=1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), want, atol=1e-5)
    t = wp.transform_expand((1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0))
    np.testing.assert_array_equal(np.asarray(t), [1, 2, 3, 0, 0, 0, 1])
