"""The gradloom side of one case: forward, traced forward, Tape gradients, FD comparison.

``check(wp, case, modules)`` returns a JSON-able dict: ``status`` is ``ok``, ``rejected`` (the
sample sits on a kink or a branch, or values leave the safe range: nothing was compared),
``grad`` (Tape gradient != finite differences) or ``error`` (an exception; ``stage`` says where).
It also carries the forward values, for the comparison with warp-lang made by the driver.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .classify import forward_mismatch
from .evaluate import (
    DIRECTIONS,
    MAX_VALUE,
    STEPS,
    TOL,
    error_info,
    objective,
    run_program,
    tape_grads,
    weights_for,
    wrt_names,
)
from .jvp_check import jvp_check
from .model import Case
from .render import BIG_SLOT, TRACE_SIZE


class Rejected(Exception):
    """The sample cannot be checked (the message says why)."""


def _no_big_values(trace: np.ndarray | None) -> None:
    if trace is not None and trace[BIG_SLOT] > 0:
        raise Rejected("an intermediate value is out of range (|x| > 1e6, or not finite)")


def _finite_range(outs: dict[str, np.ndarray]) -> None:
    for n, v in outs.items():
        if not np.all(np.isfinite(v)):
            raise Rejected(f"non-finite value in {n}")
        if np.max(np.abs(v), initial=0.0) > MAX_VALUE:
            raise Rejected(f"|{n}| > {MAX_VALUE:g}")


def _directions(case: Case, k: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(1000 + k)
    out = []
    for _ in range(DIRECTIONS):
        d = {}
        for a in case.arrays:
            if a.ty != "I":
                d[a.name] = rng.uniform(0.5, 1.5, a.values.shape) * rng.choice([-1.0, 1.0],
                                                                                 a.values.shape)
        out.append(d)
    return out


def _fd_along(run: Any, base: dict[str, np.ndarray], d: dict[str, np.ndarray],
              trace0: np.ndarray | None) -> tuple[list[float], str | None]:
    """FD of L along d at each step size; a reason string if the direction is rejected."""
    fds: list[float] = []
    for h in STEPS:
        vals = []
        for sign in (1.0, -1.0):
            point = {n: base[n] + sign * h * d[n] for n in d}
            L, tr = run(point)
            if not np.array_equal(tr, trace0):  # type: ignore[arg-type]
                return fds, f"a branch, kink or cast flips within ±{h:g}"
            vals.append(L)
        fds.append((vals[0] - vals[1]) / (2.0 * h))
    return fds, None


def _compare_direction(rev: dict[str, np.ndarray], d: dict[str, np.ndarray], fds: list[float],
                       lmag: float, tol: Any) -> tuple[bool, str | None, dict]:
    """(matches, reject reason, numbers) for one direction."""
    rd = float(sum(np.sum(rev[n] * d[n]) for n in d))
    scale = float(sum(np.sum(np.abs(rev[n] * d[n])) for n in d)) + abs(fds[0]) + 1e-12
    roundoff = 1e-15 * lmag / min(STEPS)
    info = {"reverse": rd, "fd": fds[0], "fd_small": fds[1], "scale": scale}
    # judged on the differences alone: a reverse gradient in the scale (fuzz 7:330: a correct
    # 7e13 from sin of a 6.7e5 argument, where no step resolves the oscillation) would let
    # differences of 7e5 and -3e7 pass as agreeing, and the case would count as a mismatch
    fd_scale = abs(fds[0]) + abs(fds[1]) + 1e-12
    if abs(fds[0] - fds[1]) > tol.fd_rtol * fd_scale + 4 * roundoff:
        return True, "finite differences at two step sizes disagree", info
    ok = abs(rd - fds[0]) <= tol.rtol * scale + 4 * roundoff
    return ok, None, info


def _fd_check(wp: Any, case: Case, twin: Any, rev: dict[str, np.ndarray],
              weights: dict[str, np.ndarray]) -> dict[str, Any]:
    base = {a.name: np.asarray(a.values, np.float64) for a in case.arrays if a.ty != "I"}

    def run(point: dict[str, np.ndarray]) -> tuple[float, np.ndarray | None]:
        outs, tr = run_program(wp, twin, case, point, "float64", traced=True)
        return objective(outs, weights), tr

    outs0, trace0 = run_program(wp, twin, case, base, "float64", traced=True)
    try:
        _no_big_values(trace0)
    except Rejected as exc:
        return {"status": "rejected", "reason": str(exc)}
    lmag = float(sum(np.sum(np.abs(weights[n] * outs0[n])) for n in weights))
    tol = TOL[case.dtype]
    checked, bad, reasons = 0, [], []
    for d in _directions(case, 0):
        fds, why = _fd_along(run, base, d, trace0)
        if why is None:
            ok, why, info = _compare_direction(rev, d, fds, lmag, tol)
            if why is None:
                checked += 1
                if not ok:
                    bad.append((info, d))
        if why is not None:
            reasons.append(why)
    if bad:
        return {"status": "grad", "directions": [info for info, _ in bad],
                "grads": {n: g.tolist() for n, g in rev.items()}, "bad": bad}
    if not checked:
        return {"status": "rejected", "reason": "; ".join(sorted(set(reasons)))}
    return {"status": "ok", "checked": checked}


def _float64_twin_agrees(wp: Any, case: Case, twin: Any, weights: dict[str, np.ndarray],
                         bad: list[tuple[dict, dict[str, np.ndarray]]]) -> bool:
    """Does the float64 twin's Tape gradient match the finite differences where the float32
    one does not? Then the float32 miss is rounding, not autodiff: the adjoint is the same
    code at both precisions, and a derivative summed from large terms that cancel (fuzz 2:830:
    the determinant of a matrix of rank 2 is 0 for every input, its computed derivative is
    float32 noise the size of one ulp of those terms) cannot be closer in float32."""
    twin64 = replace(case, dtype="float64")
    rev = tape_grads(wp, lambda a: twin(a, wp.zeros(TRACE_SIZE, dtype=wp.int32, device="cpu")),
                     twin64, weights)
    tol = TOL["float64"].rtol
    for info, d in bad:
        along = float(sum(np.sum(rev[n] * d[n]) for n in d))
        scale = info["scale"]
        if not np.isfinite(scale):
            # the twin's own scale where the float32 gradient is not finite (fuzz 14:71: an
            # intermediate that overflows to inf in float32 and is then overwritten: 0 * inf)
            scale = float(sum(np.sum(np.abs(rev[n] * d[n])) for n in d)) + abs(info["fd"]) + 1e-12
        if not abs(along - info["fd"]) <= tol * scale:
            return False
    return True


def _branches_on_rounding(wp: Any, case: Case, prog: Any, trace: np.ndarray | None) -> bool:
    """Does a branch flip when the inputs change by a few ulps? Then the values depend on
    rounding (``q * quat_inverse(q)`` compared with 0), and another implementation of the same
    math may take the other branch: not a comparison to make."""
    rel = 1e-9 if case.dtype == "float64" else 1e-6
    rng = np.random.default_rng(5)
    for _ in range(3):
        point = {a.name: a.values * (1.0 + rel * rng.uniform(-1.0, 1.0, a.values.shape))
                 for a in case.arrays if a.ty != "I"}
        _, tr = run_program(wp, prog, case, point, case.dtype, traced=True)
        if tr is None or trace is None or not np.array_equal(tr[BIG_SLOT + 1:],
                                                           trace[BIG_SLOT + 1:]):
            return True
    return False


def _forward_stage(wp: Any, case: Case, progs: dict[str, Any]) -> dict[str, Any]:
    """Forward values of the clean, the traced and (float32) the float64 runs, cross-checked."""
    outs, _ = run_program(wp, progs["main"], case, {}, case.dtype, traced=False)
    touts, trace = run_program(wp, progs["traced"], case, {}, case.dtype, traced=True)
    res: dict[str, Any] = {"forward": {n: v.tolist() for n, v in outs.items()},
                           "trace": trace.tolist() if trace is not None else None}
    diff = forward_mismatch(case.dtype, touts, outs, ("traced", "clean"))
    _finite_range(outs)
    _no_big_values(trace)
    if diff or _branches_on_rounding(wp, case, progs["traced"], trace):
        # the two builds round differently (LLVM may contract a*b+c) and a branch follows the
        # rounding: values depend on it, so there is nothing to compare with warp-lang
        res["unstable"] = diff or "a branch flips when the inputs move by a few ulps"
    if case.dtype == "float32":
        outs64, trace64 = run_program(wp, progs["twin"], case, {}, "float64", traced=True)
        if trace64 is None or trace is None or not np.array_equal(trace, trace64):
            raise Rejected("float32 and float64 take different branches")
        scale = max(1.0, max(np.max(np.abs(v), initial=0.0) for v in outs64.values()))
        for n in outs:
            if np.max(np.abs(outs[n] - outs64[n]), initial=0.0) > 1e-3 * scale:
                raise Rejected("float32 values far from float64 (ill-conditioned)")
    return res


def check(wp: Any, case: Case, progs: dict[str, Any], jvp: bool = False) -> dict[str, Any]:
    """progs: the ``program`` functions main (clean), traced, twin (traced float64). `jvp`:
    also check forward mode (``res["jvp"]``: tools/fuzz/jvp_check.py)."""
    res: dict[str, Any] = {}
    try:
        res.update(_forward_stage(wp, case, progs))
    except Rejected as exc:
        return {**res, "status": "rejected", "reason": str(exc)}
    except Exception as exc:
        return {**res, **error_info("forward", exc)}
    if jvp:
        res["jvp"] = jvp_check(wp, case, progs)
    weights = weights_for(case)
    try:
        rev = tape_grads(wp, progs["main"], case, weights)
    except Exception as exc:
        return {**res, **error_info("backward", exc)}
    for n, g in rev.items():
        if not np.all(np.isfinite(g)):
            res["nonfinite_grad"] = n
    try:
        res.update(_fd_check(wp, case, progs["twin"], rev, weights))
        bad = res.pop("bad", [])
        if bad and case.dtype == "float32" and _float64_twin_agrees(wp, case, progs["twin"],
                                                                    weights, bad):
            what = ("float32 overflow (non-finite gradient)" if "nonfinite_grad" in res
                    else "float32 rounding")
            res.update(status="rejected", reason=f"{what}: the float64 twin's Tape gradient "
                       "matches the finite differences")
    except Exception as exc:
        return {**res, **error_info("fd", exc)}
    return res


__all__ = ["check", "wrt_names"]
