"""Steer a hanging cloth with wind, through a 10,000-step rollout kept within a memory budget.

Run from the repository root:  python examples/cloth_checkpoint.py

A 10×10 cloth of springs (structural and shear) hangs from its top row, like a curtain, and
moves in its own plane (2-D: a flat cloth's out-of-plane modes are unstable without bending
springs, and their gradients grow without bound over 10,000 steps). A uniform wind pushes it for 10,000 steps of semi-implicit Euler with damping, by
which time it has settled. The loss is the squared distance of its bottom-middle particle from
a target; gradient descent on the wind vector moves it toward it (the loss falls about 20× in
12 iterations; the rest is a long valley, where descent is slow). Each gradient flows back through
all 10,000 steps. A full `wp.Tape` would keep a copy of the state per step;
`gradloom.checkpoint.rollout(..., budget=...)` keeps checkpoints and re-runs segments during
backward, choosing the schedule that fits the budget (binomial checkpointing), with gradients
equal to the full tape's bit for bit (tests/test_example_cloth_checkpoint.py checks that, and
float64 central differences, on a shorter rollout). Here it holds at most 256 KiB, where a full
tape would keep a copy of x and v per step (about 15 MiB).

It writes examples/output/cloth_checkpoint.png: the loss per iteration, and the cloth's
settled shape before and after, with the target.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from plotting import BLACK, GRAY, PALETTE, Line, Panel, lighten, save_figure

import gradloom as wp
from gradloom import checkpoint

wp.config.quiet = True

SIDE = 10  # particles per side
SPACING = 0.1  # [m]
STIFFNESS = 800.0  # [N/m], unit masses
DAMPING = 0.998  # velocity kept per step
DT = 1e-3  # [s]
STEPS = 10_000
TARGET = (0.95, -0.85)  # where the bottom-middle particle should settle [m]
BUDGET = 256 * 1024  # bytes the rollout may hold at once
ITERATIONS = 12
LEARNING_RATE = 30.0
OUTPUT = Path(__file__).resolve().parent / "output" / "cloth_checkpoint.png"


@wp.kernel
def spring_forces(x: wp.array(dtype=wp.vec2), wind: wp.array(dtype=wp.vec2), k: float,
                  h: float, n: int, f: wp.array(dtype=wp.vec2)):
    p = wp.tid()
    i = p // n
    j = p % n
    acc = wp.vec2(0.0, -9.8) + wind[0]
    for di in range(-1, 2):
        for dj in range(-1, 2):
            ii = i + di
            jj = j + dj
            if (di != 0 or dj != 0) and ii >= 0 and ii < n and jj >= 0 and jj < n:
                d = x[ii * n + jj] - x[p]
                length = wp.length(d)
                rest = 0.95 * h * wp.sqrt(float(di * di + dj * dj))  # a little tension
                acc = acc + k * (length - rest) / length * d
    f[p] = acc


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec2), v: wp.array(dtype=wp.vec2),
              f: wp.array(dtype=wp.vec2), dt: float, damping: float, n: int):
    p = wp.tid()
    if p >= n:  # the top row is pinned (a curtain)
        v[p] = v[p] * damping + dt * f[p]
        x[p] = x[p] + dt * v[p]


@wp.kernel
def miss(x: wp.array(dtype=wp.vec2), index: int, target: wp.vec2, loss: wp.array(dtype=float)):
    d = x[index] - target
    loss[0] = wp.dot(d, d)


class Cloth:
    """The cloth's state, its rest grid, and one gradient evaluation of the loss."""

    def __init__(self, steps: int = STEPS, budget: int = BUDGET) -> None:
        self.steps, self.budget, n = steps, budget, SIDE * SIDE
        i, j = np.divmod(np.arange(n), SIDE)
        # the rest grid in the x-y plane (the cloth moves in that plane), top row at y = 0
        self.x0 = wp.array(np.stack([j * SPACING, -i * SPACING], 1)
                           .astype(np.float32), dtype=wp.vec2)
        self.x = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
        self.v = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
        self.f = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
        self.wind = wp.zeros(1, dtype=wp.vec2, requires_grad=True)
        self.loss = wp.zeros(1, dtype=float, requires_grad=True)
        self.index = (SIDE - 1) * SIDE + SIDE // 2  # bottom row, middle

    def step(self, _: int) -> None:
        wp.launch(spring_forces, SIDE * SIDE,
                  inputs=[self.x, self.wind, STIFFNESS, SPACING, SIDE, self.f])
        wp.launch(integrate, SIDE * SIDE, inputs=[self.x, self.v, self.f, DT, DAMPING, SIDE])

    def gradient(self) -> tuple[float, np.ndarray, Any]:
        """The loss, its gradient with respect to the wind, and the rollout's record."""
        tape = wp.Tape()
        with tape:
            wp.copy(self.x, self.x0)
            self.v.zero_()
            ro = checkpoint.rollout(self.step, self.steps, state=[self.x, self.v],
                                    budget=self.budget)
            wp.launch(miss, 1, inputs=[self.x, self.index, wp.vec2(*TARGET), self.loss])
        tape.backward(loss=self.loss)
        out = float(self.loss.numpy()[0]), self.wind.grad.numpy()[0].copy(), ro
        tape.reset()
        return out


def optimise(cloth: Cloth, iterations: int = ITERATIONS) -> tuple[list[float], list[Any]]:
    losses, shapes = [], []
    for it in range(iterations):
        loss, grad, ro = cloth.gradient()
        losses.append(loss)
        shapes.append(cloth.x.numpy().copy())
        print(f"iteration {it:2d}: loss {loss:.5f} m², wind {cloth.wind.numpy()[0]}, "
              f"rollout held at most {ro.peak / 1024:.0f} KiB")
        cloth.wind.assign(cloth.wind.numpy() - LEARNING_RATE * grad)
    return losses, shapes


def main() -> None:
    cloth = Cloth()
    losses, shapes = optimise(cloth)
    full_tape = STEPS * 2 * cloth.x.capacity  # a copy of x and of v per step
    print(f"a full tape would keep about {full_tape / 2**20:.1f} MiB; the budget is "
          f"{BUDGET / 1024:.0f} KiB")
    print(f"wrote {OUTPUT} ({plot(losses, shapes[0], shapes[-1], cloth.index)})")


def plot(losses: list[float], before: np.ndarray, after: np.ndarray, index: int) -> str:
    loss = Panel([Line(np.arange(len(losses)), losses, PALETTE[0], label="loss")],
                 title="squared miss per iteration", xlabel="iteration", ylabel="loss [m2]",
                 log_y=True)
    side = Panel(
        [Line(before[:, 0], before[:, 1], lighten(GRAY), marker="o", label="no wind"),
         Line(after[:, 0], after[:, 1], PALETTE[0], marker="o", label="optimised wind"),
         Line([after[index, 0]], [after[index, 1]], PALETTE[3], width=3, marker="o",
              label="steered particle"),
         Line([TARGET[0]], [TARGET[1]], BLACK, width=3, marker="x", label="target")],
        title="settled cloth", xlabel="x [m]", ylabel="y [m]", legend="upper right")
    return save_figure(OUTPUT, [loss, side], title="10,000 steps within a memory budget")


if __name__ == "__main__":
    main()
