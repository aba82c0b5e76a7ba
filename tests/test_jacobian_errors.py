"""jacobian / jacobian_fd refusals Warp raises ValueError for: kernels without an adjoint, masks
naming nothing."""

import numpy as np
import pytest

import gradloom as wp
from gradloom import autograd as ag


@wp.kernel(enable_backward=False)
def no_adjoint(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = 2.0 * a[i]


@wp.kernel
def doubled(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = 2.0 * a[i]


def _args():
    return (wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True),
            wp.zeros(2, requires_grad=True))


def test_kernel_without_adjoint_is_refused():
    a, out = _args()
    with pytest.raises(ValueError, match="backward pass enabled"):
        ag.jacobian(no_adjoint, dim=2, inputs=[a], outputs=[out])

    def pipeline(x):
        y = wp.zeros_like(x, requires_grad=True)
        wp.launch(no_adjoint, dim=2, inputs=[x], outputs=[y])
        return y

    with pytest.raises(ValueError, match="no_adjoint"):
        ag.jacobian(pipeline, inputs=[a])
    # finite differences need no adjoint
    jac = ag.jacobian_fd(no_adjoint, dim=2, inputs=[a], outputs=[out])[0, 0].numpy()
    np.testing.assert_allclose(jac, 2.0 * np.eye(2), rtol=1e-3)


def test_mask_naming_nothing_is_a_value_error():
    a, out = _args()
    for fn in (ag.jacobian, ag.jacobian_fd):
        with pytest.raises(ValueError, match="no input 'bogus'"):
            fn(doubled, dim=2, inputs=[a], outputs=[out], input_output_mask=[("bogus", 0)])
