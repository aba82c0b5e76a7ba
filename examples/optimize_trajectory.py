"""Aim projectiles with air drag at a target by gradient descent through a runtime-bound loop.

Run from the repository root:  python examples/optimize_trajectory.py

Six projectiles start at the origin, each with its own quadratic drag coefficient k (the drag
deceleration is k·|v|·v). One kernel thread flies one projectile through every time step in a
loop whose trip count, `num_steps`, is a kernel argument. A second kernel scores the flight:
the squared distance of each projectile from the target when the time is up, summed with
`wp.atomic_add`. `wp.Tape` gives the gradient of that loss with respect to the launch
velocities, and gradient descent moves them until every projectile hits the target.

The gradient has to flow back through all 150 trips of a loop that carries position and
velocity through a nonlinear drag law. Warp replays a loop with a runtime bound in its adjoint
instead of keeping each trip's values (docs/autodiff.md, "How this differs from Warp"): under
Warp 1.19 these same kernels give a d(loss)/d(v0) that is off by up to 84% for the dragged
projectiles. (Descent still reaches this particular target with it, because any direction of
the form Jᵀ·miss vanishes once every miss is zero.) gradloom keeps or recomputes each trip's
values; the example checks its gradient against float64 central differences before optimising.

It writes examples/output/optimize_trajectory.png: the loss per iteration, and the trajectories
before and after. The kernels use only Warp's API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from plotting import BLACK, GRAY, PALETTE, Line, Panel, lighten, save_figure

import gradloom as wp

wp.config.quiet = True

DRAG = (0.0, 0.02, 0.05, 0.08, 0.12, 0.16)  # k [1/m], one projectile each
NUM_STEPS = 150
DT = 0.01  # [s]: the projectiles fly NUM_STEPS * DT = 1.5 s
GRAVITY = 9.81  # [m/s²]
TARGET = (8.0, 1.0)  # where every projectile should be when the time is up [m]
V0_GUESS = (6.0, 6.0)  # every projectile's first launch velocity [m/s]
LEARNING_RATE = 0.3
TOLERANCE = 1e-8  # stop once the loss (sum of squared misses) is below this [m²]
MAX_ITERATIONS = 500
PRINT_EVERY = 20
FD_EPS = 1e-6  # central-difference step for the gradient check [m/s]
GRAD_RTOL = 1e-5  # the gradient check passes below this relative error
OUTPUT = Path(__file__).resolve().parent / "output" / "optimize_trajectory.png"


@wp.kernel
def simulate(
    v0: wp.array(dtype=wp.vec2d),
    drag: wp.array(dtype=wp.float64),
    start: wp.vec2d,
    gravity: wp.vec2d,
    dt: wp.float64,
    num_steps: int,
    traj: wp.array2d(dtype=wp.vec2d),
    final: wp.array(dtype=wp.vec2d),
):
    i = wp.tid()
    k = drag[i]
    pos = start
    vel = v0[i]
    traj[i, 0] = pos
    for step in range(num_steps):  # a runtime bound: the adjoint must undo every trip
        vel = vel + (gravity - k * wp.length(vel) * vel) * dt  # semi-implicit Euler
        pos = pos + vel * dt
        traj[i, step + 1] = pos
    final[i] = pos


@wp.kernel
def distance_loss(
    final: wp.array(dtype=wp.vec2d), target: wp.vec2d, loss: wp.array(dtype=wp.float64)
):
    i = wp.tid()
    miss = final[i] - target
    wp.atomic_add(loss, 0, wp.dot(miss, miss))


@wp.kernel
def gradient_step(v0: wp.array(dtype=wp.vec2d), grad: wp.array(dtype=wp.vec2d), rate: wp.float64):
    i = wp.tid()
    v0[i] = v0[i] - rate * grad[i]


def forward(v0: wp.array, drag: wp.array) -> tuple[wp.array, wp.array]:
    """Fly every projectile and score the flights: (loss of shape (1,), trajectories)."""
    n = v0.shape[0]
    traj = wp.zeros((n, NUM_STEPS + 1), dtype=wp.vec2d)
    final = wp.zeros(n, dtype=wp.vec2d, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    start, gravity = wp.vec2d(0.0, 0.0), wp.vec2d(0.0, -GRAVITY)
    wp.launch(
        simulate, dim=n, inputs=[v0, drag, start, gravity, DT, NUM_STEPS], outputs=[traj, final]
    )
    wp.launch(distance_loss, dim=n, inputs=[final, wp.vec2d(*TARGET)], outputs=[loss])
    return loss, traj


def check_gradient(v0: wp.array, drag: wp.array) -> float:
    """The largest relative error of the tape's d(loss)/d(v0) against central differences.

    Both Jacobians come from `wp.autograd`: `jacobian` runs the tape backwards, `jacobian_fd`
    perturbs each launch-velocity component by ±FD_EPS (the kernels compute in float64).
    """

    def loss_of(v0: wp.array) -> wp.array:
        return forward(v0, drag)[0]

    ad = wp.autograd.jacobian(loss_of, inputs=[v0])[0, 0].numpy()
    fd = wp.autograd.jacobian_fd(loss_of, inputs=[v0], eps=FD_EPS)[0, 0].numpy()
    return float(np.max(np.abs(ad - fd) / np.maximum(np.abs(fd), 1e-12)))


def optimize(v0: wp.array, drag: wp.array, max_iterations: int, show_progress: bool) -> list[float]:
    """Gradient descent on v0 (in place); the loss before each step and after the last."""
    losses: list[float] = []
    for iteration in range(max_iterations + 1):
        tape = wp.Tape()
        with tape:
            loss, _ = forward(v0, drag)
        losses.append(float(loss.numpy()[0]))
        done = losses[-1] < TOLERANCE or iteration == max_iterations
        if show_progress and (iteration % PRINT_EVERY == 0 or done):
            print(f"  iteration {iteration:4d}  loss {losses[-1]:.3e} m²")
        if done:
            break
        tape.backward(loss=loss)
        wp.launch(gradient_step, dim=v0.shape[0], inputs=[v0, v0.grad, LEARNING_RATE])
        tape.zero()
    return losses


def plot(losses: list[float], before: np.ndarray, after: np.ndarray, path: Path) -> str:
    """Loss per iteration, and the trajectories (n, steps + 1, 2) before and after."""
    loss_panel = Panel(
        [
            Line(np.arange(len(losses)), losses, PALETTE[0], width=2, label="loss"),
            Line([0, len(losses) - 1], [TOLERANCE] * 2, GRAY, dashed=True, label="tolerance"),
        ],
        title="loss: sum of squared misses",
        xlabel="iteration",
        ylabel="loss [m^2]",
        log_y=True,
    )
    lines = [Line([], [], GRAY, dashed=True, label="initial guess")]
    for k, drag in enumerate(DRAG):
        color = PALETTE[k % len(PALETTE)]
        lines.append(Line(before[k, :, 0], before[k, :, 1], lighten(color), dashed=True))
        lines.append(
            Line(after[k, :, 0], after[k, :, 1], color, width=2, label=f"drag k = {drag:g}")
        )
    lines.append(Line([TARGET[0]], [TARGET[1]], BLACK, width=3, marker="x", label="target"))
    traj_panel = Panel(
        lines, title="trajectories", xlabel="x [m]", ylabel="height [m]", legend="lower left"
    )
    title = f"gradloom: aiming {len(DRAG)} projectiles through a {NUM_STEPS}-step runtime loop"
    return save_figure(path, [loss_panel, traj_panel], title=title)


def report(v0_before: np.ndarray, v0_after: np.ndarray, after: np.ndarray) -> None:
    print("  drag k   launch velocity before -> after [m/s]   miss [m]")
    for k, drag in enumerate(DRAG):
        miss = float(np.hypot(*(after[k, -1] - TARGET)))
        print(
            f"  {drag:6.2f}   ({v0_before[k, 0]:5.2f}, {v0_before[k, 1]:5.2f}) -> "
            f"({v0_after[k, 0]:6.3f}, {v0_after[k, 1]:6.3f})          {miss:.1e}"
        )


def main(
    iterations: int | None = None, show_progress: bool = True, output: Path = OUTPUT
) -> dict[str, Any]:
    """Check the gradient, optimise (at most `iterations` steps), plot; return a summary."""
    drag = wp.array(np.array(DRAG), dtype=wp.float64)
    v0_start = np.tile(V0_GUESS, (len(DRAG), 1))
    v0 = wp.array(v0_start, dtype=wp.vec2d, requires_grad=True)
    print(
        f"{len(DRAG)} projectiles, {NUM_STEPS} steps of dt={DT} s in one runtime loop, "
        f"target {TARGET} m"
    )

    grad_error = check_gradient(v0, drag)
    grad_ok = grad_error < GRAD_RTOL
    print(
        f"gradient check, tape vs float64 central differences over {2 * len(DRAG)} components: "
        f"max relative error {grad_error:.2e} ({'passed' if grad_ok else 'FAILED'})"
    )

    before = forward(v0, drag)[1].numpy()
    max_iterations = MAX_ITERATIONS if iterations is None else iterations
    print(f"gradient descent, learning rate {LEARNING_RATE}, tolerance {TOLERANCE:g} m²")
    losses = optimize(v0, drag, max_iterations, show_progress)
    after = forward(v0, drag)[1].numpy()
    report(v0_start, v0.numpy(), after)

    backend = plot(losses, before, after, output)
    converged = losses[-1] < TOLERANCE
    print(
        f"{'converged' if converged else 'stopped'} after {len(losses) - 1} iterations: "
        f"loss {losses[0]:.3e} -> {losses[-1]:.3e} m²"
    )
    print(f"plot ({backend}) written to {output}")
    return {
        "initial_loss": losses[0],
        "final_loss": losses[-1],
        "iterations": len(losses) - 1,
        "converged": converged,
        "grad_rel_error": grad_error,
        "grad_check_passed": grad_ok,
        "losses": losses,
        "output": output,
    }


if __name__ == "__main__":
    main()
