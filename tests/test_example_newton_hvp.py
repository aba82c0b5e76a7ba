"""examples/newton_hvp.py: Newton-CG with HVPs reaches the chain's rest shape (gradient below
1e-9, nodes in equilibrium: the analytic force balance at each free node holds), far fewer
steps than gradient descent, and writes a PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from test_examples import load_example, png_size


def spring_forces(example, q: np.ndarray) -> np.ndarray:
    """Net force on each free node from its two springs and its weight (numpy, float64)."""
    x = np.vstack([example.PIN_A, q, example.PIN_B])
    d = np.diff(x, axis=0)
    length = np.linalg.norm(d, axis=1)
    tension = example.STIFFNESS * (length - example.LENGTH)
    f = (tension / length)[:, None] * d  # pull of spring s on node s, toward node s + 1
    net = f[1:] - f[:-1]
    net[:, 1] -= example.WEIGHT
    return net


def test_newton_reaches_the_rest_shape(tmp_path: Path) -> None:
    example = load_example("newton_hvp")
    x0 = example.start()
    x, norms = example.minimise(x0, newton=True)
    assert norms[-1] < example.TOLERANCE and len(norms) < 40
    assert np.abs(spring_forces(example, x)).max() < 1e-8
    assert np.abs(spring_forces(example, x0)).max() > 1.0
    example.GD_STEPS = 40
    _, descent = example.minimise(x0, newton=False)
    assert descent[-1] > 1e3 * norms[-1]
    example.OUTPUT = tmp_path / "newton_hvp.png"
    example.plot(x0, x, norms, descent)
    assert png_size(example.OUTPUT)[0] > 0
