"""wp.HashGrid and the hash grid query builtins: candidate sets against an independent numpy
reference and against warp-lang, the loop forms, groups, precisions, gradients through positions
read in the query loop (central FD), and a Tape across a rebuild of the grid."""

# ruff: noqa: UP018  (Warp-style `int(0)` declares an int32 loop variable)

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from dual import both, warp_module
from gradfd import arr, check_program
from wpcompat import DEVICE, wp


def make(wp: Any) -> SimpleNamespace:
    """The test kernels, built with `wp` (gradloom or warp-lang)."""
    f64, f16 = wp.float64, wp.float16

    @wp.kernel
    def collect(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), radius: float,
                out: wp.array2d(dtype=int), count: wp.array(dtype=int)):
        i = wp.tid()
        n = int(0)
        for index in wp.hash_grid_query(grid, pts[i], radius):
            out[i, n] = index
            n += 1
        count[i] = n

    @wp.kernel
    def collect_while_d(grid: wp.uint64, pts: wp.array(dtype=wp.vec3d), radius: f64,
                        out: wp.array2d(dtype=int), count: wp.array(dtype=int)):
        i = wp.tid()
        query = wp.hash_grid_query(grid, pts[i], radius)
        index = int(0)
        n = int(0)
        while wp.hash_grid_query_next(query, index):
            out[i, n] = index
            n += 1
        count[i] = n

    @wp.kernel
    def collect_h(grid: wp.uint64, pts: wp.array(dtype=wp.vec3h), radius: f16,
                  out: wp.array2d(dtype=int), count: wp.array(dtype=int)):
        i = wp.tid()
        n = int(0)
        for index in wp.hash_grid_query(grid, pts[i], radius):
            out[i, n] = index
            n += 1
        count[i] = n

    @wp.kernel
    def collect_group(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), radius: float,
                      groups: wp.array(dtype=int), out: wp.array2d(dtype=int),
                      count: wp.array(dtype=int)):
        i = wp.tid()
        n = int(0)
        for index in wp.hash_grid_query(grid, pts[i], radius, groups[i]):
            out[i, n] = index
            n += 1
        count[i] = n

    def capped(vec: Any, scalar: Any) -> Any:
        """Collect at most results.shape[1] candidates (a query that never ends still returns)."""
        @wp.kernel
        def collect_capped(grid: wp.uint64, radius: scalar, queries: wp.array(dtype=vec),
                           results: wp.array2d(dtype=int), counts: wp.array(dtype=int)):
            i = wp.tid()
            query = wp.hash_grid_query(grid, queries[i], radius)
            index = int(0)
            count = int(0)
            while count < results.shape[1]:
                if not wp.hash_grid_query_next(query, index):
                    break
                results[i, count] = index
                count += 1
            counts[i] = count
        return collect_capped

    capped_f = capped(wp.vec3, wp.float32)
    capped_d = capped(wp.vec3d, wp.float64)
    capped_h = capped(wp.vec3h, wp.float16)

    @wp.kernel
    def point_ids(grid: wp.uint64, out: wp.array(dtype=int)):
        i = wp.tid()
        out[i] = wp.hash_grid_point_id(grid, i)

    @wp.kernel
    def first_after_break(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), radius: float,
                          stop_at: int, out: wp.array(dtype=int), seen: wp.array(dtype=int)):
        # `break` leaves without advancing the query again: index keeps the candidate it hit
        i = wp.tid()
        query = wp.hash_grid_query(grid, pts[i], radius)
        index = int(-1)
        n = int(0)
        while wp.hash_grid_query_next(query, index):
            if n == stop_at:
                break
            n += 1
        out[i] = index
        seen[i] = n

    @wp.kernel
    def count_odd(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), radius: float,
                  out: wp.array(dtype=int)):
        # `continue` still advances the query
        i = wp.tid()
        n = int(0)
        for index in wp.hash_grid_query(grid, pts[i], radius):
            if index % 2 == 0:
                continue
            n += 1
        out[i] = n

    @wp.func
    def nearest(query: wp.HashGridQuery, center: wp.vec3, pts: wp.array(dtype=wp.vec3),
                radius: float):
        best = int(-1)
        best_d = radius
        index = int(0)
        while wp.hash_grid_query_next(query, index):
            d = wp.length(pts[index] - center)
            if d <= best_d:
                best = index
                best_d = d
        return best

    @wp.kernel
    def nearest_kernel(grid: wp.uint64, queries: wp.array(dtype=wp.vec3),
                       pts: wp.array(dtype=wp.vec3), radius: float, out: wp.array(dtype=int)):
        i = wp.tid()
        out[i] = nearest(wp.hash_grid_query(grid, queries[i], radius), queries[i], pts, radius)

    @wp.kernel
    def energy(grid: wp.uint64, x: wp.array(dtype=wp.vec3d), r: f64, e: wp.array(dtype=f64)):
        # a smooth pair potential (zero beyond r) summed over the neighbours of each point
        i = wp.tid()
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
    def draws_until(seed: int, out: wp.array(dtype=int), last: wp.array(dtype=float)):
        # a loop test that advances state (the RNG), like hash_grid_query_next
        i = wp.tid()
        state = wp.rand_init(seed, i)
        n = int(0)
        while wp.randf(state) < 0.8:
            n += 1
        out[i] = n
        last[i] = wp.randf(state)

    @wp.kernel
    def branch_query(grid: wp.uint64, x: wp.array(dtype=wp.vec3d), r: f64,
                     e: wp.array(dtype=f64)):
        # the query is made on either branch of a runtime if (the if merges its state)
        i = wp.tid()
        p = x[i]
        if i % 2 == 0:
            query = wp.hash_grid_query(grid, p, r)
        else:
            query = wp.hash_grid_query(grid, p, r * f64(0.5))
        acc = f64(0.0)
        for j in query:
            d = wp.length(p - x[j])
            if j != i and d < r:
                acc += (r - d) * (r - d)
        e[i] = acc

    @wp.kernel
    def energy_while(grid: wp.uint64, x: wp.array(dtype=wp.vec3d), r: f64,
                     e: wp.array(dtype=f64)):
        # the same sum in the while form, with a running product carried through the loop
        i = wp.tid()
        p = x[i]
        query = wp.hash_grid_query(grid, p, r)
        j = int(0)
        acc = f64(0.0)
        scale = f64(1.0)
        while wp.hash_grid_query_next(query, j):
            d = wp.length(p - x[j])
            if j != i and d < r:
                s = r - d
                acc += scale * s * s
                scale = scale * (f64(1.0) + f64(0.1) * x[j][2])
        e[i] = acc

    return SimpleNamespace(**{k: v for k, v in locals().items() if hasattr(v, "key")
                              and k != "capped"})


