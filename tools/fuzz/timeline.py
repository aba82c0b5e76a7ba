"""Time-indexed fuzz cases: trajectories stored in one array's rows, one launch per time step.

The layout of differentiable-simulation code: `q[s * stride + t + base, i]` is step t of
trajectory s, each launch over `(S, N)` threads reads its step's row and writes the next. The
stride, base, horizon T and column shift are int kernel arguments, so whether one thread reads
an element another thread of the launch writes is a fact of the launch, not of the kernel text:
with `stride >= T` trajectories never meet, with a smaller stride (or T = 1) they may. Variants:
2-D float states, 3-D states whose components are written in a loop, `vec3` states, a second
state array, `+=` writes, a read of the previous step under `if t >= 1`, a shifted column, a
guard on the column. `overlaps` says, by brute force over the concrete launch, whether any thread
reads an element another thread writes: there gradloom must refuse the backward; elsewhere it
must differentiate it, and the gradient must match float64 finite differences (timeline_check.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from .gen import case_rng

Element = tuple[str, int, int, int]  # (array, row, column, component)


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
    #: shifted column), {r2} (the previous step), {o} (the other state) and {w} (a parameter)
    expr: str
    rows: int
    launches: int

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
    expr = _expr(rng, ["{r0}"] + (["{r1}"] if shift else []) + (["{r2}"] if prev else [])
                 + (["{o}"] if second else []) + ["{w}"], depth=rng.randint(1, 3))
    return TimeCase(f"t{seed}_{index}", kind, S, N, T, stride, base, shift,
                    rng.choice((0, 0, 0, 1)) if N > 1 else 0, prev, rng.random() < 0.25,
                    second, expr, rows, launches)


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


def thread_elements(c: TimeCase, t: int, s: int, i: int) -> tuple[set[Element], set[Element]]:
    """(elements read, elements written) by thread (s, i) of the launch at step t."""
    if i >= c.N - c.cut or (c.prev and t < 1):
        return set(), set()  # its store, and the reads in it, do not run
    comps = range(3) if c.kind == "3d" else (0,)
    k = s * c.stride + t + c.base
    arrays = ("q", "u") if c.second else ("q",)
    reads: set[Element] = set()
    writes: set[Element] = set()
    for a in arrays:
        for comp in comps:
            reads.add((a, k, i, comp))
            if c.shift:
                reads.add((a, k, (i + c.shift) % c.N, comp))
            if c.prev:
                reads.add((a, k - 1, i, comp))
            writes.add((a, k + 1, i, comp))
    return reads, writes


def overlaps(c: TimeCase) -> bool:
    """Whether some launch has a thread reading an element another thread of it writes."""
    for t in range(c.launches):
        writer: dict[Element, set[tuple[int, int]]] = {}
        sets = {(s, i): thread_elements(c, t, s, i) for s in range(c.S) for i in range(c.N)}
        for thread, (_, writes) in sets.items():
            for e in writes:
                writer.setdefault(e, set()).add(thread)
        for thread, (reads, _) in sets.items():
            if any(writer.get(e, set()) - {thread} for e in reads):
                return True
    return False


def initial_values(c: TimeCase, seed: int) -> dict[str, np.ndarray]:
    """The arrays' starting values (float64; q and u: rows x N [x 3])."""
    rng = np.random.default_rng(seed)
    shape = (c.rows, c.N) + ((3,) if c.kind != "2d" else ())
    out = {"q": rng.uniform(-1.0, 1.0, shape), "w": rng.uniform(-1.0, 1.0, c.N)}
    if c.second:
        out["u"] = rng.uniform(-1.0, 1.0, shape)
    return out


# -- source -----------------------------------------------------------------------------------


def render(c: TimeCase, lib: str = "gradloom") -> str:
    """The case as a module: kernel `step` and `program(arrays, wp)` running every launch."""
    ann = {"2d": "wp.array2d(dtype=f64)", "3d": "wp.array3d(dtype=f64)",
           "vec": "wp.array2d(dtype=wp.vec3d)"}[c.kind]
    states = ["q", "u"] if c.second else ["q"]
    params = ", ".join(f"{a}: {ann}" for a in states)
    lines = [f"import {lib} as wp", "", "f64 = wp.float64", "", "", "@wp.kernel",
             f"def step({params}, w: wp.array(dtype=f64), t: int, T: int, stride: int, "
             "base: int, shift: int, cut: int):",
             "    s, i = wp.tid()",
             "    k = s * stride + t + base",
             "    j = (i + shift) % w.shape[0]"]
    lines += _body(c, states)
    lines += ["", "", "def program(a, wp_=None):",
              f"    for t in range({c.launches}):",
              f"        wp.launch(step, dim=({c.S}, {c.N}), inputs=[{', '.join(f'a[{x!r}]' for x in states)}, "
              f"a['w'], t, {c.T}, {c.stride}, {c.base}, {c.shift}, {c.cut}])",
              f"    return [{', '.join(f'a[{x!r}]' for x in states)}]", ""]
    return "\n".join(lines)


def _body(c: TimeCase, states: list[str]) -> list[str]:
    """The update of every state, one component at a time (a loop over components in 3-D)."""
    op = "+=" if c.accumulate else "="
    out = ["    if i < w.shape[0] - cut:"] if c.cut else []
    pad = "    " if c.cut else ""
    if c.kind == "3d":
        out.append(f"{pad}    for c in range(3):")
        pad += "    "
    for n, a in enumerate(states):
        other = states[(n + 1) % len(states)]
        if c.kind == "vec":
            comps = [_component(c, a, other, f"[{x}]") for x in range(3)]
            vals = ", ".join(comps)
            out += _prev_guard(c, pad + "    ", f"{a}[k + 1, i] {op} wp.vec3d({vals})")
        else:
            idx = ", c" if c.kind == "3d" else ""
            out += _prev_guard(c, pad + "    ",
                               f"{a}[k + 1, i{idx}] {op} {_component(c, a, other, idx)}")
    return out


def _component(c: TimeCase, a: str, other: str, idx: str) -> str:
    """The expression for one component: leaves replaced by the reads they stand for."""
    if idx.startswith("["):  # a vec3 component of a read
        at = {"r0": f"{a}[k, i]{idx}", "r1": f"{a}[k, j]{idx}", "r2": f"{a}[k - 1, i]{idx}",
              "o": f"{other}[k, i]{idx}"}
    else:
        at = {"r0": f"{a}[k, i{idx}]", "r1": f"{a}[k, j{idx}]", "r2": f"{a}[k - 1, i{idx}]",
              "o": f"{other}[k, i{idx}]"}
    return c.expr.format(w="w[i]", **at)


def _prev_guard(c: TimeCase, pad: str, stmt: str) -> list[str]:
    """A store reading the previous step runs only from the second launch on."""
    if c.prev:
        return [f"{pad}if t >= 1:", f"{pad}    {stmt}"]
    return [f"{pad}{stmt}"]
