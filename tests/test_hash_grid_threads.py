"""Threads that store at their point's place in a hash grid's sorted order
(`i = wp.hash_grid_point_id(grid, tid)`, as warp-lang's dem and sph examples do) share a launch
and run in SIMD lanes: the sorted ids are a permutation of the grid's points (the `permute`
primitive's table fact; passes/threads.py `conditions`), which every launch checks. Results and
gradients are those of one thread at a time; a launch whose grid was never built, or has fewer
points than threads, keeps the serial loop."""

from typing import Any

import numpy as np
import pytest
from gradfd import arr, check_program

import gradloom as wp
from gradloom import config
from gradloom.abi import BLOCK_ARGS
from gradloom.codegen import cpu
from gradloom.runtime.cpu import parallel
from gradloom.types import GRID_NUM_POINTS, GRID_READY

f64 = wp.float64


@wp.kernel
def forces(grid: wp.uint64, x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
           radius: float, f: wp.array(dtype=wp.vec3)):
    # the shape of the dem example's apply_forces: gather neighbours, store at the own point
    tid = wp.tid()
    i = wp.hash_grid_point_id(grid, tid)
    p = x[i]
    acc = wp.vec3()
    for j in wp.hash_grid_query(grid, p, radius):
        if j != i:
            n = p - x[j]
            d = wp.length(n)
            if d < radius:
                acc += n / d * (radius - d) + 0.1 * (v[j] - v[i])
    f[i] = acc


@wp.kernel
def sorted_energy(grid: wp.uint64, x: wp.array(dtype=wp.vec3d), r: f64, e: wp.array(dtype=f64)):
    # a smooth pair potential (zero beyond r), stored at the point's own index
    tid = wp.tid()
    i = wp.hash_grid_point_id(grid, tid)
    p = x[i]
    acc = f64(0.0)
    for j in wp.hash_grid_query(grid, p, r):
        if j != i:
            d = wp.length(p - x[j])
            if d < r:
                s = r - d
                acc += s * s * s * (f64(1.0) + f64(0.5) * wp.sin(p[0] * x[j][1]))
    e[i] = acc


@wp.kernel
def bump(grid: wp.uint64, out: wp.array(dtype=float)):
    # reads what another thread wrote wherever two threads reach one element
    i = wp.hash_grid_point_id(grid, wp.tid())
    out[i] = out[i] + 1.0


@pytest.fixture
def split(monkeypatch: Any) -> None:
    """Launches split across two workers whatever their size."""
    monkeypatch.setattr(config, "num_threads", 2)
    monkeypatch.setattr(config, "parallel_min_ns", 0)


def _points(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.0, 4.0, (n, 3)).astype(np.float32)


def test_the_plan_relies_on_the_permutation() -> None:
    threads = forces.compiled().threads
    assert threads.serial is None
    assert threads.conditions == ((0, 0, GRID_NUM_POINTS, GRID_READY),)
    if cpu.lane_width() and config.simd:
        assert threads.lanes  # the grid's own arrays are read in lanes


def _block(grid: wp.HashGrid) -> bytearray:
    buf = bytearray(BLOCK_ARGS + 8)
    buf[BLOCK_ARGS:] = int(grid.id).to_bytes(8, "little")
    return buf


def test_each_launch_checks_the_permutation() -> None:
    conditions = forces.compiled().threads.conditions
    grid = wp.HashGrid(8, 8, 8)
    assert not parallel.conditions_hold(conditions, _block(grid), (10,))  # never built
    grid.build(wp.array(_points(100, 0), dtype=wp.vec3), 0.5)
    assert parallel.conditions_hold(conditions, _block(grid), (100,))
    assert parallel.conditions_hold(conditions, _block(grid), (60,))
    assert not parallel.conditions_hold(conditions, _block(grid), (101,))
    assert not parallel.conditions_hold(conditions, None, (100,))


def _forces(threads: int, simd: bool, x_np: np.ndarray, v_np: np.ndarray) -> np.ndarray:
    saved = config.num_threads, config.simd
    config.num_threads, config.simd = threads, simd
    try:
        x, v = wp.array(x_np, dtype=wp.vec3), wp.array(v_np, dtype=wp.vec3)
        grid = wp.HashGrid(16, 16, 16)
        grid.build(x, 0.3)
        f = wp.zeros(len(x_np), dtype=wp.vec3)
        wp.launch(forces, len(x_np), inputs=[grid.id, x, v, 0.3, f])
        return f.numpy()
    finally:
        config.num_threads, config.simd = saved


def _reference(x: np.ndarray, v: np.ndarray, radius: float) -> np.ndarray:
    n = x[:, None, :].astype(np.float64) - x[None, :, :]
    d = np.linalg.norm(n, axis=2)
    near = (d < radius) & (d > 0)
    safe = np.where(near, d, 1.0)[..., None]
    pair = n / safe * (radius - safe) + 0.1 * (v[None, :, :] - v[:, None, :])
    return np.where(near[..., None], pair, 0.0).sum(axis=1)


