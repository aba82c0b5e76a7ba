"""Peers on the same kernels: gradloom, warp-lang, Dr.Jit and Taichi, forward and forward+backward.

    python benchmarks/bench_peers.py [--quick] [--rounds 5] [--busy 0,1] [--threads N]
                                     [--frameworks gradloom,warp,drjit,taichi] [--kernels ...]

The cases: saxpy, integrate, nbody, neo_hookean and the cloth step (springs with atomic adds +
integration + the loss Σ |x_out|²), at bench_core.py's sizes (specs.FULL, --quick: specs.QUICK),
on the inputs of host_data.grad_data() (identical float32 values for every framework). Each
framework runs in a child process of its own (peers_child.py), started once: it saves its
forward outputs and input gradients, which are checked here against float64 references
(float_checks.reference, analytic over whole arrays: |a - r| <= 1e-3 |r| + 1e-4 max|r| per
element), and then times its cases on request. Rounds: every round asks every framework for
one sample of every case and mode, frameworks in a shuffled order; the table shows the median
ms per call of the sample's calls, run back to back after one call that is timed apart: the
"first call" tables show those (the case's first call after the other cases ran: allocations
and caches cold again). A result that fails its check is printed as `wrong` next to its time
and never counts as the fastest. `--busy 0,1`: the rounds again with a background process
spinning on one core. Frameworks: gradloom at its default thread count (or --threads), warp-lang's CPU
backend (serial), Dr.Jit's LLVM backend and Taichi's CPU backend with fast_math=False, both at
their default thread counts (or --threads). Peers not installed are skipped (pip install
".[peers]"). Results (every sample, every check) go to benchmarks/results/ as JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import float_checks
import numpy as np
from bench_dispatch import busy_core
from host_data import grad_data
from specs import FULL, MARK, QUICK

HERE = Path(__file__).resolve().parent
CASES = ["saxpy", "integrate", "nbody", "neo_hookean", "cloth"]
MODES = ["fwd", "fwdbwd"]
FRAMEWORKS = ["gradloom", "warp", "drjit", "taichi"]
MODULES = {"gradloom": "gradloom", "warp": "warp", "drjit": "drjit", "taichi": "taichi"}


@dataclass
class Child:
    """One framework's child process and everything measured of it."""

    name: str
    proc: subprocess.Popen[str] | None = None
    ready: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    ok: dict[tuple[str, str], tuple[bool, float, str]] = field(default_factory=dict)
    samples: dict[str, dict[tuple[str, str], list[float]]] = field(default_factory=dict)

    def ask(self, cmd: dict[str, Any]) -> dict[str, Any] | None:
        """Send one command; its answer (None, and self.error set, when the child died)."""
        if self.proc is None or self.error:
            return None
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.error = "child exited"
            return None
        return self.read()

    def read(self) -> dict[str, Any] | None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(MARK):
                return dict(json.loads(line[len(MARK):]))
        self.error = f"child exited ({self.proc.wait()})"
        return None


def start(name: str, sizes: dict[str, int], work: Path, threads: int, log: IO[str]) -> Child:
    """Start a framework's child and wait until it has compiled, checked and calibrated."""
    child = Child(name)
    if importlib.util.find_spec(MODULES[name]) is None:
        child.error = "not installed"
        return child
    out = work / name
    out.mkdir()
    env = {**os.environ, "GRADLOOM_CACHE_DIR": str(work / "glcache")}
    env.pop("GRADLOOM_NUM_THREADS", None)
    if threads and name == "gradloom":
        env["GRADLOOM_NUM_THREADS"] = str(threads)
    argv = [sys.executable, str(HERE / "peers_child.py"), "--framework", name,
            "--sizes", json.dumps(sizes), "--out", str(out), "--threads", str(threads)]  # fmt: skip
    child.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=log, text=True, env=env)  # fmt: skip
    child.ready = child.read() or {}
    return child


