"""Checkpointed rollouts of CUDA arrays: the same gradients as a full Tape on the device, bit for
bit, and as the CPU's. Runs on a GPU ("gpu", skipped without one) and on tests/fake_cuda.py
("fake": device memory is host memory, launch blocks run through the kernels' CPU entries)."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_env import device_env

import gradloom as wp
from gradloom import checkpoint

f64 = wp.float64


@wp.kernel
def pull(x: wp.array(dtype=f64), k: wp.array(dtype=f64), f: wp.array(dtype=f64)):
    i = wp.tid()
    f[i] = -k[i] * wp.sin(x[i]) * x[i]


@wp.kernel
def move(x: wp.array(dtype=f64), v: wp.array(dtype=f64), f: wp.array(dtype=f64)):
    i = wp.tid()
    v[i] = v[i] + f64(0.01) * f[i]
    x[i] = x[i] + f64(0.01) * v[i]


@wp.kernel
def total(x: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i] * x[i])


KERNELS = [pull, move, total]


@pytest.fixture(params=["fake", "gpu"])
def env(request):
    yield from device_env(request.param, KERNELS)


def _grads(device: str, steps: int, checkpointed: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(2)
    n = 8
    x0 = wp.array(rng.standard_normal(n), dtype=f64, device=device, requires_grad=True)
    k = wp.array(rng.random(n) + 0.5, dtype=f64, device=device, requires_grad=True)
    x, v, f = (wp.zeros(n, dtype=f64, device=device, requires_grad=True) for _ in range(3))
    loss = wp.zeros(1, dtype=f64, device=device, requires_grad=True)

    def step(i: int) -> None:
        wp.launch(pull, n, inputs=[x, k], outputs=[f], device=device)
        wp.launch(move, n, inputs=[x, v, f], device=device)

    tape = wp.Tape()
    with tape:
        wp.copy(x, x0)
        if checkpointed:
            record = checkpoint.rollout(step, steps, [x, v], segment=4)
            assert record is not None and record.memory().checkpoints > 0
        else:
            for i in range(steps):
                step(i)
        wp.launch(total, n, inputs=[x], outputs=[loss], device=device)
    tape.backward(loss=loss)
    return [a.numpy().copy() for a in (loss, x0.grad, k.grad, x)]


def test_checkpointed_rollout_on_cuda(env):
    full = _grads("cuda", 18, False)
    got = _grads("cuda", 18, True)
    for a, b in zip(full, got, strict=True):
        assert np.array_equal(a, b)
    cpu = _grads("cpu", 18, True)
    for a, b in zip(cpu, got, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)
    assert np.abs(full[1]).sum() > 0
