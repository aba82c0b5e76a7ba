"""Array dimensions stay within int32 (kernels index and read `.shape` in int32, as Warp's):
a larger one is refused with Warp's words, from a shape or from data, before any memory."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp

WORDS = "Array shapes must not exceed the maximum representable value of a signed 32-bit integer"


def test_a_dimension_past_int32_is_refused() -> None:
    with pytest.raises(ValueError, match=WORDS):
        wp.zeros(2**31, dtype=int)
    with pytest.raises(ValueError, match=WORDS):
        wp.empty((2, 2**31), dtype=wp.int8)
    # a zero-stride view: nothing is allocated before the check
    with pytest.raises(ValueError, match=WORDS):
        wp.array(np.broadcast_to(np.zeros(1, np.int8), (2**31,)), dtype=wp.int8)


def test_the_largest_int32_dimension_is_fine() -> None:
    assert wp.zeros((2**31 - 1, 0), dtype=float).shape == (2**31 - 1, 0)
