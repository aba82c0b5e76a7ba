"""Host copies and fills split into pieces across threads (runtime/memops.py): every element
lands where one numpy assignment puts it, overlaps and errors included, through the public API
too (assign, zero_, fill_, wp.copy, wp.clone, a Tape's seeds and saved copies)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import gradloom as wp
from gradloom.runtime import memops


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split arrays of 4 KiB and more, in pieces of 1 KiB: many pieces, a ragged last one."""
    monkeypatch.setattr(memops, "SPLIT_BYTES", 4096)
    monkeypatch.setattr(memops, "PIECE_BYTES", 1000)
    monkeypatch.setattr(wp.config, "num_threads", 2)


@pytest.mark.parametrize("row_bytes", [1, 4, 12, 36, 4096, 3 << 20])
def test_pieces_hold_whole_rows_up_to_a_piece_of_bytes(row_bytes: int) -> None:
    """At least one row per piece; several rows only while they fit in PIECE_BYTES, and then
    close to it (within one row), so a piece is ~0.1 ms of copying whatever the row size."""
    rows = memops.piece_rows(row_bytes)
    assert rows >= 1
    if row_bytes <= memops.PIECE_BYTES:
        assert memops.PIECE_BYTES - row_bytes < rows * row_bytes <= memops.PIECE_BYTES
    else:
        assert rows == 1  # a row larger than a piece


