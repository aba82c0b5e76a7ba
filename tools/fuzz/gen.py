"""Random cases: typed expression trees and statements with defined Warp semantics.

Everything drawn from one ``random.Random`` seeded by (seed, index), so a case is reproducible
from those two numbers alone. What is kept out on purpose (undefined or not differentiable in
Warp): reading a variable defined on one path only, using the value a float atomic returns,
reading an array in a kernel that also accumulates into it, negative or out-of-range indices,
logs/roots/divisions near a pole (see ops.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import numpy as np

from .model import (
    ArrayDef,
    Assign,
    Case,
    Clone,
    Copy,
    Expr,
    FuncDef,
    KernelDef,
    Launch,
    walk_stmts,
)
from .ops import SHAPES
from .stmts import Body
from .validate import check_case


@dataclass(frozen=True)
class Size:
    """How big cases get."""

    stmts: tuple[int, int]  # statements per kernel body (min, max)
    depth: int  # block nesting
    expr_depth: int
    funcs: int  # at most
    kernels: int  # at most
    launches: int  # at most (at least one per kernel)
    arrays: int  # float arrays at most


SMALL = Size(stmts=(2, 6), depth=2, expr_depth=2, funcs=1, kernels=2, launches=2, arrays=3)
MEDIUM = Size(stmts=(3, 10), depth=3, expr_depth=3, funcs=2, kernels=2, launches=3, arrays=4)
LARGE = Size(stmts=(6, 18), depth=3, expr_depth=3, funcs=3, kernels=3, launches=4, arrays=5)
SIZES = {"small": SMALL, "medium": MEDIUM, "large": LARGE}


class Names:
    """Fresh names, unique within a case."""

    def __init__(self) -> None:
        self.n = 0

    def new(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"


def case_rng(seed: int, index: int) -> random.Random:
    return random.Random(seed * 1_000_003 + index)


def _array_values(rng: np.random.Generator, ty: str, nt: int, dtype: str) -> np.ndarray:
    if ty == "I":
        return rng.integers(0, nt, size=nt).astype(np.int64)
    vals = rng.uniform(-1.2, 1.2, size=(nt, *SHAPES[ty]))
    if dtype == "float32":
        vals = vals.astype(np.float32).astype(np.float64)
    return vals


def _arrays(rng: random.Random, size: Size, dtype: str, nt: int) -> list[ArrayDef]:
    nrng = np.random.default_rng(rng.getrandbits(32))
    tys = ["F"] + [rng.choices("FVMQ", weights=(4, 3, 1.2, 1.2))[0]
                   for _ in range(rng.randint(1, size.arrays - 1))]
    if rng.random() < 0.3:
        tys.append("I")
    prefix = {"F": "x", "V": "xv", "M": "xm", "Q": "xq", "I": "sl"}
    out = []
    for i, ty in enumerate(tys):
        out.append(ArrayDef(f"{prefix[ty]}{i}", ty, _array_values(nrng, ty, nt, dtype)))
    return out


def _roles(rng: random.Random, arrays: list, avoid: frozenset[str]) -> dict[str, str]:
    """Per kernel: in (read), inout (read, plain stores), out (plain stores), acc (atomics);
    int slot arrays: slots (read as indices and changed by int atomics), or with avoid C either
    slots_read or slots_atomic (known bug C: a read of an element an int atomic changed)."""
    while True:
        roles = {}
        for a in arrays:
            if a.ty == "I":
                roles[a.name] = rng.choice(["slots_read", "slots_atomic"]) if "C" in avoid \
                    else "slots"
                continue
            opts = ["in", "inout", "out"] + (["acc"] if a.ty in "FV" else [])
            w = [4, 2.5, 2, 1.5][: len(opts)]
            roles[a.name] = rng.choices(opts, weights=w)[0]
        vals = set(roles.values())
        if vals & {"in", "inout"} and vals & {"inout", "out", "acc"}:
            return roles


def _funcs(rng: random.Random, size: Size, names: Names, avoid: frozenset[str]
           ) -> list[FuncDef]:
    funcs: list[FuncDef] = []
    for _ in range(rng.randint(0, size.funcs)):
        ntake = rng.randint(1, 3)
        params = [(names.new("p"), rng.choices("FVMQ", weights=(5, 3, 1, 1))[0])
                  for _ in range(ntake)]
        if rng.random() < 0.35:
            params.append((names.new("n"), "I"))
        ret = rng.choices("FV", weights=(4, 1))[0]
        body = Body(rng, names, size, funcs=funcs, arrays={}, roles={}, in_kernel=False, ret=ret,
                    avoid=avoid)
        for pname, pty in params:
            body.declare(pname, pty, readonly=pty == "I")
        stmts = body.block(rng.randint(1, max(1, size.stmts[1] // 2)), size.depth)
        result = body.sink(ret)
        if "A" in avoid:
            stmts, result = no_plain_copies(stmts), _fresh_call_args(result)
        funcs.append(FuncDef(names.new("fn"), params, ret, stmts, result))
    return funcs


def _kernel(rng: random.Random, size: Size, names: Names, case: Case, avoid: frozenset[str]
            ) -> KernelDef:
    roles = _roles(rng, case.arrays, avoid)
    arrays = {a.name: a.ty for a in case.arrays}
    body = Body(rng, names, size, funcs=case.funcs, arrays=arrays, roles=roles, in_kernel=True,
                ret=None, runtime=list(case.ints), avoid=avoid)
    stmts = body.prologue()
    stmts += body.block(rng.randint(*size.stmts), size.depth)
    stmts += body.epilogue()
    if "A" in avoid:
        stmts = no_plain_copies(stmts)
    return KernelDef(names.new("kern"), stmts)


def no_plain_copies(body: list) -> list:
    """Known bug A: ``s = t`` / ``s = v[1]`` become ``s = t * 1.0`` (a fresh value), and so do
    plain variables passed to a func (a parameter starts as a copy of the argument) or to a vec /
    quat constructor (``vec3(a, b, p[2])`` holds a copy of ``p[2]``)."""
    for s in walk_stmts(body):
        if isinstance(s, Assign) and s.expr.kind in ("var", "comp") and s.ty != "I":
            s.expr = _fresh(s.expr)
        for f in ("expr", "cond", "idx", "bound", "stop"):
            if isinstance(getattr(s, f, None), Expr):
                setattr(s, f, _fresh_call_args(getattr(s, f)))
        for f in ("args", "index"):
            if isinstance(getattr(s, f, None), tuple):
                setattr(s, f, tuple(_fresh_call_args(e) if isinstance(e, Expr) else e
                                    for e in getattr(s, f)))
    return body


def _fresh(e: Expr) -> Expr:
    one = Expr("const", "F", data=1.0)
    return Expr("op", e.ty, (e, one), "mul" if e.ty == "F" else "scale")


COPYING_OPS = ("vec", "quat")  # constructors: a plain argument is a copy of the value


def _fresh_call_args(e: Expr) -> Expr:
    """Plain variables or components passed to a func or a vec/quat constructor -> ``x * 1.0``."""
    args = tuple(_fresh_call_args(a) for a in e.args)
    if e.kind == "call" or (e.kind == "op" and e.data in COPYING_OPS):
        args = tuple(_fresh(a) if a.kind in ("var", "comp") and a.ty != "I" else a
                     for a in args)
    return replace(e, args=args)



def _steps(rng: random.Random, size: Size, names: Names, case: Case,
           avoid: frozenset[str]) -> list:
    order = [k.name for k in case.kernels]
    extra = rng.randint(0, max(0, size.launches - len(order)))
    order += [rng.choice(order) for _ in range(extra)]
    steps: list = []
    live = {a.name: a.ty for a in case.arrays if a.ty != "I"}
    for i, kname in enumerate(order):
        if i > 0 and rng.random() < 0.35:
            steps.append(_copy_or_clone(rng, names, live))
        steps.append(Launch(kname, _bind(rng, case, live, avoid)))
    return steps


def _bind(rng: random.Random, case: Case, live: dict[str, str], avoid: frozenset[str]
          ) -> dict[str, str]:
    """Kernel parameter -> program array: the array itself, or a clone of the same type; rarely
    the same array for two parameters (aliasing, which lets a thread read what another writes:
    known bug B's territory, so not with avoid B)."""
    bind = {a.name: a.name for a in case.arrays}
    used: set[str] = set()
    for param in bind:
        ty = case.array(param).ty
        if ty == "I":
            continue
        clones = [n for n, t in live.items() if t == ty and n.startswith("c") and n not in used]
        same = [n for n, t in live.items() if t == ty and n != param]
        if "B" not in avoid and same and rng.random() < 0.08:
            bind[param] = rng.choice(same)
        elif clones and rng.random() < 0.5:
            bind[param] = rng.choice(clones)
        used.add(bind[param])
    return bind


def _copy_or_clone(rng: random.Random, names: Names, live: dict[str, str]) -> object:
    src = rng.choice(sorted(live))
    same = [n for n, t in live.items() if t == live[src] and n != src]
    if same and rng.random() < 0.4:
        return Copy(rng.choice(same), src)
    dst = names.new("c")
    live[dst] = live[src]
    return Clone(dst, src)


KNOWN_BUGS = "ABCDE"


def generate(seed: int, index: int, size: Size = MEDIUM, dtype: str | None = None,
             avoid: str = "") -> Case:
    """The case number ``index`` of run ``seed``; ``avoid``: letters of known bugs to leave out
    (A copy-then-loop, B cross-thread read of an overwritten element, C int atomics in
    loops, D float atomics in loops, E array stores in a constant loop nested in a loop or if).
    """
    flags = frozenset(avoid)
    rng = case_rng(seed, index)
    draw = rng.random()  # drawn even when dtype is given, so the rest of the case is the same
    dtype = dtype or ("float32" if draw < 0.25 else "float64")
    nt = rng.choice((3, 4, 4, 5))
    names = Names()
    arrays = _arrays(rng, size, dtype, nt)
    ints = {"nt": nt, "nb0": rng.randint(0, 3), "nb1": rng.randint(1, 4)}
    origin = f"{seed}:{index}" + (f" avoid={''.join(sorted(flags))}" if flags else "")
    tag = f"c{seed}_{index}" + (f"_{''.join(sorted(flags))}" if flags else "")
    case = Case(tag, dtype, nt, arrays, ints, [], [], [], origin=origin)
    case.funcs = _funcs(rng, size, names, flags)
    for _ in range(rng.randint(1, size.kernels)):
        case.kernels.append(_kernel(rng, size, names, case, flags))
    case.steps = _steps(rng, size, names, case, flags)
    check_case(case)  # a generator bug shows here, not as a gradloom failure
    return case

