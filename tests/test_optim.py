"""`wp.optim.Adam` / `wp.optim.SGD` against float64 numpy references of Warp's update rules (and,
when warp-lang is installed, against warp-lang's optimizers on the same data)."""

from __future__ import annotations

import importlib
import importlib.util

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

importlib.import_module(f"{wp.__name__}.optim")  # `import warp.optim` / `import gradloom.optim`

STEPS = 6
rng = np.random.default_rng(7)


def adam_reference(p, grads, lr, b1, b2, eps):
    """Adam as Warp documents it (moments start at zero, bias-corrected), in float64."""
    p, m, v = p.astype(np.float64), np.zeros_like(p, np.float64), np.zeros_like(p, np.float64)
    for t, g in enumerate(grads):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat, vhat = m / (1 - b1 ** (t + 1)), v / (1 - b2 ** (t + 1))
        p = p - lr * mhat / (np.sqrt(vhat) + eps)
    return p


def sgd_reference(p, grads, lr, momentum, dampening, weight_decay, nesterov):
    """Warp's SGD: the momentum buffer is the first gradient, then decays with dampening."""
    p, b = p.astype(np.float64), np.zeros_like(p, np.float64)
    for t, g in enumerate(grads):
        g = g + weight_decay * p
        if momentum:
            b = g if t == 0 else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        p = p - lr * g
    return p


def _data(shape, np_dtype):
    p = rng.uniform(-1, 1, size=shape).astype(np_dtype)
    grads = [rng.uniform(-1, 1, size=shape).astype(np_dtype) for _ in range(STEPS)]
    return p, grads


def _run(opt_factory, dtype, p_np, grads_np):
    params = wp.array(p_np, dtype=dtype, device=DEVICE)
    opt = opt_factory([params])
    for g in grads_np:
        opt.step([wp.array(g, dtype=dtype, device=DEVICE)])
    return params.numpy()


@pytest.mark.parametrize("dtype_name, shape, np_dtype, tol", [
    ("float32", (5,), np.float32, 1e-5),
    ("vec3", (4, 3), np.float32, 1e-5),
    ("float16", (5,), np.float16, 3e-3),
])
def test_adam_matches_reference(dtype_name, shape, np_dtype, tol):
    dtype = getattr(wp, dtype_name)
    p, grads = _data(shape, np_dtype)
    got = _run(lambda ps: wp.optim.Adam(ps, lr=0.05, betas=(0.8, 0.99), eps=1e-6), dtype, p,
               grads)
    want = adam_reference(p, [g.astype(np.float64) for g in grads], 0.05, 0.8, 0.99, 1e-6)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("momentum, dampening, weight_decay, nesterov", [
    (0.0, 0.0, 0.0, False),
    (0.9, 0.0, 0.0, False),
    (0.9, 0.3, 0.01, False),
    (0.9, 0.0, 0.05, True),
])
@pytest.mark.parametrize("dtype_name, shape", [("float32", (5,)), ("vec3", (4, 3))])
def test_sgd_matches_reference(momentum, dampening, weight_decay, nesterov, dtype_name, shape):
    p, grads = _data(shape, np.float32)
    got = _run(lambda ps: wp.optim.SGD(ps, lr=0.1, momentum=momentum, dampening=dampening,
                                       weight_decay=weight_decay, nesterov=nesterov),
               getattr(wp, dtype_name), p, grads)
    want = sgd_reference(p, grads, 0.1, momentum, dampening, weight_decay, nesterov)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_reset_and_set_params_keep_or_clear_state():
    params = wp.array(np.ones(3, np.float32), dtype=float, device=DEVICE)
    opt = wp.optim.Adam([params], lr=0.1)
    m0, v0 = opt.m[0], opt.v[0]
    opt.step([wp.array(np.ones(3, np.float32), dtype=float, device=DEVICE)])
    opt.set_params([params])  # same shape and dtype: the state is kept
    assert opt.m[0] is m0 and opt.v[0] is v0 and np.all(m0.numpy() != 0)
    opt.reset_internal_state()
    assert opt.t == 0 and np.all(m0.numpy() == 0) and np.all(v0.numpy() == 0)

    sgd = wp.optim.SGD([params], lr=0.1, momentum=0.5)
    sgd.step([wp.array(np.ones(3, np.float32), dtype=float, device=DEVICE)])
    assert np.all(sgd.b[0].numpy() == 1) and sgd.t == 1
    sgd.reset_internal_state()
    assert sgd.t == 0 and np.all(sgd.b[0].numpy() == 0)


