"""The forward-mode side of one case: jvp output tangents against float64 central differences.

``jvp_check(wp, case, progs)`` runs the program once under `gradloom.forward_mode.tangent_run`
with the initial float arrays' tangents set to a random direction, and compares the tangent of
every float array the program ends with, element by element, with central differences of those
arrays along the same direction (the traced float64 rendering, two step sizes). A direction is
rejected where a branch, kink or cast flips within a step; an element where the two step sizes
disagree is not compared. Statuses: ``ok``, ``rejected``, ``mismatch`` (a tangent differs),
``error`` (an exception; ``stage`` is ``jvp``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .evaluate import STEPS, TOL, build, error_info, float_names, run_program, wrt_names
from .model import Case
from .render import TRACE_SIZE

#: elements smaller than this fraction of the largest difference are compared at that scale
FLOOR = 1e-3


def _directions(case: Case) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(2000)
    return [{a.name: rng.uniform(0.5, 1.5, a.values.shape) * rng.choice([-1.0, 1.0],
                                                                        a.values.shape)
             for a in case.arrays if a.ty != "I"} for _ in range(2)]


def tangents(wp: Any, program: Any, case: Case, dtype: str, d: dict[str, np.ndarray],
             traced: bool) -> dict[str, np.ndarray]:
    """The jvp: each output float array's tangent along d (float64 numpy)."""
    from gradloom.forward_mode import tangent_run

    arrays = build(wp, case, {}, dtype, requires_grad=False)
    names = float_names(case)
    seeds = [(arrays[n], d[n].astype(arrays[n].numpy().dtype)) for n in wrt_names(case)]
    trace = wp.zeros(TRACE_SIZE, dtype=wp.int32, device="cpu") if traced else None

    def run() -> list[Any]:
        program(arrays, trace) if traced else program(arrays)
        return [arrays[n] for n in names]

    _, touts = tangent_run(run, seeds)
    return {n: np.zeros(arrays[n].numpy().shape) if t is None else np.array(t, np.float64)
            for n, t in zip(names, touts, strict=True)}


def differences(wp: Any, twin: Any, case: Case, d: dict[str, np.ndarray]
                ) -> tuple[list[dict[str, np.ndarray]], dict[str, np.ndarray]] | None:
    """Central differences of every output along d at each step size, and the base outputs;
    None where a branch, kink or cast flips within a step."""
    base = {a.name: np.asarray(a.values, np.float64) for a in case.arrays if a.ty != "I"}
    outs0, trace0 = run_program(wp, twin, case, base, "float64", traced=True)
    fds = []
    for h in STEPS:
        runs = []
        for sign in (1.0, -1.0):
            point = {n: base[n] + sign * h * d[n] for n in d}
            outs, tr = run_program(wp, twin, case, point, "float64", traced=True)
            if not np.array_equal(tr, trace0):  # type: ignore[arg-type]
                return None
            runs.append(outs)
        fds.append({n: (runs[0][n] - runs[1][n]) / (2.0 * h) for n in outs0})
    return fds, outs0


def compare(tan: dict[str, np.ndarray], fds: list[dict[str, np.ndarray]],
            outs0: dict[str, np.ndarray], rtol: float, fd_rtol: float
            ) -> tuple[int, str | None]:
    """(elements compared, the first mismatch described, or None)."""
    big = max((float(np.max(np.abs(v), initial=0.0)) for v in fds[0].values()), default=0.0)
    floor = FLOOR * big + 1e-12
    compared = 0
    for n, t in tan.items():
        f1, f2 = fds[0][n], fds[1][n]
        roundoff = 4e-15 * (np.abs(outs0[n]) + 1.0) / min(STEPS)
        steady = np.abs(f1 - f2) <= fd_rtol * (np.abs(f1) + np.abs(f2)) + floor * 1e-3 + roundoff
        ok = np.abs(t - f1) <= rtol * (np.abs(t) + np.abs(f1) + floor) + roundoff
        bad = steady & ~ok
        compared += int(np.count_nonzero(steady))
        if np.any(bad):
            i = tuple(int(k) for k in np.argwhere(bad)[0])
            return compared, f"{n}{list(i)}: jvp {float(t[i])!r}, fd {float(f1[i])!r}"
    return compared, None


def _check_dtype(wp: Any, case: Case, program: Any, twin: Any, dtype: str, traced: bool
                 ) -> dict[str, Any]:
    tol = TOL[dtype]
    checked, reasons = 0, []
    for d in _directions(case):
        got = differences(wp, twin, case, d)
        if got is None:
            reasons.append("a branch, kink or cast flips within a step")
            continue
        fds, outs0 = got
        tan = tangents(wp, program, case, dtype, d, traced)
        compared, bad = compare(tan, fds, outs0, tol.rtol, max(tol.fd_rtol, 1e-5))
        if bad is not None:
            return {"status": "mismatch", "detail": bad}
        checked += compared
    if not checked:
        return {"status": "rejected", "reason": "; ".join(sorted(set(reasons))) or
                "no element's differences agree at two step sizes"}
    return {"status": "ok", "checked": checked}


def jvp_check(wp: Any, case: Case, progs: dict[str, Any]) -> dict[str, Any]:
    """progs: the ``program`` functions main (clean), traced, twin (traced float64)."""
    try:
        res = _check_dtype(wp, case, progs["main"], progs["twin"], case.dtype, traced=False)
        if res["status"] == "mismatch" and case.dtype == "float32":
            twin = _check_dtype(wp, replace(case, dtype="float64"), progs["twin"],
                                progs["twin"], "float64", traced=True)
            if twin["status"] != "mismatch":
                return {"status": "rejected", "reason": "float32 rounding: the float64 twin's "
                        "tangents match the finite differences"}
        return res
    except Exception as exc:
        return error_info("jvp", exc)
