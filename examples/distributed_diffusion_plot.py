"""The figure of examples/distributed_diffusion.py: true and recovered diffusivity as colour
maps, and the loss per iteration. matplotlib when installed, else numpy + plotting.write_png."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from plotting import BLACK, PALETTE, Line, Panel, draw_text, render, write_png

#: anchor colours of the colour map (matplotlib's "viridis" at 0, 1/4, 1/2, 3/4, 1)
_VIRIDIS = np.array([(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98),
                     (253, 231, 37)], dtype=np.float64)
PANEL = (440, 440)


def colour_map(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """(h, w, 3) uint8 colours of values scaled from [lo, hi]."""
    t = np.clip((values - lo) / max(hi - lo, 1e-300), 0.0, 1.0) * (len(_VIRIDIS) - 1)
    k = np.minimum(t.astype(int), len(_VIRIDIS) - 2)
    f = (t - k)[..., None]
    return np.round(_VIRIDIS[k] * (1 - f) + _VIRIDIS[k + 1] * f).astype(np.uint8)


def heatmap(values: np.ndarray, lo: float, hi: float, title: str) -> np.ndarray:
    """A white panel holding the field's colour map (row 0 at the bottom) and a title."""
    w, h = PANEL
    img = np.full((h, w, 3), 255, dtype=np.uint8)
    rows, cols = values.shape
    scale = max(1, min((w - 40) // cols, (h - 80) // rows))
    pixels = colour_map(values[::-1], lo, hi).repeat(scale, 0).repeat(scale, 1)
    top, left = 50, (w - pixels.shape[1]) // 2
    img[top:top + pixels.shape[0], left:left + pixels.shape[1]] = pixels
    draw_text(img, title, (w // 2, 25), BLACK, scale=2, align="center")
    draw_text(img, f"colours: {lo:.2f} to {hi:.2f}", (w // 2, top + pixels.shape[0] + 20),
              BLACK, align="center")
    return img


def save_diffusion_figure(path: Path, kappa_true: np.ndarray, kappa_found: np.ndarray,
                          losses: Sequence[float], ranks: int) -> str:
    """Write the PNG; return the backend used ("matplotlib" or "numpy")."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lo, hi = float(kappa_true.min()), float(kappa_true.max())
    title = f"recovered ({ranks} rank{'s' if ranks > 1 else ''})"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        loss_panel = Panel([Line(np.arange(len(losses)), np.asarray(losses), PALETTE[0])],
                           title="loss", xlabel="iteration", ylabel="loss", log_y=True)
        images = [heatmap(kappa_true, lo, hi, "true diffusivity"),
                  heatmap(kappa_found, lo, hi, title), render([loss_panel], panel_size=PANEL)]
        write_png(path, np.concatenate(images, axis=1))
        return "numpy"
    fig, axes = plt.subplots(1, 3, figsize=(13.2, 4.4))
    for ax, values, name in ((axes[0], kappa_true, "true diffusivity"),
                             (axes[1], kappa_found, title)):
        im = ax.imshow(values, origin="lower", vmin=lo, vmax=hi, cmap="viridis")
        ax.set_title(name)
        fig.colorbar(im, ax=ax, shrink=0.8)
    axes[2].semilogy(losses)
    axes[2].set(title="loss", xlabel="iteration", ylabel="loss")
    axes[2].grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return "matplotlib"
