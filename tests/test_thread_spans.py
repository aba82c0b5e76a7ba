"""Launches whose threads each store a span of their own elements (passes/threads.py `_span`):
`wp.tile_store(a[i], t, offset=(j * T,))` of a T-element tile, a loop `a[j * T + k]` over
k in range(T), through a view of a 2-D array, run split and give the serial result; spans that
overlap another thread's (a 2-element tile at offset j, a T+1-element one at j * T, a counter
that starts below 0 or runs to a bound not known) stay serial, with the serial result. The
plans are checked directly, and the split is counted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradloom as wp
from gradloom import config
from gradloom.runtime.cpu import parallel
from gradloom.runtime.cpu.launch import prepared_forward

T = 4
ROWS, COLS = 3, 9


@pytest.fixture
def splits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Two threads for every launch of two or more threads; the chunk counts of the splits."""
    calls: list[int] = []
    real = parallel.run_split

    def counting(prepared, block, dims, total, args, chunks, wake, targets, restart):  # type: ignore[no-untyped-def]
        calls.append(chunks)
        real(prepared, block, dims, total, args, chunks, wake, targets, restart)

    monkeypatch.setattr(parallel, "run_split", counting)
    monkeypatch.setattr(config, "parallel_min_ns", 0)
    monkeypatch.setattr(config, "num_threads", 2)
    return calls


def _store_kernel(size: int, step: int) -> Any:
    """Thread (i, j) stores a `size`-element tile of value i * 100 + j + 1 at out[i, j * step]."""
    @wp.kernel(module="unique")
    def k(out: wp.array2d(dtype=float)):
        i, j = wp.tid()
        t = wp.tile_full(shape=(size,), value=float(i * 100 + j + 1), dtype=float)
        wp.tile_store(out[i], t, offset=(j * step,))
    return k


def _expected_stores(size: int, step: int, cols: int, width: int) -> np.ndarray:
    """The serial result: threads in order, a later one's store over an earlier one's."""
    out = np.zeros((ROWS, width), dtype=np.float32)
    for i in range(ROWS):
        for j in range(cols):
            lo = j * step
            out[i, lo:min(lo + size, width)] = i * 100 + j + 1
    return out


def _run_stores(size: int, step: int) -> np.ndarray:
    width = COLS * step + size
    out = wp.zeros((ROWS, width), dtype=float)
    wp.launch_tiled(_store_kernel(size, step), dim=[ROWS, COLS], inputs=[out], block_dim=1)
    return out.numpy()


