"""`wp.Tape` on CUDA: recorded launches with device copy-on-write snapshots, copies recorded
with gradients, `backward()`, `zero()` — the same gradients as on the CPU and as float64
central differences.

Each test runs twice, as in tests/test_cuda_runtime.py: on a real GPU ("gpu", skipped without
one) and against tests/fake_cuda.py ("fake": every launch block runs through the kernel's CPU
entry, device memory is host memory, every driver call is type-checked by cuda-bindings).
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_env import device_env

import gradloom as wp
from gradloom.errors import LaunchError, TapeError

f64 = wp.float64


@pytest.fixture(params=["fake", "gpu"])
def env(request):
    """Run on the GPU, or on the fake driver (yielded; None on the GPU)."""
    yield from device_env(request.param, KERNELS)


# --------------------------------------------------------------------------------------------
# kernels


@wp.kernel
def wave(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = x[i] * x[i] * wp.sin(x[i])


@wp.kernel
def horner(x: wp.array(dtype=f64), n: int, y: wp.array(dtype=f64)):
    """40 trips push more than the first 256-byte stack: the adjoint grows it and reruns."""
    i = wp.tid()
    s = x[i]
    for _k in range(n):
        s = s * x[i] * f64(0.5) + f64(1.0)
    y[i] = s


@wp.kernel
def square_in_place(z: wp.array(dtype=f64)):
    """Reads and writes z: its adjoint needs a working copy of what it read."""
    i = wp.tid()
    z[i] = z[i] * z[i] + f64(0.5)


@wp.kernel
def dot_loss(a: wp.array(dtype=f64), b: wp.array(dtype=f64), loss: wp.array(dtype=f64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, a[i] * b[i])


@wp.kernel
def running_max(x: wp.array(dtype=f64), m: wp.array(dtype=f64)):
    i = wp.tid()
    wp.atomic_max(m, i % 2, x[i] * f64(2.0))


@wp.kernel
def shift_down(x: wp.array(dtype=f64)):
    i = wp.tid()
    x[i] = x[i + 1] * f64(2.0)


@wp.kernel
def time_step(q: wp.array2d(dtype=f64), t: int, T: int):
    """Trajectories of T steps one after another: threads meet only when T = 1."""
    s, i = wp.tid()
    k = s * T + t
    q[k + 1, i] = wp.sin(q[k, i]) * f64(2.0)


KERNELS = [wave, horner, square_in_place, dot_loss, running_max, shift_down, time_step]


# --------------------------------------------------------------------------------------------
# a program that needs every part of the Tape


def program(device: str, x0: np.ndarray, c0: np.ndarray, tape: wp.Tape | None = None):
    """loss = Σ horner(square(clone(wave(x0))))·(c0 copied into x) — launches reading arrays
    overwritten later (copy-on-write), a copy with offsets, a clone, an in-place kernel, a
    stack-using adjoint and an atomic reduction. Returns (loss, x, c)."""
    n = len(x0)
    x = wp.array(x0, dtype=f64, device=device, requires_grad=True)
    c = wp.array(c0, dtype=f64, device=device, requires_grad=True)
    y = wp.zeros(n, dtype=f64, device=device, requires_grad=True)
    h = wp.zeros(n, dtype=f64, device=device, requires_grad=True)
    loss = wp.zeros(1, dtype=f64, device=device, requires_grad=True)
    with tape if tape is not None else _Nothing():
        wp.launch(wave, n, inputs=[x, y], device=device)
        wp.copy(x, c, dest_offset=1, src_offset=0, count=n - 1)  # x overwritten after wave
        z = wp.clone(y)
        wp.launch(square_in_place, n, inputs=[z], device=device)
        wp.launch(horner, n, inputs=[z, 40, h], device=device)
        y.fill_(0.0)  # y overwritten: its gradient so far is consumed
        wp.launch(dot_loss, n, inputs=[h, x, loss], device=device)
    return loss, x, c


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _inputs(n=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-0.9, 0.9, n), rng.uniform(-1.0, 1.0, n)


def _grads(device, x0, c0):
    tape = wp.Tape()
    loss, x, c = program(device, x0, c0, tape)
    tape.backward(loss=loss)
    return float(loss.numpy()[0]), x.grad.numpy(), c.grad.numpy(), tape


def _fd(device, x0, c0, eps=1e-6):
    def value(x, c):
        return float(program(device, x, c)[0].numpy()[0])

    out = []
    for which in (0, 1):
        base = (x0, c0)[which]
        g = np.zeros_like(base)
        for k in range(len(base)):
            hi, lo = base.copy(), base.copy()
            hi[k] += eps
            lo[k] -= eps
            args_hi = (hi, c0) if which == 0 else (x0, hi)
            args_lo = (lo, c0) if which == 0 else (x0, lo)
            g[k] = (value(*args_hi) - value(*args_lo)) / (2 * eps)
        out.append(g)
    return out


def test_tape_on_cuda_matches_the_cpu_and_finite_differences(env):
    x0, c0 = _inputs()
    loss_cpu, gx_cpu, gc_cpu, _ = _grads("cpu", x0, c0)
    loss_gpu, gx_gpu, gc_gpu, _ = _grads("cuda", x0, c0)
    assert loss_gpu == pytest.approx(loss_cpu, rel=1e-12)
    np.testing.assert_allclose(gx_gpu, gx_cpu, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gc_gpu, gc_cpu, rtol=1e-12, atol=1e-14)
    fx, fc = _fd("cuda", x0, c0)
    np.testing.assert_allclose(gx_gpu, fx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gc_gpu, fc, rtol=1e-6, atol=1e-8)
    # x[0] kept its value: wave's gradient reaches it; x[1:] were overwritten by c's values
    assert gx_gpu[0] != 0 and np.all(gc_gpu[: len(c0) - 1] != 0) and gc_gpu[-1] == 0
    if env is not None:
        grown = [L["capacity"] for L in env.launches if L["symbol"] == "gl_horner_adjoint"]
        assert len(grown) >= 2 and grown[-1] > grown[0]  # the stack grew inside backward
        # the copies' gradients were added on the device (wp.map's add), not on the host
        assert any(L["symbol"].startswith("gl_map") for L in env.launches)


def test_snapshots_are_device_copies(env):
    """The launch's input is overwritten after the launch: the tape copies it on the device
    (a device-to-device copy), never through the host, and backward uses the copy."""
    x = wp.array(np.array([0.3, -0.7]), dtype=f64, device="cuda", requires_grad=True)
    y = wp.zeros(2, dtype=f64, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(wave, 2, inputs=[x, y], device="cuda")
    record = tape.records[0]
    watch = next(iter(record.before.values()))
    assert watch.saved is None  # nothing copied until something writes x
    if env is not None:
        copies = env.calls.count("cuMemcpyDtoDAsync")
    x.assign(np.array([5.0, 5.0]))  # outside the tape's `with`: the watch still keeps x
    assert watch.saved is not None and watch.saved.device == x.device
    np.testing.assert_array_equal(watch.saved.numpy(), [0.3, -0.7])
    if env is not None:
        assert env.calls.count("cuMemcpyDtoDAsync") == copies + 1
    y.grad.fill_(1.0)
    tape.backward()
    t = np.array([0.3, -0.7])
    np.testing.assert_allclose(x.grad.numpy(), 2 * t * np.sin(t) + t * t * np.cos(t),
                               rtol=1e-12)


def test_backward_accumulates_until_zero(env):
    """Gradients add up across backward calls until zero(), as on the CPU (x is a leaf and
    also overwritten, so what a pass leaves in x.grad reaches c in the next: the CPU agrees)."""
    x0, c0 = _inputs(4, seed=1)
    seen = {}
    for device in ("cpu", "cuda"):
        tape = wp.Tape()
        loss, x, c = program(device, x0, c0, tape)
        steps = []
        for _ in range(2):
            tape.backward(loss=loss)
            steps.append((x.grad.numpy().copy(), c.grad.numpy().copy()))
        assert not np.allclose(steps[1][1], steps[0][1])  # the second pass added
        tape.zero()
        assert not x.grad.numpy().any() and not c.grad.numpy().any()
        assert not loss.grad.numpy().any()
        tape.backward(loss=loss)
        steps.append((x.grad.numpy().copy(), c.grad.numpy().copy()))
        np.testing.assert_allclose(steps[2][1], steps[0][1], rtol=1e-12)
        tape.reset()
        assert tape.records == [] and not c.grad.numpy().any()
        seen[device] = steps
    for (gx, gc), (hx, hc) in zip(seen["cuda"], seen["cpu"], strict=True):
        np.testing.assert_allclose(gx, hx, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(gc, hc, rtol=1e-12, atol=1e-14)


def test_seeded_backward_keeps_the_seed_buffers(env):
    """backward() with no loss: the seeds are the .grad contents, which keep their values."""
    x = wp.array(np.array([0.2, 0.4, 0.6]), dtype=f64, device="cuda", requires_grad=True)
    y = wp.zeros(3, dtype=f64, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(wave, 3, inputs=[x, y], device="cuda")
    y.grad.assign(np.array([1.0, -2.0, 0.5]))
    tape.backward()
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, -2.0, 0.5])
    first = x.grad.numpy().copy()
    tape.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first, rtol=1e-12)
    tape.backward(grads={y: wp.array(np.ones(3), dtype=f64, device="cuda")})
    t = np.array([0.2, 0.4, 0.6])
    np.testing.assert_allclose(x.grad.numpy() - 2 * first,
                               2 * t * np.sin(t) + t * t * np.cos(t), rtol=1e-12)


def test_copies_between_devices_carry_gradients(env):
    """.to('cpu'), a CPU launch, and back: the gradient crosses both ways."""
    t = np.array([0.1, -0.5, 0.9])
    x = wp.array(t, dtype=f64, device="cuda", requires_grad=True)
    y = wp.zeros(3, dtype=f64, device="cuda", requires_grad=True)
    loss = wp.zeros(1, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(wave, 3, inputs=[x, y], device="cuda")
        host = y.to("cpu")
        w = wp.array(np.array([1.0, 2.0, 3.0]), dtype=f64)
        wp.launch(dot_loss, 3, inputs=[host, w, loss], device="cpu")
    tape.backward(loss=loss)
    assert host.device == "cpu" and x.grad.device == x.device
    np.testing.assert_allclose(x.grad.numpy(),
                               np.array([1, 2, 3]) * (2 * t * np.sin(t) + t * t * np.cos(t)),
                               rtol=1e-12)


def test_element_and_slice_writes_consume_gradients(env):
    """a[i] = v and a[1:] = b under a tape: the overwritten elements pass no gradient back."""
    x = wp.array(np.array([0.3, 0.6, 0.9]), dtype=f64, device="cuda", requires_grad=True)
    b = wp.array(np.array([0.2, 0.4]), dtype=f64, device="cuda", requires_grad=True)
    ones = wp.array(np.ones(3), dtype=f64, device="cuda")
    loss = wp.zeros(1, dtype=f64, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        x[0] = 5.0
        x[1:] = b
        wp.launch(dot_loss, 3, inputs=[x, ones, loss], device="cuda")
    tape.backward(loss=loss)
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


def test_atomic_max_gradient_goes_to_the_winner(env):
    x0 = np.array([0.1, 0.9, 0.7, -0.3, 0.2, 0.4])
    out = {}
    for device in ("cpu", "cuda"):
        x = wp.array(x0, dtype=f64, device=device, requires_grad=True)
        m = wp.full(2, -10.0, dtype=f64, device=device, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(running_max, 6, inputs=[x, m], device=device)
        m.grad.assign(np.array([1.0, 3.0]))
        tape.backward()
        out[device] = x.grad.numpy()
    np.testing.assert_array_equal(out["cuda"], out["cpu"])
    np.testing.assert_array_equal(out["cuda"], [0, 6.0, 2.0, 0, 0, 0])  # 2 * the seed


def test_what_cannot_be_recorded_is_refused_clearly(env):
    x = wp.array(np.array([1.0, 2.0, 3.0, 4.0]), dtype=f64, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(shift_down, 3, inputs=[x], device="cuda")  # recorded (it races, as in Warp)
    x.grad.fill_(1.0)
    with pytest.raises(LaunchError, match="shift_down.*cannot run on a CUDA device.*CPU"):
        tape.backward()
    g = wp.zeros(5, device="cuda", requires_grad=True)
    with wp.Tape(), pytest.raises(TapeError, match="CUDA arrays"):
        wp.utils.array_sum(g, out=wp.zeros(1, device="cuda", requires_grad=True))
    with wp.Tape(), pytest.raises(TapeError, match="same array"):
        wp.launch(wave, 4, inputs=[x, x[::-1]], device="cuda")


def _rollout(device: str, q0: np.ndarray, S: int, T: int):  # noqa: N803
    q = wp.array(q0, dtype=f64, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        for t in range(max(T - 1, 1)):
            wp.launch(time_step, (S, q0.shape[1]), inputs=[q, t, T], device=device)
    tape.backward(grads={q: wp.array(np.ones_like(q0), dtype=f64, device=device)})
    return q.grad.numpy()


def test_time_indexed_launches_differentiate_as_on_the_cpu(env):
    # each launch is checked on the host: threads never meet while T > 1
    S, T = 3, 4  # noqa: N806
    q0 = np.random.default_rng(2).uniform(-1.0, 1.0, (S * T, 2))
    np.testing.assert_allclose(_rollout("cuda", q0, S, T), _rollout("cpu", q0, S, T),
                               rtol=1e-12, atol=1e-12)


def test_time_indexed_launch_whose_threads_meet_is_refused(env):
    q0 = np.full((4, 2), 0.5)
    with pytest.raises(wp.CompileError, match=r"'q' that other threads overwrite.*\(1, 0\)"):
        _rollout("cuda", q0, 3, 1)
