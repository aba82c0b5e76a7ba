"""A @wp.func overload may call another overload of the same name (MuJoCo Warp's
`transform_force(frc, offset)` calls `transform_force(force, torque, offset)`); calling itself
is still refused as recursion."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp
from gradloom.errors import UnsupportedSyntaxError


@wp.func
def shift(a: wp.vec3, b: wp.vec3, offset: float) -> wp.vec3:
    return a + b * offset


@wp.func
def shift(ab: wp.spatial_vector, offset: float) -> wp.vec3:  # noqa: F811 (an overload)
    return shift(wp.spatial_top(ab), wp.spatial_bottom(ab), offset)


@wp.kernel
def _use(x: wp.array(dtype=wp.spatial_vector), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = shift(x[i], 2.0)


def test_an_overload_calls_another():
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    out = wp.zeros(2, dtype=wp.vec3)
    wp.launch(_use, 2, inputs=[wp.array(x, dtype=wp.spatial_vector), out])
    np.testing.assert_array_equal(out.numpy(), x[:, :3] + 2.0 * x[:, 3:])


@wp.func
def forever(a: float) -> float:
    return forever(a)


@wp.kernel
def _recursive(out: wp.array(dtype=float)):
    out[0] = forever(1.0)


def test_recursion_is_still_refused():
    with pytest.raises(UnsupportedSyntaxError, match="recursion"):
        wp.launch(_recursive, 1, inputs=[wp.zeros(1, dtype=float)])
