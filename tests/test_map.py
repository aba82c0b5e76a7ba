"""`wp.map` against numpy references (also run on warp-lang with GL_TEST_BACKEND=warp)."""

from __future__ import annotations

import numpy as np
import pytest
from wpcompat import DEVICE, wp

rng = np.random.default_rng(3)


def f32(*values):
    return np.array(values, dtype=np.float32)


def warr(data, dtype=wp.float32, **kw):
    return wp.array(data, dtype=dtype, device=DEVICE, **kw)


@wp.func
def affine(x: float):
    return 2.0 * x - 10.0


@wp.func
def split(x: float):
    return x * x, x + 1.0


@wp.func
def nothing(x: float):
    pass


def test_lambda_over_several_arrays():
    a, b, c = warr(f32(1, 2, 3)), warr(f32(4, 5, 6)), warr(f32(7, 8, 9))
    out = wp.map(lambda x, y, z: x + 2.0 * y - z, a, b, c)
    np.testing.assert_array_equal(out.numpy(), f32(2, 4, 6))
    scale = 3.0
    scaled = wp.map(lambda v: v * scale, a)
    np.testing.assert_array_equal(scaled.numpy(), f32(3, 6, 9))
    # fmt: off
    multi = wp.map(lambda v: (
        v + 1.0
        + 2.0), a)
    # fmt: on
    np.testing.assert_array_equal(multi.numpy(), f32(4, 5, 6))


def test_builtin_in_place_and_values():
    xs = warr(f32(-1, 0, 1))
    assert wp.map(wp.clamp, xs, -0.5, 0.5, out=xs) is xs
    np.testing.assert_array_equal(xs.numpy(), f32(-0.5, 0, 0.5))
    conds = wp.array([True, False, True], dtype=bool, device=DEVICE)
    np.testing.assert_array_equal(wp.map(wp.where, conds, 1.0, 0.0).numpy(), f32(1, 0, 1))
    vecs = warr(rng.uniform(-1, 1, (4, 3)), wp.vec3)
    lengths = wp.map(wp.length, vecs)
    np.testing.assert_allclose(lengths.numpy(), np.linalg.norm(vecs.numpy(), axis=1), rtol=1e-6)


def test_func_with_several_results():
    x = rng.uniform(-1, 1, 5).astype(np.float32)
    sq, inc = wp.map(split, warr(x))
    np.testing.assert_allclose(sq.numpy(), x * x, rtol=1e-6)
    np.testing.assert_allclose(inc.numpy(), x + 1, rtol=1e-6)
    out = [wp.empty(5, dtype=float, device=DEVICE), wp.empty(5, dtype=float, device=DEVICE)]
    assert wp.map(split, warr(x), out=out) == out


def test_broadcasting():
    m = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    r = rng.uniform(-1, 1, 3).astype(np.float32)
    col = rng.uniform(-1, 1, (2, 1)).astype(np.float32)
    np.testing.assert_allclose(wp.map(wp.add, warr(m), warr(r)).numpy(), m + r, rtol=1e-6)
    np.testing.assert_allclose(wp.map(wp.add, warr(r), warr(m)).numpy(), m + r, rtol=1e-6)
    out = wp.map(lambda a, b, c: a + b * c, warr(col), warr(r), 2.0)
    np.testing.assert_allclose(out.numpy(), col + r * 2.0, rtol=1e-6)


def test_gradient_through_map():
    x = warr(np.arange(5, dtype=np.float32), requires_grad=True)
    tape = wp.Tape()
    with tape:
        y = wp.map(affine, x)
    assert y.requires_grad
    tape.backward(grads={y: warr(f32(1, 2, 3, 4, 5))})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * f32(1, 2, 3, 4, 5))


def test_return_kernel_and_capture():
    a = warr(np.arange(4, dtype=np.float32))
    k = wp.map(lambda v: v + 2.0, a, return_kernel=True)
    assert isinstance(k, wp.Kernel)
    out = wp.zeros(4, dtype=float, device=DEVICE)
    wp.launch(k, dim=4, inputs=[a], outputs=[out], device=DEVICE)
    np.testing.assert_array_equal(out.numpy(), f32(2, 3, 4, 5))
    res = wp.zeros(4, dtype=float, device=DEVICE)
    with wp.ScopedCapture(device=DEVICE) as capture:
        wp.map(lambda v: v * 10.0, a, out=res)
    np.testing.assert_array_equal(res.numpy(), np.zeros(4, np.float32))
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(res.numpy(), f32(0, 10, 20, 30))


def test_errors():
    xs, ys = wp.zeros(3, dtype=float, device=DEVICE), wp.zeros(5, dtype=float, device=DEVICE)
    with pytest.raises(TypeError, match="must return a value"):
        wp.map(nothing, xs)
    with pytest.raises(TypeError, match=r"Number of input arguments \(2\) does not match"):
        wp.map(affine, xs, xs)
    with pytest.raises(ValueError, match=r"Shapes \(3,\) and \(5,\) are not broadcastable"):
        wp.map(wp.add, xs, ys)
    with pytest.raises(ValueError, match="at least one warp.array input"):
        wp.map(lambda a, b: a * b, 2.0, 0.5)
    with pytest.raises(TypeError, match="dtype int32 does not match expected dtype float32"):
        wp.map(wp.sub, xs, xs, out=wp.empty(3, dtype=wp.int32, device=DEVICE))
    with pytest.raises(TypeError, match=r"shape \(3, 1\) does not match expected shape \(3,\)"):
        wp.map(wp.mul, xs, xs, out=wp.empty((3, 1), dtype=float, device=DEVICE))
    with pytest.raises(TypeError, match=r"expected 2 Warp arrays with shape \(3,\)"):
        wp.map(split, xs, out=wp.empty(3, dtype=float, device=DEVICE))


@pytest.mark.skipif(wp.__name__ != "gradloom", reason="gradloom's kernel cache")
def test_same_lambda_source_reuses_one_kernel():
    from gradloom.utils.mapping import map_cache

    a = warr(f32(1, 2))
    wp.map(lambda x: x * 3.0, a)
    size = len(map_cache)
    for _ in range(3):
        wp.map(lambda x: x * 3.0, a)
    assert len(map_cache) == size
    b = warr(np.ones(2), wp.float64)  # a new specialisation
    wp.map(lambda x: x * 3.0, b)
    assert len(map_cache) == size + 1
