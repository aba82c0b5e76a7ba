"""A view of an array (slice, reshape, transpose) keeps the array it was taken from alive, as
Warp's views do (`_ref`): an object the user made, such as a subclass instance with state of its
own, lives as long as views of its memory."""

from __future__ import annotations

import gc
import weakref

import numpy as np

import gradloom as wp


class _Tagged(wp.array):
    pass


def test_views_keep_their_owner_alive() -> None:
    owner = _Tagged([1.0, 2.0, 3.0, 4.0], dtype=float)
    alive = weakref.ref(owner)
    square, every_other = owner.reshape((2, 2)), owner[::2]
    flipped = square.transpose()
    del owner
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(square.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(every_other.numpy(), [1.0, 3.0])
    np.testing.assert_array_equal(flipped.numpy(), [[1.0, 3.0], [2.0, 4.0]])
    del square, every_other, flipped
    gc.collect()
    assert alive() is None
