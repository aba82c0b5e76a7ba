"""Launches split across worker threads: the thread-sharing analysis, results equal to a serial
run, chunks and their private buffers (sums in chunk order whatever the threads), stack growth
in a chunk, errors, the backoff after a split that did not gain, and the pool itself."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gradloom as wp
from gradloom import config
from gradloom.passes.threads import thread_plan
from gradloom.runtime.cpu import parallel
from gradloom.runtime.cpu.launch import prepared_adjoint, prepared_forward
from gradloom.runtime.pool import WorkerPool

f64 = wp.float64


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch):
    """Split every launch of two or more threads across `n` workers; count the splits."""
    calls: list[int] = []
    real = parallel.run_split

    def counting(prepared, block, dims, total, args, chunks, wake, targets, restart):  # type: ignore[no-untyped-def]
        calls.append(config.num_threads if wake else 1)
        real(prepared, block, dims, total, args, chunks, wake, targets, restart)

    monkeypatch.setattr(parallel, "run_split", counting)
    monkeypatch.setattr(config, "parallel_min_ns", 0)
    # launches that add into shared memory split at any size here
    for name in ("SCATTER_CHUNK_WORK", "SCATTER_MIN_CHUNK_LOOPS"):
        monkeypatch.setattr(parallel, name, 1)
    for name in ("SCATTER_BYTES_PER_WORK", "SCATTER_BYTES_PER_THREAD_LOOPS"):
        monkeypatch.setattr(parallel, name, 1e9)

    def use(n: int) -> list[int]:
        monkeypatch.setattr(config, "num_threads", n)
        calls.clear()
        return calls

    return use


# -- kernels ------------------------------------------------------------------------------------

@wp.kernel
def saxpy(a: f64, x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def pairwise(x: wp.array(dtype=wp.vec3d), n: int, f: wp.array(dtype=wp.vec3d)):
    """n-body style: each thread reads every body; its adjoint scatters into every x.grad."""
    i = wp.tid()
    acc = wp.vec3d()
    for j in range(n):
        d = x[j] - x[i]
        acc = acc + d / (wp.dot(d, d) + f64(0.1))
    f[i] = acc


@wp.kernel
def energy(x: wp.array(dtype=f64), e: wp.array(dtype=f64)):
    i = wp.tid()
    wp.atomic_add(e, 0, x[i] * x[i])


@wp.kernel
def slots(x: wp.array(dtype=f64), count: wp.array(dtype=int), out: wp.array(dtype=f64)):
    i = wp.tid()
    if x[i] > f64(0.0):
        s = wp.atomic_add(count, 0, 1)
        out[s] = x[i] * x[i]


@wp.kernel
def power_loop(x: wp.array(dtype=f64), n: int, y: wp.array(dtype=f64)):
    i = wp.tid()
    p = f64(1.0)
    for _ in range(n):
        p = p * x[i]
    y[i] = p


@wp.kernel
def grid2d(a: wp.array2d(dtype=f64), b: wp.array2d(dtype=f64)):
    i, j = wp.tid()
    b[i, j] = a[i, j] * f64(2.0) + a[j, i]


@wp.kernel
def column0(a: wp.array2d(dtype=f64)):
    i, _j = wp.tid()
    a[i, 0] = f64(1.0)


@wp.kernel
def shift_left(a: wp.array(dtype=f64)):
    i = wp.tid()
    a[i] = a[i + 1]


@wp.kernel
def inplace(a: wp.array(dtype=f64)):
    i = wp.tid()
    a[i] = a[i] * a[i]


# -- the analysis -------------------------------------------------------------------------------

def _plans(kernel):  # type: ignore[no-untyped-def]
    """(forward plan, adjoint plan) as compiled."""
    return (prepared_forward(kernel).compiled.threads,
            prepared_adjoint(kernel).compiled.threads)


def test_own_index_accesses_need_nothing() -> None:
    for k in (saxpy, grid2d, inplace, power_loop):
        fwd, adj = _plans(k)
        assert fwd.serial is None and adj.serial is None, k
        assert adj.scatter == () or k is grid2d, k
    # grid2d's adjoint adds into a.grad[i, j] and a.grad[j, i]: threads (i, j) and (j, i)
    # both add into each, so those adds go to private buffers, not plain load-add-stores
    assert len(_plans(grid2d)[1].scatter) == 1


def test_gathers_scatter_their_gradient_privately() -> None:
    fwd, adj = _plans(pairwise)
    assert fwd.serial is None and adj.serial is None
    assert len(adj.scatter) == 1  # x's gradient pointer
    assert prepared_adjoint(pairwise).compiled.scatter == (((0, None), True),)


def test_shared_writes_and_counters_are_serial() -> None:
    assert _plans(slots)[0].serial is not None  # the slot counter's values depend on order
    assert prepared_forward(shift_left).compiled.threads.serial is not None
    # a[i, 0] written by every j: threads share elements
    assert prepared_forward(column0).compiled.threads.serial is not None


def test_float_atomics_are_flagged() -> None:
    assert _plans(energy)[0].float_atomics
    assert not _plans(saxpy)[0].float_atomics


def test_analysis_reads_the_ir() -> None:
    """thread_plan is a pure function of the IR it gets (the kernel build calls it)."""
    from gradloom.frontend.lower import lower_kernel
    ir = lower_kernel(shift_left.info, list(shift_left.params))
    assert thread_plan(ir).serial is not None


# -- results ------------------------------------------------------------------------------------

def test_split_forward_equals_serial(threads) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    xv, yv = rng.normal(size=10001), rng.normal(size=10001)
    outs = []
    for n in (1, 2, 3):
        calls = threads(n)
        y = wp.array(yv, dtype=f64)
        wp.launch(saxpy, len(xv), inputs=[2.5, wp.array(xv, dtype=f64), y])
        assert calls == ([] if n == 1 else [n])
        outs.append(y.numpy())
    np.testing.assert_allclose(outs[0], 2.5 * xv + yv, rtol=1e-14, atol=1e-15)  # fma
    np.testing.assert_array_equal(outs[1], outs[0])
    np.testing.assert_array_equal(outs[2], outs[0])


def test_2d_launch_split(threads) -> None:  # type: ignore[no-untyped-def]
    calls = threads(2)
    av = np.random.default_rng(1).normal(size=(37, 37))
    b = wp.zeros((37, 37), dtype=f64)
    wp.launch(grid2d, (37, 37), inputs=[wp.array(av, dtype=f64), b])
    assert calls == [2]
    np.testing.assert_array_equal(b.numpy(), 2 * av + av.T)


def _pairwise_grad(xv: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = wp.array(xv, dtype=wp.vec3d, requires_grad=True)
    f = wp.zeros(len(xv), dtype=wp.vec3d, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(pairwise, len(xv), inputs=[x, len(xv), f])
    tape.backward(grads={f: wp.array(w, dtype=wp.vec3d)})
    return f.numpy(), x.grad.numpy()


def test_private_gradient_buffers_match_serial_and_fd(threads) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    xv, w = rng.normal(size=(40, 3)), rng.normal(size=(40, 3))
    threads(1)
    f1, g1 = _pairwise_grad(xv, w)
    calls = threads(2)
    f2, g2 = _pairwise_grad(xv, w)
    assert calls == [2, 2]  # forward and adjoint both split
    np.testing.assert_array_equal(f2, f1)
    np.testing.assert_allclose(g2, g1, rtol=1e-12, atol=1e-12)
    _, g3 = _pairwise_grad(xv, w)
    np.testing.assert_array_equal(g3, g2)  # same thread count: bit-for-bit the same
    # central differences of sum(w * f(x)) along a random direction
    d, h = rng.normal(size=xv.shape), 1e-6

    def objective(xs: np.ndarray) -> float:
        threads(1)
        return float(np.sum(w * _pairwise_grad(xs, w)[0]))

    fd = (objective(xv + h * d) - objective(xv - h * d)) / (2 * h)
    assert np.sum(g2 * d) == pytest.approx(fd, rel=1e-7)


def test_gradient_already_holding_values_accumulates(threads) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    xv, w = rng.normal(size=(16, 3)), rng.normal(size=(16, 3))
    threads(1)
    _, g = _pairwise_grad(xv, w)
    threads(2)
    x = wp.array(xv, dtype=wp.vec3d, requires_grad=True)
    x.grad.numpy()[...] = 1.0
    f = wp.zeros(16, dtype=wp.vec3d, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(pairwise, 16, inputs=[x, 16, f])
    tape.backward(grads={f: wp.array(w, dtype=wp.vec3d)})
    np.testing.assert_allclose(x.grad.numpy(), g + 1.0, rtol=1e-12)


def test_float_atomic_sum_split(threads) -> None:  # type: ignore[no-untyped-def]
    calls = threads(2)
    xv = np.random.default_rng(4).normal(size=5000)
    x = wp.array(xv, dtype=f64, requires_grad=True)
    e = wp.zeros(1, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(energy, len(xv), inputs=[x, e])
    tape.backward(loss=e)
    assert calls == [2, 2]
    assert e.numpy()[0] == pytest.approx(np.sum(xv * xv), rel=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 2 * xv, rtol=1e-15)


def test_deterministic_config_keeps_float_atomics_serial(threads, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    calls = threads(2)
    monkeypatch.setattr(config, "deterministic", True)
    e = wp.zeros(1, dtype=f64)
    wp.launch(energy, 100, inputs=[wp.array(np.ones(100), dtype=f64), e])
    assert calls == [] and e.numpy()[0] == 100.0


def test_slot_counters_run_serially(threads) -> None:  # type: ignore[no-untyped-def]
    calls = threads(2)
    xv = np.random.default_rng(5).normal(size=300)
    x = wp.array(xv, dtype=f64, requires_grad=True)
    count = wp.zeros(1, dtype=int)
    out = wp.zeros(300, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(slots, 300, inputs=[x, count, out])
    assert calls == []  # serial, so the adjoint replays the same slots
    w = np.random.default_rng(6).normal(size=300)
    tape.backward(grads={out: wp.array(w, dtype=f64)})
    pos = np.flatnonzero(xv > 0)
    np.testing.assert_allclose(x.grad.numpy()[pos], 2 * xv[pos] * w[:len(pos)], rtol=1e-13)
    # not recorded: serial too, so the forward values do not depend on a Tape
    out2, count2 = wp.zeros(300, dtype=f64), wp.zeros(1, dtype=int)
    wp.launch(slots, 300, inputs=[x, count2, out2])
    assert calls == []
    np.testing.assert_array_equal(out2.numpy(), out.numpy())


def test_threads_reading_what_others_write_run_serially(threads) -> None:  # type: ignore[no-untyped-def]
    """Slices would race (thread 2 reads a[3] which thread 3 overwrites): the serial result."""
    calls = threads(2)
    av = np.arange(101, dtype=np.float64)
    a = wp.array(av, dtype=f64)
    wp.launch(shift_left, 100, inputs=[a])
    assert calls == []
    np.testing.assert_array_equal(a.numpy()[:100], av[1:])


def test_adjoint_stack_grows_inside_worker_slices(threads) -> None:  # type: ignore[no-untyped-def]
    calls = threads(2)
    n, m = 9000, 8  # 9000 float64 per thread: more than the first 64 KiB stack
    xv = 1.0 + 1e-4 * np.random.default_rng(7).normal(size=m)
    x = wp.array(xv, dtype=f64, requires_grad=True)
    y = wp.zeros(m, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(power_loop, m, inputs=[x, n, y])
    tape.backward(grads={y: wp.array(np.ones(m), dtype=f64)})
    assert calls == [2, 2]
    np.testing.assert_allclose(x.grad.numpy(), n * xv ** (n - 1), rtol=1e-10)
    # chunks that stopped resume on the caller's stack (which of the threads ran a chunk first
    # is a matter of timing)
    assert prepared_adjoint(power_loop).stacks[0].size >= n * 8


def test_in_place_kernel_split_under_tape(threads) -> None:  # type: ignore[no-untyped-def]
    calls = threads(2)
    av = np.random.default_rng(8).normal(size=1000)
    a = wp.array(av, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(inplace, 1000, inputs=[a])
    tape.backward(grads={a: wp.array(np.ones(1000), dtype=f64)})
    assert calls == [2, 2]
    np.testing.assert_allclose(a.grad.numpy(), 2 * av, rtol=1e-15)


def test_bounds_error_from_a_worker_slice(threads, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    threads(2)
    monkeypatch.setattr(config, "mode", "debug")

    @wp.kernel
    def overrun(a: wp.array(dtype=f64)):
        i = wp.tid()
        a[i + 1] = f64(1.0)

    with pytest.raises(wp.KernelRuntimeError, match="out of bounds"):
        wp.launch(overrun, 100, inputs=[wp.zeros(100, dtype=f64)])


def test_zero_stride_views_are_not_split(threads) -> None:  # type: ignore[no-untyped-def]
    calls = threads(2)
    base = np.zeros(1)
    view = np.lib.stride_tricks.as_strided(base, shape=(64,), strides=(0,))
    y = wp.zeros(64, dtype=f64)
    wp.launch(saxpy, 64, inputs=[1.0, wp.array(view, dtype=f64, copy=False), y])
    assert calls == []


def test_small_launches_stay_serial(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(config, "num_threads", 2)
    monkeypatch.setattr(config, "parallel_min_ns", 10**12)
    ran: list[int] = []
    monkeypatch.setattr(parallel, "run_split", lambda *a: ran.append(1))

    @wp.kernel
    def scale(a: f64, y: wp.array(dtype=f64)):
        i = wp.tid()
        y[i] = a * y[i]

    y = wp.zeros(200000, dtype=f64)
    wp.launch(scale, 10, inputs=[1.0, y])  # too small to time
    assert prepared_forward(scale).ns_per_thread is None
    wp.launch(scale, 200000, inputs=[1.0, y])  # first big one: split before it is timed
    assert ran == [1]
    wp.launch(scale, 1000, inputs=[1.0, y])  # cheap: serial, and timed
    assert ran == [1] and prepared_forward(scale).ns_per_thread is not None


# -- the pool -----------------------------------------------------------------------------------

def test_pool_runs_tasks_on_other_threads_and_reraises() -> None:
    pool = WorkerPool(3)
    seen: list[int] = []
    pool.run([lambda: seen.append(threading.get_ident()) for _ in range(3)])
    assert len(set(seen)) == 3 and threading.get_ident() in seen

    def boom() -> None:
        raise ValueError("in a worker")

    with pytest.raises(ValueError, match="in a worker"):
        pool.run([lambda: None, boom])
    pool.run([lambda: seen.append(0)])  # still usable afterwards
    assert seen[-1] == 0


def test_concurrent_launches_from_python_threads(threads) -> None:  # type: ignore[no-untyped-def]
    threads(2)
    xv = np.arange(20000, dtype=np.float64)
    ys = [wp.zeros(20000, dtype=f64) for _ in range(4)]

    def work(y) -> None:  # type: ignore[no-untyped-def]
        for _ in range(20):
            wp.launch(saxpy, 20000, inputs=[1.0, wp.array(xv, dtype=f64), y])

    ts = [threading.Thread(target=work, args=(y,)) for y in ys]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for y in ys:
        np.testing.assert_array_equal(y.numpy(), 20 * xv)


def test_num_threads_from_the_environment() -> None:
    env = {**os.environ, "GRADLOOM_NUM_THREADS": "3"}
    out = subprocess.run([sys.executable, "-c", "import gradloom.config as c; print(c.num_threads)"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"


def _llvm_text(kernel) -> str:  # type: ignore[no-untyped-def]
    from gradloom.codegen.entry_cpu import cpu_module as emit_module
    from gradloom.frontend.lower import lower_kernel
    from gradloom.passes.invariant import drop_invariant_params
    ir = drop_invariant_params(lower_kernel(kernel.info, list(kernel.params)))
    return emit_module(ir, "k", "x86_64-unknown-linux-gnu", "", thread_plan(ir).scatter)


def test_accumulators_are_private_and_need_no_atomic_instruction() -> None:
    assert prepared_forward(energy).compiled.scatter == (((1, None), False),)
    assert "atomicrmw" not in _llvm_text(energy)
    assert "atomicrmw" in _llvm_text(slots)  # its counter's old value is used: a real atomic


def test_split_float_accumulation_repeats_bit_for_bit(threads) -> None:  # type: ignore[no-untyped-def]
    threads(2)
    x = wp.array(np.random.default_rng(9).normal(size=100001), dtype=f64)
    sums = []
    for _ in range(3):
        e = wp.zeros(1, dtype=f64)
        wp.launch(energy, 100001, inputs=[x, e])
        sums.append(e.numpy()[0])
    assert sums[0] == sums[1] == sums[2]


@wp.kernel
def springs(x: wp.array(dtype=wp.vec3d), si: wp.array(dtype=int), sj: wp.array(dtype=int),
            f: wp.array(dtype=wp.vec3d)):
    """Cloth-style: one thread per spring adds a force into both of its ends."""
    s = wp.tid()
    d = x[sj[s]] - x[si[s]]
    fs = d * (wp.length(d) - f64(1.0))
    wp.atomic_add(f, si[s], fs)
    f[sj[s]] -= fs


def _springs(xv: np.ndarray, si: np.ndarray, sj: np.ndarray, w: np.ndarray,
             f_view: bool = False) -> tuple[np.ndarray, np.ndarray]:
    x = wp.array(xv, dtype=wp.vec3d, requires_grad=True)
    if f_view:  # every other row of a larger array: a strided accumulator
        f = wp.zeros(2 * len(xv), dtype=wp.vec3d, requires_grad=True)[::2]
    else:
        f = wp.zeros(len(xv), dtype=wp.vec3d, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(springs, len(si), inputs=[x, wp.array(si, dtype=int), wp.array(sj, dtype=int),
                                            f])
    tape.backward(grads={f: wp.array(w, dtype=wp.vec3d)})
    return f.numpy(), x.grad.numpy()


@pytest.mark.parametrize("f_view", [False, True])
def test_vector_accumulators_split_like_serial(threads, f_view: bool) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(10)
    n, m = 50, 400
    xv, w = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    si, sj = rng.integers(0, n, m), rng.integers(0, n, m)
    threads(1)
    f1, g1 = _springs(xv, si, sj, w, f_view)
    calls = threads(2)
    f2, g2 = _springs(xv, si, sj, w, f_view)
    assert calls == [2, 2]
    np.testing.assert_allclose(f2, f1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g2, g1, rtol=1e-12, atol=1e-12)
    # reference: the same forces in numpy, and a central difference of sum(w * f(x))
    d = xv[sj] - xv[si]
    fs = d * (np.linalg.norm(d, axis=1, keepdims=True) - 1.0)
    ref = np.zeros_like(xv)
    np.add.at(ref, si, fs)
    np.add.at(ref, sj, -fs)
    np.testing.assert_allclose(f2, ref, rtol=1e-12, atol=1e-12)
    direction, h = rng.normal(size=xv.shape), 1e-6

    def objective(xs: np.ndarray) -> float:
        dd = xs[sj] - xs[si]
        ff = dd * (np.linalg.norm(dd, axis=1, keepdims=True) - 1.0)
        return float(np.sum(w[si] * ff) - np.sum(w[sj] * ff))

    fd = (objective(xv + h * direction) - objective(xv - h * direction)) / (2 * h)
    assert np.sum(g2 * direction) == pytest.approx(fd, rel=1e-7)


def test_native_pool_is_used_where_supported(threads, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from gradloom.codegen.cpu import host_target
    from gradloom.codegen.native_pool import supported
    from gradloom.runtime import pool
    compiled = prepared_forward(saxpy).compiled
    assert (compiled.pool_functions is not None) == supported(host_target().triple)
    if compiled.pool_functions is None:
        pytest.skip("no native pool on this platform")
    used: list[int] = []
    real = pool.NativePool.run
    monkeypatch.setattr(pool.NativePool, "run",
                        lambda self, job: used.append(self.size) or real(self, job))
    threads(2)
    y = wp.zeros(1000, dtype=f64)
    wp.launch(saxpy, 1000, inputs=[1.0, wp.array(np.arange(1000.0), dtype=f64), y])
    assert used == [2]
    np.testing.assert_array_equal(y.numpy(), np.arange(1000.0))


def test_python_thread_pool_fallback(threads, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Where there is no native pool, Python threads run the slices."""
    import dataclasses
    prepared = prepared_forward(saxpy)
    monkeypatch.setattr(prepared, "compiled",
                        dataclasses.replace(prepared.compiled, pool_functions=None))
    calls = threads(3)
    y = wp.zeros(999, dtype=f64)
    wp.launch(saxpy, 999, inputs=[2.0, wp.array(np.arange(999.0), dtype=f64), y])
    assert calls == [3]
    np.testing.assert_array_equal(y.numpy(), 2 * np.arange(999.0))


