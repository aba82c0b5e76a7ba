"""`wp.get_suggested_block_size`, which libraries call before every launch to size the grid."""

from __future__ import annotations

import pytest

import gradloom as wp


@wp.kernel
def _fill(a: wp.array(dtype=float)):
    a[wp.tid()] = 1.0


def test_cpu_block_is_one_thread():
    # Warp's documented CPU answer: a block is one thread, one block fills the device
    assert wp.get_suggested_block_size(_fill, "cpu") == (1, 1)
    assert wp.get_suggested_block_size(_fill) == (1, 1)


def test_not_a_kernel():
    with pytest.raises(TypeError, match="needs a @wp.kernel, got function"):
        wp.get_suggested_block_size(lambda: None, "cpu")
