"""Fit a damped oscillation with torch.optim.Adam, through a gradloom kernel.

Run from the repository root:  python examples/torch_adam.py   (needs: pip install torch==2.13.0)

The model y(t) = A·exp(-k·t)·sin(ω·t + φ) is a gradloom kernel. `gradloom.torch.function`
turns it into a differentiable torch operation: torch tensors go in (zero-copy), a torch tensor
comes out, and torch's backward runs the kernel's adjoint. The loss (mean squared error against
the samples) and the optimiser are plain PyTorch. The example checks the bridge with
`torch.autograd.gradcheck` first, prints the loss as it falls, and stops once it is below
TOLERANCE. It writes examples/output/torch_adam.png: the loss per iteration, and the samples
with the first guess and the fit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from plotting import BLACK, GRAY, PALETTE, Line, Panel, save_figure

import gradloom as wp
import gradloom.torch as gt

wp.config.quiet = True

TRUE_PARAMS = (2.0, 0.5, 3.0, 0.3)  # A, k [1/s], ω [rad/s], φ [rad]
FIRST_GUESS = (1.0, 0.2, 2.6, 0.0)
NUM_SAMPLES = 200
DURATION = 6.0  # [s]
LEARNING_RATE = 0.05
TOLERANCE = 1e-8  # stop once the mean squared error is below this
MAX_ITERATIONS = 3000
PRINT_EVERY = 20
OUTPUT = Path(__file__).resolve().parent / "output" / "torch_adam.png"


@wp.kernel
def damped_wave(
    t: wp.array(dtype=wp.float64),
    p: wp.array(dtype=wp.float64),
    y: wp.array(dtype=wp.float64),
):
    i = wp.tid()
    y[i] = p[0] * wp.exp(-p[1] * t[i]) * wp.sin(p[2] * t[i] + p[3])


#: the kernel as a torch op: inputs (t, p), output y shaped like t
wave = gt.function(damped_wave, outputs={"y": "t"})


def samples() -> tuple[torch.Tensor, torch.Tensor]:
    """Sample times and the true curve at them (computed in torch, not by the kernel)."""
    t = torch.linspace(0.0, DURATION, NUM_SAMPLES, dtype=torch.float64)
    a, k, w, phi = TRUE_PARAMS
    return t, a * torch.exp(-k * t) * torch.sin(w * t + phi)


def check_gradient(t: torch.Tensor) -> bool:
    """torch.autograd.gradcheck of the bridge (float64 central differences) on a few samples."""
    p = torch.tensor(FIRST_GUESS, dtype=torch.float64, requires_grad=True)
    return bool(torch.autograd.gradcheck(wave, (t[:16], p)))


def fit(t: torch.Tensor, target: torch.Tensor, max_iterations: int,
        show_progress: bool) -> tuple[torch.Tensor, list[float]]:
    """Adam on the four parameters; the loss before each step (and after the last)."""
    p = torch.tensor(FIRST_GUESS, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.Adam([p], lr=LEARNING_RATE)
    losses: list[float] = []
    for iteration in range(max_iterations + 1):
        optimizer.zero_grad()
        loss = torch.mean((wave(t, p) - target) ** 2)
        losses.append(loss.item())
        done = losses[-1] < TOLERANCE or iteration == max_iterations
        if show_progress and (iteration % PRINT_EVERY == 0 or done):
            print(f"  iteration {iteration:5d}  loss {losses[-1]:.3e}")
        if done:
            break
        loss.backward()
        optimizer.step()
    return p.detach(), losses


def plot(t: torch.Tensor, target: torch.Tensor, fitted: torch.Tensor, losses: list[float],
         path: Path) -> str:
    guess = wave(t, torch.tensor(FIRST_GUESS, dtype=torch.float64)).numpy()
    loss_panel = Panel(
        [Line(np.arange(len(losses)), losses, PALETTE[0], label="loss"),
         Line([0, len(losses) - 1], [TOLERANCE] * 2, GRAY, dashed=True, label="tolerance")],
        title="mean squared error", xlabel="iteration", ylabel="loss", log_y=True)
    fit_panel = Panel(
        [Line(t.numpy(), target.numpy(), BLACK, width=3, label="samples"),
         Line(t.numpy(), guess, GRAY, dashed=True, label="first guess"),
         Line(t.numpy(), wave(t, fitted).numpy(), PALETTE[1], label="fit")],
        title="damped oscillation", xlabel="t [s]", ylabel="y")
    return save_figure(path, [loss_panel, fit_panel],
                       title="gradloom kernel + torch.optim.Adam")


def main(max_iterations: int = MAX_ITERATIONS, show_progress: bool = True,
         output: Path = OUTPUT) -> dict[str, Any]:
    """Check the gradient, fit, plot; return a summary."""
    t, target = samples()
    grad_ok = check_gradient(t)
    print(f"torch.autograd.gradcheck through the gradloom kernel: "
          f"{'passed' if grad_ok else 'FAILED'}")
    print(f"Adam, learning rate {LEARNING_RATE}, tolerance {TOLERANCE:g}")
    fitted, losses = fit(t, target, max_iterations, show_progress)
    print("  parameter     true    fitted")
    for name, true, got in zip(("A", "k", "omega", "phi"), TRUE_PARAMS, fitted.tolist()):
        print(f"  {name:9s} {true:7.4f}  {got:8.5f}")
    backend = plot(t, target, fitted, losses, output)
    print(f"wrote {output} ({backend})")
    converged = losses[-1] < TOLERANCE
    print(f"final loss {losses[-1]:.3e} after {len(losses) - 1} iterations: "
          f"{'below' if converged else 'ABOVE'} the tolerance {TOLERANCE:g}")
    return {"grad_check_passed": grad_ok, "losses": losses, "initial_loss": losses[0],
            "final_loss": losses[-1], "iterations": len(losses) - 1, "converged": converged,
            "params": fitted.tolist(), "output": output}


if __name__ == "__main__":
    result = main()
    assert result["grad_check_passed"] and result["converged"], "the fit did not converge"
