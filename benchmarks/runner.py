"""Parent side of the benchmark: starts the child processes and collects their samples.

A `Variant` is one column (gradloom, warp, warp with forward-only compiles); `Bench` writes the
kernel modules for both sides into a temporary directory and runs every measurement of a variant
in fresh child processes (`bench_core.py --child TASK`, or a `python -c` for the warm start).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernels_src import KERNELS_SRC, LAUNCH_SRC
from measure import WARM_CODE, setup_code
from specs import KERNELS, MARK, MODULE_KERNELS, SMALL

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCALING_THREADS = (1, 2)
SCALING_ROUNDS = 3  # pairs of scaling children (1 thread, 2 threads); --quick: 2
BUSY_ROUNDS = 3  # rounds of busy-core children (gradloom 1 thread, 2 threads, warp); --quick: 2


@dataclass
class Variant:
    name: str  # column label
    backend: str  # "gradloom" or "warp"
    backward: bool
    full: bool  # also measure launch overhead, throughput and backward
    samples: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, metric: str, value: float) -> None:
        self.samples.setdefault(metric, []).append(value)

    def value(self, metric: str) -> float | None:
        """The median of the metric's samples; None when there are none or it failed."""
        s = self.samples.get(metric)
        return statistics.median(s) if s and metric not in self.errors else None


def run_child(argv: list[str], env: dict[str, str]) -> tuple[dict[str, Any] | None, str, float]:
    """Run one child; return (its JSON, an error text or "", its wall time in seconds)."""
    t = time.perf_counter()
    try:
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        return None, "timed out", time.perf_counter() - t
    wall = time.perf_counter() - t
    for line in reversed(p.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :]), "", wall
    tail = [ln for ln in (p.stderr or p.stdout).strip().splitlines() if ln.strip()]
    return None, f"exit {p.returncode}: {tail[-1] if tail else 'no output'}", wall


