"""Closure variables of a kernel are read when it is compiled (as Python and Warp resolve them):
a name its enclosing function assigns after the definition works, and a kernel defined after a
rebinding sees the new value. An unknown component of a captured vector is an AttributeError in
Warp's words."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp


def test_a_closure_name_assigned_after_the_definition() -> None:
    @wp.kernel(module="unique")
    def fill(out: wp.array(dtype=float)):
        out[wp.tid()] = LATE

    LATE = wp.constant(3.0)  # noqa: N806 (a constant, named as Warp's examples name them)
    out = wp.zeros(2, dtype=float)
    wp.launch(fill, dim=2, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [3.0, 3.0])

    @wp.kernel(module="unique")
    def fill_again(out: wp.array(dtype=float)):
        out[wp.tid()] = LATE

    LATE = wp.constant(5.0)  # noqa: N806
    wp.launch(fill_again, dim=2, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [5.0, 5.0])


def test_a_name_never_assigned_is_still_unknown() -> None:
    @wp.kernel(module="unique")
    def read(out: wp.array(dtype=float)):
        out[0] = NEVER

    with pytest.raises(KeyError, match="NEVER"):
        wp.launch(read, dim=1, inputs=[wp.zeros(1, dtype=float)])
    if False:
        NEVER = 1.0  # noqa: F841 (a closure cell that stays empty)


CAPTURED = wp.vec3(1.0, 2.0, 3.0)


def test_an_unknown_component_is_an_attribute_error() -> None:
    @wp.kernel(module="unique")
    def bad(out: wp.array(dtype=float)):
        out[0] = CAPTURED.foo

    with pytest.raises(AttributeError, match=r"`foo` is not an attribute of 'CAPTURED' \(vec3f\)"):
        wp.launch(bad, dim=1, inputs=[wp.zeros(1, dtype=float)])
