"""Time-indexed fuzz cases: trajectories stored in one array's rows, one launch per time step.

The layout of differentiable-simulation code: `q[s * stride + t + base, i]` is step t of
trajectory s, each launch over `(S, N)` threads reads its step's row and writes the next. The
stride, base, horizon T, column shift and column stride/offset are int kernel arguments, so
whether one thread reads an element another thread of the launch writes is a fact of the launch,
not of the kernel text: with `stride >= T` trajectories never meet, with a smaller stride (or
T = 1) they may. Variants: 2-D float states, 3-D states whose components are written in a loop,
`vec3` states, time on the second axis (`q[i, k]`), a column map `i * cs + co`, a second state
array, `+=` writes, reads of the previous one or two steps under `if t >= 1` / `if t >= 2`, a
shifted column, a guard on the column, a control parameter per step (`ctrl[s * T + t]`).
`overlaps` says, by brute force over the concrete launch, whether any thread reads an element
another thread writes: there gradloom must refuse the backward; elsewhere it must differentiate
it, and the gradient must match float64 finite differences (timeline_check.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from .gen import case_rng

Element = tuple[str, int, int, int]  # (array, first index, second index, component)
#: arrays every thread only reads (their gradients are checked too)
PARAMS = ("w", "ctrl")


@dataclass(frozen=True)
class TimeCase:
    """One time-indexed case: its kernel source and the launches' concrete arguments."""

    tag: str
    kind: str  # "2d", "3d" (component loop), "vec" (vec3 states)
    S: int
    N: int
    T: int
    stride: int
    base: int
    shift: int  # the column a second read takes, relative (0: none)
    cut: int  # threads with column >= N - cut do not store (0: all store)
    prev: bool  # also reads the previous step's row, under `if t >= 1`
    accumulate: bool  # `+=` instead of `=`
    second: bool  # a second state array u, read and written like q
    #: the update of one scalar component, a format string over {r0} (this step), {r1} (the
    #: shifted column), {r2} (the previous step), {r3} (two steps back), {o} (the other
    #: state), {w} (a parameter per column) and {p} (a control per trajectory step)
    expr: str
    rows: int
    launches: int
    layout: str = "rows"  # "rows": q[time, column]; "cols": q[column, time]
    colmap: bool = False  # columns addressed as `i * cs + co` (runtime stride and offset)
    cstride: int = 1
    coff: int = 0
    prev2: bool = False  # also reads two steps back, under `if t >= 2` (with prev)
    control: bool = False  # reads ctrl[s * T + t]

    @property
    def back(self) -> int:
        """How many steps back the update reads (its store runs from launch `back` on)."""
        return 2 if self.prev2 else 1 if self.prev else 0

    @property
    def cols(self) -> int:
        return (self.N - 1) * self.cstride + self.coff + 1

    @property
    def states(self) -> list[str]:
        return ["q", "u"] if self.second else ["q"]

    def source(self, lib: str = "gradloom") -> str:
        return render(self, lib)


def generate(seed: int, index: int) -> TimeCase:
    """The time-indexed case number `index` of run `seed` (reproducible from the two)."""
    rng = case_rng(seed, index)
    kind = rng.choices(("2d", "3d", "vec"), weights=(5, 3, 2))[0]
    S, N, T = rng.randint(1, 4), rng.randint(1, 3), rng.choice((1, 2, 3, 4))
    stride = rng.choice((T, T, T, T + 1, T + 2, max(T - 1, 0), 1, 2))
    base = rng.choice((0, 0, 1))
    launches = max(T - 1, 1)
    rows = max(0, (S - 1) * stride) + launches + base + 1
    shift = rng.choice((0, 0, 1)) if N > 1 else 0
    prev = rng.random() < 0.3
    second = rng.random() < 0.25
    layout = rng.choice(("rows", "rows", "cols"))
    colmap = rng.random() < 0.3
    cstride, coff = (rng.choice((1, 2, 3)), rng.choice((0, 1, 2))) if colmap else (1, 0)
    prev2 = prev and rng.random() < 0.4
    control = rng.random() < 0.3
    leaves = ["{r0}"] + (["{r1}"] if shift else []) + (["{r2}"] if prev else []) \
        + (["{r3}"] if prev2 else []) + (["{o}"] if second else []) + ["{w}"] \
        + (["{p}"] if control else [])
    expr = _expr(rng, leaves, depth=rng.randint(1, 3))
    return TimeCase(f"t{seed}_{index}", kind, S, N, T, stride, base, shift,
                    rng.choice((0, 0, 0, 1)) if N > 1 else 0, prev, rng.random() < 0.25,
                    second, expr, rows, launches, layout, colmap, cstride, coff, prev2,
                    control)