K, W = both(make)
needs_warp = pytest.mark.skipif(W is None, reason="warp-lang is not importable")


def W_MOD() -> Any:  # noqa: N802 - reads like the module it returns
    """warp-lang itself (for its HashGrid, arrays and launch)."""
    return warp_module()


# -- an independent reference: the candidate set of a query -------------------------------------


def ref_cells(p: np.ndarray, inv: Any, t: Any) -> np.ndarray:
    """Cell coordinates (unwrapped, int64) of points p: floor(p * inv) in precision t."""
    v = (p.astype(t) * t(inv)).astype(np.float64)
    return np.floor(v).astype(np.int64)


def ref_candidates(pts: np.ndarray, q: np.ndarray, radius: float, width: float,
                   dims: tuple[int, int, int], t: Any = np.float32) -> list[set[int]]:
    """For each query point, the points in the cells its box [q - r, q + r] overlaps."""
    inv = t(1) / t(width)
    cells = np.mod(ref_cells(pts, inv, t), dims)
    lo = ref_cells(q - t(radius), inv, t)
    hi = ref_cells(q + t(radius), inv, t)
    out = []
    for a, b in zip(lo, hi):
        axes = [set(np.mod(np.arange(a[k], min(b[k], a[k] + dims[k] - 1) + 1), dims[k]))
                for k in range(3)]
        inside = [all(c[k] in axes[k] for k in range(3)) for c in cells]
        out.append(set(np.nonzero(inside)[0].tolist()))
    return out


def run_collect(kernels: Any, kernel: str, wpm: Any, pts: np.ndarray, vec: Any, grid_dims: Any,
                width: float, radius: float, grid_dtype: Any = None,
                extra: tuple[Any, ...] = ()) -> tuple[list[list[int]], np.ndarray]:
    """Build a grid with framework wpm, run a collecting kernel; (candidates per point, ids)."""
    n = len(pts)
    points = wpm.array(pts, dtype=vec, device=DEVICE)
    grid = wpm.HashGrid(*grid_dims, device=DEVICE, **({} if grid_dtype is None
                                                       else {"dtype": grid_dtype}))
    groups = [wpm.array(g, dtype=wpm.int32, device=DEVICE) for g in extra]
    grid.build(points, width, groups=groups[0] if groups else None)
    out = wpm.zeros((n, n), dtype=int, device=DEVICE)
    count = wpm.zeros(n, dtype=int, device=DEVICE)
    wpm.launch(getattr(kernels, kernel), dim=n, device=DEVICE,
               inputs=[grid.id, points, radius, *groups, out, count])
    ids = wpm.zeros(n, dtype=int, device=DEVICE)
    wpm.launch(kernels.point_ids, dim=n, inputs=[grid.id, ids], device=DEVICE)
    c, o = count.numpy(), out.numpy()
    return [o[i, :c[i]].tolist() for i in range(n)], ids.numpy()


