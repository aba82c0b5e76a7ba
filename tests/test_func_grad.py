"""`@wp.func_grad` custom gradients and `@wp.func` overloads / generic functions.

Custom rules are checked against analytic derivatives (and, where the rule is exact, against
float64 central differences), including calls nested in funcs, inside runtime loops and branches,
vector arguments, and tuple results.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gradfd import Arr, check_kernel
from wpcompat import BACKEND, DEVICE, wp

# -- a rule that differs from the true derivative, to prove the rule is what runs ----------------


@wp.func
def clip01(x: float):
    return wp.clamp(x, 0.0, 1.0)


@wp.func_grad(clip01)
def adj_clip01(x: float, adj_ret: float):
    wp.adjoint[x] += adj_ret  # straight-through estimator: pretend the clamp is the identity


@wp.func
def clip_twice(x: float):
    return clip01(x) * 2.0  # the rule must apply through a nested func too


@wp.kernel
def k_clip(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = clip_twice(a[i] * a[i])


def _backward(kernel, inputs, out, seed):
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(out), inputs=[*inputs, out], device=DEVICE)
    tape.backward(grads={out: wp.array(seed, dtype=out.dtype, device=DEVICE)})
    return [np.asarray(a.grad.numpy()) for a in inputs]


def test_custom_rule_replaces_the_derivative_through_nested_funcs() -> None:
    x = np.array([-2.0, 0.5, 3.0], dtype=np.float32)
    a = wp.array(x, dtype=float, device=DEVICE, requires_grad=True)
    out = wp.zeros(3, dtype=float, device=DEVICE, requires_grad=True)
    (g,) = _backward(k_clip, [a], out, np.ones(3, dtype=np.float32))
    np.testing.assert_allclose(out.numpy(), 2.0 * np.clip(x * x, 0, 1))
    # d/dx [2 * clip(x^2)] with the straight-through rule: 2 * 2x everywhere
    np.testing.assert_allclose(g, 4.0 * x, rtol=1e-6)


# -- an exact rule, checked against central differences --------------------------------------------


@wp.func
def softplus(x: wp.float64):
    return wp.log(wp.float64(1.0) + wp.exp(x))


@wp.func_grad(softplus)
def adj_softplus(x: wp.float64, adj_ret: wp.float64):
    wp.adjoint[x] += adj_ret / (wp.float64(1.0) + wp.exp(-x))


@wp.kernel
def k_softplus_loop(a: wp.array(dtype=wp.float64), n: int, out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = a[i]
    for _ in range(n):  # runtime loop: the rule needs each trip's input back
        v = softplus(v) * wp.float64(0.9) - wp.float64(0.3)
    if v > wp.float64(0.0):
        v = softplus(v * v)
    out[i] = v


@pytest.mark.xfail(BACKEND == "warp", strict=True,
                   reason="Warp differentiates runtime loops that reassign a value wrongly")
def test_exact_rule_in_runtime_loop_and_branch_matches_fd() -> None:
    x = np.array([-1.5, 0.2, 0.7, 2.0])
    out = np.zeros(4)
    check_kernel(k_softplus_loop, 4, [Arr(x), 5, Arr(out)], wrt=[0], outputs=[2])


@wp.func
def polar(v: wp.vec2d):
    r = wp.sqrt(v[0] * v[0] + v[1] * v[1])
    return r, wp.atan2(v[1], v[0])


@wp.func_grad(polar)
def adj_polar(v: wp.vec2d, adj_r: wp.float64, adj_t: wp.float64):
    r2 = v[0] * v[0] + v[1] * v[1]
    r = wp.sqrt(r2)
    wp.adjoint[v] += wp.vec2d(v[0] / r, v[1] / r) * adj_r + wp.vec2d(-v[1] / r2, v[0] / r2) * adj_t


@wp.kernel
def k_polar(a: wp.array(dtype=wp.vec2d), r: wp.array(dtype=wp.float64),
            t: wp.array(dtype=wp.float64)):
    i = wp.tid()
    rr, tt = polar(a[i])
    r[i] = rr * wp.float64(2.0)
    t[i] = tt


def test_vector_argument_and_two_results_match_fd() -> None:
    v = np.array([[1.0, 0.5], [-0.3, 2.0], [0.7, -1.1]])
    check_kernel(k_polar, 3, [Arr(v, wp.vec2d), Arr(np.zeros(3)), Arr(np.zeros(3))],
                 wrt=[0], outputs=[1, 2])


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom's error messages")
def test_gradient_function_must_match_an_overload() -> None:
    @wp.func
    def g(x: float):
        return x

    with pytest.raises(wp.GradloomError, match="overload of"):
        @wp.func_grad(g)
        def adj_g(x: int, adj_ret: float):
            pass


@pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom's error messages")
def test_gradient_function_must_not_return() -> None:
    @wp.func
    def h(x: float):
        return x * 2.0

    @wp.func_grad(h)
    def adj_h(x: float, adj_ret: float):
        return adj_ret

    @wp.kernel
    def k(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = h(a[i])

    a = wp.zeros(2, dtype=float, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    with pytest.raises(wp.CompileError, match="must not return") as info:
        wp.launch(k, dim=2, inputs=[a, out])
    assert "test_func_grad.py" in str(info.value)


# -- overloads and generic functions -----------------------------------------------------------------


@wp.func
def scale(x: float):
    return x * 2.0


@wp.func
def scale(x: int):  # noqa: F811 - an overload, as in Warp
    return x * 3


@wp.func
def scale(x: wp.vec3):  # noqa: F811
    return x * 4.0


@wp.kernel
def k_scale(a: wp.array(dtype=float), b: wp.array(dtype=int), c: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a[i] = scale(a[i])
    b[i] = scale(b[i])
    c[i] = scale(c[i])


def test_overloads_dispatch_on_argument_types() -> None:
    a = wp.array(np.array([1.0, 2.5], dtype=np.float32), dtype=float, device=DEVICE)
    b = wp.array(np.array([1, -2], dtype=np.int32), dtype=int, device=DEVICE)
    c = wp.array(np.ones((2, 3), dtype=np.float32), dtype=wp.vec3, device=DEVICE)
    wp.launch(k_scale, dim=2, inputs=[a, b, c], device=DEVICE)
    np.testing.assert_array_equal(a.numpy(), [2.0, 5.0])
    np.testing.assert_array_equal(b.numpy(), [3, -6])
    np.testing.assert_array_equal(c.numpy(), np.full((2, 3), 4.0))


@pytest.mark.skipif(BACKEND != "gradloom", reason="gradloom's error messages")
def test_no_matching_overload_names_the_overloads() -> None:
    @wp.kernel
    def k_bad(a: wp.array(dtype=wp.float64)):
        i = wp.tid()
        a[i] = scale(a[i])

    a = wp.zeros(2, dtype=wp.float64)
    with pytest.raises(wp.KernelTypeError, match=r"no overload of scale\(\) takes \(float64\)"):
        wp.launch(k_bad, dim=2, inputs=[a])


@wp.func
def axpy(a: Any, x: Any, y: Any):
    return a * x + y


@wp.kernel
def k_generic(s: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.vec3),
              m: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    s[i] = axpy(wp.float64(2.0), s[i], s[i])
    v[i] = axpy(2.0, v[i], wp.vec3(1.0, 1.0, 1.0))
    m[i] = axpy(m[i], m[i], m[i])


def test_generic_function_specialises_per_call_signature() -> None:
    s = wp.array(np.array([1.5]), dtype=wp.float64, device=DEVICE)
    v = wp.array(np.array([[1.0, 2.0, 3.0]], dtype=np.float32), dtype=wp.vec3, device=DEVICE)
    m0 = np.array([[[1.0, 2.0], [3.0, 4.0]]], dtype=np.float32)
    m = wp.array(m0, dtype=wp.mat22, device=DEVICE)
    wp.launch(k_generic, dim=1, inputs=[s, v, m], device=DEVICE)
    np.testing.assert_allclose(s.numpy(), [4.5])
    np.testing.assert_allclose(v.numpy(), [[3.0, 5.0, 7.0]])
    np.testing.assert_allclose(m.numpy(), m0 @ m0 + m0)
