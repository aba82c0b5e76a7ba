"""The rest shape of a hanging chain by Newton's method with Hessian-vector products.

Run from the repository root:  python examples/newton_hvp.py

A chain of 40 springs hangs between two pins under gravity. Its rest shape minimises the
potential energy E(q) = Σ ½ k (|x_{j+1} − x_j| − L)² + Σ m g y_j over the free nodes q. One
kernel sums that energy with `wp.atomic_add`; nothing else is written by hand. The gradient
comes from `wp.Tape`, and the Hessian only as products H·p from `gradloom.autograd.hvp`
(reverse mode over forward mode: the tangent kernel's adjoint). Newton's method solves
H p = −∇E for its step by conjugate gradients, one HVP per CG iteration, never forming H;
`gradcheck_hvp` checks the HVPs against finite differences of gradients first.

Gradient descent (step from a backtracking line search) is run beside it from the same start.
The stiff springs make the problem badly conditioned: gradient descent is still far from the
rest shape after 300 steps (|∇E| down 24×), where Newton reaches 1e-9 in about 25.

It writes examples/output/newton_hvp.png: |∇E| per iteration for both methods, and the chain
at the start and at Newton's solution.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from plotting import BLACK, GRAY, PALETTE, Line, Panel, lighten, save_figure

import gradloom as wp
from gradloom.autograd import gradcheck_hvp, hvp

wp.config.quiet = True

SPRINGS = 40
LENGTH = 0.03  # rest length of a spring [m] (the pins are 1 m apart: the chain sags)
STIFFNESS = 400.0  # [N/m]
WEIGHT = 0.02  # m g of a node [N]
PIN_A, PIN_B = (0.0, 0.0), (1.0, 0.0)
NEWTON_STEPS, GD_STEPS, CG_STEPS = 30, 300, 60
TOLERANCE = 1e-9  # stop at |∇E| below this [N]
OUTPUT = Path(__file__).resolve().parent / "output" / "newton_hvp.png"


@wp.func
def node(q: wp.array(dtype=wp.vec2d), j: int, n: int, a: wp.vec2d, b: wp.vec2d) -> wp.vec2d:
    """Node j of the chain: the pins at both ends, free nodes between."""
    if j == 0:
        return a
    if j == n:
        return b
    return q[j - 1]


@wp.kernel
def chain_energy(q: wp.array(dtype=wp.vec2d), n: int, a: wp.vec2d, b: wp.vec2d,
                 rest: wp.float64, k: wp.float64, weight: wp.float64,
                 e: wp.array(dtype=wp.float64)):
    s = wp.tid()  # spring s joins nodes s and s + 1
    d = node(q, s + 1, n, a, b) - node(q, s, n, a, b)
    stretch = wp.length(d) - rest
    energy = wp.float64(0.5) * k * stretch * stretch
    if s > 0:  # the weight of free node s
        energy = energy + weight * q[s - 1][1]
    wp.atomic_add(e, 0, energy)


def energy(q: Any) -> Any:
    e = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    wp.launch(chain_energy, SPRINGS, inputs=[q, SPRINGS, wp.vec2d(*PIN_A), wp.vec2d(*PIN_B),
                                             LENGTH, STIFFNESS, WEIGHT, e])
    return e


def value_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
    q = wp.array(x, dtype=wp.vec2d, requires_grad=True)
    tape = wp.Tape()
    with tape:
        e = energy(q)
    tape.backward(loss=e)
    return float(e.numpy()[0]), q.grad.numpy().copy()


def hessian_times(x: np.ndarray, p: np.ndarray) -> np.ndarray:
    (hp,) = hvp(energy, [wp.array(x, dtype=wp.vec2d)], [p])
    return hp.numpy()


def line_search(x: np.ndarray, f: float, g: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Backtracking (Armijo) along p from x."""
    t, slope = 1.0, float(np.sum(g * p))
    while t > 1e-12:
        trial = x + t * p
        if value_and_grad(trial)[0] <= f + 1e-4 * t * slope:
            return trial
        t *= 0.5
    return x


def conjugate_gradients(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """An approximate solution of H p = -g, one HVP per iteration (Newton-CG)."""
    p, r = np.zeros_like(g), -g
    d, rr = r.copy(), float(np.sum(r * r))
    for _ in range(CG_STEPS):
        hd = hessian_times(x, d)
        curvature = float(np.sum(d * hd))
        if curvature <= 0.0:  # not a descent direction beyond here
            return p if p.any() else -g
        alpha = rr / curvature
        p, r = p + alpha * d, r - alpha * hd
        rr_new = float(np.sum(r * r))
        if rr_new < 1e-24:
            break
        d, rr = r + (rr_new / rr) * d, rr_new
    return p


def minimise(x0: np.ndarray, newton: bool) -> tuple[np.ndarray, list[float]]:
    x, norms = x0.copy(), []
    for _ in range(NEWTON_STEPS if newton else GD_STEPS):
        f, g = value_and_grad(x)
        norms.append(float(np.linalg.norm(g)))
        if norms[-1] < TOLERANCE:
            break
        x = line_search(x, f, g, conjugate_gradients(x, g) if newton else -g)
    return x, norms


def start() -> np.ndarray:
    """The free nodes evenly on the straight line between the pins, slightly perturbed."""
    s = np.linspace(0.0, 1.0, SPRINGS + 1)[1:-1]
    rng = np.random.default_rng(0)
    return np.stack([s, 0.01 * rng.standard_normal(s.size)], axis=1)


def main() -> None:
    x0 = start()
    gradcheck_hvp(energy, [wp.array(x0, dtype=wp.vec2d)], eps=1e-6, atol=1e-5, rtol=1e-4)
    x_newton, newton = minimise(x0, newton=True)
    _, descent = minimise(x0, newton=False)
    print(f"Newton-CG: |grad E| {newton[0]:.3e} -> {newton[-1]:.3e} in {len(newton) - 1} steps")
    print(f"gradient descent: |grad E| {descent[0]:.3e} -> {descent[-1]:.3e} in "
          f"{len(descent) - 1} steps")
    print(f"wrote {OUTPUT} ({plot(x0, x_newton, newton, descent)})")


def plot(x0: np.ndarray, x: np.ndarray, newton: list[float], descent: list[float]) -> str:
    norms = Panel(
        [Line(np.arange(len(newton)), newton, PALETTE[0], label="Newton-CG (HVPs)"),
         Line(np.arange(len(descent)), descent, PALETTE[1], label="gradient descent")],
        title="norm of grad E per iteration", xlabel="iteration",
        ylabel="norm of grad E [N]", log_y=True)
    def full(q: np.ndarray) -> np.ndarray:
        return np.vstack([PIN_A, q, PIN_B])
    a, b = full(x0), full(x)
    shape = Panel(
        [Line(a[:, 0], a[:, 1], lighten(GRAY), dashed=True, label="start"),
         Line(b[:, 0], b[:, 1], PALETTE[0], label="Newton's rest shape"),
         Line(b[:, 0], b[:, 1], PALETTE[0], marker="o"),
         Line([PIN_A[0], PIN_B[0]], [PIN_A[1], PIN_B[1]], BLACK, width=3, marker="x",
              label="pins")],
        title="the chain", xlabel="x [m]", ylabel="y [m]", legend="lower right")
    return save_figure(OUTPUT, [norms, shape], title="Newton's method with HVPs")


if __name__ == "__main__":
    main()
