"""Command line: ``python -m tools.library_compat {setup,mujoco-tests,mujoco-step,newton-diffsim,newton-step}``.

Every command runs each library on warp-lang and on gradloom (through ``python -m
gradloom.as_warp``), in the separate environment ``setup`` made (``--python`` to use another).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import env, probes, report, suites

WORK = env.REPO_ROOT / "build" / "library_compat"


def _mujoco_tests(args: argparse.Namespace) -> None:
    site = env.site_packages(args.python)
    package = site / "mujoco_warp"
    files = args.files or suites.mujoco_files(site)
    pairs = []
    for f in files:
        warp = suites.cached_or_run(args.python, "warp", package, f, WORK / "mujoco", args.timeout,
                                    rerun=args.rerun_warp)  # fmt: skip
        gl = suites.run_file(args.python, "gradloom", package, f, WORK / "mujoco", args.timeout)
        w, g = report.score(warp, gl)
        print(f"  {f:40s} warp pass {w:4d}  gradloom {g:4d}  ({gl.status}, {gl.seconds:.0f} s)",
              flush=True)  # fmt: skip
        pairs.append((warp, gl))
    suites.save([r for p in pairs for r in p if r is not None], WORK / "mujoco_results.json")
    text = report.table("MuJoCo Warp's own tests (`pytest --cpu`)",
                        "python -m tools.library_compat mujoco-tests", pairs)  # fmt: skip
    (WORK / "mujoco.md").write_text(text)
    print(text)


def _mujoco_step(args: argparse.Namespace) -> None:
    runs = {b: probes.mujoco_step(args.python, b, WORK, args.steps, args.timeout)
            for b in ("warp", "gradloom")}  # fmt: skip
    for b, r in runs.items():
        steps = r.get("step_s", [])
        print(f"  {b:9s} {r['status']:8s} first step {steps[0] if steps else float('nan'):.2f} s, "
              f"later median {sorted(steps[1:])[len(steps[1:]) // 2] if len(steps) > 1 else float('nan'):.4f} s")
    if all("qpos" in r for r in runs.values()):
        import numpy as np

        for key in ("qpos", "qvel"):
            a, b = np.ravel(runs["warp"][key]), np.ravel(runs["gradloom"][key])
            diff = float(np.max(np.abs(a - b)))
            # relative to the largest entry: entries near zero make elementwise ratios noise
            print(f"  {key} after {args.steps} steps: max difference {diff:.2e}, "
                  f"{diff / max(float(np.max(np.abs(a))), 1e-30):.2e} of its largest entry")
    (WORK / "mujoco_step.json").write_text(json.dumps(runs, indent=1))


def _newton(args: argparse.Namespace) -> None:
    out = {}
    for name in args.examples or probes.DIFFSIM:
        runs = {b: probes.newton_example(args.python, b, name, WORK / "newton", args.frames,
                                         args.timeout) for b in ("warp", "gradloom")}  # fmt: skip
        for b, r in runs.items():
            print(f"  diffsim_{name:12s} {b:9s} {r['status']:8s} {r['seconds']:6.1f} s "
                  f"losses {r['losses'][:3]} … {r['last_line'][:120]}", flush=True)
        diff = probes.loss_difference(runs["warp"]["losses"], runs["gradloom"]["losses"])
        n = len(runs["warp"]["losses"])
        print(f"  diffsim_{name:12s} losses: {n} on warp-lang, max relative difference "
              + ("n/a (trajectories differ in length)" if diff is None else f"{diff:.1e}"),
              flush=True)  # fmt: skip
        out[name] = {**runs, "loss_max_rel_diff": diff}
    (WORK / "newton.json").write_text(json.dumps(out, indent=1))


def _newton_step(args: argparse.Namespace) -> None:
    runs = {b: probes.newton_step(args.python, b, args.example, WORK, args.steps, args.timeout)
            for b in ("warp", "gradloom")}  # fmt: skip
    for b, r in runs.items():
        steps = r.get("step_s", [])
        first = r.get("build_s", float("nan")) + (steps[0] if steps else float("nan"))
        later = sorted(steps[1:])[len(steps[1:]) // 2] if len(steps) > 1 else float("nan")
        print(f"  {b:9s} {r['status']:8s} import {r.get('import_s', float('nan')):.2f} s, build + "
              f"first step {first:.2f} s, later steps median {later:.4f} s, "
              f"losses {r.get('loss', [])[:4]}")
    (WORK / f"newton_step_{args.example}.json").write_text(json.dumps(runs, indent=1))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m tools.library_compat", description=__doc__)
    p.add_argument("--python", type=Path, default=probes.python_default(),
                   help="the interpreter of the libraries' environment (default: build/libenv)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per child process")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup", help="create build/libenv with the libraries and this checkout")
    s.add_argument("--venv", type=Path, default=env.DEFAULT_VENV)
    t = sub.add_parser("mujoco-tests", help="MuJoCo Warp's pytest files on both backends")
    t.add_argument("--files", nargs="+", help="test files relative to mujoco_warp/ (default: all)")
    t.add_argument("--rerun-warp", action="store_true",
                   help="run warp-lang again (default: reuse its results from build/)")
    st = sub.add_parser("mujoco-step", help="humanoid put_model + steps on both backends")
    st.add_argument("--steps", type=int, default=10)
    n = sub.add_parser("newton-diffsim", help="newton's diffsim examples on both backends")
    n.add_argument("--examples", nargs="+", choices=probes.DIFFSIM)
    n.add_argument("--frames", type=int, default=None,
                   help="frames per example (default: newton's own CPU test options)")
    ns = sub.add_parser("newton-step", help="one diffsim example built and trained, timed")
    ns.add_argument("--example", choices=probes.DIFFSIM, default="cloth")
    ns.add_argument("--steps", type=int, default=5)
    args = p.parse_args(argv)
    if args.command == "setup":
        print(env.setup(args.venv))
    else:
        {"mujoco-tests": _mujoco_tests, "mujoco-step": _mujoco_step,
         "newton-diffsim": _newton, "newton-step": _newton_step}[args.command](args)  # fmt: skip


if __name__ == "__main__":
    main()