class Bench:
    """The temporary work directory and the children of one benchmark run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="gradloom-bench-"))
        #: each variant's filled kernel cache (for the busy-core children)
        self.caches: dict[str, Path] = {}
        for backend in ("warp", "gradloom"):
            kdir = self.work / backend
            kdir.mkdir()
            (kdir / "bench_kernels.py").write_text(KERNELS_SRC.replace("__BACKEND__", backend))
            (kdir / "bench_launch.py").write_text(LAUNCH_SRC.replace("__BACKEND__", backend))

    def env(self, cache: Path, threads: int | None = None) -> dict[str, str]:
        """The child's environment: gradloom's cache dir, and GRADLOOM_NUM_THREADS only when
        a thread count is asked for (threads, or --threads); otherwise gradloom's default."""
        env = dict(os.environ)
        env["GRADLOOM_CACHE_DIR"] = str(cache)
        threads = threads or self.args.threads
        env.pop("GRADLOOM_NUM_THREADS", None)
        if threads:
            env["GRADLOOM_NUM_THREADS"] = str(threads)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        return env

    def child(
        self,
        v: Variant,
        task: str,
        cache: Path,
        kernels: list[str] | None = None,
        threads: int | None = None,
    ) -> tuple[dict[str, Any] | None, str]:
        """Run `bench_core.py --child task` for variant v; (its JSON or None, error text)."""
        a = self.args
        argv = [sys.executable, str(HERE / "bench_core.py"), "--child", task]
        argv += ["--backend", v.backend, "--kdir", str(self.work / v.backend)]
        argv += ["--cache", str(cache), "--runs", str(a.runs), "--launches", str(a.launches)]
        argv += ["--grads", str(self.grads_dir(v))]
        argv += ["--kernels", ",".join(kernels)] if kernels else []
        argv += ["--quick"] * a.quick + ["--no-backward"] * (not v.backward)
        data, err, _ = run_child(argv, self.env(cache, threads))
        return data, err

    def grads_dir(self, v: Variant) -> Path:
        return self.work / f"grads-{v.name}"

    def fresh_cache(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="cache-", dir=self.work))

    def copy_bandwidth(self) -> tuple[dict[str, Any] | None, str]:
        """numpy's copy bandwidth, in a child of its own (numpy only)."""
        argv = [sys.executable, str(HERE / "bench_core.py"), "--child", "copy"]
        data, err, _ = run_child(argv, self.env(self.fresh_cache()))
        return data, err

    def measure(self, v: Variant) -> None:
        """Every measurement of one variant, each in fresh children."""

        def say(msg: str) -> None:
            print(f"  [{v.name}] {msg}", flush=True)

        self.measure_cold(v, say)
        warm_cache = self.caches[v.name] = self.fresh_cache()
        self.measure_warm(v, warm_cache, say)
        if not v.full:
            return
        self.measure_launch(v, warm_cache, say)
        self.measure_throughput(v, warm_cache, say)
        self.measure_backward(v, warm_cache, say)
        if v.backend == "gradloom":
            self.measure_scaling(v, warm_cache, say)

    def measure_cold(self, v: Variant, say: Callable[[str], None]) -> None:
        """--cold runs with an empty cache: import + init and compile + load of every kernel."""
        for r in range(self.args.cold):
            data, err = self.child(v, "cold", self.fresh_cache())
            if data is None:
                v.errors["import"] = err
            else:
                v.add("import", data["import_s"])
                v.extra["version"] = data["version"]
                err = "; ".join(f"{k}: {e}" for k, e in data["errors"].items())
            if err:
                v.errors["cold"] = err
                say(f"cold compile failed: {err}")
                break
            assert data is not None
            v.add("cold", data["compile_s"])
            v.extra.setdefault("first_launch_s", []).append(data["first_launch_s"])
            say(
                f"cold run {r + 1}: import {data['import_s']:.3f} s, "
                f"compile+load {MODULE_KERNELS} kernels {data['compile_s']:.3f} s"
            )

    def measure_warm(self, v: Variant, cache: Path, say: Callable[[str], None]) -> None:
        """Fill cache, then --warm `python -c` children that import, define and launch."""
        data, err = self.child(v, "cold", cache)
        if data is None:
            v.errors["warm_wall"] = v.errors["warm_in"] = err
            return
        setup = setup_code(v.backend, str(cache), v.backward)
        kdir = str(self.work / v.backend)
        code = WARM_CODE.format(kdir=kdir, here=str(HERE), setup=setup, sizes=SMALL, mark=MARK)
        for _ in range(self.args.warm):
            data, err, wall = run_child([sys.executable, "-c", code], self.env(cache))
            if data is None:
                v.errors["warm_wall"] = v.errors["warm_in"] = err
                return
            v.add("warm_wall", wall)
            v.add("warm_in", data["in_process_s"])
        say(f"warm start {v.value('warm_wall'):.3f} s (process wall, median)")

    def measure_launch(self, v: Variant, cache: Path, say: Callable[[str], None]) -> None:
        """µs per launch of `bump`, plain and prepared (record_cmd=True, cmd.launch())."""
        data, err = self.child(v, "launch", cache)
        if data is None:
            v.errors["launch"] = v.errors["prepared"] = err
            return
        v.add("launch", data["launch_us"])
        if not data["value_ok"]:
            v.errors["launch"] = "wrong result after the launches"
        say(f"launch overhead {data['launch_us']:.2f} µs")
        if "prepared_us" in data:
            v.add("prepared", data["prepared_us"])
            say(f"prepared launch {data['prepared_us']:.2f} µs")
        if "prepared_error" in data:
            v.errors["prepared"] = data["prepared_error"]
            say(f"prepared launch failed: {data['prepared_error']}")
        if "recorded_us" in data:
            v.add("recorded", data["recorded_us"])
            v.add("backward_launch", data["backward_launch_us"])
            say(f"recorded launch {data['recorded_us']:.2f} µs, its backward "
                f"{data['backward_launch_us']:.2f} µs")
        if "recorded_error" in data:
            v.errors["recorded"] = v.errors["backward_launch"] = data["recorded_error"]
            say(f"recorded launch failed: {data['recorded_error']}")

    def measure_throughput(self, v: Variant, cache: Path, say: Callable[[str], None]) -> None:
        """ms per launch (cloth: per step) of every kernel, at the default thread count."""
        data, err = self.child(v, "throughput", cache)
        v.extra["num_threads"] = (data or {}).get("num_threads")
        for name in KERNELS:
            k = (data or {}).get("kernels", {}).get(name, {"error": err})
            if "error" in k:
                v.errors[name] = k["error"]
                say(f"{name} failed: {k['error']}")
                continue
            v.samples[name] = [k["ms"]]
            v.extra.setdefault("runs_ms", {})[name] = k["runs_ms"]
            v.extra.setdefault("checksum", {})[name] = k["checksum"]
            say(f"{name} ({k['size']:,}): {k['ms']:.3f} ms")

    def measure_backward(self, v: Variant, cache: Path, say: Callable[[str], None]) -> None:
        """Forward on a tape + tape.backward of every kernel; saves the input gradients."""
        self.grads_dir(v).mkdir(exist_ok=True)
        data, err = self.child(v, "backward", cache)
        for name in KERNELS:
            k = (data or {}).get("backward", {}).get(name, {"error": err})
            if "error" in k:
                for metric in ("fwd", "bwd", "fwdbwd"):
                    v.errors[f"{metric}:{name}"] = k["error"]
                say(f"{name} backward failed: {k['error']}")
                continue
            for metric in ("fwd", "bwd", "fwdbwd"):
                v.samples[f"{metric}:{name}"] = k[f"{metric}_ms"]
            v.extra.setdefault("grads", {})[name] = k["grads"]
            v.extra.setdefault("first_fwdbwd_s", {})[name] = k["first_s"]
            say(
                f"{name} ({k['size']:,}): backward {v.value('bwd:' + name):.2f} ms, "
                f"forward on tape {v.value('fwd:' + name):.2f} ms "
                f"(median of {len(k['bwd_ms'])})"
            )

    def measure_scaling(self, v: Variant, cache: Path, say: Callable[[str], None]) -> None:
        """Forward ms of every kernel with GRADLOOM_NUM_THREADS = 1 and = 2: the two alternate
        over SCALING_ROUNDS pairs of children (quick: 2), median over the rounds, so that a
        passing load spike hits both thread counts alike."""
        rounds = 2 if self.args.quick else SCALING_ROUNDS
        for _ in range(rounds):
            for threads in SCALING_THREADS:
                data, err = self.child(v, "throughput", cache, KERNELS, threads)
                self.add_kernels(v, data, err, f"t{threads}:")
        for name in KERNELS:
            t1, t2 = (v.value(f"t{n}:{name}") for n in SCALING_THREADS)
            if t1 and t2:
                say(f"{name}: {t1:.3f} ms on 1 thread, {t2:.3f} ms on 2 (median of {rounds})")

    def add_kernels(self, v: Variant, data: dict[str, Any] | None, err: str,
                    prefix: str) -> None:
        """One throughput child's ms per kernel, as samples of metrics prefix + kernel."""
        for name in KERNELS:
            k = (data or {}).get("kernels", {}).get(name, {"error": err})
            metric = prefix + name
            if "error" in k:
                v.errors[metric] = k["error"]
                continue
            v.add(metric, k["ms"])
            v.extra.setdefault("runs_ms", {}).setdefault(metric, []).append(k["runs_ms"])

    def measure_busy(self, variants: dict[str, Variant]) -> None:
        """The throughput children again while another process keeps one core busy (`python -c
        "while True: pass"`): gradloom with 1 and with 2 threads and warp, in turn, over
        BUSY_ROUNDS rounds (quick: 2). Metrics busy:t1:<kernel>, busy:t2:<kernel> (gradloom)
        and busy:<kernel> (warp)."""
        rounds = 2 if self.args.quick else BUSY_ROUNDS
        runs = [(v, threads) for v in variants.values() if v.full and v.name in self.caches
                for threads in (SCALING_THREADS if v.backend == "gradloom" else (None,))]
        if not runs:
            return
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.2)
            for r in range(rounds):
                for v, threads in runs:
                    data, err = self.child(v, "throughput", self.caches[v.name], KERNELS, threads)
                    self.add_kernels(v, data, err, "busy:" + (f"t{threads}:" if threads else ""))
                print(f"  [busy core] round {r + 1} of {rounds} done", flush=True)
        finally:
            spinner.kill()
            spinner.wait()