@pytest.mark.parametrize(("size", "step"), [(1, 1), (T, T), (T - 1, T), (T, T + 1)])
def test_apart_tile_stores_split(splits: list[int], size: int, step: int) -> None:
    kernel = _store_kernel(size, step)
    plan = prepared_forward(kernel).compiled.threads
    assert plan.serial is None
    # j * step in 32 bits stays below 2^31 for j < 2^31 // step (no limit where step is 1)
    assert plan.limits == (() if step == 1 else ((1, 2, 2**31 // step),))
    width = COLS * step + size
    out = wp.zeros((ROWS, width), dtype=float)
    wp.launch_tiled(kernel, dim=[ROWS, COLS], inputs=[out], block_dim=1)
    assert splits and splits[0] > 1
    np.testing.assert_array_equal(out.numpy(), _expected_stores(size, step, COLS, width))


@pytest.mark.parametrize(("size", "step"), [(2, 1), (T + 1, T), (T, 0)])
def test_overlapping_tile_stores_stay_serial(splits: list[int], size: int, step: int) -> None:
    plan = prepared_forward(_store_kernel(size, step)).compiled.threads
    assert plan.serial is not None and "store" in plan.serial
    got = _run_stores(size, step)
    assert splits == []
    np.testing.assert_array_equal(got, _expected_stores(size, step, COLS, COLS * step + size))


@wp.kernel(module="unique")
def counted_k(out: wp.array(dtype=float), x: wp.array(dtype=float)):
    j = wp.tid()
    for k in range(T):
        out[j * T + k] = x[j * T + k] * 2.0 + float(k)


@wp.kernel(module="unique")
def counted_shifted_k(out: wp.array(dtype=float)):
    j = wp.tid()
    for k in range(1, T):  # [1, T): still inside thread j's [j*T, j*T + T)
        out[T * j + k] = float(j)


@wp.kernel(module="unique")
def counted_past_k(out: wp.array(dtype=float)):
    j = wp.tid()
    for k in range(T + 1):  # reaches j*T + T, thread j + 1's first element
        out[j * T + k] = float(j)


@wp.kernel(module="unique")
def counted_below_k(out: wp.array(dtype=float)):
    j = wp.tid()
    for k in range(-1, T - 1):  # reaches j*T - 1, thread j - 1's last element
        out[j * T + k] = float(j)


@wp.kernel(module="unique")
def counted_unknown_k(out: wp.array(dtype=float), n: int):
    j = wp.tid()
    for k in range(n):  # a bound the IR does not fix
        out[j * T + k] = float(j)


@wp.kernel(module="unique")
def span_and_own_k(out: wp.array(dtype=float)):
    j = wp.tid()
    for k in range(T):
        out[j * T + k] = float(j)
    out[j] = out[j] + 1.0  # thread j reaches thread j // T's span


def test_counted_loops_within_a_span_split(splits: list[int]) -> None:
    n = 50
    xv = np.arange(n * T, dtype=np.float32) * 0.5
    out = wp.zeros(n * T, dtype=float)
    assert prepared_forward(counted_k).compiled.threads.serial is None
    wp.launch(counted_k, n, inputs=[out, wp.array(xv)])
    assert splits and splits[0] > 1
    np.testing.assert_array_equal(out.numpy(), xv * 2.0 + np.tile(np.arange(T), n))
    assert prepared_forward(counted_shifted_k).compiled.threads.serial is None


def test_counters_past_the_span_stay_serial(splits: list[int]) -> None:
    for k in (counted_past_k, counted_below_k, counted_unknown_k, span_and_own_k):
        assert prepared_forward(k).compiled.threads.serial is not None, k.key
    n = 20
    out = wp.zeros(n * T + 1, dtype=float)
    wp.launch(counted_past_k, n, inputs=[out])
    assert splits == []
    expected = np.repeat(np.arange(n, dtype=np.float32), T)  # thread j + 1 overwrites j's last
    np.testing.assert_array_equal(out.numpy(), np.append(expected, n - 1))


def test_a_launch_past_the_limit_runs_serially() -> None:
    limit = ((1, 2, 2**29),)  # component 1 of a 2-component tid: below 2^29
    assert parallel.limits_hold(limit, (3, 2**29))
    assert not parallel.limits_hold(limit, (3, 2**29 + 1))
    assert not parallel.limits_hold(limit, ())  # extents not known
    assert parallel.limits_hold((), ())
    # a tid unpacked to fewer components than the launch's: a component reaches its size
    assert not parallel.limits_hold(((0, 1, 2**29),), (2**15, 2**15))
    assert parallel.limits_hold(((0, 1, 2**29),), (2**14, 2**15))


def test_plan_refuses_a_launch_past_the_limit(splits: list[int]) -> None:
    prepared = prepared_forward(_store_kernel(T, T))
    out = wp.zeros((ROWS, COLS * T), dtype=float)
    assert parallel.plan(prepared, ROWS * COLS, [out], None, (ROWS, COLS))[0] > 1
    # thread j = 2^29 would store at 2^31, which wraps in 32 bits
    assert parallel.plan(prepared, ROWS * COLS, [out], None, (ROWS, 2**29 + 1))[0] == 1


@wp.kernel(module="unique")
def squares_k(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    t = wp.tile_load(x[i], shape=(T,), offset=(j * T,))
    wp.tile_store(y[i], wp.tile_map(wp.mul, t, t), offset=(j * T,))


def test_span_gradients_split_and_match_the_derivative(splits: list[int]) -> None:
    """The forward splits; the adjoint (which replays the addresses from its stack, so stays
    serial for now) gives 2 x y.grad."""
    assert prepared_forward(squares_k).compiled.threads.serial is None
    xv = np.random.default_rng(3).normal(size=(ROWS, COLS * T)).astype(np.float32)
    seed = np.random.default_rng(4).normal(size=xv.shape).astype(np.float32)
    x = wp.array(xv, dtype=float, requires_grad=True)
    y = wp.zeros(xv.shape, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(squares_k, dim=[ROWS, COLS], inputs=[x, y], block_dim=1)
    tape.backward(grads={y: wp.array(seed, dtype=float)})
    assert splits and splits[0] > 1  # the forward
    np.testing.assert_array_equal(y.numpy(), xv * xv)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * xv * seed, rtol=1e-6)


@wp.kernel(module="unique")
def wide_k(out: wp.array(dtype=float)):
    j = wp.tid()
    for k in range(T):  # the index in 64 bits: it cannot wrap, so no limit
        out[wp.int64(j) * wp.int64(T) + wp.int64(k)] = float(j) + float(k) * 0.25


def test_limits_and_lanes(splits: list[int]) -> None:
    """A 32-bit span limits the launch, and the SIMD loop (which does not check the limit)
    is refused; a 64-bit one needs no limit and takes lanes, split, with the serial result."""
    narrow = prepared_forward(counted_k).compiled.threads
    assert narrow.limits == ((0, 1, 2**31 // T),) and not narrow.lanes
    wide = prepared_forward(wide_k).compiled.threads
    assert wide.serial is None and wide.limits == () and wide.lanes
    n = 1000
    out = wp.zeros(n * T, dtype=float)
    wp.launch(wide_k, n, inputs=[out])
    assert splits and splits[0] > 1
    expected = np.repeat(np.arange(n, dtype=np.float32), T) + np.tile(np.arange(T) * 0.25, n)
    np.testing.assert_array_equal(out.numpy(), expected.astype(np.float32))


@wp.kernel(module="unique")
def read_span_k(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    j = wp.tid()
    t = wp.tile_load(x, shape=T, offset=j * T)  # x is only read: any thread may read anywhere
    y[j] = wp.tile_sum(t)[0]


def test_spans_of_arrays_only_read_need_no_limit() -> None:
    plan = prepared_forward(read_span_k).compiled.threads
    assert plan.serial is None and plan.limits == ()
