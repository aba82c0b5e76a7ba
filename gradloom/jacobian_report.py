"""Comparing Jacobians and showing the result: per-pair checks (`compare_jacobians`), the
plain-text report `gradcheck` prints, and plots (matplotlib, only when installed)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import GradloomError
from .runtime.array.array import NDArray, array

#: relative errors are taken against max(|FD|, this), so an exact zero does not divide by zero
REL_FLOOR = 1e-8


@dataclass(frozen=True)
class PairCheck:
    """The comparison of one (input, output) Jacobian; `worst` is (output comp, input comp)."""

    input_label: str
    output_label: str
    max_abs_error: float
    max_rel_error: float
    worst: tuple[int, int]
    ad_value: float
    fd_value: float
    has_nan: bool
    passed: bool


def compare_jacobians(jacs_ad: Mapping[tuple[int, int], Any],
                      jacs_fd: Mapping[tuple[int, int], Any], *, atol: float = 1e-3,
                      rtol: float = 1e-2, input_labels: Sequence[str] | None = None,
                      output_labels: Sequence[str] | None = None, max_inputs_per_var: int = -1,
                      max_outputs_per_var: int = -1) -> list[PairCheck]:
    """Compare Jacobians (gradloom or numpy arrays) pair by pair, in float64.

    Only the leading `max_outputs_per_var` rows and `max_inputs_per_var` columns are compared
    when those are > 0. Labels default to `input k` / `output k`.
    """
    rows, cols = slice(None), slice(None)
    if max_outputs_per_var > 0:
        rows = slice(0, max_outputs_per_var)
    if max_inputs_per_var > 0:
        cols = slice(0, max_inputs_per_var)
    checks = []
    for (i, j), fd in jacs_fd.items():
        if (i, j) not in jacs_ad:
            raise GradloomError(f"no autodiff Jacobian for the pair (input {i}, output {j})")
        ad64 = np.asarray(jacs_ad[i, j], dtype=np.float64)[rows, cols]
        fd64 = np.asarray(fd, dtype=np.float64)[rows, cols]
        in_label = input_labels[i] if input_labels else f"input {i}"
        out_label = output_labels[j] if output_labels else f"output {j}"
        checks.append(_compare_pair(ad64, fd64, atol, rtol, in_label, out_label))
    return checks


def _compare_pair(ad: NDArray, fd: NDArray, atol: float, rtol: float, input_label: str,
                  output_label: str) -> PairCheck:
    if ad.shape != fd.shape:
        raise GradloomError(f"Jacobian shapes differ for ({input_label}, {output_label}): "
                            f"autodiff {ad.shape}, finite differences {fd.shape}")
    diff = np.abs(ad - fd)
    has_nan = bool(np.isnan(ad).any() or np.isnan(fd).any())
    passed = not has_nan and bool(np.all(diff <= atol + rtol * np.abs(fd)))
    if diff.size == 0:
        return PairCheck(input_label, output_label, 0.0, 0.0, (0, 0), 0.0, 0.0, has_nan, passed)
    k = int(np.argmax(np.where(np.isnan(diff), np.inf, diff)))  # a NaN counts as the worst
    worst = tuple(int(n) for n in np.unravel_index(k, diff.shape))
    rel = diff / np.maximum(np.abs(fd), REL_FLOOR)
    return PairCheck(input_label, output_label, float(diff.flat[k]), float(np.max(rel)),
                     (worst[0], worst[1]), float(ad.flat[k]), float(fd.flat[k]), has_nan, passed)


def format_report(title: str, checks: Sequence[PairCheck], *, atol: float, rtol: float,
                  eps: float | None = None) -> str:
    """A plain-text table: one row per (input, output) pair, errors and PASS / FAIL / NaN."""
    passed = all(c.passed for c in checks)
    rule = f"|AD - FD| <= atol + rtol*|FD|, atol={atol:g}, rtol={rtol:g}"
    head = f"gradcheck of {title}: {'passed' if passed else 'FAILED'} ({rule}"
    head += f", FD eps={eps:g})" if eps is not None else ")"
    header = ["input", "output", "max abs error", "at (out, in)", "AD there", "FD there",
              "max rel error", "result"]
    rows = [[c.input_label, c.output_label, f"{c.max_abs_error:.3e}",
             f"({c.worst[0]}, {c.worst[1]})", f"{c.ad_value:.6g}", f"{c.fd_value:.6g}",
             f"{c.max_rel_error:.3e}", "NaN" if c.has_nan else "PASS" if c.passed else "FAIL"]
            for c in checks]
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip()
             for r in [header, *rows]]
    return "\n".join([head, *lines])


# --------------------------------------------------------------------------------------------
# Optional plots (only with matplotlib installed): a PNG in the working directory


def _grid(jacs: Mapping[tuple[int, int], NDArray], input_labels: Sequence[str],
          output_labels: Sequence[str], title: str) -> Any:
    """One figure of Jacobians (outputs down, inputs across), each with its colour bar."""
    figure_module = importlib.import_module("matplotlib.figure")
    ins, outs = sorted({i for i, _ in jacs}), sorted({j for _, j in jacs})
    fig = figure_module.Figure(figsize=(3 + 2.5 * len(ins), 2 + 2.5 * len(outs)))
    axes = fig.subplots(len(outs), len(ins), squeeze=False)
    for (i, j), jac in jacs.items():
        ax = axes[outs.index(j)][ins.index(i)]
        fig.colorbar(ax.imshow(np.asarray(jac, dtype=np.float64), cmap="coolwarm",
                               interpolation="nearest", aspect="auto"), ax=ax)
        ax.set_xlabel(input_labels[i])
        ax.set_ylabel(output_labels[j])
    fig.suptitle(title)
    return fig


def jacobian_plot(jacobians: Mapping[tuple[int, int], Any], kernel: Any = None,
                  inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None,
                  show_plot: bool = True, **_: Any) -> Any:
    """Draw Jacobians from `jacobian` / `jacobian_fd` in one figure (outputs down, inputs
    across) and return the matplotlib Figure (None without Jacobians); needs matplotlib."""
    if not jacobians:
        return None
    dense = {k: (v.numpy() if isinstance(v, array) else np.asarray(v)) for k, v in
             jacobians.items()}
    n_in = max(i for i, _ in dense) + 1
    n_out = max(j for _, j in dense) + 1
    return _grid(dense, [f"input {i}" for i in range(n_in)],
                 [f"output {j}" for j in range(n_out)], getattr(kernel, "key", None) or "Jacobians")


def plot_to_file(jacs: Mapping[tuple[int, int], NDArray], input_labels: Sequence[str],
                 output_labels: Sequence[str], title: str) -> Path | None:
    """Draw the Jacobians in a grid and write `<title>.png` to the working directory (None,
    and a line saying so, without matplotlib)."""
    try:
        fig = _grid(jacs, input_labels, output_labels, title)
    except ImportError:
        print(f"gradloom.autograd: matplotlib is not installed; skipped the plot '{title}'")
        return None
    path = Path.cwd() / (re.sub(r"\W+", "_", title).strip("_") + ".png")
    fig.savefig(path)
    print(f"gradloom.autograd: wrote {path}")
    return path
