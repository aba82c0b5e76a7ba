"""gradloom quickstart: particles falling under gravity and bouncing on the ground, on the CPU.

Run from the repository root:  python examples/quickstart.py
The kernels use only Warp's API: with `import warp as wp` instead, the same file runs on Warp.
"""

from pathlib import Path

import numpy as np
from plotting import BLACK, PALETTE, Line, Panel, save_figure

import gradloom as wp

wp.config.quiet = True

DEVICE = "cpu"
NUM_PARTICLES = 1000
NUM_STEPS = 300
DT = 0.01
GRAVITY = 9.81
RESTITUTION = 0.8
TRACKED = 6  # particles whose heights are plotted
OUTPUT = Path(__file__).resolve().parent / "output" / "quickstart.png"


@wp.kernel
def integrate(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    bounces: wp.array(dtype=int),
    gravity: wp.vec3,
    dt: float,
    restitution: float,
):
    i = wp.tid()
    vel = v[i] + gravity * dt
    pos = x[i] + vel * dt
    if pos[1] < 0.0:
        # reflect off the ground plane y = 0, losing some energy
        pos = wp.vec3(pos[0], -pos[1] * restitution, pos[2])
        vel = wp.vec3(vel[0], -vel[1] * restitution, vel[2])
        bounces[i] = bounces[i] + 1
    x[i] = pos
    v[i] = vel


@wp.kernel
def total_energy(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    g: float,
    energy: wp.array(dtype=float),
):
    i = wp.tid()
    pos = x[i]
    vel = v[i]
    e = 0.5 * wp.dot(vel, vel) + g * pos[1]
    wp.atomic_add(energy, 0, e)


def measure_energy(x: "wp.array", v: "wp.array") -> float:
    energy = wp.zeros(1, dtype=float, device=DEVICE)
    wp.launch(total_energy, dim=NUM_PARTICLES, inputs=[x, v, GRAVITY, energy], device=DEVICE)
    return float(energy.numpy()[0]) / NUM_PARTICLES


def simulate() -> tuple[np.ndarray, np.ndarray]:
    """Run the simulation; return the heights of the tracked particles and the mean height."""
    rng = np.random.default_rng(42)
    x0 = rng.uniform([-1.0, 0.5, -1.0], [1.0, 3.0, 1.0], size=(NUM_PARTICLES, 3))
    v0 = rng.normal(0.0, 0.5, size=(NUM_PARTICLES, 3))
    x = wp.array(x0.astype(np.float32), dtype=wp.vec3, device=DEVICE)
    v = wp.array(v0.astype(np.float32), dtype=wp.vec3, device=DEVICE)
    bounces = wp.zeros(NUM_PARTICLES, dtype=int, device=DEVICE)
    gravity = wp.vec3(0.0, -GRAVITY, 0.0)

    e_start = measure_energy(x, v)
    print(f"{NUM_PARTICLES} particles, {NUM_STEPS} steps of dt={DT}, energy/particle {e_start:.3f}")
    heights = np.empty((NUM_STEPS + 1, TRACKED), dtype=np.float32)
    mean_height = np.empty(NUM_STEPS + 1, dtype=np.float32)
    pos = x.numpy()
    heights[0], mean_height[0] = pos[:TRACKED, 1], pos[:, 1].mean()
    for step in range(1, NUM_STEPS + 1):
        wp.launch(
            integrate,
            dim=NUM_PARTICLES,
            inputs=[x, v, bounces, gravity, DT, RESTITUTION],
            device=DEVICE,
        )
        pos = x.numpy()
        heights[step], mean_height[step] = pos[:TRACKED, 1], pos[:, 1].mean()
        if step % 50 == 0:
            print(
                f"  t={step * DT:4.2f}s  mean height {mean_height[step]:.3f}  "
                f"min {pos[:, 1].min():.3f}  bounces {int(bounces.numpy().sum()):5d}  "
                f"energy/particle {measure_energy(x, v):.3f}"
            )

    pos, e_end = x.numpy(), measure_energy(x, v)
    assert np.isfinite(pos).all() and pos[:, 1].min() >= 0.0, "a particle fell through the ground"
    print(
        f"done: mean height {pos[:, 1].mean():.3f}, {int(bounces.numpy().sum())} bounces, "
        f"energy/particle {e_start:.3f} -> {e_end:.3f} ({100 * (1 - e_end / e_start):.0f}% lost)"
    )
    return heights, mean_height


def plot(heights: np.ndarray, mean_height: np.ndarray, path: Path) -> str:
    """Plot the tracked heights and the mean height over time; return the backend used."""
    t = np.arange(len(mean_height)) * DT
    lines = [
        Line(t, heights[:, k], PALETTE[k % len(PALETTE)], width=2) for k in range(heights.shape[1])
    ]
    lines.append(Line(t, mean_height, BLACK, width=3, dashed=True, label="mean over all particles"))
    panel = Panel(lines, xlabel="time [s]", ylabel="height [m]")
    return save_figure(
        path, [panel], title="gradloom quickstart: bouncing particles", panel_size=(800, 450)
    )


def main(output: Path = OUTPUT) -> Path:
    heights, mean_height = simulate()
    plot(heights, mean_height, output)
    print(f"plot of particle heights over time written to {output}")
    return output


if __name__ == "__main__":
    main()
