"""Run one case on gradloom: forward values, Tape gradients, and the float64 finite-difference check.

The scalar checked is ``L = Σ w · (every float array at the end of the program)`` with fixed
random weights ``w``; its gradient with respect to the initial values of every float array comes
from ``tape.backward(grads={array: w})``. The reference is a central difference of ``L`` along a
few random directions, computed with the *traced* float64 rendering of the same case (a float32
case is checked against its float64 twin). A direction is rejected, not compared, when any branch
condition, kink or int cast recorded in the trace differs between the base point and a step, or
when the differences at two step sizes disagree.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
import zlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from .model import Case
from .ops import SHAPES, TYPE_NAMES
from .render import TRACE_SIZE


@dataclass(frozen=True)
class Tolerance:
    fd_rtol: float  # two step sizes agree
    rtol: float  # reverse vs FD, relative to the scale of the terms
    fwd_rtol: float  # forward values vs warp-lang / vs the float64 twin


TOL = {"float64": Tolerance(1e-6, 1e-5, 1e-8), "float32": Tolerance(1e-6, 3e-3, 1e-3)}
STEPS = (1e-5, 2.5e-6)
DIRECTIONS = 2
MAX_VALUE = 1e5


def load_module(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def wp_dtype(wp: Any, ty: str, dtype: str) -> Any:
    if ty == "I":
        return wp.int32
    return eval(TYPE_NAMES[dtype][ty], {"wp": wp})


def float_names(case: Case) -> list[str]:
    """Outputs: every float array the program ends with (initial arrays, then clones)."""
    return [n for n, t in case.program_arrays().items() if t != "I"]


def wrt_names(case: Case) -> list[str]:
    return [a.name for a in case.arrays if a.ty != "I"]


def build(wp: Any, case: Case, values: dict[str, np.ndarray], dtype: str,
          requires_grad: bool) -> dict[str, Any]:
    out = {}
    for a in case.arrays:
        v = values.get(a.name, a.values)
        npt = np.int32 if a.ty == "I" else (np.float64 if dtype == "float64" else np.float32)
        out[a.name] = wp.array(np.array(v, dtype=npt), dtype=wp_dtype(wp, a.ty, dtype),
                               device="cpu", requires_grad=requires_grad and a.ty != "I")
    return out


def run_program(wp: Any, program: Any, case: Case, values: dict[str, np.ndarray], dtype: str,
                traced: bool) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Forward run: the float arrays at the end (as float64) and the trace counts."""
    arrays = build(wp, case, values, dtype, requires_grad=False)
    if traced:
        tr = wp.zeros(TRACE_SIZE, dtype=wp.int32, device="cpu")
        program(arrays, tr)
    else:
        tr = None
        program(arrays)
    outs = {n: np.array(arrays[n].numpy(), dtype=np.float64) for n in float_names(case)}
    return outs, (tr.numpy().copy() if tr is not None else None)


def weights_for(case: Case) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(zlib.crc32((case.origin or case.tag).encode()) + 7)
    kinds = case.program_arrays()
    return {n: rng.uniform(0.5, 1.5, (case.nt, *SHAPES[kinds[n]])) * rng.choice([-1.0, 1.0])
            for n in float_names(case)}


def tape_grads(wp: Any, program: Any, case: Case, weights: dict[str, np.ndarray],
               values: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    arrays = build(wp, case, values or {}, case.dtype, requires_grad=True)
    initial = dict(arrays)
    tape = wp.Tape()
    with tape:
        program(arrays)
    seeds = {arrays[n]: wp.array(weights[n].astype(arrays[n].numpy().dtype),
                                 dtype=arrays[n].dtype, device="cpu") for n in weights}
    tape.backward(grads=seeds)
    out = {}
    for n in wrt_names(case):
        g = initial[n].grad
        out[n] = np.zeros_like(weights[n]) if g is None else np.array(g.numpy(), np.float64)
    return out


def objective(outs: dict[str, np.ndarray], weights: dict[str, np.ndarray]) -> float:
    return float(sum(np.sum(weights[n] * outs[n]) for n in weights))


def error_info(stage: str, exc: BaseException) -> dict[str, Any]:
    tb = traceback.extract_tb(exc.__traceback__)
    where = [f"{fr.filename}:{fr.lineno} {fr.name}" for fr in tb[-6:]]
    mod = type(exc).__module__
    return {"status": "error", "stage": stage, "exc": type(exc).__name__,
            "gradloom_error": mod.startswith("gradloom") and _is_gradloom_error(exc),
            "message": str(exc)[:4000], "where": where}


def _is_gradloom_error(exc: BaseException) -> bool:
    try:
        from gradloom.errors import GradloomError
    except ImportError:
        return False
    return isinstance(exc, GradloomError)
