"""The one home of strided-layout facts (gradloom/runtime/layout.py) against numpy's own answers
for views with positive, negative and zero strides, empty and 4-D shapes."""

import numpy as np
import pytest

from gradloom.runtime.layout import is_c_contiguous, span


def v_size(view):
    return view.size > 0


def _views(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        ndim = int(rng.integers(1, 5))
        base = np.zeros(tuple(int(n) for n in rng.integers(1, 5, ndim)), dtype=np.float32)
        index = tuple(slice(None, None, int(rng.choice((1, 2, -1, -2)))) for _ in range(ndim))
        view = base[index]
        if rng.random() < 0.3:
            view = view.transpose(rng.permutation(ndim))
        if rng.random() < 0.1:
            view = view[..., :0]  # no elements
        if rng.random() < 0.15 and v_size(view):  # a broadcast dimension: stride 0
            view = np.broadcast_to(view[..., :1], (*view.shape[:-1], 3))
        yield view


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_span_is_numpys_byte_bounds(seed):
    for v in _views(seed):
        lo, hi = span(v.shape, v.strides, v.itemsize)
        if v.size == 0:
            assert (lo, hi) == (0, 0)
            continue
        first, end = np.lib.array_utils.byte_bounds(v)
        start = v.__array_interface__["data"][0]
        assert (start + lo, start + hi) == (first, end), (v.shape, v.strides)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_contiguity_is_numpys_flag(seed):
    for v in _views(seed):
        assert is_c_contiguous(v.shape, v.strides, v.itemsize) == v.flags.c_contiguous, \
            (v.shape, v.strides)
