"""The examples' plotting: a zlib-only PNG writer and line plots in side-by-side panels.

`save_figure(path, panels)` draws with matplotlib when it is installed. Otherwise a small numpy
rasteriser draws the same figure (frame, ticks, grid, a 5×7 bitmap font for titles, labels and
legends) and `write_png` writes it with zlib only, so the examples need nothing beyond numpy.
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

RGB = tuple[int, int, int]

#: matplotlib's "tab10" colours.
PALETTE: list[RGB] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
]
BLACK: RGB = (0, 0, 0)
GRAY: RGB = (140, 140, 140)


def lighten(color: RGB, amount: float = 0.5) -> RGB:
    """`color` mixed with white: amount 0 keeps it, 1 gives white."""
    r, g, b = (round(c + (255 - c) * amount) for c in color)
    return (r, g, b)


@dataclass
class Line:
    """One data series. `marker` "o" or "x" draws points instead of a line.

    A line with no points is drawn nowhere but still gets a legend entry when it has a label.
    """

    x: Sequence[float] | np.ndarray
    y: Sequence[float] | np.ndarray
    color: RGB = BLACK
    width: int = 2
    dashed: bool = False
    marker: str = ""
    label: str = ""


@dataclass
class Panel:
    """One set of axes; `legend` is a matplotlib location such as "upper right"."""

    lines: list[Line] = field(default_factory=list)
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    log_y: bool = False
    legend: str = "upper right"


def save_figure(
    path: Path,
    panels: Sequence[Panel],
    title: str = "",
    panel_size: tuple[int, int] = (560, 440),
    use_matplotlib: bool = True,
) -> str:
    """Draw `panels` side by side into the PNG `path`; return the backend used.

    `panel_size` is (width, height) in pixels. The result is "matplotlib" or "numpy".
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if use_matplotlib and _save_matplotlib(path, panels, title, panel_size):
        return "matplotlib"
    write_png(path, render(panels, title, panel_size))
    return "numpy"