def test_optimizer_argument_errors():
    with pytest.raises(RuntimeError, match=r"must be set before calling step\(\), got None"):
        wp.optim.Adam().step([])
    with pytest.raises(RuntimeError, match=r"must be set before calling step\(\), got None"):
        wp.optim.SGD().step([])
    params = wp.zeros(2, dtype=wp.float32, device=DEVICE)
    for opt in (wp.optim.Adam([params]), wp.optim.SGD([params])):
        with pytest.raises(TypeError, match="gradient dtype must match parameter dtype float32"):
            opt.step([wp.zeros(2, dtype=wp.int32, device=DEVICE)])
        with pytest.raises(ValueError, match=r"shape must match parameter shape \(2,\)"):
            opt.step([wp.zeros((2, 1), dtype=wp.float32, device=DEVICE)])
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        wp.optim.Adam([wp.zeros(2, dtype=wp.int32, device=DEVICE)])


def test_adam_minimises_with_tape_gradients():
    @wp.kernel
    def objective(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(loss, 0, (x[i] - 3.0) * (x[i] - 3.0))

    x = wp.array(np.zeros(4, np.float32), dtype=float, requires_grad=True, device=DEVICE)
    loss = wp.zeros(1, dtype=float, requires_grad=True, device=DEVICE)
    opt = wp.optim.Adam([x], lr=0.1)
    tape = wp.Tape()
    for _ in range(300):
        tape.reset()
        loss.zero_()
        with tape:
            wp.launch(objective, dim=4, inputs=[x, loss], device=DEVICE)
        tape.backward(loss=loss)
        opt.step([x.grad])
    np.testing.assert_allclose(x.numpy(), np.full(4, 3.0), atol=1e-2)


@pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom superset")
def test_float64_and_multidimensional_parameters():
    p, grads = _data((2, 3), np.float64)
    params = wp.array(p, dtype=wp.float64, device=DEVICE)  # 2-D: updated through a flat view
    opt = wp.optim.Adam([params], lr=0.05)
    for g in grads:
        opt.step([wp.array(g, dtype=wp.float64, device=DEVICE)])
    want = adam_reference(p.reshape(-1), [g.reshape(-1) for g in grads], 0.05, 0.9, 0.999, 1e-8)
    np.testing.assert_allclose(params.numpy().reshape(-1), want, rtol=1e-12)


@pytest.mark.skipif(BACKEND != "gradloom" or importlib.util.find_spec("warp") is None,
                    reason="compares gradloom with an installed warp-lang")
@pytest.mark.parametrize("kind", ["adam", "sgd"])
def test_same_trajectory_as_warp_lang(kind):
    import warp

    warp.config.quiet = True
    import warp.optim as warp_optim

    p, grads = _data((4, 3), np.float32)
    results = []
    for lib, optim in ((wp, wp.optim), (warp, warp_optim)):
        params = lib.array(p, dtype=lib.vec3, device="cpu")
        if kind == "adam":
            opt = optim.Adam([params], lr=0.03, betas=(0.85, 0.995))
        else:
            opt = optim.SGD([params], lr=0.03, momentum=0.9, dampening=0.1, weight_decay=0.01)
        for g in grads:
            opt.step([lib.array(g, dtype=lib.vec3, device="cpu")])
        results.append(params.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-7)
