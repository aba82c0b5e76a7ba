"""Checkpointed rollouts (gradloom.checkpoint): gradients bit for bit those of a full Tape, and
float64 central differences; schedules, memory, the state check, repeated backward."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradloom as wp
from gradloom import checkpoint
from gradloom.errors import TapeError
from gradloom.runtime.tape import checkpoint_plan as plans


@wp.kernel
def forces(x: wp.array(dtype=float), k: wp.array(dtype=float), f: wp.array(dtype=float)):
    i = wp.tid()
    f[i] = -k[i] * wp.sin(x[i])


@wp.kernel
def integrate(x: wp.array(dtype=float), v: wp.array(dtype=float), f: wp.array(dtype=float),
              dt: float):
    i = wp.tid()
    v[i] = v[i] + dt * f[i]
    x[i] = x[i] + dt * v[i]


@wp.kernel
def square_sum(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i] * x[i])


@wp.kernel
def forces64(x: wp.array(dtype=wp.float64), k: wp.array(dtype=wp.float64),
             f: wp.array(dtype=wp.float64)):
    i = wp.tid()
    f[i] = -k[i] * wp.sin(x[i]) * x[i]


@wp.kernel
def integrate64(x: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.float64),
                f: wp.array(dtype=wp.float64), dt: wp.float64):
    i = wp.tid()
    v[i] = v[i] + dt * f[i]
    x[i] = x[i] + dt * v[i]


@wp.kernel
def square_sum64(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i] * x[i])


class Sim:
    """A spring chain integrated in place: x, v carried; f scratch; x0, k inputs."""

    def __init__(self, n: int = 12, dtype: type = float, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        npdt = np.float64 if dtype is wp.float64 else np.float32
        self.dtype, self.n = dtype, n
        self.x0 = wp.array(rng.standard_normal(n).astype(npdt), dtype=dtype, requires_grad=True)
        self.k = wp.array((rng.random(n) + 0.5).astype(npdt), dtype=dtype, requires_grad=True)
        self.x = wp.zeros(n, dtype=dtype, requires_grad=True)
        self.v = wp.zeros(n, dtype=dtype, requires_grad=True)
        self.f = wp.zeros(n, dtype=dtype, requires_grad=True)
        self.loss = wp.zeros(1, dtype=dtype, requires_grad=True)
        self.kernels = (forces64, integrate64, square_sum64) if dtype is wp.float64 else (
            forces, integrate, square_sum)

    def step(self, i: int) -> None:
        fk, ik, _ = self.kernels
        wp.launch(fk, self.n, inputs=[self.x, self.k], outputs=[self.f])
        wp.launch(ik, self.n, inputs=[self.x, self.v, self.f, self.dtype(0.01)])

    def run(self, steps: int, **ck: object) -> tuple[wp.Tape, object]:
        """Forward on a tape: full (ck None-ish) or checkpointed; returns (tape, record)."""
        tape, record = wp.Tape(), None
        with tape:
            wp.copy(self.x, self.x0)
            self.v.zero_()
            if ck.pop("full", False):
                for i in range(steps):
                    self.step(i)
            else:
                record = checkpoint.rollout(self.step, steps, [self.x, self.v], **ck)
            wp.launch(self.kernels[2], self.n, inputs=[self.x], outputs=[self.loss])
        return tape, record

    def gradients(self, steps: int, **ck: object) -> list[np.ndarray]:
        tape, _ = self.run(steps, **ck)
        tape.backward(loss=self.loss)
        return [a.numpy().copy() for a in (self.loss, self.x0.grad, self.k.grad, self.x,
                                           self.v)]


SCHEDULES = [dict(), dict(segment=1), dict(segment=7), dict(segment=40), dict(budget=3000),
             dict(budget=1200), dict(budget=700)]


@pytest.mark.parametrize("ck", SCHEDULES, ids=lambda d: ",".join(f"{k}={v}" for k, v in
                                                                   d.items()) or "sqrt")
def test_bit_identical_to_full_tape(ck: dict[str, object]) -> None:
    full = Sim().gradients(40, full=True)
    got = Sim().gradients(40, **dict(ck))
    for name, a, b in zip(["loss", "x0.grad", "k.grad", "x", "v"], full, got, strict=True):
        assert np.array_equal(a, b), name
    assert np.abs(full[1]).sum() > 0 and np.abs(full[2]).sum() > 0


def test_against_float64_central_differences() -> None:
    steps, eps = 23, 1e-6
    sim = Sim(n=5, dtype=wp.float64, seed=3)
    _, g_x0, g_k, _, _ = sim.gradients(steps, segment=4)

    def loss(x0: np.ndarray, k: np.ndarray) -> float:
        s = Sim(n=5, dtype=wp.float64, seed=3)
        s.x0.assign(x0)
        s.k.assign(k)
        s.run(steps, full=True)
        return float(s.loss.numpy()[0])

    x0, k = sim.x0.numpy().copy(), sim.k.numpy().copy()
    for base, grad, which in ((x0, g_x0, 0), (k, g_k, 1)):
        for j in range(5):
            hi, lo = base.copy(), base.copy()
            hi[j] += eps
            lo[j] -= eps
            args_hi = (hi, k) if which == 0 else (x0, hi)
            args_lo = (lo, k) if which == 0 else (x0, lo)
            fd = (loss(*args_hi) - loss(*args_lo)) / (2 * eps)
            assert math.isclose(grad[j], fd, rel_tol=1e-6, abs_tol=1e-8), (which, j, grad[j], fd)


def test_memory_and_budget() -> None:
    sim = Sim(n=64)
    tape_full, _ = sim.run(400, full=True)
    full = tape_full.memory()
    assert full.snapshots > 0 and full.checkpoints == 0
    sim2 = Sim(n=64)
    budget = full.total // 10
    tape, record = sim2.run(400, budget=budget)
    assert record is not None and record.schedule.memory <= budget
    held = tape.memory()
    assert held.checkpoints > 0 and held.total <= budget
    tape.backward(loss=sim2.loss)
    assert record.peak <= budget  # the most it held at once, backward included
    with pytest.raises(ValueError, match="needs at least"):
        Sim(n=64).run(400, budget=10)


def test_second_backward_adds_the_same_and_arrays_keep_values() -> None:
    sim = Sim()
    tape, _ = sim.run(30, segment=4)
    x_after, v_after = sim.x.numpy().copy(), sim.v.numpy().copy()
    tape.backward(loss=sim.loss)
    once = sim.x0.grad.numpy().copy()
    assert np.array_equal(sim.x.numpy(), x_after) and np.array_equal(sim.v.numpy(), v_after)
    tape.backward(loss=sim.loss)
    assert np.allclose(sim.x0.grad.numpy(), 2 * once, rtol=1e-6)
    tape.zero()
    assert not sim.k.grad.numpy().any()
    tape.backward(loss=sim.loss)
    assert np.array_equal(sim.x0.grad.numpy(), once)


def test_missing_state_is_refused() -> None:
    sim = Sim()
    with pytest.raises(TapeError, match="not in state"), wp.Tape():
        checkpoint.rollout(sim.step, 10, [sim.x], segment=5)  # v is carried too


def test_segment_and_no_tape() -> None:
    sim = Sim()
    full = sim.gradients(6, full=True)
    sim2 = Sim()
    tape = wp.Tape()
    with tape:
        wp.copy(sim2.x, sim2.x0)
        sim2.v.zero_()
        for i in range(3):
            checkpoint.segment(lambda i=i: (sim2.step(2 * i), sim2.step(2 * i + 1)),
                               [sim2.x, sim2.v])
        wp.launch(square_sum, sim2.n, inputs=[sim2.x], outputs=[sim2.loss])
    assert "checkpointed rollout" in tape.visualize()
    tape.backward(loss=sim2.loss)
    assert np.array_equal(sim2.x0.grad.numpy(), full[1])
    assert np.array_equal(sim2.k.grad.numpy(), full[2])
    tape.zero()  # the parameters the segments read are the tape's arrays too
    assert not sim2.k.grad.numpy().any() and not sim2.x0.grad.numpy().any()
    sim3 = Sim()
    wp.copy(sim3.x, sim3.x0)
    assert checkpoint.rollout(sim3.step, 5, [sim3.x, sim3.v]) is None  # no tape: just runs


def test_step_launching_a_captured_graph() -> None:
    full = Sim().gradients(12, full=True)
    sim = Sim()
    with wp.ScopedCapture() as capture:
        sim.step(0)
    tape = wp.Tape()
    with tape:
        wp.copy(sim.x, sim.x0)
        sim.v.zero_()
        checkpoint.rollout(lambda i: wp.capture_launch(capture.graph), 12, [sim.x, sim.v],
                           segment=3)
        wp.launch(square_sum, sim.n, inputs=[sim.x], outputs=[sim.loss])
    tape.backward(loss=sim.loss)
    assert np.array_equal(sim.x0.grad.numpy(), full[1])


def test_schedules_cover_their_segments() -> None:
    for n in range(2, 60):
        for slots in range(1, 8):
            t = plans.sweeps_needed(n, slots)
            assert plans.capacity(slots, t) >= n > plans.capacity(slots, t - 1)
            m = plans.split(n, slots)
            assert 1 <= m < n and n - m <= plans.capacity(slots - 1, t)
    assert plans.recomputed_segments(10, 9) == 9  # one sweep: every other segment once
    assert plans.default(10_000).segment == 100
    sched = plans.plan(10_000, 1000, 2000, 500_000)
    assert sched.memory <= 500_000 and sched.sweeps == 1


@wp.kernel
def advance(src: wp.array(dtype=float), k: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = src[i] + 0.05 * wp.cos(k[i] * src[i])


def _ping_pong(steps: int, checkpointed: bool) -> list[np.ndarray]:
    """Two buffers swapped by step parity, and a wp.copy inside each step."""
    rng = np.random.default_rng(4)
    n = 9
    x0 = wp.array(rng.standard_normal(n).astype(np.float32), requires_grad=True)
    k = wp.array(rng.random(n).astype(np.float32), requires_grad=True)
    bufs = [wp.zeros(n, dtype=float, requires_grad=True) for _ in range(2)]
    copy = wp.zeros(n, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)

    def step(i: int) -> None:
        wp.launch(advance, n, inputs=[bufs[i % 2], k], outputs=[copy])
        wp.copy(bufs[(i + 1) % 2], copy)

    tape = wp.Tape()
    with tape:
        wp.copy(bufs[0], x0)
        if checkpointed:
            checkpoint.rollout(step, steps, bufs, segment=3)
        else:
            for i in range(steps):
                step(i)
        wp.launch(square_sum, n, inputs=[bufs[steps % 2]], outputs=[loss])
    tape.backward(loss=loss)
    return [x0.grad.numpy().copy(), k.grad.numpy().copy(), loss.numpy().copy()]


def test_ping_pong_buffers_and_copies_in_steps() -> None:
    full, got = _ping_pong(17, False), _ping_pong(17, True)
    for a, b in zip(full, got, strict=True):
        assert np.array_equal(a, b)
    assert np.abs(full[0]).sum() > 0


def test_refused_inside_hvp_and_capture() -> None:
    from gradloom.autograd import hvp

    x = wp.array(np.ones(4, np.float32))

    def f(a: wp.array) -> wp.array:
        checkpoint.rollout(lambda i: None, 2, [a])
        out = wp.zeros(1, dtype=float)
        wp.launch(square_sum, 4, inputs=[a], outputs=[out])
        return out

    with pytest.raises(TapeError, match="hvp"):
        hvp(f, [x], [np.ones(4, np.float32)])
    with pytest.raises(wp.GradloomError, match="captured"), wp.ScopedCapture():
        checkpoint.rollout(lambda i: None, 2, [x])


@pytest.mark.parametrize("budget", [700, 1200, 3000])
def test_tight_budgets_take_more_sweeps_and_keep_to_them(budget: int) -> None:
    sim = Sim()
    tape, record = sim.run(40, budget=budget)
    assert record is not None
    tape.backward(loss=sim.loss)
    assert record.peak <= budget
    assert record.schedule.sweeps >= (2 if budget < 1000 else 1)
