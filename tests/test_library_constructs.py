"""Kernel constructs that newton and MuJoCo Warp rely on, reproduced in small kernels.

Each test is the construct a library failure came down to, checked against numpy or float64
finite differences (tests/gradfd.py), not against the library itself.
"""

from __future__ import annotations

import math

import numpy as np
from gradfd import Case, arr

import gradloom as wp
from gradloom.runtime.cpu.launch import prepared_adjoint, prepared_forward

f64 = wp.float64


# -- negative array indices count from the end, as in Warp ------------------------------------
# newton's integrate_particles reads `gravity[particle_world[tid]]` with particle_world -1 for
# particles in no world: Warp reads the last element; gradloom read before the array.


@wp.kernel
def world_gravity(world: wp.array(dtype=wp.int32), gravity: wp.array(dtype=wp.vec3),
                  out: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    out[tid] = gravity[world[tid]]


@wp.kernel
def negative_2d(a: wp.array2d(dtype=f64), i: int, j: int, out: wp.array(dtype=f64),
                b: wp.array2d(dtype=f64)):
    out[0] = a[i, j]
    b[i, j] = f64(7.0)
    wp.atomic_add(out, i, f64(1.0))


@wp.kernel
def last_weighted(x: wp.array(dtype=f64), k: int, y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = x[i] * x[k - i] + wp.sin(x[-1 - i])


def test_negative_index_reads_from_the_end() -> None:
    world = wp.array(np.array([-1, 0, 1, -2], dtype=np.int32))
    g = np.array([[0.0, 0.0, -9.81], [1.0, 2.0, 3.0]], dtype=np.float32)
    out = wp.zeros(4, dtype=wp.vec3)
    wp.launch(world_gravity, 4, [world, wp.array(g, dtype=wp.vec3), out])
    np.testing.assert_array_equal(out.numpy(), g[[-1, 0, 1, -2]])


def test_negative_index_stores_and_atomics() -> None:
    a = np.arange(12.0).reshape(3, 4)
    out, b = wp.zeros(3, dtype=f64), wp.zeros((3, 4), dtype=f64)
    wp.launch(negative_2d, 1, [wp.array(a, dtype=f64), -1, -3, out, b])
    expected_b = np.zeros((3, 4))
    expected_b[-1, -3] = 7.0
    np.testing.assert_array_equal(b.numpy(), expected_b)
    np.testing.assert_array_equal(out.numpy(), [a[-1, -3], 0.0, 1.0])  # out[-1] += 1


def test_negative_index_gradient_matches_fd() -> None:
    x = np.random.default_rng(5).uniform(-1.0, 1.0, 5)
    Case("negative_indices", kernel=last_weighted, dim=5, args=[arr(x), 1, arr(np.zeros(5))],
         wrt=[0], outputs=[2]).run()  # k - i runs 1, 0, -1, -2, -3


def test_thread_index_addresses_stay_thread_own() -> None:
    """Indices known to be >= 0 (wp.tid(), constants) get no wrap, so launches still split."""
    for plan in (prepared_forward(world_gravity).compiled.threads,
                 prepared_adjoint(world_gravity).compiled.threads):
        assert plan.serial is None


# -- a slot counter behind a function with several returns -------------------------------------
# newton's create_soft_contacts stores each contact at the slot `counter_increment` hands out:
# an atomic_add's result returned from inside an if, or -1 on another path. A value merged
# from a slot and a constant is still a slot, so the stores are not contested.


@wp.func
def take_slot(counter: wp.array(dtype=int), tids: wp.array(dtype=int), tid: int, limit: int):
    count = wp.atomic_add(counter, 0, 1)
    if count < limit or limit < 0:
        if tid < tids.shape[0]:
            tids[tid] = count
        return count
    if tid < tids.shape[0]:
        tids[tid] = -1
    return -1


@wp.kernel
def slot_contacts(x: wp.array(dtype=float), counter: wp.array(dtype=int),
                  tids: wp.array(dtype=int), out: wp.array(dtype=float),
                  owner: wp.array(dtype=int)):
    tid = wp.tid()
    if x[tid] > 0.0:
        s = take_slot(counter, tids, tid, -1)
        if s < out.shape[0]:
            out[s] = x[tid] * x[tid]
            owner[s] = tid


def test_counter_slots_from_a_function_with_returns_differentiate() -> None:
    xs = np.array([0.5, -1.0, 2.0, 3.0, 0.25], dtype=np.float32)
    x = wp.array(xs, requires_grad=True)
    out, owner = wp.zeros(5, dtype=float, requires_grad=True), wp.full(5, -1, dtype=int)
    counter, tids = wp.zeros(1, dtype=int), wp.zeros(5, dtype=int)
    tape = wp.Tape()
    with tape:
        wp.launch(slot_contacts, 5, [x, counter, tids, out, owner])
    seed = np.array([1.0, 10.0, 100.0, 1000.0, 1e4], dtype=np.float32)
    tape.backward(grads={out: wp.array(seed)})
    expected = np.zeros(5, dtype=np.float32)
    for slot, t in enumerate(owner.numpy()[: counter.numpy()[0]]):
        expected[t] = 2.0 * xs[t] * seed[slot]  # d(x^2)/dx times the slot's seed
    assert sorted(owner.numpy()[:4]) == [0, 2, 3, 4]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


# -- an optional vector compared with None inside wp.static --------------------------------------
# MuJoCo Warp's test kernels close over `pos: wp.vec3 | None` and branch on
# `wp.static(pos == None)`; numpy's elementwise comparison made that an array.


def _offset_kernel(pos: wp.vec3 | None):
    @wp.kernel(module="unique")
    def offset(x: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        if wp.static(pos == None):  # noqa: E711 (the library's spelling)
            x[i] = x[i] + wp.vec3(1.0, 1.0, 1.0)
        else:
            x[i] = x[i] + pos

    return offset


def test_vector_compared_with_none_is_a_bool() -> None:
    v = wp.vec3(1.0, 2.0, 3.0)
    assert (v == None) is False and (v != None) is True  # noqa: E711
    for pos, add in ((None, 1.0), (wp.vec3(2.0, 3.0, 4.0), np.array([2.0, 3.0, 4.0]))):
        x = wp.zeros(2, dtype=wp.vec3)
        wp.launch(_offset_kernel(pos), 2, [x])
        np.testing.assert_array_equal(x.numpy(), np.broadcast_to(add, (2, 3)))


# -- a for loop's name reused after a float variable of that name -------------------------------
# MuJoCo Warp's _reset_sensor_history_kernel sets a float `k` in one loop, then runs
# `for k in range(total_vals)`: the loop's k is a new int each trip (Warp shadows the float).


@wp.kernel
def reused_loop_name(out: wp.array(dtype=float), n: int, flag: int):
    if flag > 0:
        next_k = float(0.0)
        for j in range(n - 1, -1, -1):
            k = wp.ceil(float(j) * 0.5)
            if k >= next_k:
                k = next_k - 1.0
            out[j] = k
            next_k = k
    for k in range(n):
        out[n + k] = float(k)


def test_for_loop_name_shadows_a_variable_of_another_type() -> None:
    out = wp.zeros(8, dtype=float)
    wp.launch(reused_loop_name, 1, [out, 4, 1])
    expected = np.zeros(8, dtype=np.float32)
    next_k = 0.0
    for j in range(3, -1, -1):  # the kernel's first loop, in Python
        k = float(np.ceil(j * 0.5))
        k = next_k - 1.0 if k >= next_k else k
        expected[j], next_k = k, k
    expected[4:] = np.arange(4)
    np.testing.assert_array_equal(out.numpy(), expected)


# -- Python's math functions in kernels ---------------------------------------------------------
# MuJoCo Warp's SDF plugins (test_data/collision_sdf/torus.py) call math.sqrt in a @wp.func;
# Warp resolves a call whose name is a builtin's to that builtin.


@wp.func
def torus_sdf(p: wp.vec3, major: float, minor: float) -> float:
    q = math.sqrt(p[0] * p[0] + p[1] * p[1]) - major
    return math.sqrt(q * q + p[2] * p[2]) - minor + math.sin(0.0) * math.cos(p[2])


@wp.kernel
def torus_distances(p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = torus_sdf(p[i], 1.0, 0.25)


def test_math_module_functions_are_the_builtins() -> None:
    pts = np.array([[1.0, 0.0, 0.0], [2.0, 1.0, 0.5], [0.0, 0.0, 3.0]], dtype=np.float32)
    out = wp.zeros(3, dtype=float)
    wp.launch(torus_distances, 3, [wp.array(pts, dtype=wp.vec3), out])
    q = np.hypot(pts[:, 0], pts[:, 1]) - 1.0
    np.testing.assert_allclose(out.numpy(), np.hypot(q, pts[:, 2]) - 0.25, rtol=1e-6)


# -- module options given NumPy integers ---------------------------------------------------------
# MuJoCo Warp sets module_options["deterministic_max_records"] = njmax, a NumPy integer.


def test_deterministic_max_records_takes_numpy_integers() -> None:
    def body(x: wp.array(dtype=float)):
        x[wp.tid()] = 1.0

    k = wp.kernel(body, module="unique",
                  module_options={"deterministic_max_records": np.int64(12)})  # fmt: skip
    assert k.module.options["deterministic_max_records"] == 12


# -- a hash grid rebuilt every substep under a Tape ----------------------------------------------
# newton rebuilds its 128^3 particle grid every substep (1,920 builds a training iteration of its
# cloth example). Each build allocated fresh 16 MB cell arrays and each recorded launch kept
# them alive: 30 GB an iteration. A Tape now keeps a build's filled cells only.


@wp.kernel
def pair_energy(grid: wp.uint64, x: wp.array(dtype=wp.vec3d), r: wp.float64,
                e: wp.array(dtype=wp.float64)):
    i = wp.tid()
    p = x[i]
    s = wp.float64(0.0)
    for j in wp.hash_grid_query(grid, p, r):
        d = wp.length(p - x[j])
        if j != i and d < r:
            s += (r - d) * (r - d)
    e[i] = s


def _substeps(xs: list[np.ndarray], tape_all: bool) -> tuple[np.ndarray, int]:
    import tracemalloc

    grid = wp.HashGrid(128, 128, 128, dtype=wp.float64)
    xa = [wp.array(x, dtype=wp.vec3d, requires_grad=True) for x in xs]
    es = [wp.zeros(len(x), dtype=wp.float64, requires_grad=True) for x in xs]
    tracemalloc.start()
    tape = wp.Tape()
    for x, e in zip(xa, es, strict=True):
        grid.build(x, 0.3)
        with tape:
            wp.launch(pair_energy, len(x), [grid.id, x, wp.float64(0.3), e])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    tape.backward(grads={e: wp.ones(len(e), dtype=wp.float64) for e in es})
    return np.concatenate([x.grad.numpy() for x in xa]), peak


def test_tape_keeps_rebuilt_hash_grids_compactly() -> None:
    rng = np.random.default_rng(3)
    xs = [rng.uniform(0.0, 1.0, (40, 3)) for _ in range(24)]
    grads, peak = _substeps(xs, True)
    assert peak < 100e6, peak  # 24 builds x 16 MB of cell ranges were kept before
    one = [_substeps([x], True)[0] for x in xs[:3]]  # each launch alone, on its own build
    np.testing.assert_allclose(grads[: 3 * 40], np.concatenate(one), rtol=1e-12)
    assert np.abs(grads).max() > 0.01