def _expr(rng: random.Random, leaves: list[str], depth: int) -> str:
    """A smooth expression in which every leaf takes part (no kinks: finite differences hold);
    wrapped in tanh, so values stay bounded over many steps."""
    body = _tree(rng, leaves, depth)
    for leaf in leaves:
        if leaf not in body:
            body = f"({body}) + {_unary(rng, leaf)}"
    return f"wp.tanh({body})"


def _tree(rng: random.Random, leaves: list[str], depth: int) -> str:
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(leaves)
    op = rng.choice(("sin", "cos", "mul", "add", "scale", "tanh"))
    if op in ("mul", "add"):
        a, b = _tree(rng, leaves, depth - 1), _tree(rng, leaves, depth - 1)
        return f"({a} {'*' if op == 'mul' else '+'} {b})"
    if op == "scale":
        return f"(f64({rng.choice((0.5, 1.5, -0.75, 2.0))}) * {_tree(rng, leaves, depth - 1)})"
    return f"wp.{op}({_tree(rng, leaves, depth - 1)})"


def _unary(rng: random.Random, leaf: str) -> str:
    return f"wp.{rng.choice(('sin', 'cos', 'tanh'))}({leaf})"


# -- the oracle -------------------------------------------------------------------------------


def element(c: TimeCase, a: str, row: int, col: int, comp: int) -> Element:
    """The element at time slot `row`, column `col` (physical: the layout decides the order)."""
    return (a, row, col, comp) if c.layout == "rows" else (a, col, row, comp)


def thread_elements(c: TimeCase, t: int, s: int, i: int) -> tuple[set[Element], set[Element]]:
    """(elements of the states read, elements written) by thread (s, i) of the launch at t."""
    if i >= c.N - c.cut or t < c.back:
        return set(), set()  # its store, and the reads in it, do not run
    comps = range(3) if c.kind == "3d" else (0,)
    k = s * c.stride + t + c.base
    col, shifted = i * c.cstride + c.coff, ((i + c.shift) % c.N) * c.cstride + c.coff
    reads: set[Element] = set()
    writes: set[Element] = set()
    for a in c.states:
        for comp in comps:
            reads.add(element(c, a, k, col, comp))
            if c.shift:
                reads.add(element(c, a, k, shifted, comp))
            for back in range(1, c.back + 1):
                reads.add(element(c, a, k - back, col, comp))
            writes.add(element(c, a, k + 1, col, comp))
    return reads, writes


def meets(sets: dict[tuple[int, int], tuple[set[Element], set[Element]]]) -> bool:
    """Whether, in one launch's (reads, writes) per thread, a thread reads what another writes."""
    writer: dict[Element, set[tuple[int, int]]] = {}
    for thread, (_, writes) in sets.items():
        for e in writes:
            writer.setdefault(e, set()).add(thread)
    return any(writer.get(e, set()) - {thread} for thread, (reads, _) in sets.items()
               for e in reads)


def overlaps(c: TimeCase) -> bool:
    """Whether some launch has a thread reading an element another thread of it writes."""
    return any(meets({(s, i): thread_elements(c, t, s, i) for s in range(c.S)
                      for i in range(c.N)}) for t in range(c.launches))


def state_shape(c: TimeCase) -> tuple[int, ...]:
    axes = (c.rows, c.cols) if c.layout == "rows" else (c.cols, c.rows)
    return axes + ((3,) if c.kind != "2d" else ())


def initial_values(c: TimeCase, seed: int) -> dict[str, np.ndarray]:
    """The arrays' starting values (float64): the states, w (N) and ctrl (S * T)."""
    rng = np.random.default_rng(seed)
    out = {"q": rng.uniform(-1.0, 1.0, state_shape(c)), "w": rng.uniform(-1.0, 1.0, c.N)}
    if c.second:
        out["u"] = rng.uniform(-1.0, 1.0, state_shape(c))
    if c.control:
        out["ctrl"] = rng.uniform(-1.0, 1.0, c.S * c.T)
    return out