def cloud(n: int, lo: float, hi: float, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, (n, 3)).astype(np.float32)


CONFIGS = [  # (points low, high, grid dims, cell width, query radius)
    (0.0, 4.0, (8, 8, 8), 0.5, 0.5),
    (-3.0, 3.0, (4, 5, 3), 0.7, 0.9),     # negative coordinates, wrapping
    (-1.0, 1.0, (2, 3, 2), 0.3, 1.2),     # the box spans more cells than the grid has
    (100.0, 140.0, (16, 16, 1), 2.5, 3.0),  # a flat grid, large coordinates
]


@pytest.mark.parametrize("lo,hi,dims,width,radius", CONFIGS)
def test_candidates_match_reference(lo: float, hi: float, dims: Any, width: float,
                                    radius: float) -> None:
    pts = cloud(60, lo, hi)
    got, ids = run_collect(K, "collect", wp, pts, wp.vec3, dims, width, radius)
    want = ref_candidates(pts, pts, radius, width, dims)
    for i, (g, w) in enumerate(zip(got, want)):
        assert len(g) == len(set(g)), f"point {i}: a candidate visited twice: {g}"
        assert set(g) == w, f"point {i}: {sorted(g)} != {sorted(w)}"
    assert sorted(ids.tolist()) == list(range(len(pts)))


@needs_warp
@pytest.mark.parametrize("lo,hi,dims,width,radius", CONFIGS)
def test_candidates_match_warp(lo: float, hi: float, dims: Any, width: float,
                               radius: float) -> None:
    pts = cloud(60, lo, hi, seed=1)
    got, ids = run_collect(K, "collect", wp, pts, wp.vec3, dims, width, radius)
    ref, ref_ids = run_collect(W, "collect", W_MOD(), pts, W_MOD().vec3, dims, width, radius)
    assert [sorted(g) for g in got] == [sorted(r) for r in ref]
    np.testing.assert_array_equal(ids, ref_ids)  # the cell-sorted order (a stable sort)


@needs_warp
@pytest.mark.parametrize("prec", ["float64", "float16"])
def test_other_precisions_match_warp(prec: str) -> None:
    pts = cloud(50, -2.0, 2.0, seed=2).astype(np.float64)
    kernel = {"float64": "collect_while_d", "float16": "collect_h"}[prec]
    runs = []
    for kernels, wpm in ((K, wp), (W, W_MOD())):
        vec = {"float64": wpm.vec3d, "float16": wpm.vec3h}[prec]
        t = getattr(wpm, prec)
        runs.append(run_collect(kernels, kernel, wpm, pts, vec, (6, 5, 4), 0.6, t(0.7),
                                grid_dtype=t))
    (got, ids), (ref, ref_ids) = runs
    assert [sorted(g) for g in got] == [sorted(r) for r in ref]
    np.testing.assert_array_equal(ids, ref_ids)
    t = {"float64": np.float64, "float16": np.float16}[prec]
    want = ref_candidates(pts, pts, 0.7, 0.6, (6, 5, 4), t)
    assert [set(g) for g in got] == want


@needs_warp
def test_grouped_queries_match_warp() -> None:
    pts = cloud(60, 0.0, 2.0, seed=3)
    groups = np.random.default_rng(3).integers(-2, 3, 60).astype(np.int32)
    got, _ = run_collect(K, "collect_group", wp, pts, wp.vec3, (4, 4, 4), 0.5, 0.6,
                         extra=(groups,))
    ref, _ = run_collect(W, "collect_group", W_MOD(), pts, W_MOD().vec3, (4, 4, 4), 0.5, 0.6,
                         extra=(groups,))
    assert [sorted(g) for g in got] == [sorted(r) for r in ref]
    all_cands = ref_candidates(pts, pts, 0.6, 0.5, (4, 4, 4))
    for i, g in enumerate(got):
        assert set(g) == {j for j in all_cands[i] if groups[j] == groups[i]}


