"""The one home of strided-layout facts (gradloom/runtime/layout.py) against numpy's own answers
for views with positive, negative and zero strides, empty and 4-D shapes; contiguity against
warp-lang 1.19's rule (strides exactly the packed ones) and the cases it was checked on."""

from typing import NamedTuple

import numpy as np
import pytest

import gradloom as wp
from gradloom.runtime.array.storage import copy_same_layout, zeros_same_layout
from gradloom.runtime.layout import is_contiguous, packed_strides, same_layout, span


def v_size(view):
    return view.size > 0


def _views(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        ndim = int(rng.integers(1, 5))
        base = rng.random(tuple(int(n) for n in rng.integers(1, 5, ndim))).astype(np.float32)
        index = tuple(slice(None, None, int(rng.choice((1, 2, -1, -2)))) for _ in range(ndim))
        view = base[index]
        if rng.random() < 0.3:
            view = view.transpose(rng.permutation(ndim))
        if rng.random() < 0.1:
            view = view[..., :0]  # no elements
        if rng.random() < 0.15 and v_size(view):  # a broadcast dimension: stride 0
            view = np.broadcast_to(view[..., :1], (*view.shape[:-1], 3))
        yield view


def _arbitrary(seed):
    """as_strided views with any strides (multiples of the item or not, negative, zero,
    overlapping) into the middle of a buffer large enough for all of them; never read."""
    rng = np.random.default_rng(seed)
    buf = np.zeros(1 << 12, dtype=np.uint8)
    for _ in range(300):
        ndim = int(rng.integers(1, 5))
        shape = tuple(int(n) for n in rng.integers(0, 5, ndim))
        item = int(rng.choice((1, 4, 8)))
        strides = tuple(int(s) for s in rng.integers(-3, 4, ndim) * int(rng.choice((1, item))))
        middle = buf[1 << 11 :].view(np.dtype((np.void, item)))
        yield np.lib.stride_tricks.as_strided(middle, shape, strides, writeable=False)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_span_and_contiguity_of_arbitrary_strides(seed):
    for v in _arbitrary(seed):
        lo, hi = span(v.shape, v.strides, v.itemsize)
        if v.size:
            first, end = np.lib.array_utils.byte_bounds(v)
            start = v.__array_interface__["data"][0]
            assert (start + lo, start + hi) == (first, end), (v.shape, v.strides)
        else:
            assert (lo, hi) == (0, 0)
        packed = is_contiguous(v.shape, v.strides, v.itemsize)
        assert packed == (v.strides == packed_strides(v.shape, v.itemsize))
        if packed and v.size:
            assert v.flags.c_contiguous


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


def _offsets(v):
    """The byte offset of every element from the data pointer, in index order."""
    idx = np.indices(v.shape).reshape(len(v.shape), -1)
    return (np.asarray(v.strides)[:, None] * idx).sum(axis=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_packed_strides_are_those_of_new_numpy_arrays(seed):
    rng = np.random.default_rng(seed)
    for _ in range(100):
        shape = tuple(int(n) for n in rng.integers(1, 5, int(rng.integers(1, 5))))
        item = int(rng.choice((1, 2, 4, 8, 12)))
        fresh = np.zeros(shape, dtype=np.dtype((np.void, item)))
        assert packed_strides(shape, item) == fresh.strides
    # an empty dimension makes the strides before it 0 (warp-lang's strides_from_shape)
    assert packed_strides((3, 0), 4) == (0, 4)
    assert packed_strides((0, 3), 4) == (12, 4)
    assert packed_strides((1, 0, 2), 8) == (0, 16, 8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_contiguity_is_exactly_packed_strides(seed):
    for v in _views(seed):
        packed = is_contiguous(v.shape, v.strides, v.itemsize)
        assert packed == (v.strides == packed_strides(v.shape, v.itemsize)), (v.shape, v.strides)
        if packed and v.size:  # stricter than numpy's flag, never looser
            assert v.flags.c_contiguous


# (shape, strides, warp-lang 1.19's array.is_contiguous) for float32 views, as it answered
WARP_CASES = [
    ((4, 3), (12, 4), True), ((1, 3), (12, 4), True), ((4, 1), (12, 4), False),
    ((4,), (12,), False), ((2, 3), (24, 4), False), ((0, 3), (12, 4), True),
    ((4, 0), (12, 4), False), ((3, 4), (4, 12), False), ((3, 1), (4, 12), False),
    ((1, 3), (48, 4), False), ((0, 3), (4, 4), False), ((1, 3), (0, 4), False),
    ((3, 0), (0, 4), True), ((3, 0), (0, 0), False),
]


@pytest.mark.parametrize(("shape", "strides", "warp"), WARP_CASES)
def test_contiguity_is_warps(shape, strides, warp):
    assert is_contiguous(shape, strides, 4) == warp
    base = wp.zeros(64, dtype=wp.float32)
    a = wp.array(ptr=base.ptr, dtype=wp.float32, shape=shape, strides=strides, device="cpu")
    assert a.is_contiguous == warp


def test_arrays_keep_warps_contiguity_through_views_and_copies():
    a = wp.zeros((4, 3), dtype=wp.float32)
    t = wp.zeros((1, 3), dtype=wp.float32).transpose()  # (3, 1), strides (4, 12)
    assert not t.is_contiguous and not a[:, :0].is_contiguous and a[:0].is_contiguous
    c = t.contiguous()
    assert c.is_contiguous and c.strides == (4, 4) and c.ptr != t.ptr
    with pytest.raises(wp.GradloomError, match="non-contiguous"):
        t.reshape((3,))
    e = wp.array(np.zeros((0, 3), np.float32))  # numpy gives an empty copy strides (0, 0)
    assert e.strides == (12, 4) and e.is_contiguous
    r = e.reshape((3, 0))
    assert r.strides == (0, 4) and r.is_contiguous and r.flatten().is_contiguous


class Layout(NamedTuple):
    shape: tuple[int, ...]
    strides: tuple[int, ...]


def _pairs(seed):
    """Views with another layout: their own, and theirs with one stride changed where a
    dimension has more than one element (a different layout) or exactly one (the same)."""
    for v in _views(seed):
        yield v, Layout(v.shape, v.strides), True
        big = [i for i, n in enumerate(v.shape) if n > 1]
        one = [i for i, n in enumerate(v.shape) if n == 1]
        for dims, same in ((big, False), (one, True)):
            if dims:
                strides = list(v.strides)
                strides[dims[0]] += 4
                yield v, Layout(v.shape, tuple(strides)), same or v.size == 0  # no elements


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_layout_means_same_element_offsets(seed):
    for a, b, same in _pairs(seed):
        assert same_layout(a, b) == same, (a.shape, a.strides, b.strides)
        if a.size:
            assert (np.array_equal(_offsets(a), _offsets(b))) == same
    assert not same_layout(np.zeros((2, 3)), np.zeros((3, 2)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_zeros_and_copy_same_layout_keep_exact_strides(seed):
    rng = np.random.default_rng(seed)
    for v in _views(seed):
        v = np.ascontiguousarray(v) if rng.random() < 0.2 else v
        for out, want in ((zeros_same_layout(v), np.zeros(v.shape, v.dtype)),
                          (copy_same_layout(v), v)):
            assert out.shape == v.shape and same_layout(out, v), (v.shape, v.strides)
            if v.size and not is_contiguous(v.shape, v.strides, v.itemsize):
                assert out.strides == v.strides
                lo, hi = span(v.shape, v.strides, v.itemsize)
                first, end = np.lib.array_utils.byte_bounds(out)
                assert end - first == hi - lo  # no more memory than the span
            np.testing.assert_array_equal(out, want)
