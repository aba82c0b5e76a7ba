"""Generic kernels over indexed arrays (`wp.indexedarray(dtype=Any)`): overloads and launches."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradloom as wp


@wp.kernel
def _gather(port: wp.indexedarray(dtype=Any), out: wp.array(dtype=Any)):
    i = wp.tid()
    out[i] = port[i]


def test_explicit_overloads_and_launch():
    # newton declares one overload per dtype up front, then launches them
    for dtype in (wp.float32, wp.vec3):
        wp.overload(_gather, {"port": wp.indexedarray(dtype=dtype), "out": wp.array(dtype=dtype)})
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = wp.array([3, 0, 2], dtype=wp.int32)
    vecs = wp.indexedarray(wp.array(data, dtype=wp.vec3), [idx])
    out = wp.zeros(3, dtype=wp.vec3)
    wp.launch(_gather, 3, inputs=[vecs, out])
    np.testing.assert_array_equal(out.numpy(), data[[3, 0, 2]])
    scalars = wp.indexedarray(wp.array(data[:, 0].copy()), [idx])
    out1 = wp.zeros(3, dtype=float)
    wp.launch(_gather, 3, inputs=[scalars, out1])
    np.testing.assert_array_equal(out1.numpy(), data[[3, 0, 2], 0])


def test_a_plain_array_does_not_fit_an_indexed_template():
    with pytest.raises(TypeError, match="type mismatch"):
        wp.overload(_gather, {"port": wp.array(dtype=float), "out": wp.array(dtype=float)})