def write_png(path: Path, rgb: np.ndarray) -> None:
    """Write an (h, w, 3) uint8 image as a PNG using only zlib."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + np.ascontiguousarray(rgb[row]).tobytes() for row in range(h))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(png)


# ---- matplotlib (optional) -------------------------------------------------------------------


def _save_matplotlib(
    path: Path, panels: Sequence[Panel], title: str, panel_size: tuple[int, int]
) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    w, h = panel_size
    fig, axes = plt.subplots(
        1, len(panels), figsize=(w * len(panels) / 100, h / 100), squeeze=False
    )
    for ax, panel in zip(axes[0], panels):
        for line in panel.lines:
            if line.marker:
                style = {"ls": "none", "marker": line.marker, "ms": 4 * line.width}
            else:
                style = {"ls": "--" if line.dashed else "-", "lw": 0.75 * line.width}
            color = tuple(c / 255 for c in line.color)
            ax.plot(line.x, line.y, color=color, label=line.label or None, **style)
        if panel.log_y:
            ax.set_yscale("log")
        ax.set(title=panel.title, xlabel=panel.xlabel, ylabel=panel.ylabel)
        ax.grid(alpha=0.3)
        if any(line.label for line in panel.lines):
            ax.legend(loc=panel.legend, fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


# ---- numpy rasteriser ------------------------------------------------------------------------

# 5×7 glyphs, rows top to bottom; g, j, p, q and y add two rows below for descenders.
_FONT = {
    " ": "..... ..... ..... ..... ..... ..... .....",
    "0": ".###. #...# #..## #.#.# ##..# #...# .###.",
    "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
    "2": ".###. #...# ....# ...#. ..#.. .#... #####",
    "3": "##### ...#. ..#.. ...#. ....# #...# .###.",
    "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.",
    "5": "##### #.... ####. ....# ....# #...# .###.",
    "6": "..##. .#... #.... ####. #...# #...# .###.",
    "7": "##### ....# ...#. ..#.. .#... .#... .#...",
    "8": ".###. #...# #...# .###. #...# #...# .###.",
    "9": ".###. #...# #...# .#### ....# ...#. .##..",
    "A": ".###. #...# #...# ##### #...# #...# #...#",
    "B": "####. #...# #...# ####. #...# #...# ####.",
    "C": ".###. #...# #.... #.... #.... #...# .###.",
    "D": "###.. #..#. #...# #...# #...# #..#. ###..",
    "E": "##### #.... #.... ####. #.... #.... #####",
    "F": "##### #.... #.... ####. #.... #.... #....",
    "G": ".###. #...# #.... #.### #...# #...# .####",
    "H": "#...# #...# #...# ##### #...# #...# #...#",
    "I": ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "J": "..### ...#. ...#. ...#. ...#. #..#. .##..",
    "K": "#...# #..#. #.#.. ##... #.#.. #..#. #...#",
    "L": "#.... #.... #.... #.... #.... #.... #####",
    "M": "#...# ##.## #.#.# #.#.# #...# #...# #...#",
    "N": "#...# #...# ##..# #.#.# #..## #...# #...#",
    "O": ".###. #...# #...# #...# #...# #...# .###.",
    "P": "####. #...# #...# ####. #.... #.... #....",
    "Q": ".###. #...# #...# #...# #.#.# #..#. .##.#",
    "R": "####. #...# #...# ####. #.#.. #..#. #...#",
    "S": ".#### #.... #.... .###. ....# ....# ####.",
    "T": "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "U": "#...# #...# #...# #...# #...# #...# .###.",
    "V": "#...# #...# #...# #...# #...# .#.#. ..#..",
    "W": "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.",
    "X": "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
    "Y": "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..",
    "Z": "##### ....# ...#. ..#.. .#... #.... #####",
    "a": "..... ..... .###. ....# .#### #...# .####",
    "b": "#.... #.... #.##. ##..# #...# #...# ####.",
    "c": "..... ..... .###. #.... #.... #...# .###.",
    "d": "....# ....# .##.# #..## #...# #...# .####",
    "e": "..... ..... .###. #...# ##### #.... .###.",
    "f": "..##. .#..# .#... ###.. .#... .#... .#...",
    "g": "..... ..... .#### #...# #...# #...# .#### ....# .###.",
    "h": "#.... #.... #.##. ##..# #...# #...# #...#",
    "i": "..#.. ..... .##.. ..#.. ..#.. ..#.. .###.",
    "j": "...#. ..... ..##. ...#. ...#. ...#. ...#. #..#. .##..",
    "k": "#.... #.... #..#. #.#.. ##... #.#.. #..#.",
    "l": ".##.. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "m": "..... ..... ##.#. #.#.# #.#.# #...# #...#",
    "n": "..... ..... #.##. ##..# #...# #...# #...#",
    "o": "..... ..... .###. #...# #...# #...# .###.",
    "p": "..... ..... ####. #...# #...# #...# ####. #.... #....",
    "q": "..... ..... .#### #...# #...# #...# .#### ....# ....#",
    "r": "..... ..... #.##. ##..# #.... #.... #....",
    "s": "..... ..... .###. #.... .###. ....# ####.",
    "t": ".#... .#... ###.. .#... .#... .#..# ..##.",
    "u": "..... ..... #...# #...# #...# #..## .##.#",
    "v": "..... ..... #...# #...# #...# .#.#. ..#..",
    "w": "..... ..... #...# #...# #.#.# #.#.# .#.#.",
    "x": "..... ..... #...# .#.#. ..#.. .#.#. #...#",
    "y": "..... ..... #...# #...# #...# #...# .#### ....# .###.",
    "z": "..... ..... ##### ...#. ..#.. .#... #####",
    ".": "..... ..... ..... ..... ..... .##.. .##..",
    ",": "..... ..... ..... ..... .##.. ..#.. .#...",
    "-": "..... ..... ..... ##### ..... ..... .....",
    "+": "..... ..#.. ..#.. ##### ..#.. ..#.. .....",
    ":": "..... .##.. .##.. ..... .##.. .##.. .....",
    "(": "...#. ..#.. .#... .#... .#... ..#.. ...#.",
    ")": ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",
    "[": ".###. .#... .#... .#... .#... .#... .###.",
    "]": ".###. ...#. ...#. ...#. ...#. ...#. .###.",
    "/": "..... ....# ...#. ..#.. .#... #.... .....",
    "=": "..... ..... ##### ..... ##### ..... .....",
    "^": "..#.. .#.#. #...# ..... ..... ..... .....",
    "'": "..#.. ..#.. .#... ..... ..... ..... .....",
    "%": "##... ##..# ...#. ..#.. .#... #..## ...##",
    "×": "..... #...# .#.#. ..#.. .#.#. #...# .....",
    "_": "..... ..... ..... ..... ..... ..... #####",
    "?": ".###. #...# ....# ...#. ..#.. ..... ..#..",
}
_GLYPHS = {
    ch: np.array([[c == "#" for c in row] for row in (rows + " ....." * 2).split()[:9]], dtype=bool)
    for ch, rows in _FONT.items()
}
_MARGIN = {"left": 74, "right": 18, "top": 34, "bottom": 52}
_TITLE_HEIGHT = 34


def render(
    panels: Sequence[Panel], title: str = "", panel_size: tuple[int, int] = (560, 440)
) -> np.ndarray:
    """Draw `panels` side by side (and `title` above them) on a white (h, w, 3) uint8 canvas."""
    w, h = panel_size
    top = _TITLE_HEIGHT if title else 0
    img = np.full((top + h, w * len(panels), 3), 255, dtype=np.uint8)
    if title:
        draw_text(img, title, (w * len(panels) // 2, top // 2), BLACK, scale=2, align="center")
    for k, panel in enumerate(panels):
        _draw_panel(img, panel, (k * w, top, w, h))
    return img


def text_mask(text: str, scale: int = 1) -> np.ndarray:
    """The pixels of `text` in the 5×7 font: a bool array (9·scale, 6·len·scale).

    Capitals fill the top 7 rows; the last 2 rows are for descenders.
    """
    cells = [_GLYPHS.get(ch, _GLYPHS["?"]) for ch in text]
    mask = np.zeros((9, 6 * len(text)), dtype=bool)
    for i, glyph in enumerate(cells):
        mask[:, 6 * i : 6 * i + 5] = glyph
    return mask.repeat(scale, axis=0).repeat(scale, axis=1)


def draw_text(
    img: np.ndarray,
    text: str,
    at: tuple[int, int],
    color: RGB,
    scale: int = 1,
    align: str = "left",
    vertical: bool = False,
) -> None:
    """Draw `text` with its left edge, centre or right edge (`align`) at `at`.

    `at` = (x, y) where y is the middle of a capital letter. `vertical` draws the text rotated a
    quarter turn anticlockwise, centred on `at`.
    """
    mask, middle = text_mask(text, scale), 7 * scale // 2
    if vertical:
        mask = np.rot90(mask)
        _paint(img, mask, at[0] - middle, at[1] - mask.shape[0] // 2, color)
        return
    mw = mask.shape[1]
    x0 = {"left": at[0], "center": at[0] - mw // 2, "right": at[0] - mw}[align]
    _paint(img, mask, x0, at[1] - middle, color)


def _paint(img: np.ndarray, mask: np.ndarray, x0: int, y0: int, color: RGB) -> None:
    """Set the pixels of `mask`, placed with its top-left corner at (x0, y0), to `color`."""
    ys, xs = np.nonzero(mask)
    ys, xs = ys + y0, xs + x0
    keep = (ys >= 0) & (ys < img.shape[0]) & (xs >= 0) & (xs < img.shape[1])
    img[ys[keep], xs[keep]] = color


@dataclass
class _Axes:
    """Maps data coordinates into the pixel box (left, top, right, bottom) of a panel."""

    box: tuple[int, int, int, int]
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    log_y: bool

    def px(self, x: np.ndarray) -> np.ndarray:
        left, _, right, _ = self.box
        lo, hi = self.xlim
        return left + (np.asarray(x, dtype=np.float64) - lo) / (hi - lo) * (right - left)

    def py(self, y: np.ndarray) -> np.ndarray:
        _, top, _, bottom = self.box
        y = np.asarray(y, dtype=np.float64)
        if self.log_y:
            with np.errstate(divide="ignore", invalid="ignore"):
                y = np.log10(y)
        lo, hi = self.ylim
        return bottom - (y - lo) / (hi - lo) * (bottom - top)


def _draw_panel(img: np.ndarray, panel: Panel, frame: tuple[int, int, int, int]) -> None:
    x, y, w, h = frame
    box = (
        x + _MARGIN["left"],
        y + _MARGIN["top"],
        x + w - _MARGIN["right"],
        y + h - _MARGIN["bottom"],
    )
    axes = _make_axes(panel, box)
    _draw_grid_and_ticks(img, axes)
    for line in panel.lines:
        _draw_line(img, axes, line)
    left, top, right, bottom = box
    img[top, left : right + 1] = img[bottom, left : right + 1] = BLACK
    img[top : bottom + 1, left] = img[top : bottom + 1, right] = BLACK
    draw_text(img, panel.title, ((left + right) // 2, y + _MARGIN["top"] // 2), BLACK, 2, "center")
    draw_text(img, panel.xlabel, ((left + right) // 2, y + h - 14), BLACK, 2, "center")
    draw_text(img, panel.ylabel, (x + 12, (top + bottom) // 2), BLACK, 2, vertical=True)
    _draw_legend(img, panel, box)


def _make_axes(panel: Panel, box: tuple[int, int, int, int]) -> _Axes:
    xs = np.concatenate([np.ravel(line.x) for line in panel.lines] + [np.zeros(0)])
    ys = np.concatenate([np.ravel(line.y) for line in panel.lines] + [np.zeros(0)])
    if panel.log_y:
        ys = np.log10(ys[ys > 0])
    xs, ys = xs[np.isfinite(xs)], ys[np.isfinite(ys)]
    xlim = _limits(xs, pad=0.0)
    ylim = _limits(ys, pad=0.05)
    if panel.log_y:
        ylim = (math.floor(ylim[0]), math.ceil(ylim[1]))
    return _Axes(box, xlim, ylim, panel.log_y)


def _limits(values: np.ndarray, pad: float) -> tuple[float, float]:
    if values.size == 0:
        return (0.0, 1.0)
    lo, hi = float(values.min()), float(values.max())
    if hi - lo < 1e-12 * max(1.0, abs(hi)):
        lo, hi = lo - 0.5, hi + 0.5
    span = hi - lo
    return (lo - pad * span, hi + pad * span)


def nice_ticks(lo: float, hi: float, target: int = 6) -> tuple[np.ndarray, float]:
    """Round tick values (steps of 1, 2 or 5 × 10^k) inside [lo, hi], and the step."""
    raw = (hi - lo) / max(target, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return np.arange(first, hi + 1e-9 * step, step), step


def _tick_label(value: float, step: float, log: bool) -> str:
    if log:
        return f"1E{round(value)}"
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{value:.{decimals}f}"
    return "0" if float(text) == 0 else text


def _draw_grid_and_ticks(img: np.ndarray, axes: _Axes) -> None:
    left, top, right, bottom = axes.box
    xticks, xstep = nice_ticks(*axes.xlim)
    if axes.log_y:
        lo, hi = axes.ylim
        ystep = float(max(1, math.ceil((hi - lo) / 8)))
        yticks = np.arange(lo, hi + 0.5, ystep)
        ypix = bottom - (yticks - lo) / (hi - lo) * (bottom - top)
    else:
        yticks, ystep = nice_ticks(*axes.ylim)
        ypix = axes.py(yticks)
    grid = (225, 225, 225)
    for value, px in zip(xticks, axes.px(xticks).round().astype(int)):
        img[top:bottom, px] = grid
        img[bottom : bottom + 5, px] = BLACK
        draw_text(img, _tick_label(value, xstep, False), (px, bottom + 14), BLACK, 1, "center")
    for value, py in zip(yticks, ypix.round().astype(int)):
        img[py, left:right] = grid
        img[py, left - 5 : left] = BLACK
        draw_text(img, _tick_label(value, ystep, axes.log_y), (left - 8, py), BLACK, 1, "right")


def _draw_line(img: np.ndarray, axes: _Axes, line: Line) -> None:
    px, py = axes.px(line.x), axes.py(line.y)
    ok = np.isfinite(px) & np.isfinite(py)
    px, py = px[ok], py[ok]
    if px.size == 0:
        return
    if line.marker:
        for x, y in zip(px, py):
            _draw_marker(img, axes, (x, y), line)
        return
    _stroke(img, axes.box, px, py, line.color, line.width, line.dashed)


def _stroke(
    img: np.ndarray,
    box: tuple[int, int, int, int],
    px: np.ndarray,
    py: np.ndarray,
    color: RGB,
    width: int,
    dashed: bool,
) -> None:
    """A polyline through the pixel points (px, py), `width` pixels wide, clipped to `box`."""
    seg = np.hypot(np.diff(px), np.diff(py))
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    s = np.arange(0.0, arc[-1] + 0.5, 0.5) if arc[-1] > 0 else np.zeros(1)
    if dashed:
        s = s[(s % 14.0) < 8.0]  # 8 px dash, 6 px gap
    xs, ys = np.interp(s, arc, px), np.interp(s, arc, py)
    left, top, right, bottom = box
    offsets = range(-((width - 1) // 2), width // 2 + 1)
    for dx in offsets:
        for dy in offsets:
            x = np.floor(xs + dx + 0.5).astype(int)  # not np.round: it rounds halves to even
            y = np.floor(ys + dy + 0.5).astype(int)
            keep = (x >= left) & (x <= right) & (y >= top) & (y <= bottom)
            img[y[keep], x[keep]] = color


def _draw_marker(img: np.ndarray, axes: _Axes, at: tuple[float, float], line: Line) -> None:
    r = 3 * line.width
    x, y = at
    if line.marker == "x":
        for sx in (-1, 1):
            _stroke(
                img,
                axes.box,
                np.array([x - r, x + r]),
                np.array([y - sx * r, y + sx * r]),
                line.color,
                line.width,
                False,
            )
        return
    yy, xx = np.mgrid[-r : r + 1, -r : r + 1]
    _paint(img, xx**2 + yy**2 <= r * r, round(x) - r, round(y) - r, line.color)


def _draw_legend(img: np.ndarray, panel: Panel, box: tuple[int, int, int, int]) -> None:
    entries = [line for line in panel.lines if line.label]
    if not entries:
        return
    row, sample = 16, 28
    width = sample + 14 + 6 * max(len(line.label) for line in entries)
    height = row * len(entries) + 8
    left, top, right, bottom = box
    x0 = left + 8 if "left" in panel.legend else right - 8 - width
    y0 = top + 8 if "upper" in panel.legend else bottom - 8 - height
    img[y0 : y0 + height, x0 : x0 + width] = 255
    img[[y0, y0 + height - 1], x0 : x0 + width] = GRAY
    img[y0 : y0 + height, [x0, x0 + width - 1]] = GRAY
    legend_box = (x0, y0, x0 + width, y0 + height)
    for k, line in enumerate(entries):
        cy = y0 + 4 + row * k + row // 2
        if line.marker:
            axes = _Axes(legend_box, (0, 1), (0, 1), False)
            _draw_marker(img, axes, (x0 + 6 + sample / 2, cy), line)
        else:
            xs = np.array([x0 + 6, x0 + 6 + sample], dtype=float)
            _stroke(
                img,
                legend_box,
                xs,
                np.array([cy, cy], dtype=float),
                line.color,
                line.width,
                line.dashed,
            )
        draw_text(img, line.label, (x0 + sample + 12, cy), BLACK)
