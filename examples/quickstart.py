"""gradloom quickstart: particles falling under gravity and bouncing on the ground, on the CPU.

Run from the repository root:  python examples/quickstart.py
The kernels use only Warp's API: with `import warp as wp` instead, the same file runs on Warp.
"""

import struct
import zlib
from pathlib import Path

import numpy as np

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


# ---- plotting: matplotlib if it is installed, otherwise a tiny PNG writer --------------------


def plot_matplotlib(heights: np.ndarray, mean_height: np.ndarray, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    t = np.arange(len(mean_height)) * DT
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(t, heights, lw=1.2)
    ax.plot(t, mean_height, "k--", lw=1.5, label="mean over all particles")
    ax.set(xlabel="time [s]", ylabel="height [m]", title="gradloom quickstart: bouncing particles")
    ax.legend()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write_png(path: Path, rgb: np.ndarray) -> None:
    """Write an (h, w, 3) uint8 image as a PNG using only zlib."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[row].tobytes() for row in range(h))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(png)


def plot_numpy(heights: np.ndarray, mean_height: np.ndarray, path: Path) -> None:
    w, h, margin = 800, 450, 30
    img = np.full((h, w, 3), 255, dtype=np.uint8)
    img[h - margin, margin : w - margin] = 0  # time axis (ground)
    img[margin : h - margin, margin] = 0  # height axis
    top = max(float(heights.max()), float(mean_height.max())) * 1.05
    steps = len(mean_height)

    def polyline(ys: np.ndarray, color: tuple[int, int, int], thick: int) -> None:
        t = np.linspace(0, steps - 1, 8 * steps)  # dense samples give a continuous line
        px = (margin + t / (steps - 1) * (w - 2 * margin)).astype(int)
        py = (h - margin - np.interp(t, np.arange(steps), ys) / top * (h - 2 * margin)).astype(int)
        for d in range(thick):
            img[np.clip(py + d, 0, h - 1), np.clip(px, 0, w - 1)] = color

    palette = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
    ]
    for k in range(heights.shape[1]):
        polyline(heights[:, k], palette[k % len(palette)], 2)
    polyline(mean_height, (0, 0, 0), 3)
    write_png(path, img)


def main() -> None:
    heights, mean_height = simulate()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    if not plot_matplotlib(heights, mean_height, OUTPUT):
        plot_numpy(heights, mean_height, OUTPUT)
    print(f"plot of particle heights over time written to {OUTPUT}")


if __name__ == "__main__":
    main()
