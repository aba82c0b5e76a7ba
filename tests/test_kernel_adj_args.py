"""`kernel.adj.args`: the parameter view of Warp's code generator that libraries read (newton's
Kamino declares a generic kernel's float32 overloads from it, before any launch)."""

from __future__ import annotations

from typing import Any

import numpy as np

import gradloom as wp


@wp.kernel
def _scale(a: wp.array(dtype=Any), b: wp.array2d(dtype=Any), n: int, s: wp.float32):
    i = wp.tid()
    b[i, 0] = a[i] * wp.float32(n) + s


def test_args_name_and_type_each_parameter():
    args = _scale.adj.args
    assert [a.label for a in args] == ["a", "b", "n", "s"]
    assert [wp.types.is_array(a.type) for a in args] == [True, True, False, False]
    assert args[0].type.dtype is Any and args[1].type.ndim == 2
    assert args[3].type == wp.float32


def test_overloads_declared_from_the_args_launch():
    # Kamino's idiom, verbatim in shape
    wp.overload(_scale, {arg.label: wp.array(dtype=wp.float32, ndim=arg.type.ndim)
                         for arg in _scale.adj.args
                         if wp.types.is_array(arg.type) and arg.type.dtype is Any})
    a = wp.array([1.0, 2.0, 3.0], dtype=wp.float32)
    b = wp.zeros((3, 1), dtype=wp.float32)
    wp.launch(_scale, 3, inputs=[a, b, 2, 0.5])
    np.testing.assert_allclose(b.numpy().ravel(), [2.5, 4.5, 6.5])
