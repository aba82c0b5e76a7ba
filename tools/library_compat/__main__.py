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
#: the test files of newton's SemiImplicit, XPBD and Featherstone solvers, collision and math
NEWTON_FILES = ("test_math.py", "test_collision_primitives.py", "test_solver_xpbd.py",
                "test_body_force.py", "featherstone/test_notify_model_changed.py")


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


def _newton_tests(args: argparse.Namespace) -> None:
    """newton's own test files (relative to newton/tests/), one process per file and backend."""
    site = env.site_packages(args.python)
    pairs = []
    for f in args.files:
        runs = [suites.cached_or_run(args.python, "warp", site, f"newton/tests/{f}", WORK / "newton_tests",
                                     args.timeout, rerun=args.rerun_warp, extra=()),
                suites.run_file(args.python, "gradloom", site, f"newton/tests/{f}", WORK / "newton_tests",
                                args.timeout, extra=())]  # fmt: skip
        w, g = report.score(*runs)
        print(f"  {f:40s} warp pass {w:4d}  gradloom {g:4d}  ({runs[1].status}, {runs[1].seconds:.0f} s)",
              flush=True)  # fmt: skip
        pairs.append((runs[0], runs[1]))
    suites.save([r for p in pairs for r in p if r is not None], WORK / "newton_tests_results.json")
    print(report.table("newton's own tests", "python -m tools.library_compat newton-tests", pairs))


def _mujoco_step(args: argparse.Namespace) -> None:
    runs = {b: probes.mujoco_step(args.python, b, WORK, args.steps, args.timeout, args.cold)
            for b in _order(args)}  # fmt: skip
    for b in ("warp", "gradloom"):
        r = runs[b]
        steps = r.get("step_s", [])
        cpu = r.get("step_cpu_s", [float("nan")])
        print(f"  {b:9s} {r['status']:8s} first step {steps[0] if steps else float('nan'):.2f} s "
              f"(CPU {cpu[0]:.2f} s), "
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


def _order(args: argparse.Namespace) -> tuple[str, str]:
    """The backends in the order they run (`--gradloom-first`: to alternate across runs)."""
    return ("gradloom", "warp") if args.gradloom_first else ("warp", "gradloom")


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
    runs = {b: probes.newton_step(args.python, b, args.example, WORK, args.steps, args.timeout,
                                  args.cold) for b in _order(args)}  # fmt: skip
    for b in ("warp", "gradloom"):
        r = runs[b]
        steps = r.get("step_s", [])
        first = r.get("build_s", float("nan")) + (steps[0] if steps else float("nan"))
        later = sorted(steps[1:])[len(steps[1:]) // 2] if len(steps) > 1 else float("nan")
        cpu = r.get("build_cpu_s", float("nan")) + r.get("step_cpu_s", [float("nan")])[0]
        print(f"  {b:9s} {r['status']:8s} import {r.get('import_s', float('nan')):.2f} s, build + "
              f"first step {first:.2f} s (CPU {cpu:.2f} s), later steps median {later:.4f} s, "
              f"losses {r.get('loss', [])[:4]}")
    (WORK / f"newton_step_{args.example}.json").write_text(json.dumps(runs, indent=1))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m tools.library_compat", description=__doc__)
    p.add_argument("--python", type=Path, default=probes.python_default(),
                   help="the interpreter of the libraries' environment (default: build/libenv)")
    p.add_argument("--timeout", type=float, default=2700.0,
                   help="seconds per child process (newton's test_solver_xpbd.py took 1,318 s "
                        "on gradloom under load)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup", help="create build/libenv with the libraries and this checkout")
    s.add_argument("--venv", type=Path, default=env.DEFAULT_VENV)
    t = sub.add_parser("mujoco-tests", help="MuJoCo Warp's pytest files on both backends")
    t.add_argument("--files", nargs="+", help="test files relative to mujoco_warp/ (default: all)")
    t.add_argument("--rerun-warp", action="store_true",
                   help="run warp-lang again (default: reuse its results from build/)")
    nt = sub.add_parser("newton-tests", help="newton's own test files on both backends")
    nt.add_argument("--files", nargs="+", default=list(NEWTON_FILES),
                    help="test files relative to newton/tests/")
    nt.add_argument("--rerun-warp", action="store_true")
    st = sub.add_parser("mujoco-step", help="humanoid put_model + steps on both backends")
    st.add_argument("--steps", type=int, default=10)
    for q in (st, ns := sub.add_parser("newton-step", help="one diffsim example built and trained, timed")):
        q.add_argument("--cold", action="store_true",
                       help="empty kernel caches for both backends (first step compiles all)")
        q.add_argument("--gradloom-first", action="store_true",
                       help="run gradloom before warp-lang (alternate it across runs)")
    n = sub.add_parser("newton-diffsim", help="newton's diffsim examples on both backends")
    n.add_argument("--examples", nargs="+", choices=probes.DIFFSIM)
    n.add_argument("--frames", type=int, default=None,
                   help="frames per example (default: newton's own CPU test options)")
    ns.add_argument("--example", choices=probes.DIFFSIM, default="cloth")
    ns.add_argument("--steps", type=int, default=5)
    args = p.parse_args(argv)
    if args.command == "setup":
        print(env.setup(args.venv))
    else:
        {"mujoco-tests": _mujoco_tests, "mujoco-step": _mujoco_step, "newton-tests": _newton_tests,
         "newton-diffsim": _newton, "newton-step": _newton_step}[args.command](args)  # fmt: skip


if __name__ == "__main__":
    main()
