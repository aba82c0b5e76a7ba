"""examples/cloth_checkpoint.py on a shorter rollout: the checkpointed gradient with respect to
the wind equals a full tape's bit for bit and float64 central differences of the loss, the
rollout stays within its budget while a full tape holds far more, and a few descent steps
lower the loss and write a PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from test_examples import load_example, png_size

import gradloom as wp


def full_tape_gradient(example, cloth) -> tuple[float, np.ndarray, int]:
    tape = wp.Tape()
    with tape:
        wp.copy(cloth.x, cloth.x0)
        cloth.v.zero_()
        for i in range(cloth.steps):
            cloth.step(i)
        wp.launch(example.miss, 1, inputs=[cloth.x, cloth.index, wp.vec2(*example.TARGET),
                                           cloth.loss])
    tape.backward(loss=cloth.loss)
    out = (float(cloth.loss.numpy()[0]), cloth.wind.grad.numpy()[0].copy(),
           tape.memory().total)
    tape.reset()
    return out


def test_checkpointed_gradient_is_the_full_tapes(tmp_path: Path) -> None:
    example = load_example("cloth_checkpoint")
    cloth = example.Cloth(steps=400, budget=16 * 1024)
    cloth.wind.assign(np.array([[1.5, 0.5]], np.float32))
    loss, grad, ro = cloth.gradient()
    assert ro.peak <= 16 * 1024
    full_loss, full_grad, full_bytes = full_tape_gradient(example, cloth)
    assert loss == full_loss and np.array_equal(grad, full_grad)
    assert full_bytes > 10 * ro.peak
    # float64 central differences of the loss along each wind component
    eps = 1e-2
    for c in range(2):
        values = []
        for sign in (1.0, -1.0):
            w = np.array([[1.5, 0.5]], np.float64)
            w[0, c] += sign * eps
            cloth.wind.assign(w.astype(np.float32))
            values.append(cloth.gradient()[0])
        fd = (values[0] - values[1]) / (2 * eps)
        assert abs(grad[c] - fd) <= 2e-2 * abs(fd) + 1e-4, (c, grad[c], fd)
    cloth.wind.assign(np.zeros((1, 2), np.float32))
    losses, shapes = example.optimise(cloth, iterations=3)
    assert losses[-1] < losses[0]
    example.OUTPUT = tmp_path / "cloth_checkpoint.png"
    example.plot(losses, shapes[0], shapes[-1], cloth.index)
    assert png_size(example.OUTPUT)[0] > 0