@pytest.mark.usefixtures("small_pieces")
@pytest.mark.parametrize("shape", [(10_007,), (3_001, 3), (501, 3, 3), (2, 4096)])
def test_split_copy_and_fill_match_numpy(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(1)
    src = rng.random(shape, dtype=np.float32)
    dst = np.full(shape, -1.0, np.float32)
    memops.copy_into(dst, src)
    np.testing.assert_array_equal(dst, src)
    element = np.arange(shape[-1], dtype=np.float32) if len(shape) > 1 else np.float32(7.5)
    memops.fill(dst, element[None] if len(shape) == 1 else element)
    np.testing.assert_array_equal(dst, np.broadcast_to(element, shape))


@pytest.mark.usefixtures("small_pieces")
def test_split_copy_into_a_strided_view_and_with_a_cast() -> None:
    src = np.arange(8_000, dtype=np.float64)
    big = np.zeros(16_000, np.float32)
    memops.copy_into(big[::2], src)
    np.testing.assert_array_equal(big[::2], src.astype(np.float32))
    assert not big[1::2].any()


@pytest.mark.usefixtures("small_pieces")
def test_overlapping_copy_is_one_assignment() -> None:
    a = np.arange(20_000, dtype=np.float32)
    expected = a.copy()
    expected[100:] = expected[:-100].copy()
    memops.copy_into(a[100:], a[:-100])
    np.testing.assert_array_equal(a, expected)


@pytest.mark.usefixtures("small_pieces")
def test_an_error_in_a_piece_is_raised_and_stops_the_claims() -> None:
    src = np.full(20_000, 1.0, dtype=object)
    src[15_000] = "not a number"
    dst = np.zeros(20_000, np.float32)
    with pytest.raises(ValueError):
        memops.copy_into(dst, src)
    assert dst[:1000].all()  # pieces before the bad one were copied


@pytest.mark.usefixtures("small_pieces")
def test_array_methods_and_copies_through_the_split() -> None:
    rng = np.random.default_rng(2)
    values = rng.random((4_000, 3), dtype=np.float32)
    a = wp.zeros(4_000, dtype=wp.vec3)
    a.assign(wp.array(values, dtype=wp.vec3))
    np.testing.assert_array_equal(a.numpy(), values)
    a.fill_(wp.vec3(1.0, 2.0, 3.0))
    np.testing.assert_array_equal(a.numpy(), np.broadcast_to([1.0, 2.0, 3.0], (4_000, 3)))
    b = wp.clone(a)
    a.zero_()
    assert not a.numpy().any()
    np.testing.assert_array_equal(b.numpy()[:, 2], np.full(4_000, 3.0, np.float32))
    wp.copy(a, b, dest_offset=10, src_offset=0, count=3_000)
    np.testing.assert_array_equal(a.numpy()[10:3_010], b.numpy()[:3_000])
    assert not a.numpy()[:10].any() and not a.numpy()[3_010:].any()


@wp.kernel
def _scale_in_place(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] * y[i]


@pytest.mark.usefixtures("small_pieces")
def test_tape_seeds_and_saved_copies_through_the_split() -> None:
    """The adjoint reads y's old values (a saved copy) and the seed is copied into y.grad: the
    gradients against the analytic ones, in float64."""
    n = 5_000
    rng = np.random.default_rng(3)
    x0, y0 = rng.random(n), rng.random(n)
    seed = rng.random(n)
    x = wp.array(x0, dtype=float, requires_grad=True)
    y = wp.array(y0, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_scale_in_place, n, inputs=[2.0, x, y])
    tape.backward(grads={y: wp.array(seed, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * y0 * seed, rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), 2.0 * x0 * seed, rtol=1e-6)
    tape.zero()
    assert not x.grad.numpy().any() and not y.grad.numpy().any()


def test_many_small_arrays_are_zeroed_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """zero_all: arrays below SPLIT_BYTES that add up to it go out to the threads in pieces;
    every element of each is zero, and memory around a strided view is untouched."""
    monkeypatch.setattr(memops, "SPLIT_BYTES", 4096)
    monkeypatch.setattr(memops, "PIECE_BYTES", 1000)
    monkeypatch.setattr(wp.config, "num_threads", 2)
    parts: list[int] = []
    real_share = memops.share
    monkeypatch.setattr(memops, "share",
                        lambda n, pieces, part: parts.append(pieces) or real_share(n, pieces, part))
    rng = np.random.default_rng(4)
    base = rng.random((300, 4))
    arrays = [rng.random(s) for s in [(100,), (83, 3), (1,), (), (2, 2, 2)]]
    arrays += [base[::3, 1:3], rng.random(5000)]  # a strided view; one array of SPLIT_BYTES+
    outside = base.copy()
    memops.zero_all(arrays)
    assert all(not a.any() for a in arrays)
    outside[::3, 1:3] = 0
    np.testing.assert_array_equal(base, outside)
    assert parts and parts[-1] > len(arrays)  # the small ones were cut into pieces


@pytest.mark.usefixtures("small_pieces")
def test_tape_zero_zeroes_every_gradient_together() -> None:
    """Gradients below SPLIT_BYTES each, above it together: zeroed in shared pieces."""
    n = 300
    xs = [wp.array(np.ones(n), dtype=float, requires_grad=True) for _ in range(4)]
    tape = wp.Tape()
    with tape:
        for a, b in itertools.pairwise(xs):
            wp.launch(_scale_in_place, n, inputs=[2.0, a, b])
    tape.backward(grads={xs[-1]: wp.array(np.ones(n), dtype=float)})
    assert all(a.grad.numpy().any() for a in xs)
    tape.zero()
    assert not any(a.grad.numpy().any() for a in xs)


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch, small_pieces: None) -> list[int]:
    """Stream destinations of 4 KiB and more; the list counts the streamed calls."""
    from gradloom import native

    calls: list[int] = []
    real = native.stream_functions()

    def fill(*a: int) -> None:
        calls.append(1)
        real.fill(*a)

    def copy(*a: int) -> None:
        calls.append(1)
        real.copy(*a)

    monkeypatch.setattr(memops, "STREAM_BYTES", 4096)
    monkeypatch.setattr(memops, "PIECE_BYTES", 1024)
    monkeypatch.setattr(memops, "_STREAMS", [lambda: memops.Streams(fill, copy)])
    return calls


@pytest.mark.parametrize("offset", [0, 1, 3, 16])
@pytest.mark.parametrize("tail", [0, 1, 5])
@pytest.mark.parametrize("row", [(), (3,), (3, 3), (2,)])
def test_streamed_fill_at_any_alignment_and_phase(streamed: list[int], offset: int, tail: int,
                                                  row: tuple[int, ...]) -> None:
    """Destinations that start and end off the 64-byte lines, rows whose bytes (4, 12, 36, 8)
    do not divide 64: every element gets the value, nothing around it changes."""
    n = 3_000 + tail
    buf = np.full((n + offset + 4, *row), -5.0, np.float32)
    value = np.arange(1.0, 1.0 + math.prod(row), dtype=np.float32).reshape(row)
    dst = buf[offset:offset + n]
    memops.fill(dst, value)
    assert streamed
    np.testing.assert_array_equal(dst, np.broadcast_to(value, dst.shape))
    assert (buf[:offset] == -5.0).all() and (buf[offset + n:] == -5.0).all()


@pytest.mark.parametrize(("d_off", "s_off"), [(0, 0), (1, 0), (0, 3), (5, 2)])
def test_streamed_copy_at_any_alignment(streamed: list[int], d_off: int, s_off: int) -> None:
    rng = np.random.default_rng(4)
    src_buf = rng.random(5_000, dtype=np.float32)
    dst_buf = np.full(5_000, -5.0, np.float32)
    n = 4_001
    memops.copy_into(dst_buf[d_off:d_off + n], src_buf[s_off:s_off + n])
    assert streamed
    np.testing.assert_array_equal(dst_buf[d_off:d_off + n], src_buf[s_off:s_off + n])
    assert (dst_buf[:d_off] == -5.0).all() and (dst_buf[d_off + n:] == -5.0).all()


def test_streamed_fill_keeps_numpy_casting_and_falls_back(streamed: list[int]) -> None:
    ints = np.zeros(5_000, np.int32)
    memops.fill(ints, 2.75)  # numpy's unsafe cast: 2
    assert (ints == 2).all() and streamed
    streamed.clear()
    wide = np.zeros((8, 1_025), np.float32)  # a 4,100-byte row: a pattern too long to stream
    memops.fill(wide, np.arange(1_025, dtype=np.float32))
    np.testing.assert_array_equal(wide, np.broadcast_to(np.arange(1_025), (8, 1_025)))
    assert not streamed


def test_a_read_only_destination_is_refused_not_streamed(streamed: list[int]) -> None:
    frozen = np.zeros(5_000, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError):
        memops.fill(frozen, 1.0)
    assert not frozen.any() and not streamed