def test_group_query_on_ungrouped_grid_visits_all() -> None:
    pts = cloud(30, 0.0, 2.0, seed=4)
    groups = np.zeros(30, np.int32)
    points = wp.array(pts, dtype=wp.vec3, device=DEVICE)
    grid = wp.HashGrid(4, 4, 4, device=DEVICE)
    grid.build(points, 0.5)  # no groups: the group argument is ignored, as in Warp
    out = wp.zeros((30, 30), dtype=int, device=DEVICE)
    count = wp.zeros(30, dtype=int, device=DEVICE)
    wp.launch(K.collect_group, dim=30, device=DEVICE,
              inputs=[grid.id, points, 0.6, wp.array(groups + 7, dtype=wp.int32), out, count])
    want = ref_candidates(pts, pts, 0.6, 0.5, (4, 4, 4))
    assert [set(out.numpy()[i, :c].tolist()) for i, c in enumerate(count.numpy())] == want


def test_unbuilt_grid() -> None:
    grid = wp.HashGrid(4, 4, 4, device=DEVICE)
    ids = wp.zeros(3, dtype=int, device=DEVICE)
    wp.launch(K.point_ids, dim=3, inputs=[grid.id, ids], device=DEVICE)
    assert ids.numpy().tolist() == [-1, -1, -1]
    pts = wp.array(cloud(3, 0.0, 1.0), dtype=wp.vec3, device=DEVICE)
    count = wp.full(3, 5, dtype=int, device=DEVICE)
    wp.launch(K.collect, dim=3, inputs=[grid.id, pts, 0.5, wp.zeros((3, 3), dtype=int), count],
              device=DEVICE)
    assert count.numpy().tolist() == [0, 0, 0]


@functools.cache
def small_scene() -> tuple[np.ndarray, Any, Any]:
    pts = cloud(40, 0.0, 2.0, seed=5)
    points = wp.array(pts, dtype=wp.vec3, device=DEVICE)
    grid = wp.HashGrid(4, 4, 4, device=DEVICE)
    grid.build(points, 0.5)
    return pts, points, grid


@pytest.mark.parametrize("stop_at", [0, 2])
def test_break_leaves_index_at_the_candidate(stop_at: int) -> None:
    pts, points, grid = small_scene()
    out = wp.zeros(40, dtype=int, device=DEVICE)
    seen = wp.zeros(40, dtype=int, device=DEVICE)
    wp.launch(K.first_after_break, dim=40, inputs=[grid.id, points, 0.6, stop_at, out, seen],
              device=DEVICE)
    lists, _ = run_collect(K, "collect", wp, pts, wp.vec3, (4, 4, 4), 0.5, 0.6)
    for i, cands in enumerate(lists):
        if len(cands) > stop_at:
            assert (out.numpy()[i], seen.numpy()[i]) == (cands[stop_at], stop_at)
        else:
            assert seen.numpy()[i] == len(cands)


def test_continue_still_advances() -> None:
    pts, points, grid = small_scene()
    out = wp.zeros(40, dtype=int, device=DEVICE)
    wp.launch(K.count_odd, dim=40, inputs=[grid.id, points, 0.6, out], device=DEVICE)
    want = ref_candidates(pts, pts, 0.6, 0.5, (4, 4, 4))
    assert out.numpy().tolist() == [sum(j % 2 for j in w) for w in want]


def test_query_passed_to_func() -> None:
    pts, points, grid = small_scene()
    queries = cloud(10, 0.0, 2.0, seed=6)
    out = wp.zeros(10, dtype=int, device=DEVICE)
    wp.launch(K.nearest_kernel, dim=10, device=DEVICE,
              inputs=[grid.id, wp.array(queries, dtype=wp.vec3), points, 0.4, out])
    d = np.linalg.norm(pts[None, :, :] - queries[:, None, :], axis=2)
    want = np.where(d.min(axis=1) <= 0.4, d.argmin(axis=1), -1)
    assert out.numpy().tolist() == want.tolist()