def test_split_launch_in_lanes_matches_one_thread(monkeypatch: Any) -> None:
    monkeypatch.setattr(config, "parallel_min_ns", 0)
    x, v = _points(3000, 1), _points(3000, 2)
    serial = _forces(1, False, x, v)
    np.testing.assert_allclose(serial, _reference(x, v, 0.3), rtol=1e-4, atol=1e-4)
    assert np.abs(serial).max() > 0.1
    # lanes compute what the scalar loop computes, in the same order per thread: bit for bit
    np.testing.assert_array_equal(_forces(2, True, x, v), serial)


def test_a_grid_never_built_keeps_the_serial_loop(split: None) -> None:
    grid = wp.HashGrid(4, 4, 4)  # every thread's id is -1: all of them reach the last element
    out = wp.zeros(5000, dtype=float)
    wp.launch(bump, 5000, inputs=[grid.id, out])
    assert out.numpy()[-1] == 5000.0 and out.numpy()[:-1].max() == 0.0


def test_every_point_once_when_split(split: None) -> None:
    x = wp.array(_points(5000, 3), dtype=wp.vec3)
    grid = wp.HashGrid(8, 8, 8)
    grid.build(x, 0.5)
    out = wp.zeros(5000, dtype=float)
    wp.launch(bump, 5000, inputs=[grid.id, out])
    np.testing.assert_array_equal(out.numpy(), np.ones(5000, np.float32))


def _sorted_program(n: int, radius: float) -> Any:
    def program(arrays: list[Any]) -> list[Any]:
        (x,) = arrays
        grid = wp.HashGrid(3, 3, 3, dtype=f64)
        grid.build(x, radius)
        e = wp.zeros(n, dtype=f64, requires_grad=True)
        wp.launch(sorted_energy, dim=n, inputs=[grid.id, x, radius, e])
        return [e]
    return program


@pytest.mark.parametrize("threads", [1, 2])
def test_gradients_of_stores_at_the_sorted_point(threads: int, monkeypatch: Any) -> None:
    monkeypatch.setattr(config, "num_threads", threads)
    monkeypatch.setattr(config, "parallel_min_ns", 0)
    x = np.random.default_rng(7).uniform(-1.0, 1.0, (40, 3))
    res = check_program(_sorted_program(40, 0.6), [arr(x, wp.vec3d)], wrt=[0],
                        name="sorted_energy")
    assert np.abs(res.reverse[0]).max() > 0.1  # neighbours were found and differentiated


@wp.kernel
def gather_from_sorted(grid: wp.uint64, x: wp.array(dtype=float)):
    # thread t writes x[t] and reads x[id(t)], which thread id(t) writes: not thread-own
    tid = wp.tid()
    x[tid] = x[wp.hash_grid_point_id(grid, tid)] + 1.0


@wp.kernel
def transpose_in_place(a: wp.array2d(dtype=float)):
    # each access alone is thread-own; together, thread (i, j) reads what (j, i) writes
    i, j = wp.tid()
    a[i, j] = a[j, i] + 1.0


def test_accesses_mapped_differently_keep_thread_order(split: None) -> None:
    assert gather_from_sorted.compiled().threads.serial is not None
    assert transpose_in_place.compiled().threads.serial is not None
    n = 64
    start = np.random.default_rng(4).uniform(0.0, 1.0, (n, n)).astype(np.float32)
    want = start.copy()
    for i in range(n):
        for j in range(n):
            want[i, j] = want[j, i] + np.float32(1.0)
    a = wp.array(start, dtype=float)
    wp.launch(transpose_in_place, (n, n), inputs=[a])
    np.testing.assert_array_equal(a.numpy(), want)


@wp.kernel
def first_ids(grids: wp.array(dtype=wp.uint64), out: wp.array(dtype=int)):
    # a grid per thread: the permutation's descriptor differs between SIMD lanes
    tid = wp.tid()
    out[tid] = wp.hash_grid_point_id(grids[tid], 0)


def test_a_grid_per_thread_runs_one_thread_at_a_time() -> None:
    grids = [wp.HashGrid(4, 4, 4) for _ in range(2)]
    grids[1].build(wp.array(_points(10, 5), dtype=wp.vec3), 0.5)
    ids = wp.array([int(grids[k % 2].id) for k in range(40)], dtype=wp.uint64)
    out = wp.zeros(40, dtype=int)
    wp.launch(first_ids, 40, inputs=[ids, out])
    first = int(grids[1]._arrays["point_ids"][0])
    np.testing.assert_array_equal(out.numpy(), [-1, first] * 20)  # never built: -1
    if cpu.lane_width() and config.simd:
        assert "permutation" in (first_ids._codegen("gl_first_ids", False)[1]["lanes"] or "")
