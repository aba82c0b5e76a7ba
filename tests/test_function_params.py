"""`g: wp.Function` parameters: a function passed by name to a @wp.func and called there."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import CompileError, KernelTypeError


@wp.func
def _square(x: float):
    return x * x


@wp.func
def _cube(x: float):
    return x * x * x


@wp.func
def _apply(g: wp.Function, x: float):
    return g(x)


@wp.func
def _apply_default(x: float, g: wp.Function = _cube):
    return g(x)


@wp.func
def _apply_twice(g: wp.Function, x: float):
    return _apply(g, _apply(g, x))


@wp.kernel
def _calls(out: wp.array[float]):
    out[0] = _apply(_square, 3.0)
    out[1] = _apply(g=_cube, x=2.0)
    out[2] = _apply_default(2.0)
    out[3] = _apply(wp.sin, 0.5)
    out[4] = _apply_twice(_square, 3.0)
    out[5] = wp.grad(_apply)(_cube, 2.0)
    out[6] = wp.grad(_apply)(wp.sin, 0.5)


def test_function_arguments_in_kernels():
    out = wp.zeros(7, dtype=float)
    wp.launch(_calls, dim=1, inputs=[out])
    expect = [9.0, 8.0, 8.0, np.sin(0.5), 81.0, 12.0, np.cos(0.5)]  # d/dx x^3 = 3x^2
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-6)


def test_function_arguments_in_python_scope():
    assert _apply(_square, 4.0) == pytest.approx(16.0)
    assert _apply_default(3.0) == pytest.approx(27.0)
    with pytest.raises(RuntimeError, match="^Error calling function '_apply', no overload"):
        _apply(lambda x: x, 3.0)  # a Python lambda is not a kernel function


@wp.func
def _apply_any(g: wp.Function, x: Any):
    return g(x)


@wp.kernel
def _poly(x: wp.array[wp.float64], out: wp.array[wp.float64]):
    i = wp.tid()
    out[i] = _apply_any(wp.sin, x[i]) * _apply_any(wp.exp, x[i])


def test_gradients_through_function_arguments():
    x0 = np.array([0.2, -0.9, 1.4])
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(_poly, dim=3, inputs=[x, out])
    tape.backward(grads={out: wp.ones(3, dtype=wp.float64)})
    analytic = np.exp(x0) * (np.cos(x0) + np.sin(x0))
    np.testing.assert_allclose(x.grad.numpy(), analytic, rtol=1e-12)


@wp.func
def _with_grad(g: wp.Function, x: float):
    return g(x)


@wp.func_grad(_with_grad)
def _adj_with_grad(g: wp.Function, x: float, adj_ret: float):
    wp.adjoint[x] += adj_ret


@wp.kernel
def _custom(out: wp.array[float]):
    out[0] = _with_grad(_square, 2.0)


@wp.func
def _with_replay(g: wp.Function, x: float):
    return g(x)


@wp.func_replay(_with_replay)
def _replay_with_replay(g: wp.Function, x: float):
    return g(x)


@wp.kernel
def _replayed(out: wp.array[float]):
    out[0] = _with_replay(_square, 2.0)


@wp.kernel
def _not_a_function(out: wp.array[float]):
    out[0] = _apply(1.0, 2.0)


def test_refusals():
    with pytest.raises(CompileError, match="custom gradients"):
        wp.launch(_custom, dim=1, inputs=[wp.zeros(1, dtype=float)])
    with pytest.raises(CompileError, match="replay functions"):
        wp.launch(_replayed, dim=1, inputs=[wp.zeros(1, dtype=float)])
    with pytest.raises(KernelTypeError):
        wp.launch(_not_a_function, dim=1, inputs=[wp.zeros(1, dtype=float)])


@wp.kernel
def _default_call(out: wp.array[float]):
    out[0] = _apply_default(2.0)


def test_changed_defaults_change_the_kernel():
    """Warp's `Function.defaults` is the function's live default table: a kernel built after a
    change calls the new default, and the module hash follows it."""
    out = wp.zeros(1, dtype=float)
    assert _apply_default.defaults["g"] is _cube
    wp.launch(_default_call, dim=1, inputs=[out])
    assert out.numpy()[0] == 8.0
    before = _default_call.module.hash_module()
    saved = _apply_default.defaults.copy()
    try:
        _apply_default.defaults["g"] = _square
        assert _default_call.module.hash_module() != before
        _default_call.unload()
        wp.launch(_default_call, dim=1, inputs=[out])
        assert out.numpy()[0] == 4.0
    finally:
        _apply_default.defaults = saved
        _default_call.unload()
    assert _default_call.module.hash_module() == before
