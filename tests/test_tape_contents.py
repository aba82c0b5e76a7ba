"""A Tape keeps no copy of an array whose contents the adjoint never uses (autodiff/contents.py).

Linear in-place updates (`y[i] = a * x[i] + y[i]`, `x[i] += v[i] * dt`) have derivatives that
need no primal values: their adjoints drop the replayed writes, read no snapshot and get the
user's array as it is. The gradients must still match finite differences, the user's arrays
must come out of backward untouched, and arrays whose values the adjoint does use must still be
kept as the launch saw them.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradfd import arr, check_kernel

import gradloom as wp
from gradloom.runtime.tape.adjoint import LaunchRecord

F64 = wp.array(dtype=wp.float64)


@wp.kernel
def saxpy(a: wp.float64, x: F64, y: F64):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3d), v: wp.array(dtype=wp.vec3d), dt: wp.float64):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt
    v[i] = v[i] + wp.vec3d(wp.float64(0.0), wp.float64(-9.8), wp.float64(0.0)) * dt


@wp.kernel
def square_in_place(y: F64):
    i = wp.tid()
    y[i] = y[i] * y[i]


@wp.kernel
def double_if_positive(y: F64):
    i = wp.tid()
    if y[i] > wp.float64(0.0):  # the value read picks a branch: the adjoint needs it
        y[i] = wp.float64(2.0) * y[i]


@wp.kernel
def shift_add(x: F64, y: F64):
    i = wp.tid()
    y[i] = y[i] + x[i] * x[i]


def _record(tape: wp.Tape) -> LaunchRecord:
    (record,) = [r for r in tape.records if isinstance(r, LaunchRecord)]
    return record


def _kept(tape: wp.Tape) -> set[int]:
    """The parameter indices of the arrays the tape's one launch record keeps contents of."""
    return {key[0] for key in _record(tape).before}


def test_linear_in_place_update_keeps_no_copy_and_leaves_the_array_alone():
    rng = np.random.default_rng(0)
    x = wp.array(rng.uniform(-1, 1, 64), dtype=wp.float64, requires_grad=True)
    y = wp.array(rng.uniform(-1, 1, 64), dtype=wp.float64, requires_grad=True)
    y_before = y.numpy().copy()
    tape = wp.Tape()
    with tape:
        wp.launch(saxpy, 64, inputs=[2.5, x, y])
    after = y.numpy().copy()
    np.testing.assert_allclose(after, 2.5 * x.numpy() + y_before)
    assert 2 not in _kept(tape)
    seed = rng.uniform(0.5, 1.5, 64)
    tape.backward(grads={y: wp.array(seed, dtype=wp.float64)})
    np.testing.assert_array_equal(y.numpy(), after)  # backward wrote nothing into y's data
    np.testing.assert_allclose(x.grad.numpy(), 2.5 * seed)
    np.testing.assert_allclose(y.grad.numpy(), seed)


@pytest.mark.parametrize("kernel,dim,make,wrt,outputs", [
    (saxpy, 5, lambda: [0.7, arr(np.linspace(-1, 1, 5)), arr(np.linspace(2, 3, 5))], [1, 2], [2]),
    (integrate, 4, lambda: [arr(np.arange(12.0).reshape(4, 3) / 7, wp.vec3d),
                            arr(np.cos(np.arange(12.0)).reshape(4, 3), wp.vec3d), 0.01],
     [0, 1], [0, 1]),
    (square_in_place, 6, lambda: [arr(np.linspace(-1.5, 1.5, 6))], [0], [0]),
    (double_if_positive, 6, lambda: [arr(np.linspace(-1.3, 1.7, 6))], [0], [0]),
    (shift_add, 6, lambda: [arr(np.linspace(-1, 1, 6)), arr(np.linspace(0, 2, 6))], [0, 1], [1]),
])
def test_gradients_match_finite_differences(kernel, dim, make, wrt, outputs):
    check_kernel(kernel, dim, make(), wrt=wrt, outputs=outputs)


@pytest.mark.parametrize("kernel,kept", [(square_in_place, {0}), (double_if_positive, {0}),
                                         (shift_add, {0}), (integrate, set())])
def test_arrays_whose_values_the_adjoint_uses_are_kept(kernel, kept):
    if kernel is integrate:
        args = [wp.zeros(3, dtype=wp.vec3d, requires_grad=True),
                wp.ones(3, dtype=wp.vec3d, requires_grad=True), 0.1]
    else:
        args = [wp.array(np.linspace(-1, 1, 3), dtype=wp.float64, requires_grad=True)
                for _ in range(2 if kernel is shift_add else 1)]
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, 3, inputs=args)
    assert _kept(tape) == kept


def test_later_overwrite_of_an_unkept_array_does_not_change_gradients():
    # y is not kept for saxpy's adjoint; a later launch squares y in place (it keeps its own
    # copy of the y it read): dL/dx must still be a * 2 * y1 * seed with y1 = a x + y0
    x0, y0 = np.linspace(-1, 1, 8), np.linspace(0.5, 1.5, 8)
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    y = wp.array(y0, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(saxpy, 8, inputs=[0.3, x, y])
        wp.launch(square_in_place, 8, inputs=[y])
    seed = np.linspace(1, 2, 8)
    tape.backward(grads={y: wp.array(seed, dtype=wp.float64)})
    y1 = 0.3 * x0 + y0
    np.testing.assert_allclose(x.grad.numpy(), 0.3 * 2 * y1 * seed)
    np.testing.assert_allclose(y.grad.numpy(), 2 * y1 * seed)
