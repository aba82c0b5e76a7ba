"""`assert` in kernels: compiled out in release mode, checked in debug mode."""

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import KernelRuntimeError


@wp.func
def only_ones(v: int):
    assert v == 1, "element must be 1"
    return v


@wp.kernel
def copy_checked(a: wp.array(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    assert a[i] >= 0
    out[i] = only_ones(a[i]) * 10


@pytest.fixture
def debug_mode():
    old = wp.config.mode
    wp.config.mode = "debug"
    yield
    wp.config.mode = old


def test_release_mode_compiles_asserts_out():
    a = wp.array(np.array([1, -3, 1]), dtype=int)
    out = wp.zeros(3, dtype=int)
    wp.launch(copy_checked, dim=3, inputs=[a, out])
    np.testing.assert_array_equal(out.numpy(), [10, -30, 10])


def test_debug_mode_true_assertions_pass(debug_mode):
    a = wp.array(np.ones(5, np.int32), dtype=int)
    out = wp.zeros(5, dtype=int)
    wp.launch(copy_checked, dim=5, inputs=[a, out])
    np.testing.assert_array_equal(out.numpy(), np.full(5, 10))


def test_debug_mode_names_the_failed_assertion(debug_mode):
    a = wp.array(np.array([1, 1, 1, -4]), dtype=int)
    out = wp.zeros(4, dtype=int)
    with pytest.raises(KernelRuntimeError, match=r"Assertion failed: assert a\[i\] >= 0, in thread 3"):
        wp.launch(copy_checked, dim=4, inputs=[a, out])
    np.testing.assert_array_equal(out.numpy(), np.zeros(4))  # a failed debug launch is undone
    a = wp.array(np.array([1, 2, 1]), dtype=int)
    with pytest.raises(KernelRuntimeError, match="assert v == 1, element must be 1, in thread 1"):
        wp.launch(copy_checked, dim=3, inputs=[a, wp.zeros(3, dtype=int)])
