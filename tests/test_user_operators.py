"""Warp's operator overloading: a @wp.func named for an operator (`add`, `sub`, `mul`, ...) in
a kernel's scope is what `a + b`, `a += b` and `a[i].x += b` call when one of its overloads
takes the operands; other operands keep the builtin operator (and its atomic `+=` on arrays).

This module defines `add` and `sub`, so every kernel here sees them (as in Warp). Runs on
gradloom by default and on warp-lang with GL_TEST_BACKEND=warp (wpcompat.py).
"""

import numpy as np
import pytest
from wpcompat import BACKEND, DEVICE, wp

gradloom_only = pytest.mark.skipif(BACKEND == "warp", reason="a deliberate gradloom difference")


@wp.func
def add(x: wp.float32, y: wp.float32) -> wp.float32:
    return wp.add(x * y, wp.sin(y))  # the builtin (Warp's `+` here would call add again)


@wp.func
def sub(x: wp.float32, y: wp.float32) -> wp.float32:
    return wp.sub(x, 2.0 * y)


@wp.kernel(module="unique", enable_backward=False)
def slot_updates(values: wp.array(dtype=wp.vec3), rhs: float):
    values[0].x += rhs  # add(x, rhs)
    values[0][1] -= rhs  # sub(y, rhs)


@wp.kernel(module="unique", enable_backward=False)
def name_and_expression(a: wp.array(dtype=float), n: wp.array(dtype=int)):
    x = a[0] + 2.0  # add(a[0], 2.0)
    y = a[1]
    y -= 1.0  # sub(y, 1.0)
    a[0] = x
    a[1] = y
    n[0] = n[0] + 1  # ints: no overload takes them, the builtin +


@wp.kernel(module="unique", enable_backward=False)
def other_types_stay_builtin(values: wp.array(dtype=wp.vec3d), counts: wp.array(dtype=int)):
    values[0].x += wp.float64(2.0)  # float64: the builtin, atomic +=
    counts[0] += 1


def test_slot_updates_call_the_user_operators():
    values = wp.array([wp.vec3(3.0, 3.0, 3.0)], dtype=wp.vec3, device=DEVICE)
    wp.launch(slot_updates, dim=1, inputs=[values, 0.5], device=DEVICE)
    expect = np.float32([3.0 * 0.5 + np.sin(0.5), 3.0 - 1.0, 3.0])
    np.testing.assert_allclose(values.numpy()[0], expect, rtol=1e-6)


def test_expressions_and_augmented_names_call_the_user_operators():
    a = wp.array([5.0, 5.0], dtype=float, device=DEVICE)
    n = wp.array([4], dtype=int, device=DEVICE)
    wp.launch(name_and_expression, dim=1, inputs=[a, n], device=DEVICE)
    np.testing.assert_allclose(a.numpy(), [5.0 * 2.0 + np.sin(2.0), 5.0 - 2.0], rtol=1e-6)
    assert n.numpy()[0] == 5


def test_operands_no_overload_takes_use_the_builtin():
    values = wp.array([wp.vec3d(1.0, 1.0, 1.0)], dtype=wp.vec3d, device=DEVICE)
    counts = wp.zeros(1, dtype=int, device=DEVICE)
    wp.launch(other_types_stay_builtin, dim=4, inputs=[values, counts], device=DEVICE)
    assert values.numpy()[0, 0] == 9.0 and counts.numpy()[0] == 4


@wp.kernel(module="unique")
def slot_update_then_square(values: wp.array(dtype=wp.vec3), rhs: wp.array(dtype=float),
                            out: wp.array(dtype=float)):
    i = wp.tid()
    values[i].y += rhs[i]  # add(y, rhs): y * rhs + sin(rhs)
    out[i] = values[i].y * values[i].y


@gradloom_only
def test_slot_update_through_a_user_operator_differentiates():
    """Warp refuses backward code for this kernel; gradloom's adjoint of the read, the user's
    function and the store is the derivative (float64 central differences)."""
    v0 = np.float32([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    r0 = np.float32([0.3, 0.7])
    values = wp.array(v0, dtype=wp.vec3, requires_grad=True, device=DEVICE)
    rhs = wp.array(r0, dtype=float, requires_grad=True, device=DEVICE)
    out = wp.zeros(2, dtype=float, requires_grad=True, device=DEVICE)
    tape = wp.Tape()
    with tape:
        wp.launch(slot_update_then_square, dim=2, inputs=[values, rhs, out], device=DEVICE)
    tape.backward(grads={out: wp.ones(2, dtype=float, device=DEVICE)})

    def loss(y0, r):
        y = y0 * r + np.sin(r)
        return float((y * y).sum())

    y0, r = v0[:, 1].astype(np.float64), r0.astype(np.float64)
    eps = 1e-6
    fd_r = [(loss(y0, r + eps * e) - loss(y0, r - eps * e)) / (2 * eps) for e in np.eye(2)]
    fd_y = [(loss(y0 + eps * e, r) - loss(y0 - eps * e, r)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(rhs.grad.numpy(), fd_r, rtol=1e-5)
    np.testing.assert_allclose(values.grad.numpy()[:, 1], fd_y, rtol=1e-5)
    np.testing.assert_array_equal(values.grad.numpy()[:, [0, 2]], 0.0)