def single_point(kernels: Any, wpm: Any, dims: Any, prec: str, coord: float, width: float,
                 radius: float, query: float | None = None) -> list[int]:
    """The candidates a query yields on a grid holding one point (at most 8)."""
    t = getattr(wpm, prec)
    vec = wpm.types.vector(3, t)
    q = coord if query is None else query
    points = wpm.array([[coord] * 3], dtype=vec, device=DEVICE)
    queries = wpm.array([[q] * 3], dtype=vec, device=DEVICE)
    results = wpm.full((1, 8), -1, dtype=int, device=DEVICE)
    counts = wpm.zeros(1, dtype=int, device=DEVICE)
    grid = wpm.HashGrid(*dims, device=DEVICE, dtype=t)
    grid.build(points, width)
    kernel = getattr(kernels, {"float32": "capped_f", "float64": "capped_d",
                               "float16": "capped_h"}[prec])
    wpm.launch(kernel, dim=1, inputs=[grid.id, t(radius), queries, results, counts],
               device=DEVICE)
    return results.numpy()[0, :counts.numpy()[0]].tolist()


EXTREME = [  # (precision, coordinate, cell width, radius[, query coordinate])
    ("float32", 1.0e20, 1.0, 1.0), ("float32", -1.0e20, 1.0, 1.0),
    ("float32", np.inf, 1.0, 1.0), ("float32", -np.inf, 1.0, 1.0),
    ("float32", 2147483648.0, 1.0, 1.0), ("float64", 1.0e300, 1.0, 1.0),
    ("float64", -1.0e300, 1.0, 1.0), ("float64", 2147483647.25, 1.0, 0.1),
    ("float16", 65504.0, 1.0e-3, 1.0e-3),
    ("float32", 0.0, 1.0, 0.0, np.nan), ("float64", np.nan, 1.0, 0.0, 0.0),
    ("float16", 0.0, 1.0, 0.0, np.inf),
]


@pytest.mark.parametrize("dims", [(1, 1, 1), (3, 5, 7)])
@pytest.mark.parametrize("case", EXTREME, ids=[f"{c[0]}-{c[1]}-{c[-1]}" for c in EXTREME])
def test_extreme_and_nan_coordinates(dims: Any, case: Any) -> None:
    # cell coordinates clamp to [INT_MIN, INT_MAX - 1], NaN takes cell 0, and a query visits
    # each cell once even in a 1x1x1 grid (a traversal that did not end would fill all 8 slots)
    got = single_point(K, wp, dims, *case)
    # a query at infinity visits an edge cell: the point's only in a 1x1x1 grid
    inf_query = len(case) == 5 and np.isinf(case[4]) and dims != (1, 1, 1)
    assert got == ([] if inf_query else [0])
    if W is not None:
        assert got == single_point(W, W_MOD(), dims, *case)


def test_while_test_that_advances_state() -> None:
    # regression: the state a loop test advanced was dropped, so this loop never ended
    runs = []
    for kernels, wpm in ((K, wp), *(((W, W_MOD()),) if W is not None else ())):
        out = wpm.zeros(64, dtype=int, device=DEVICE)
        last = wpm.zeros(64, dtype=float, device=DEVICE)
        wpm.launch(kernels.draws_until, dim=64, inputs=[7, out, last], device=DEVICE)
        runs.append((out.numpy(), last.numpy()))
    counts = runs[0][0]
    assert counts.max() > 2 and 1.0 < counts.mean() < 10.0  # geometric, mean 4
    for got, ref in zip(runs[0], runs[-1], strict=True):
        np.testing.assert_array_equal(got, ref)


# -- gradients ----------------------------------------------------------------------------------


def grid_program(kernel: Any, n: int, radius: float) -> Any:
    def program(arrays: list[Any]) -> list[Any]:
        (x,) = arrays
        grid = wp.HashGrid(3, 3, 3, device=DEVICE, dtype=wp.float64)
        grid.build(x, radius)
        e = wp.zeros(n, dtype=wp.float64, device=DEVICE, requires_grad=True)
        wp.launch(kernel, dim=n, inputs=[grid.id, x, radius, e], device=DEVICE)
        return [e]
    program.__name__ = kernel.key
    return program


@pytest.mark.parametrize("kernel", ["energy", "energy_while", "branch_query"])
def test_gradients_through_positions_read_in_the_loop(kernel: str) -> None:
    x = np.random.default_rng(7).uniform(-1.0, 1.0, (24, 3))
    res = check_program(grid_program(getattr(K, kernel), 24, 0.6), [arr(x, wp.vec3d)], wrt=[0])
    assert np.abs(res.reverse[0]).max() > 0.1  # neighbours were found and differentiated