def test_a_busy_native_pool_refuses_the_job() -> None:
    from gradloom.native import native_pool_functions
    from gradloom.runtime.pool import NativePool
    functions = native_pool_functions()
    if functions is None:
        pytest.skip("no native pool on this platform")
    pool = NativePool(2, functions)
    with pool._busy:
        assert pool.run(0) is None  # refused: nothing ran (the job address is null)


def test_split_launches_in_a_forked_child(tmp_path: Path) -> None:
    """A forked child has none of the parent's worker threads: it starts its own pool. (In a
    fresh interpreter, so no other library's threads are around the fork.)"""
    script = textwrap.dedent("""
        import multiprocessing, numpy as np, gradloom as wp
        from gradloom import config
        from gradloom.runtime.cpu import parallel
        config.num_threads, config.parallel_min_ns = 2, 0
        splits = []
        real = parallel.run_split
        parallel.run_split = lambda *a: splits.append(a[6]) or real(*a)

        @wp.kernel
        def scale(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = a * x[i]

        def run(a):
            y = wp.zeros(5000, dtype=float)
            wp.launch(scale, 5000, inputs=[a, wp.array(np.ones(5000, np.float32)), y])
            return float(y.numpy().sum())

        def child(q):
            q.put((run(3.0), len(splits)))

        if __name__ == "__main__":
            assert run(1.0) == 5000.0 and splits == [True]  # the parent's pool is running
            ctx = multiprocessing.get_context("fork")
            q = ctx.Queue()
            p = ctx.Process(target=child, args=(q,))
            p.start()
            total, child_splits = q.get(timeout=60)
            p.join(timeout=60)
            assert (total, child_splits, p.exitcode) == (15000.0, 2, 0), (total, child_splits)
            print("ok")
    """)
    (tmp_path / "fork_child.py").write_text(script)  # kernels need a source file
    out = subprocess.run([sys.executable, str(tmp_path / "fork_child.py")], capture_output=True,
                         text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent),
                              "GRADLOOM_CACHE_DIR": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- chunks: results do not depend on which thread ran which chunk -----------------------------

