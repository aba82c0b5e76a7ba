"""A kernel compiled with `enable_backward=False` launched inside a recorded region: as in
warp-lang, `backward()` warns, naming the kernel, and no gradient flows through that launch;
the other launches' gradients are right (analytic derivatives)."""

import warnings

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import GradloomWarning

f64 = wp.float64


@wp.kernel(enable_backward=False)
def prescribe(x: wp.array(dtype=f64), value: f64):
    i = wp.tid()
    x[i] = value


@wp.kernel
def square(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def scale_into(z: wp.array(dtype=f64), y: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    out[i] = z[i] * y[i]


def _record(x0, z0):
    x = wp.array(x0, dtype=f64, requires_grad=True)
    z = wp.array(z0, dtype=f64, requires_grad=True)
    y = wp.zeros(3, dtype=f64, requires_grad=True)
    out = wp.zeros(3, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 3, inputs=[x, y])
        wp.launch(scale_into, 3, inputs=[z, y, out])
        wp.launch(prescribe, 3, inputs=[z, f64(2.0)])  # prescribed positions, each substep
    return tape, x, z, out


def test_backward_warns_and_skips_the_launch():
    x0, z0 = np.array([0.5, -1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    tape, x, z, out = _record(x0, z0)
    with pytest.warns(GradloomWarning, match="'.*prescribe' was defined with enable_backward=False"):
        tape.backward(grads={out: wp.array(np.ones(3), dtype=f64), z: wp.array(np.ones(3),
                                                                                dtype=f64)})
    # out = z0 * x², so d/dx = 2 z0 x; z's gradient: its seed (the skipped launch consumed
    # nothing) plus x² from scale_into
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * z0 * x0, rtol=1e-15)
    np.testing.assert_allclose(z.grad.numpy(), 1.0 + x0 * x0, rtol=1e-15)


def test_the_warning_points_at_the_callers_line():
    tape, _, _, out = _record(np.ones(3), np.ones(3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tape.backward(grads={out: wp.array(np.ones(3), dtype=f64)})
    assert len(caught) == 1 and caught[0].filename == __file__


def test_module_option_disables_backward_too():
    @wp.kernel(module="unique")
    def double(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
        i = wp.tid()
        y[i] = x[i] * f64(2.0)

    wp.set_module_options({"enable_backward": False}, module=double.module)
    x = wp.array(np.array([1.0, 2.0]), dtype=f64, requires_grad=True)
    y = wp.zeros(2, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(double, 2, inputs=[x, y])
    with pytest.warns(GradloomWarning, match="double"):
        tape.backward(grads={y: wp.array(np.ones(2), dtype=f64)})
    assert not np.any(x.grad.numpy())
