"""warp-lang's cloth frame recorded on a Tape, then its backward: ms per frame, gradloom and warp-lang.

    python benchmarks/bench_tape.py [--dims 32,64] [--rounds 11]

One frame of warp-lang's cloth benchmark (benchmarks/benchmark_cloth_warp.py, 16 substeps of
eval_springs + integrate_particles, run from the installed warp-lang: examples_src.py) inside
`wp.Tape()`, then `tape.backward(grads={positions: ones})` and `tape.zero()`: what recording 32
small launches and running their adjoints costs, the step of a differentiable simulation.
Columns: gradloom at its default thread count, and warp-lang's CPU backend, in one process,
alternating round by round; medians of the rounds (each round: --frames frames). Checked: the
positions after a first recorded frame match warp-lang's (float_checks.EXAMPLE_RTOL), and
gradloom's gradients are finite. warp-lang's gradients are not compared: its adjoint does not
see the example's in-place updates (x and v are overwritten every substep). Results also go to
benchmarks/results/ as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import examples_src
import float_checks
from bench_examples import RESULTS, make_cloth, start_warp

import gradloom


def make_sim(mod: Any, wp: Any, cloth: Any) -> tuple[Any, Any]:
    """The example's integrator with gradients on its state, and the backward's seed."""
    integ = mod.WpIntegrator(cloth, "cpu")
    for name in ("positions", "velocities", "forces"):
        getattr(integ, name).requires_grad = True
    seed = wp.array(np.ones((cloth.num_particles, 3), np.float32), dtype=wp.vec3, device="cpu")
    return integ, seed


def frame(wp: Any, integ: Any, seed: Any) -> tuple[float, float]:
    """ms to record one frame on a new Tape, and ms of its backward (tape.zero() included)."""
    tape = wp.Tape()
    t0 = time.perf_counter()
    with tape:
        integ.simulate(1.0 / 60.0, 16)
    t1 = time.perf_counter()
    tape.backward(grads={integ.positions: seed})
    tape.zero()
    return (t1 - t0) * 1e3, (time.perf_counter() - t1) * 1e3


def checked(sims: dict[str, tuple[Any, Any, Any]]) -> dict[str, Any]:
    """One recorded frame and backward on each side: positions compared, gradients finite."""
    states, finite = {}, True
    for name, (wp, integ, seed) in sims.items():
        tape = wp.Tape()
        with tape:
            integ.simulate(1.0 / 60.0, 16)
        states[name] = {"positions": np.array(integ.positions.numpy(), copy=True)}
        tape.backward(grads={integ.positions: seed})
        if name == "gradloom":
            grads = [getattr(integ, n).grad.numpy() for n in ("positions", "velocities")]
            finite = all(bool(np.isfinite(g).all()) for g in grads)
        tape.zero()
    res = float_checks.compare(states["gradloom"], states["warp"], float_checks.EXAMPLE_RTOL)
    return {**res, "ok": bool(res["ok"]) and finite, "gradients_finite": finite}


def bench(dim: int, mods: dict[str, Any], cloth_cls: Any, args: argparse.Namespace,
          warp: Any) -> dict[str, Any]:
    cloth = make_cloth(cloth_cls, dim)
    libs = {"gradloom": gradloom, "warp": warp}
    sims = {n: (libs[n], *make_sim(mods[n], libs[n], cloth)) for n in libs}
    check = checked(sims)
    samples: dict[str, list[tuple[float, float]]] = {n: [] for n in sims}
    for r in range(args.rounds):
        for name in (list(sims) if r % 2 == 0 else list(sims)[::-1]):
            wp, integ, seed = sims[name]
            runs = [frame(wp, integ, seed) for _ in range(args.frames)]
            samples[name].append(tuple(statistics.median(x) for x in zip(*runs)))
    med = {n: [statistics.median(x) for x in zip(*s)] for n, s in samples.items()}
    g, w = med["gradloom"], med["warp"]
    mark = "" if check["ok"] else "  WRONG: " + json.dumps(check)
    print(f"cloth {dim}²{'':4s}{g[0]:10.3f}{w[0]:10.3f}{g[1]:12.3f}{w[1]:10.3f}"
          f"{(w[0] + w[1]) / (g[0] + g[1]):12.2f}x{mark}")
    return {"check": check, "gradloom_ms": g, "warp_ms": w, "samples": samples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="32,64")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--frames", type=int, default=5, help="frames per side and round")
    args = ap.parse_args()
    warp = start_warp()
    tmp = Path(tempfile.mkdtemp(prefix="gl-tape-"))
    mods = {n: examples_src.load("cloth", n, tmp) for n in ("gradloom", "warp")}
    cloth_cls = examples_src.cloth_class()
    print(f"warp-lang {warp.__version__}; gradloom at {gradloom.config.num_threads} threads; ms "
          f"per frame, medians of {args.rounds} rounds of {args.frames} frames")
    print(f"{'':11s}{'recorded':>20s}{'backward':>22s}")
    print(f"{'step':11s}{'gradloom':>10s}{'warp':>10s}{'gradloom':>12s}{'warp':>10s}"
          f"{'warp / gl':>13s}")
    out = {str(d): bench(int(d), mods, cloth_cls, args, warp) for d in args.dims.split(",")}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"tape-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"argv": sys.argv[1:], "rows": out}, indent=1))
    print(f"warp / gl: (recorded + backward) warp-lang / gradloom\nresults: {path}")


if __name__ == "__main__":
    main()
