"""`wp.array(data, dtype=vector or matrix)`: inner dimensions of length 1 are dropped before the
element's dimensions are taken from the data, as Warp does (a column of vectors, (n, 3, 1))."""

from __future__ import annotations

import numpy as np
import pytest

import gradloom as wp


@pytest.mark.parametrize(("shape", "dtype", "expected"), [
    ((4, 2, 1), wp.vec2, (4,)),
    ((4, 3, 1), wp.vec3, (4,)),
    ((4, 4, 1), wp.mat22, (4,)),
    ((2, 3, 2, 1), wp.vec2, (2, 3)),
    ((6, 1), wp.vec2, (3,)),
    ((4, 1, 2), wp.vec2, (4, 1)),  # a trailing 2: the vector, the 1 before it stays
])
def test_inner_ones_are_dropped(shape: tuple[int, ...], dtype: object,
                                expected: tuple[int, ...]) -> None:
    data = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    a = wp.array(data, dtype=dtype)
    assert a.shape == expected
    np.testing.assert_array_equal(a.numpy().ravel(), data.ravel())


def test_a_trailing_dim_that_fits_no_element_is_still_refused() -> None:
    with pytest.raises(Exception, match="vec3f"):
        wp.array(np.zeros((4, 2, 1), np.float32), dtype=wp.vec3)