# -- source -----------------------------------------------------------------------------------


def render(c: TimeCase, lib: str = "gradloom") -> str:
    """The case as a module: kernel `step` and `program(arrays)` running every launch."""
    header = [f"import {lib} as wp", "", "f64 = wp.float64", "", ""]
    return "\n".join([*header, *kernel_lines(c)]).rstrip() + "\n"


def kernel_lines(c: TimeCase, suffix: str = "") -> list[str]:
    """Kernel `step<suffix>` and `program<suffix>(arrays)`, without the module's header."""
    ann = {"2d": "wp.array2d(dtype=f64)", "3d": "wp.array3d(dtype=f64)",
           "vec": "wp.array2d(dtype=wp.vec3d)"}[c.kind]
    arrays = c.states + ["w"] + (["ctrl"] if c.control else [])
    params = ", ".join(f"{a}: {ann}" for a in c.states) + ", w: wp.array(dtype=f64)" \
        + (", ctrl: wp.array(dtype=f64)" if c.control else "")
    lines = ["@wp.kernel",
             f"def step{suffix}({params}, t: int, T: int, stride: int, base: int, "
             "shift: int, cut: int, cs: int, co: int):",
             "    s, i = wp.tid()",
             "    k = s * stride + t + base",
             "    j = (i + shift) % w.shape[0]"]
    if c.colmap:  # why: a runtime stride and offset on the column axis too
        lines += ["    ci = i * cs + co", "    cj = j * cs + co"]
    inputs = ", ".join(f"a[{x!r}]" for x in arrays)
    return lines + _body(c) + [
        "", "", f"def program{suffix}(a):",
        f"    for t in range({c.launches}):",
        f"        wp.launch(step{suffix}, dim=({c.S}, {c.N}), inputs=[{inputs}, t, {c.T}, "
        f"{c.stride}, {c.base}, {c.shift}, {c.cut}, {c.cstride}, {c.coff}])",
        f"    return [{', '.join(f'a[{x!r}]' for x in c.states)}]", "", ""]


def _body(c: TimeCase) -> list[str]:
    """The update of every state, one component at a time (a loop over components in 3-D)."""
    op = "+=" if c.accumulate else "="
    out = ["    if i < w.shape[0] - cut:"] if c.cut else []
    pad = "    " if c.cut else ""
    if c.kind == "3d":
        out.append(f"{pad}    for c in range(3):")
        pad += "    "
    col = "ci" if c.colmap else "i"
    for n, a in enumerate(c.states):
        other = c.states[(n + 1) % len(c.states)]
        if c.kind == "vec":
            vals = ", ".join(_component(c, a, other, "", f"[{x}]") for x in range(3))
            stmt = f"{a}[{_ix(c, 'k + 1', col, '')}] {op} wp.vec3d({vals})"
        else:
            comp = ", c" if c.kind == "3d" else ""
            stmt = f"{a}[{_ix(c, 'k + 1', col, comp)}] {op} {_component(c, a, other, comp, '')}"
        out += _prev_guard(c, pad + "    ", stmt)
    return out


def _ix(c: TimeCase, row: str, col: str, comp: str) -> str:
    """The index text of time slot `row`, column `col` in the case's layout."""
    return f"{row}, {col}{comp}" if c.layout == "rows" else f"{col}, {row}{comp}"


def _component(c: TimeCase, a: str, other: str, comp: str, vec: str) -> str:
    """The expression for one component: leaves replaced by the reads they stand for (`comp`
    indexes a 3-D array's last axis, `vec` a vec3 element's component)."""
    col, shifted = ("ci", "cj") if c.colmap else ("i", "j")
    at = {"r0": ("k", col, a), "r1": ("k", shifted, a), "r2": ("k - 1", col, a),
          "r3": ("k - 2", col, a), "o": ("k", col, other)}
    reads = {leaf: f"{arr}[{_ix(c, row, cc, comp)}]{vec}" for leaf, (row, cc, arr) in at.items()}
    return c.expr.format(w="w[i]", p="ctrl[s * T + t]", **reads)


def _prev_guard(c: TimeCase, pad: str, stmt: str) -> list[str]:
    """A store reading earlier steps runs only from launch `back` on (their rows exist)."""
    if c.back:
        return [f"{pad}if t >= {c.back}:", f"{pad}    {stmt}"]
    return [f"{pad}{stmt}"]