def check(child: Child, refs: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """Each case's saved outputs (fwd) and gradients (fwdbwd) against the float64 references:
    child.ok[(case, mode)] = (ok, worst excess over the tolerance, worst array)."""
    for case, info in child.ready.get("cases", {}).items():
        for mode, ref in zip(MODES, refs[case]):
            files = info.get("files", {}).get(mode)
            if not files:
                continue
            worst, excess, ok = "", 0.0, True
            for key, r in ref.items():
                if key not in files:
                    ok, worst, excess = False, f"{key} missing", float("inf")
                    continue
                good, ex = float_checks.elementwise_ok(np.load(files[key]), r)
                ok = ok and good
                if ex >= excess:
                    worst, excess = key, ex
            child.ok[(case, mode)] = (ok, excess, worst)


def run_rounds(children: list[Child], cases: list[str], rounds: int, label: str) -> None:
    rng = random.Random(0)
    for r in range(rounds):
        for case in cases:
            for mode in MODES:
                order = list(children)
                rng.shuffle(order)  # no framework always first
                for child in order:
                    if (case, mode) not in child.ok:
                        continue
                    ans = child.ask({"case": case, "mode": mode})
                    if ans is not None:
                        for what, key in ((label, "ms"), (f"{label}, first call", "first_ms")):
                            child.samples.setdefault(what, {}).setdefault((case, mode), []).append(
                                ans[key])
        print(f"  [{label}] round {r + 1} of {rounds} done", flush=True)


def cell(child: Child, label: str, key: tuple[str, str]) -> tuple[str, float | None]:
    """(the table cell, the time if it counts)."""
    if child.error and not child.samples.get(label, {}).get(key):
        return ("n/a" if child.error == "not installed" else "ERROR"), None
    info = child.ready.get("cases", {}).get(key[0], {})
    if key[1] in info.get("errors", {}) or "build" in info.get("errors", {}):
        return "ERROR", None
    s = child.samples.get(label, {}).get(key)
    if not s:
        return "-", None
    ms = statistics.median(s)
    if not child.ok.get(key, (False, 0.0, ""))[0]:
        return f"{ms:.3f} wrong", None
    return f"{ms:.3f}", ms


def table(children: list[Child], cases: list[str], sizes: dict[str, int], label: str) -> None:
    print(f"\n{label}: ms per call, median of the rounds")
    head = f"{'case':24s}" + "".join(f"{c.name:>15s}" for c in children)
    print(head + f"{'gl / warp':>11s}{'gl / best peer':>16s}")
    for case in cases:
        for mode in MODES:
            cells = [cell(c, label, (case, mode)) for c in children]
            row = f"{f'{case} {sizes[case]:,} {mode}':24s}" + "".join(f"{t:>15s}" for t, _ in cells)
            times = {c.name: ms for c, (_, ms) in zip(children, cells)}
            gl, warp = times.get("gradloom"), times.get("warp")
            peers = [ms for n, ms in times.items() if n not in ("gradloom", "warp") and ms]
            row += f"{gl / warp:11.2f}" if gl and warp else f"{'-':>11s}"
            row += f"{gl / min(peers):16.2f}" if gl and peers else f"{'-':>16s}"
            print(row)


def report_checks(children: list[Child]) -> None:
    for c in children:
        if c.error:
            print(f"{c.name}: {c.error}")
        for (case, mode), (ok, excess, worst) in sorted(c.ok.items()):
            if not ok:
                what = "outputs" if mode == "fwd" else "gradients"
                print(f"{c.name} {case} {mode}: {what} WRONG against float64 ({worst}: "
                      f"{excess:.3g}x the tolerance)")
        for case, info in c.ready.get("cases", {}).items():
            for mode, err in info.get("errors", {}).items():
                print(f"{c.name} {case} {mode}: ERROR {err}")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="specs.QUICK sizes, 3 rounds")
    ap.add_argument("--rounds", type=int, default=0, help="default 5 (--quick: 3)")
    ap.add_argument("--busy", default="0,1", help="0: idle, 1: one busy core; e.g. 0,1")
    ap.add_argument("--threads", type=int, default=0, help="gradloom, Dr.Jit, Taichi threads")
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    ap.add_argument("--kernels", default=",".join(CASES))
    ap.add_argument("--sizes", default="{}", help='JSON overriding sizes, e.g. {"nbody": 256}')
    args = ap.parse_args()
    args.rounds = args.rounds or (3 if args.quick else 5)
    return args


def main() -> None:
    args = parse_args()
    cases = args.kernels.split(",")
    sizes = {c: (QUICK if args.quick else FULL)[c] for c in cases} | json.loads(args.sizes)
    work = Path(tempfile.mkdtemp(prefix="gl-peers-"))
    log = open(work / "children.log", "w")  # noqa: SIM115 (open for the whole run)
    print(f"{os.cpu_count()} cores; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
          f"; children's stderr: {work / 'children.log'}", flush=True)
    refs = {c: float_checks.reference(c, grad_data(c, n)) for c, n in sizes.items()}
    children = []
    for name in args.frameworks.split(","):
        t = time.perf_counter()
        children.append(start(name, sizes, work, args.threads, log))
        print(f"  {name}: ready in {time.perf_counter() - t:.1f} s {children[-1].error}", flush=True)
        check(children[-1], refs)
    out: dict[str, Any] = {"argv": sys.argv[1:], "sizes": sizes, "variants": {}}
    for busy in (int(b) for b in args.busy.split(",")):
        label = "one core busy" if busy else "idle"
        with busy_core(bool(busy)):
            before = os.getloadavg()
            run_rounds(children, cases, args.rounds, label)
            out["variants"][label] = {"load_before": before, "load_after": os.getloadavg()}
        print(f"  load average before the {label} rounds: {', '.join(f'{x:.1f}' for x in before)}")
    summary(children, cases, sizes, list(out["variants"]))
    for c in children:
        stop(c)
    save(out, children)


def summary(children: list[Child], cases: list[str], sizes: dict[str, int],
            labels: list[str]) -> None:
    """The tables (steady, then first calls), the failed checks, compile times, versions."""
    for label in [*labels, *(f"{lab}, first call" for lab in labels)]:
        table(children, cases, sizes, label)
    print()
    report_checks(children)
    first = {c.name: sum(sum(i.get("first_s", {}).values()) for i in c.ready["cases"].values())
             for c in children if c.ready.get("cases")}  # fmt: skip
    print("first calls (compile + one run, outputs and gradients, all cases) [s]: "
          + ", ".join(f"{n} {s:.2f}" for n, s in first.items()))
    print("versions: " + ", ".join(f"{c.name} {c.ready.get('version', '?')}" for c in children))


def stop(child: Child) -> None:
    """Ask the child to quit; kill it if it has not after 10 s."""
    if child.proc is None:
        return
    try:
        assert child.proc.stdin is not None
        child.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
        child.proc.stdin.close()
        child.proc.wait(timeout=10)
    except (BrokenPipeError, subprocess.TimeoutExpired):
        child.proc.kill()
        child.proc.wait()


def save(out: dict[str, Any], children: list[Child]) -> None:
    out["frameworks"] = {c.name: {
        "error": c.error, "ready": c.ready,
        "checks": {f"{k[0]} {k[1]}": list(v) for k, v in c.ok.items()},
        "samples_ms": {lab: {f"{k[0]} {k[1]}": v for k, v in s.items()} for lab, s in c.samples.items()},
    } for c in children}  # fmt: skip
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    path = results / f"peers-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"results: {path}")


if __name__ == "__main__":
    main()
