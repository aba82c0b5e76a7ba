"""gradcheck_tape: each launch a wp.Tape recorded is checked against finite differences."""

import numpy as np
import pytest

import gradloom as wp
from gradloom.autograd import GradcheckError, gradcheck_tape
from gradloom.errors import GradloomError


@wp.func
def sign_flipped_square(x: float):
    return x * x


@wp.func_grad(sign_flipped_square)
def adj_sign_flipped_square(x: float, adj: float):
    wp.adjoint[x] -= 2.0 * x * adj  # deliberately wrong: d(x*x)/dx is +2x


@wp.kernel
def wrong(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = sign_flipped_square(a[i])


@wp.kernel
def right(a: wp.array(dtype=float), b: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    out[i] = wp.vec2(wp.sin(a[i]) * b[i][0], a[i] * wp.dot(b[i], b[i]))


@wp.kernel(enable_backward=False)
def wrong_without_adjoint(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = sign_flipped_square(a[i])


def _recorded(*kernels):
    a = wp.array(np.array([0.5, -1.25, 2.0], np.float32), requires_grad=True)
    b = wp.array(np.arange(9, dtype=np.float32).reshape(3, 3) / 4, dtype=wp.vec3,
                 requires_grad=True)
    with wp.Tape() as tape:
        for k in kernels:
            if k is right:
                wp.launch(k, dim=3, inputs=[a, b], outputs=[wp.zeros(3, dtype=wp.vec2,
                                                                     requires_grad=True)])
            else:
                wp.launch(k, dim=3, inputs=[a], outputs=[wp.zeros(3, requires_grad=True)])
    return tape, a


def test_correct_launches_pass():
    tape, _ = _recorded(right, right)
    assert gradcheck_tape(tape, show_summary=False)


def test_wrong_adjoint_is_found_and_named():
    tape, a = _recorded(right, wrong)
    a_before = a.numpy().copy()
    assert not gradcheck_tape(tape, raise_exception=False, show_summary=False)
    with pytest.raises(GradcheckError, match="launch 1 of kernel '.*wrong'"):
        gradcheck_tape(tape, show_summary=False)
    np.testing.assert_array_equal(a.numpy(), a_before)  # the check ran on copies


def test_lists_and_ranges_select_launches():
    tape, _ = _recorded(right, wrong)
    assert gradcheck_tape(tape, blacklist_kernels=[wrong], show_summary=False)
    assert gradcheck_tape(tape, whitelist_kernels=[right.key], show_summary=False)
    assert not gradcheck_tape(tape, whitelist_kernels=[wrong], raise_exception=False,
                              show_summary=False)
    assert gradcheck_tape(tape, reverse_launches=True, skip_to_launch_index=1,
                          show_summary=False)  # reversed, launch 0 (wrong) is skipped


def test_kernels_without_adjoint_are_skipped():
    tape, _ = _recorded(wrong_without_adjoint)
    assert gradcheck_tape(tape, show_summary=False)


def test_not_a_tape():
    with pytest.raises(GradloomError, match="expects a wp.Tape"):
        gradcheck_tape([1, 2])