def _chunk_reference(start: float, terms: np.ndarray, chunks: int) -> float:
    """What a launch cut into `chunks` chunks computes for one shared float64 element: chunk 0
    adds its terms one by one into the element, each later chunk into a zero of its own, and the
    chunk sums are added in chunk order (the first total % chunks chunks one thread longer)."""
    q, r = divmod(len(terms), chunks)
    sums, lo = [], 0
    for c in range(chunks):
        hi = lo + q + (c < r)
        acc = start if c == 0 else 0.0
        for t in terms[lo:hi]:
            acc = acc + float(t)
        sums.append(acc)
        lo = hi
    out = sums[0]
    for s in sums[1:]:
        out = out + s
    return out


def _sum_squares(xv: np.ndarray, start: float = 0.0) -> float:
    e = wp.array(np.array([start]), dtype=f64)
    wp.launch(energy, len(xv), inputs=[wp.array(xv, dtype=f64), e])
    return float(e.numpy()[0])


def test_chunked_sum_is_the_chunk_order_sum_whatever_the_threads(threads, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # magnitudes over 12 decades: any other grouping of the adds rounds differently
    rng = np.random.default_rng(11)
    xv = rng.normal(size=20011) * 10.0 ** rng.integers(-6, 6, 20011)
    monkeypatch.setattr(parallel, "SCATTER_MAX_CHUNKS", 4)
    expected = _chunk_reference(0.5, xv * xv, 4)
    assert expected != _chunk_reference(0.5, xv * xv, 2)  # the data tells chunkings apart
    got = []
    for n in (2, 3, 4):
        calls = threads(n)
        got.append(_sum_squares(xv, 0.5))
        assert calls == [n]
    monkeypatch.setattr(config, "parallel_min_ns", 10**15)  # the caller runs every chunk
    calls = threads(2)
    monkeypatch.setattr(config, "parallel_min_ns", 10**15)
    got.append(_sum_squares(xv, 0.5))
    assert calls == [1]
    # whoever runs the chunks, the same bits; SIMD lanes may add a vector's terms as a tree
    # before adding them to the element (passes/lanes.py), so the order is the chunk order of
    # those partial sums, within float64 rounding of the one-by-one reference
    assert got == [got[0]] * 4
    assert abs(got[0] - expected) <= 1e-12 * abs(expected)


def test_chunks_on_python_threads_sum_like_the_native_pool(threads, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import dataclasses
    rng = np.random.default_rng(12)
    xv = rng.normal(size=(300, 3)) * 10.0 ** rng.integers(-5, 5, (300, 1))
    w = rng.normal(size=(300, 3))
    si, sj = rng.integers(0, 300, 5000), rng.integers(0, 300, 5000)
    threads(2)
    native = _springs(xv, si, sj, w)
    for prepared in (prepared_forward(springs), prepared_adjoint(springs)):
        monkeypatch.setattr(prepared, "compiled",
                            dataclasses.replace(prepared.compiled, pool_functions=None))
        prepared.chunkings.clear()
    python = _springs(xv, si, sj, w)
    np.testing.assert_array_equal(python[0], native[0])
    np.testing.assert_array_equal(python[1], native[1])


def test_private_buffers_are_zero_between_launches_and_after_an_error(threads, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    threads(2)
    xv = np.random.default_rng(13).normal(size=4000)
    first = _sum_squares(xv)
    state = prepared_forward(energy).chunkings[0]
    assert all(not b.any() for _, bufs, _ in state.privates for b in bufs)
    assert any(bufs for _, bufs, _ in state.privates)

    @wp.kernel
    def energy_checked(x: wp.array(dtype=f64), n: int, e: wp.array(dtype=f64)):
        i = wp.tid()
        wp.atomic_add(e, 0, x[i] * x[i] + x[n])

    monkeypatch.setattr(config, "mode", "debug")
    e = wp.zeros(1, dtype=f64)
    x = wp.array(xv, dtype=f64)
    with pytest.raises(wp.KernelRuntimeError, match="out of bounds"):
        wp.launch(energy_checked, 4000, inputs=[x, 4000, e])
    for state in prepared_forward(energy_checked).chunkings:
        assert all(not b.any() for _, bufs, _ in state.privates for b in bufs)
    e.zero_()
    wp.launch(energy_checked, 4000, inputs=[x, 0, e])
    assert e.numpy()[0] == pytest.approx(first + 4000 * xv[0], rel=1e-12)


def test_a_split_that_gains_nothing_makes_the_next_launches_serial(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from gradloom.native import native_pool_functions
    from gradloom.runtime.pool import native_pool
    if native_pool_functions() is None:
        pytest.skip("no native pool on this platform")
    monkeypatch.setattr(config, "num_threads", 2)
    monkeypatch.setattr(config, "parallel_min_ns", 1)
    y = wp.zeros(200000, dtype=f64)
    x = wp.array(np.ones(200000), dtype=f64)
    prepared = prepared_forward(saxpy)
    prepared.backoff = parallel.Backoff()
    wp.launch(saxpy, 200000, inputs=[1.0, x, y])  # split before anything is measured
    pool = native_pool(2, native_pool_functions())
    prepared.backoff = parallel.Backoff()
    with pool._busy:  # another launch holds the workers: the caller runs every chunk itself
        wp.launch(saxpy, 200000, inputs=[1.0, x, y])
    assert prepared.backoff.skip == 1
    assert parallel.plan(prepared, 200000, [1.0, x, y])[:2] == (1, False)
    np.testing.assert_array_equal(y.numpy(), 2.0)


def test_backoff_doubles_while_splits_fail_and_starts_over_after_a_pause(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Failures one after another skip 1, 3, 7, ... launches; once RETRY_NS have passed the
    next failure skips one launch again (the first launch after a pause finds the workers
    asleep: counting it as one more failure kept a burst of cloth steps serial)."""
    clock = [0]
    monkeypatch.setattr(parallel.time, "perf_counter_ns", lambda: clock[0])
    b = parallel.Backoff()

    def skipped_after_failure() -> int:
        b.record(False)
        n = 0
        while not b.ready():
            n += 1
        return n

    assert [skipped_after_failure() for _ in range(4)] == [1, 3, 7, 15]
    b.record(False)
    assert not b.ready()
    clock[0] += parallel.RETRY_NS  # a pause: the retry comes early, and from a clean slate
    assert b.ready()
    assert skipped_after_failure() == 1
    b.record(True)
    assert skipped_after_failure() == 1


def test_scatter_chunk_counts_follow_the_launch_only() -> None:
    big, small = 1 << 22, 8
    chunks = parallel.scatter_chunks
    assert chunks(1 << 20, small, False, 4) == parallel.SCATTER_MAX_CHUNKS
    assert chunks(1 << 20, big, False, 4) == 1  # its private buffers cost too much
    assert chunks(1000, small, False, 4) == 1  # too short to cut
    assert chunks(4096, 1 << 16, True, 4) > 1  # long threads: n-body's adjoint
    assert chunks(1 << 20, small, False, 4) == chunks(1 << 20, small, False, 4)
    # warp-lang's 128² cloth: springs (55 operations) split into private force buffers, a
    # random scatter of vec3s into a quarter as many bins (19 operations) does not
    assert chunks(97026, 16384 * 12, False, 55) == 2
    assert chunks(1 << 20, (1 << 18) * 12, False, 19) == 1
    # a power of two, so that chunks share out evenly over the cores
    assert all(c & (c - 1) == 0 for c in (chunks(n, 4096, False, 30) for n in range(1, 10**6, 9973)))


def test_chunk_bounds_cover_the_launch() -> None:
    from gradloom.runtime.cpu.chunking import bounds
    for total, chunks in ((10, 3), (8, 8), (1000003, 7), (5, 1)):
        cuts = [bounds(total, chunks, c) for c in range(chunks)]
        assert cuts[0][0] == 0 and cuts[-1][1] == total
        assert all(a[1] == b[0] for a, b in itertools.pairwise(cuts))
        assert max(h - lo for lo, h in cuts) - min(h - lo for lo, h in cuts) <= 1


@wp.kernel
def loop_scale_inplace(x: wp.array(dtype=f64), n: int, y: wp.array(dtype=f64)):
    """y[i] *= x[0]**n through a loop: y needs a working copy and the adjoint a stack of n
    values, so a full stack restarts the whole (chunked) launch."""
    i = wp.tid()
    p = f64(1.0)
    for _ in range(n):
        p = p * x[0]
    y[i] = y[i] * p


def test_a_full_stack_restarts_a_chunked_launch(threads) -> None:  # type: ignore[no-untyped-def]
    calls = threads(2)
    n, m = 9000, 6
    x0 = 1.0 + 1e-5
    y0 = np.linspace(0.5, 1.5, m)
    x = wp.array([x0], dtype=f64, requires_grad=True)
    y = wp.array(y0, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(loop_scale_inplace, m, inputs=[x, n, y])
    w = np.random.default_rng(14).normal(size=m)
    tape.backward(grads={y: wp.array(w, dtype=f64)})
    assert calls == [2, 2]
    np.testing.assert_allclose(y.grad.numpy(), w * x0**n, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), [np.sum(w * y0) * n * x0 ** (n - 1)], rtol=1e-10)


def test_many_split_launches_of_changing_sizes(threads) -> None:  # type: ignore[no-untyped-def]
    """The pool under load: launches of changing sizes and kernels, back to back."""
    threads(2)
    rng = np.random.default_rng(15)
    for _ in range(60):
        n = int(rng.integers(2, 30000))
        xv = rng.normal(size=n)
        y = wp.array(np.ones(n), dtype=f64)
        wp.launch(saxpy, n, inputs=[2.0, wp.array(xv, dtype=f64), y])
        np.testing.assert_array_equal(y.numpy(), 2.0 * xv + 1.0)
        e = wp.zeros(1, dtype=f64)
        wp.launch(energy, n, inputs=[wp.array(xv, dtype=f64), e])
        assert e.numpy()[0] == pytest.approx(np.sum(xv * xv), rel=1e-12)


@wp.kernel
def add_at(idx: wp.array(dtype=int), v: wp.array(dtype=Any), out: wp.array(dtype=Any)):
    i = wp.tid()
    wp.atomic_add(out, idx[i], v[i])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
def test_private_sums_skip_untouched_blocks_and_keep_their_values(threads, dtype) -> None:  # type: ignore[no-untyped-def]
    # the native sum skips 64-byte blocks a chunk never added into: touched elements at block
    # edges, blocks left alone, and a tail shorter than a block (1013 elements) must all come
    # out as numpy's sum; untouched float elements keep -0.0 and NaN
    calls = threads(2)
    m = 1013
    touched = np.array([0, 15, 16, 31, 47, 200, 201, 511, 512, 999, 1000, 1005, 1012])
    rng = np.random.default_rng(16)
    idx = rng.choice(touched, 3000).astype(np.int32)
    v = rng.integers(1, 50, 3000).astype(dtype)  # exact in every order
    init = np.zeros(m, dtype)
    untouched = np.setdiff1d(np.arange(m), touched)
    if init.dtype.kind == "f":
        init[untouched[::2]] = -0.0
        init[untouched[1::7]] = np.nan
    init[touched[::3]] = 7
    out = wp.array(init.copy())
    wp.launch(add_at, 3000, inputs=[wp.array(idx), wp.array(v), out])
    assert calls == [2]
    expected = init.copy()
    np.add.at(expected, idx, v)
    got = out.numpy()
    np.testing.assert_array_equal(got, expected)
    assert np.array_equal(np.signbit(got), np.signbit(expected))
    wp.launch(add_at, 3000, inputs=[wp.array(idx), wp.array(v), out])  # buffers cleared?
    np.add.at(expected, idx, v)
    np.testing.assert_array_equal(out.numpy(), expected)


@wp.kernel
def trace_into_16(x: wp.array(dtype=float), e: wp.array(dtype=float)):
    i = wp.tid()
    f = wp.mat33(x[i], 1.0, 0.0, 0.0, 1.0, x[i], x[i], 0.0, 1.0)
    wp.atomic_add(e, i % 16, wp.trace(wp.transpose(f) @ f))


@wp.kernel
def spring_gather(si: wp.array(dtype=int), x: wp.array(dtype=wp.vec3),
                  f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    d = x[si[2 * i]] - x[si[2 * i + 1]]
    wp.atomic_add(f, si[2 * i], d * wp.length(d))


@pytest.mark.parametrize("simd", [False, True])
def test_chunks_count_a_thread_in_lanes_at_a_share_of_its_work(monkeypatch, simd: bool) -> None:  # type: ignore[no-untyped-def]
    # whether the thread loop runs in lanes is a fact of the code: the same with SIMD off, so
    # a launch is cut into the same chunks (and sums the same) on every machine and setting
    monkeypatch.setattr(config, "simd", simd)
    lanes = prepared_forward(trace_into_16).compiled.threads
    scalar = prepared_forward(spring_gather).compiled.threads
    assert lanes.lanes and not scalar.lanes
    assert parallel.chunk_work(lanes) == max(1, lanes.work // parallel.LANE_WORK_SHARE)
    assert parallel.chunk_work(scalar) == scalar.work
    n = 2 * parallel.least_chunk(False, scalar.work)
    monkeypatch.setattr(config, "num_threads", 2)
    x = wp.zeros(n, dtype=float)
    e = wp.zeros(16, dtype=float)
    assert parallel.plan(prepared_forward(trace_into_16), n, [x, e])[0] == 1