@pytest.mark.parametrize("wrap", [lambda h: h, lambda h: wp.uint64(h)], ids=["id", "uint64"])
def test_tape_keeps_the_grid_a_launch_used(wrap: Any) -> None:
    x_np = np.random.default_rng(8).uniform(0.0, 2.0, (30, 3))

    def gradient(rebuild: bool) -> np.ndarray:
        x = wp.array(x_np, dtype=wp.vec3d, requires_grad=True, device=DEVICE)
        grid = wp.HashGrid(4, 4, 4, device=DEVICE, dtype=wp.float64)
        grid.build(x, 0.5)
        e = wp.zeros(30, dtype=wp.float64, requires_grad=True, device=DEVICE)
        tape = wp.Tape()
        with tape:
            wp.launch(K.energy, dim=30, inputs=[wrap(grid.id), x, 0.5, e], device=DEVICE)
        if rebuild:  # other points, other cells: the adjoint must not see this build
            grid.build(wp.array(x_np[::-1] * 0.3 + 1.0, dtype=wp.vec3d), 0.25)
        tape.backward(grads={e: wp.ones(30, dtype=wp.float64, device=DEVICE)})
        return x.grad.numpy().copy()

    before = gradient(False)
    assert np.abs(before).max() > 0.1
    np.testing.assert_array_equal(gradient(True), before)


@needs_warp
def test_forward_values_match_warp() -> None:
    x = np.random.default_rng(9).uniform(-1.0, 1.0, (40, 3))
    outs = []
    for kernels, wpm in ((K, wp), (W, W_MOD())):
        xs = wpm.array(x, dtype=wpm.vec3d, device=DEVICE)
        grid = wpm.HashGrid(3, 3, 3, device=DEVICE, dtype=wpm.float64)
        grid.build(xs, 0.6)
        e = wpm.zeros(40, dtype=wpm.float64, device=DEVICE)
        wpm.launch(kernels.energy_while, dim=40, inputs=[grid.id, xs, 0.6, e], device=DEVICE)
        outs.append(e.numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12)


# -- errors --------------------------------------------------------------------------------------


def test_host_side_errors() -> None:
    with pytest.raises(TypeError, match="Unsupported dtype"):
        wp.HashGrid(4, 4, 4, dtype=wp.int32)
    with pytest.raises(RuntimeError, match="cell count exceeds"):
        wp.HashGrid(1291, 1291, 1291)
    grid = wp.HashGrid(4, 4, 4)
    with pytest.raises(ValueError, match="positive"):
        grid.build(wp.zeros(3, dtype=wp.vec3), 0.0)
    with pytest.raises(TypeError, match="vec3"):
        grid.build(wp.zeros(3, dtype=wp.vec3d), 1.0)


def test_kernel_side_errors() -> None:
    @wp.kernel
    def bad_point(grid: wp.uint64, out: wp.array(dtype=int)):
        wp.hash_grid_query(grid, 1.0, 0.5)  # <- here
        out[0] = 0

    @wp.kernel
    def bad_index(grid: wp.uint64, out: wp.array(dtype=int)):
        q = wp.hash_grid_query(grid, wp.vec3(0.0), 0.5)
        while wp.hash_grid_query_next(q, out[0]):  # <- here
            out[1] = 1

    grid = wp.HashGrid(2, 2, 2)
    for k, phrase in ((bad_point, "vec3 point"), (bad_index, "must be a variable name")):
        with pytest.raises(wp.CompileError, match=phrase) as info:
            wp.launch(k, dim=1, inputs=[grid.id, wp.zeros(2, dtype=int)])
        assert info.value.loc.file == __file__


@pytest.mark.parametrize("dims", [(128, 128, 128), (3, 7, 5), (46337, 46337, 1), (1, 1, 2**31 - 1)])
def test_cell_index_wraps_like_integer_modulo(dims: Any) -> None:
    # the build wraps coordinates in float64 (hash_grid.cell_index): compare with Python's
    # integer modulo, at multiples of each extent and one either side, up to the int32 clamps
    from gradloom.runtime.geometry.hash_grid import cell_index

    rng = np.random.default_rng(7)
    rows = []
    for d in dims:
        k = rng.integers(-(2**31) // d, (2**31 - 2) // d, 40)
        near = np.concatenate([k * d - 1, k * d, k * d + 1, [-(2**31), 2**31 - 2, 0, -1]])
        rows.append(np.clip(near, -(2**31), 2**31 - 2))
    coords = np.stack(rows, axis=1)
    dx, dy, dz = dims
    want = [int(x) % dx + (int(y) % dy) * dx + (int(z) % dz) * dx * dy for x, y, z in coords]
    got = cell_index(coords.astype(np.float64), dims)
    assert got.dtype == np.int64 and got.tolist() == want
