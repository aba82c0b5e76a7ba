"""Time gradloom against warp-lang on the same kernels, each side in its own fresh processes.

    python benchmarks/bench_core.py [--quick] [--only warp|gradloom] [--threads N]

The kernels are written once, as Warp-API source text (KERNELS_SRC), and written to a temporary
directory twice: once with `import warp as wp`, once with `import gradloom as wp`. Every
measurement runs in a child process (this script with --child, or a tiny `python -c` for the warm
start) so that the two frameworks never share a process. Besides the forward measurements, it
times forward + `tape.backward` on a `wp.Tape` and checks that both sides' input gradients agree
(with a float64 finite difference at the worst element). See benchmarks/README.md.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MARK = "BENCH_JSON "

# ---- the kernels: Warp-API source, `__BACKEND__` becomes `warp` or `gradloom` -------------------

KERNELS_SRC = '''\
import numpy as np
import __BACKEND__ as wp


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), g: wp.vec3, dt: float):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt
    v[i] = v[i] + g * dt


@wp.kernel
def nbody(pos: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float),
          acc: wp.array(dtype=wp.vec3), n: int, eps2: float):
    i = wp.tid()
    p = pos[i]
    a = wp.vec3(0.0, 0.0, 0.0)
    for j in range(n):
        d = pos[j] - p
        inv_r = 1.0 / wp.sqrt(wp.dot(d, d) + eps2)
        a = a + d * (mass[j] * inv_r * inv_r * inv_r)
    acc[i] = a


@wp.kernel
def neo_hookean(F: wp.array(dtype=wp.mat33), mu: float, lam: float,
                energy: wp.array(dtype=float)):
    i = wp.tid()
    f = F[i]
    log_j = wp.log(wp.determinant(f))
    e = 0.5 * mu * (wp.trace(wp.transpose(f) @ f) - 3.0) - mu * log_j + 0.5 * lam * log_j * log_j
    wp.atomic_add(energy, 0, e)


@wp.kernel
def tiny(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] + 1.0


def make_cases(sizes):
    """name -> (kernel, dim, inputs, index of the output among inputs)."""
    rng = np.random.default_rng(0)

    def arr(values, dtype=float):
        return wp.array(np.asarray(values, dtype=np.float32), dtype=dtype, device="cpu")

    def zeros(n, dtype=float):
        return wp.zeros(n, dtype=dtype, device="cpu")

    n = sizes["saxpy"]
    cases = {"saxpy": (saxpy, n, [2.0, arr(rng.random(n)), arr(rng.random(n))], 2)}
    n = sizes["integrate"]
    x, v = arr(rng.random((n, 3)), wp.vec3), arr(rng.random((n, 3)), wp.vec3)
    cases["integrate"] = (integrate, n, [x, v, wp.vec3(0.0, -9.8, 0.0), 0.001], 0)
    n = sizes["nbody"]
    pos, mass = arr(rng.random((n, 3)), wp.vec3), arr(rng.random(n) + 0.5)
    cases["nbody"] = (nbody, n, [pos, mass, zeros(n, wp.vec3), n, 0.01], 2)
    n = sizes["neo_hookean"]
    F = arr(np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3)), wp.mat33)
    cases["neo_hookean"] = (neo_hookean, n, [F, 1.0, 10.0, zeros(1)], 3)
    n = sizes["tiny"]
    cases["tiny"] = (tiny, n, [arr(rng.random(n)), zeros(n)], 1)
    return cases


def launch(case):
    kernel, dim, inputs, _ = case
    wp.launch(kernel, dim=dim, inputs=inputs, device="cpu")


def checksum(case):
    out = case[2][case[3]].numpy()
    return float(np.abs(out.astype(np.float64)).sum())


# ---- backward: the same kernels and sizes, every float array with requires_grad=True ----------


def make_grad_case(name, data):
    """One backward case from numpy data (grad_data() in bench_core.py, identical on both sides):
    kernel, dim, inputs, wrt (indices of the inputs whose gradients are compared), seeds
    ({input index: seed array} for tape.backward(grads=...)) and loss (index of a one-element
    loss array for tape.backward(loss=...), or None)."""

    def arr(key, dtype=float, grad=True):
        return wp.array(data[key], dtype=dtype, device="cpu", requires_grad=grad)

    def case(kernel, inputs, wrt, seeds=None, loss=None):
        return dict(kernel=kernel, dim=int(data["n"]), inputs=inputs, wrt=wrt,
                    seeds=seeds or {}, loss=loss)

    if name == "saxpy":
        return case(saxpy, [float(data["a"]), arr("x"), arr("y")], wrt={1: "x", 2: "y"},
                    seeds={2: arr("seed_y", grad=False)})
    if name == "integrate":
        g = wp.vec3(*(float(c) for c in data["g"]))
        return case(integrate, [arr("x", wp.vec3), arr("v", wp.vec3), g, float(data["dt"])],
                    wrt={0: "x", 1: "v"},
                    seeds={0: arr("seed_x", wp.vec3, False), 1: arr("seed_v", wp.vec3, False)})
    if name == "nbody":
        inputs = [arr("pos", wp.vec3), arr("mass"), arr("acc", wp.vec3), int(data["n"]),
                  float(data["eps2"])]
        return case(nbody, inputs, wrt={0: "pos", 1: "mass"},
                    seeds={2: arr("seed_acc", wp.vec3, False)})
    if name == "neo_hookean":
        inputs = [arr("F", wp.mat33), float(data["mu"]), float(data["lam"]), arr("energy")]
        return case(neo_hookean, inputs, wrt={0: "F"}, loss=3)
    if name == "tiny":
        return case(tiny, [arr("x"), arr("y")], wrt={0: "x"},
                    seeds={1: arr("seed_y", grad=False)})
    raise KeyError(name)


def forward_on_tape(case):
    """A new wp.Tape with the case's forward launch recorded on it."""
    tape = wp.Tape()
    with tape:
        wp.launch(case["kernel"], dim=case["dim"], inputs=case["inputs"], device="cpu")
    return tape


def backward(case, tape):
    if case["loss"] is not None:
        tape.backward(loss=case["inputs"][case["loss"]])
    else:
        tape.backward(grads={case["inputs"][i]: s for i, s in case["seeds"].items()})
'''

LAUNCH_SRC = """\
import __BACKEND__ as wp


@wp.kernel
def bump(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0
"""

KERNELS = ["saxpy", "integrate", "nbody", "neo_hookean", "tiny"]
SMALL = dict.fromkeys(KERNELS, 64)
FULL = {
    "saxpy": 4_000_000,
    "integrate": 1_000_000,
    "nbody": 4096,
    "neo_hookean": 1_000_000,
    "tiny": 4_000_000,
}
QUICK = {
    "saxpy": 1_000_000,
    "integrate": 250_000,
    "nbody": 1024,
    "neo_hookean": 200_000,
    "tiny": 1_000_000,
}
# backward: each repeat is one forward on a new tape plus tape.backward; at least --runs repeats,
# more (up to BWD_MAX_REPS) while they fit in BWD_BUDGET_S per kernel
BWD_BUDGET_S = 1.0
BWD_MAX_REPS = 25
# input gradients agree when |g - w| <= GRAD_RTOL |w| + GRAD_ATOL max|w| elementwise (float32
# sums in different orders; n-body sums 4096 terms of both signs per element)
GRAD_RTOL, GRAD_ATOL = 1e-3, 1e-4


# numpy is imported inside the functions that need it, never at the top of this file: a child's
# "import + init" time must include the numpy import that `import warp`/`import gradloom` pay.


def grad_data(name: str, n: int) -> dict[str, Any]:
    """The float32 inputs and the seeds of one kernel's backward case (same as the forward
    cases' distributions; seeds drawn from [0.5, 1.5) so that no symmetry cancels in the sums)."""
    import numpy as np

    rng = np.random.default_rng(KERNELS.index(name) + 1)

    def f32(a: Any) -> Any:
        return np.asarray(a, dtype=np.float32)

    def seed(*shape: int) -> Any:
        return f32(rng.uniform(0.5, 1.5, shape))

    d: dict[str, Any] = {"n": n}
    if name == "saxpy":
        d.update(a=2.0, x=f32(rng.random(n)), y=f32(rng.random(n)), seed_y=seed(n))
    elif name == "integrate":
        d.update(
            x=f32(rng.random((n, 3))),
            v=f32(rng.random((n, 3))),
            g=f32([0.0, -9.8, 0.0]),
            dt=0.001,
            seed_x=seed(n, 3),
            seed_v=seed(n, 3),
        )
    elif name == "nbody":
        d.update(
            pos=f32(rng.random((n, 3))),
            mass=f32(rng.random(n) + 0.5),
            acc=f32(np.zeros((n, 3))),
            eps2=0.01,
            seed_acc=seed(n, 3),
        )
    elif name == "neo_hookean":
        d.update(
            F=f32(np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3))),
            mu=1.0,
            lam=10.0,
            energy=f32(np.zeros(1)),
        )
    elif name == "tiny":
        d.update(x=f32(rng.random(n)), y=f32(np.zeros(n)), seed_y=seed(n))
    return d


def loss_part(name: str, d: dict[str, Any], k: int) -> float:
    """In float64: the part of the loss L (Σ seed·output; neo_hookean: the energy) that depends
    on row k of the inputs. For a finite difference in one element of row k."""
    import numpy as np

    f64 = {key: np.asarray(v, dtype=np.float64) for key, v in d.items()}
    if name == "saxpy":
        return float(f64["seed_y"][k] * (f64["a"] * f64["x"][k] + f64["y"][k]))
    if name == "integrate":
        x, v, dt = f64["x"][k], f64["v"][k], f64["dt"]
        return float(f64["seed_x"][k] @ (x + v * dt) + f64["seed_v"][k] @ (v + f64["g"] * dt))
    if name == "nbody":
        pos, m, s, eps2 = f64["pos"], f64["mass"], f64["seed_acc"], f64["eps2"]
        dk = pos - pos[k]  # pos_j - pos_k for every j
        inv3 = (1.0 / np.sqrt((dk * dk).sum(axis=1) + eps2)) ** 3
        own = s[k] @ (m[:, None] * dk * inv3[:, None]).sum(axis=0)  # s_k · acc_k
        others = np.arange(len(pos)) != k  # s_i · (body k's pull on body i), i != k
        pulled = (s[others] * (m[k] * -dk[others] * inv3[others, None])).sum()
        return float(own + pulled)
    if name == "neo_hookean":
        F, mu, lam = f64["F"][k], f64["mu"], f64["lam"]
        log_j = np.log(np.linalg.det(F))
        return float(0.5 * mu * (np.trace(F.T @ F) - 3.0) - mu * log_j + 0.5 * lam * log_j**2)
    if name == "tiny":
        return float(f64["seed_y"][k] * (f64["x"][k] + 1.0))
    raise KeyError(name)


def fd_gradient(name: str, d: dict[str, Any], key: str, flat: int) -> float:
    """Central finite difference, in float64, of L with respect to element `flat` of input key."""
    import numpy as np

    k = flat // (d[key].size // d[key].shape[0])
    x = np.asarray(d[key], dtype=np.float64)
    h = 1e-6 * max(1.0, abs(float(x.flat[flat])))
    values = []
    for step in (h, -h):
        xs = x.copy()
        xs.flat[flat] += step
        values.append(loss_part(name, {**d, key: xs}, k))
    return (values[0] - values[1]) / (2 * h)


def setup_code(backend: str, cache: str, backward: bool) -> str:
    """Python source that imports the backend as `wp` and configures it (before any kernel)."""
    if backend == "warp":
        return (
            "import warp as wp\n"
            "wp.config.quiet = True\n"
            "wp.config.log_level = getattr(wp, 'LOG_WARNING', 30)\n"
            f"wp.config.kernel_cache_dir = {cache!r}\n"
            f"wp.config.enable_backward = {backward!r}\n"
            "wp.init()\n"
        )
    # gradloom reads GRADLOOM_CACHE_DIR / GRADLOOM_NUM_THREADS from the environment at import
    return "import gradloom as wp\nif hasattr(wp, 'init'):\n    wp.init()\n"


WARM_CODE = """\
import time
t0 = time.perf_counter()
import json, sys
sys.path.insert(0, {kdir!r})
{setup}
import bench_kernels as k
cases = k.make_cases({sizes!r})
for case in cases.values():
    k.launch(case)
t1 = time.perf_counter()
print({mark!r} + json.dumps({{"in_process_s": t1 - t0}}))
"""

# ---- child side -----------------------------------------------------------------------------


def child_main(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    ns: dict[str, Any] = {}
    exec(setup_code(args.backend, args.cache, not args.no_backward), ns)
    wp = ns["wp"]
    out: dict[str, Any] = {
        "import_s": time.perf_counter() - t0,
        "version": str(getattr(wp, "__version__", "?")),
    }
    sys.path.insert(0, args.kdir)
    sync = getattr(wp, "synchronize", lambda: None)
    if args.child == "cold":
        t1 = time.perf_counter()
        import bench_kernels as k

        out["define_s"] = time.perf_counter() - t1
        cases = k.make_cases(SMALL)
        errors, first = {}, {}
        t2 = time.perf_counter()
        for name, case in cases.items():
            try:
                k.launch(case)
            except Exception as e:
                errors[name] = f"{type(e).__name__}: {e}"
            first[name] = time.perf_counter() - t2
        sync()
        out.update(compile_s=time.perf_counter() - t2, first_launch_s=first, errors=errors)
    elif args.child == "launch":
        import bench_launch

        a = wp.zeros(1, dtype=float, device="cpu")
        for _ in range(1000):
            wp.launch(bench_launch.bump, dim=1, inputs=[a], device="cpu")
        batches, per_batch = [], max(args.launches // 5, 1)
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(per_batch):
                wp.launch(bench_launch.bump, dim=1, inputs=[a], device="cpu")
            sync()
            batches.append((time.perf_counter() - t) / per_batch * 1e6)
        out["launch_us"] = statistics.median(batches)
        out["launch_us_batches"] = batches
        out["value_ok"] = float(a.numpy()[0]) == 1000 + 5 * per_batch
    elif args.child == "backward":
        import bench_kernels as k

        sizes = QUICK if args.quick else FULL
        res = {}
        for name in KERNELS:
            try:
                res[name] = time_backward(k, name, sizes[name], args, sync)
            except Exception as e:
                res[name] = {"error": f"{type(e).__name__}: {e}"}
        out["backward"] = res
    else:  # throughput
        import bench_kernels as k

        sizes = QUICK if args.quick else FULL
        cases = k.make_cases(sizes)
        res: dict[str, Any] = {}
        for name, case in cases.items():
            try:
                k.launch(case)  # compiles or loads from the cache; the checksum is of one launch
                sync()
                check = k.checksum(case)
                t = time.perf_counter()
                k.launch(case)
                sync()
                # each run averages enough launches to last >= 20 ms, which steadies short kernels
                reps = max(1, round(0.02 / max(time.perf_counter() - t, 1e-6)))
                times = []
                for _ in range(args.runs):
                    t = time.perf_counter()
                    for _ in range(reps):
                        k.launch(case)
                    sync()
                    times.append((time.perf_counter() - t) / reps * 1e3)
                res[name] = {
                    "ms": statistics.median(times),
                    "runs_ms": times,
                    "checksum": check,
                    "size": sizes[name],
                    "launches_per_run": reps,
                }
            except Exception as e:
                res[name] = {"error": f"{type(e).__name__}: {e}"}
        out["kernels"] = res
    print(MARK + json.dumps(out), flush=True)


def time_backward(
    k: Any, name: str, size: int, args: argparse.Namespace, sync: Any
) -> dict[str, Any]:
    """Time one kernel's forward on a wp.Tape and tape.backward; then, on fresh inputs, one
    forward + backward whose input gradients are saved to args.grads for the parent to compare."""
    import numpy as np

    data = grad_data(name, size)
    case = k.make_grad_case(name, data)

    def once() -> tuple[float, float]:
        t0 = time.perf_counter()
        tape = k.forward_on_tape(case)
        sync()
        t1 = time.perf_counter()
        k.backward(case, tape)
        sync()
        t2 = time.perf_counter()
        # zero the gradients, then drop the tape before the next forward (a live gradloom tape
        # would make the next launch save copies of the arrays it watches)
        tape.zero()
        del tape
        return t1 - t0, t2 - t1

    first = sum(once())  # compiles (gradloom: the adjoint) or loads from the cache
    est = sum(once())
    reps = max(args.runs, min(BWD_MAX_REPS, round(BWD_BUDGET_S / max(est, 1e-6))))
    fwd, bwd = [], []
    for _ in range(reps):
        f, b = once()
        fwd.append(f * 1e3)
        bwd.append(b * 1e3)
    del case

    case = k.make_grad_case(name, data)  # the inputs as grad_data made them
    tape = k.forward_on_tape(case)
    k.backward(case, tape)
    sync()
    saved = {}
    for i, key in case["wrt"].items():
        path = Path(args.grads) / f"{name}-{key}.npy"
        np.save(path, case["inputs"][i].grad.numpy())
        saved[key] = str(path)
    return {
        "fwd_ms": fwd,
        "bwd_ms": bwd,
        "fwdbwd_ms": [f + b for f, b in zip(fwd, bwd)],
        "first_s": first,
        "size": size,
        "grads": saved,
    }


# ---- parent side ----------------------------------------------------------------------------


@dataclass
class Variant:
    name: str  # column label
    backend: str  # "gradloom" or "warp"
    backward: bool
    full: bool  # also measure launch overhead and throughput
    samples: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, metric: str, value: float) -> None:
        self.samples.setdefault(metric, []).append(value)

    def value(self, metric: str) -> float | None:
        s = self.samples.get(metric)
        return statistics.median(s) if s else None


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
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="gradloom-bench-"))
        for backend in ("warp", "gradloom"):
            kdir = self.work / backend
            kdir.mkdir()
            (kdir / "bench_kernels.py").write_text(KERNELS_SRC.replace("__BACKEND__", backend))
            (kdir / "bench_launch.py").write_text(LAUNCH_SRC.replace("__BACKEND__", backend))

    def env(self, cache: Path) -> dict[str, str]:
        env = dict(os.environ)
        env["GRADLOOM_CACHE_DIR"] = str(cache)
        env["GRADLOOM_NUM_THREADS"] = str(self.args.threads)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        return env

    def child(self, v: Variant, task: str, cache: Path) -> tuple[dict[str, Any] | None, str]:
        argv = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            task,
            "--backend",
            v.backend,
            "--kdir",
            str(self.work / v.backend),
            "--cache",
            str(cache),
            "--runs",
            str(self.args.runs),
            "--launches",
            str(self.args.launches),
            "--grads",
            str(self.grads_dir(v)),
        ]
        argv += ["--quick"] * self.args.quick + ["--no-backward"] * (not v.backward)
        data, err, _ = run_child(argv, self.env(cache))
        return data, err

    def grads_dir(self, v: Variant) -> Path:
        return self.work / f"grads-{v.name}"

    def fresh_cache(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="cache-", dir=self.work))

    def measure(self, v: Variant) -> None:
        def say(msg: str) -> None:
            print(f"  [{v.name}] {msg}", flush=True)

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
                f"compile+load 5 kernels {data['compile_s']:.3f} s"
            )
        warm_cache = self.fresh_cache()
        data, err = self.child(v, "cold", warm_cache)  # fills the cache for the warm runs
        if data is None:
            v.errors["warm_wall"] = v.errors["warm_in"] = err
        else:
            setup = setup_code(v.backend, str(warm_cache), v.backward)
            code = WARM_CODE.format(
                kdir=str(self.work / v.backend), setup=setup, sizes=SMALL, mark=MARK
            )
            for _ in range(self.args.warm):
                data, err, wall = run_child([sys.executable, "-c", code], self.env(warm_cache))
                if data is None:
                    v.errors["warm_wall"] = v.errors["warm_in"] = err
                    break
                v.add("warm_wall", wall)
                v.add("warm_in", data["in_process_s"])
            if v.value("warm_wall") is not None:
                say(f"warm start {v.value('warm_wall'):.3f} s (process wall, median)")
        if not v.full:
            return
        data, err = self.child(v, "launch", warm_cache)
        if data is None:
            v.errors["launch"] = err
        else:
            v.add("launch", data["launch_us"])
            if not data["value_ok"]:
                v.errors["launch"] = "wrong result after the launches"
            say(f"launch overhead {data['launch_us']:.2f} µs")
        data, err = self.child(v, "throughput", warm_cache)
        for name in KERNELS:
            k = (data or {}).get("kernels", {}).get(name, {"error": err})
            if "error" in k:
                v.errors[name] = k["error"]
                continue
            v.add(name, k["ms"])
            v.extra.setdefault("checksum", {})[name] = k["checksum"]
            say(f"{name} ({k['size']:,}): {k['ms']:.2f} ms")
        self.grads_dir(v).mkdir(exist_ok=True)
        data, err = self.child(v, "backward", warm_cache)
        for name in KERNELS:
            k = (data or {}).get("backward", {}).get(name, {"error": err})
            if "error" in k:
                v.errors[f"bwd:{name}"] = v.errors[f"fwdbwd:{name}"] = k["error"]
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


# ---- report ---------------------------------------------------------------------------------

ROWS = [  # metric, label, unit, target
    ("import", "import + init", "s", ""),
    ("cold", "cold compile, 5 kernels", "s", "<=1/3 of warp fwd-only"),
    ("warm_wall", "warm start, process wall", "s", "<=0.3 s"),
    ("warm_in", "warm start, in-process", "s", ""),
    ("launch", "launch overhead", "µs", "<=1/2 of warp"),
    *[(k, k, "ms", ">= warp speed") for k in KERNELS],
]


def verdict(metric: str, g: float | None, ratio: float | None, ratio_fwd: float | None) -> str:
    if metric == "cold" and ratio_fwd is not None:
        return "met" if ratio_fwd <= 1 / 3 else "not met"
    if metric == "warm_wall" and g is not None:
        return "met" if g <= 0.3 else "not met"
    if metric == "launch" and ratio is not None:
        return "met" if ratio <= 0.5 else "not met"
    if metric in KERNELS and ratio is not None:
        return "met" if ratio <= 1.0 else "not met"
    return ""


def report(variants: dict[str, Variant], args: argparse.Namespace, sizes: dict[str, int]) -> None:
    g, w, wf = (variants.get(n) for n in ("gradloom", "warp", "warp-fwd"))

    def cell(v: Variant | None, metric: str) -> str:
        if v is None:
            return "-"
        if metric in v.errors:
            return "ERROR"
        x = v.value(metric)
        return "-" if x is None else (f"{x:.3f}" if x < 100 else f"{x:.1f}")

    def ratio(a: Variant | None, b: Variant | None, metric: str) -> float | None:
        x, y = (a.value(metric) if a else None), (b.value(metric) if b else None)
        return x / y if x is not None and y else None

    fmt = "{:<36}{:>10}{:>10}{:>10}{:>9}{:>9}  {:<24}{}"
    print()
    print(
        f"gradloom vs warp-lang {w.extra.get('version', '?') if w else '(not run)'}, CPU, "
        f"gradloom threads={args.threads}; medians; ratio = gradloom time / warp time"
    )
    print(fmt.format("", "gradloom", "warp", "warp", "g/warp", "g/warp", "target", ""))
    print(fmt.format("", "", "fwd+bwd", "fwd-only", "", "fwd-only", "", ""))
    for metric, label, unit, target in ROWS:
        if metric in KERNELS:
            label = f"{label} {sizes[metric]:,}"
        r, rf = ratio(g, w, metric), ratio(g, wf, metric)
        note = ""
        if metric in KERNELS and g and w and metric in g.extra.get("checksum", {}):
            cg, cw = g.extra["checksum"][metric], w.extra.get("checksum", {}).get(metric)
            if cw is not None:
                rel = abs(cg - cw) / max(abs(cw), 1e-30)
                note = "  outputs match" if rel < 1e-3 else f"  OUTPUTS DIFFER (rel {rel:.1e})"
        mark = verdict(metric, g.value(metric) if g else None, r, rf)
        print(
            fmt.format(
                f"{label} [{unit}]",
                cell(g, metric),
                cell(w, metric),
                cell(wf, metric),
                f"{r:.2f}" if r else "-",
                f"{rf:.2f}" if rf else "-",
                f"{target} {mark}".strip(),
                note,
            )
        )
    print(f"python startup alone (python -c pass): {args.startup_s:.3f} s")
    for v in variants.values():
        for metric, err in v.errors.items():
            print(f"error [{v.name}] {metric}: {err}")


def compare_grads(variants: dict[str, Variant], sizes: dict[str, int]) -> dict[str, Any]:
    """Per kernel and input: do gradloom's and Warp's gradients agree? At the element where they
    differ most (relative to the tolerance), a float64 finite difference says which is right."""
    import numpy as np

    g, w = variants.get("gradloom"), variants.get("warp")
    if g is None or w is None:
        return {}
    out: dict[str, Any] = {}
    for name in KERNELS:
        gp, wp_ = g.extra.get("grads", {}).get(name), w.extra.get("grads", {}).get(name)
        if not gp or not wp_:
            continue
        data = grad_data(name, sizes[name])
        res = {}
        for key in gp:
            a = np.load(gp[key]).astype(np.float64).reshape(-1)
            b = np.load(wp_[key]).astype(np.float64).reshape(-1)
            scale = float(np.abs(b).max()) or 1.0
            tol = GRAD_RTOL * np.abs(b) + GRAD_ATOL * scale
            excess = np.abs(a - b) / tol
            worst = int(np.nanargmax(np.where(np.isnan(excess), np.inf, excess)))
            fd = fd_gradient(name, data, key, worst)
            res[key] = {
                "match": bool(np.all(np.abs(a - b) <= tol)),
                "max_abs_diff": float(np.abs(a - b).max()),
                "max_abs_warp": scale,
                "elements": int(a.size),
                "worst_index": worst,
                "gradloom": float(a[worst]),
                "warp": float(b[worst]),
                "fd64": fd,
            }
        out[name] = res
    return out


def report_backward(
    variants: dict[str, Variant], sizes: dict[str, int], grads: dict[str, Any]
) -> None:
    g, w = variants.get("gradloom"), variants.get("warp")

    def val(v: Variant | None, metric: str) -> float | None:
        return v.value(metric) if v and metric not in v.errors else None

    def cell(v: Variant | None, metric: str) -> str:
        if v is not None and metric in v.errors:
            return "ERROR"
        x = val(v, metric)
        return "-" if x is None else (f"{x:.3f}" if x < 100 else f"{x:.1f}")

    def ratio(metric: str) -> str:
        x, y = val(g, metric), val(w, metric)
        return f"{x / y:.2f}" if x is not None and y else "-"

    print()
    print(
        "backward: the forward launch recorded on a new wp.Tape, then tape.backward (seeded "
        "outputs, or loss=energy); ms, medians over the repeats; ratio = gradloom / warp"
    )
    fmt = "{:<20}{:>9}{:>9}{:>7}  {:>9}{:>9}{:>7}  {:>9}{:>9}{:>7}  {:<14}{}"
    print(fmt.format("", "backward", "", "", "fwd+bwd", "", "", "tape fwd", "", "", "target", ""))
    print(
        fmt.format(
            "kernel",
            "gradloom",
            "warp",
            "g/w",
            "gradloom",
            "warp",
            "g/w",
            "gradloom",
            "warp",
            "g/w",
            "bwd <= 1.0",
            "input gradients",
        )
    )
    for name in KERNELS:
        x, y = val(g, f"bwd:{name}"), val(w, f"bwd:{name}")
        mark = "" if x is None or not y else ("met" if x / y <= 1.0 else "not met")
        checks = grads.get(name, {})
        agree = (
            ", ".join(f"{key} {'match' if c['match'] else 'DIFFER'}" for key, c in checks.items())
            or "-"
        )
        print(
            fmt.format(
                f"{name} {sizes[name]:,}",
                *(
                    x
                    for m in ("bwd", "fwdbwd", "fwd")
                    for x in (cell(g, f"{m}:{name}"), cell(w, f"{m}:{name}"), ratio(f"{m}:{name}"))
                ),
                mark,
                agree,
            )
        )
    if grads:
        print(
            f"gradients: agree when |g - w| <= {GRAD_RTOL:g}|w| + {GRAD_ATOL:g} max|w| everywhere; "
            "at the element where they differ most, a float64 central difference (FD) of the loss"
        )
        for name, checks in grads.items():
            for key, c in checks.items():
                verdict = "match" if c["match"] else "DIFFER"
                print(
                    f"  {name}.{key} ({c['elements']:,} values): {verdict}, max |g - w| = "
                    f"{c['max_abs_diff']:.3g} (max |w| = {c['max_abs_warp']:.3g}); at "
                    f"[{c['worst_index']}]: gradloom {c['gradloom']:.7g}, warp {c['warp']:.7g}, "
                    f"FD64 {c['fd64']:.7g}"
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", choices=["warp", "gradloom"], help="run one side only")
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    ap.add_argument("--threads", type=int, default=1, help="GRADLOOM_NUM_THREADS (default 1)")
    ap.add_argument("--cold", type=int, help="cold-compile runs per variant (default 3, quick 2)")
    ap.add_argument("--warm", type=int, help="warm-start runs per variant (default 5, quick 3)")
    ap.add_argument("--runs", type=int, help="timed launches per kernel (default 7, quick 3)")
    ap.add_argument("--launches", type=int, help="launches timed for the overhead (default 20000)")
    ap.add_argument(
        "--child", choices=["cold", "launch", "throughput", "backward"], help=argparse.SUPPRESS
    )
    ap.add_argument("--grads", help=argparse.SUPPRESS)
    ap.add_argument("--backend", help=argparse.SUPPRESS)
    ap.add_argument("--kdir", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    ap.add_argument("--no-backward", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    q = args.quick
    args.cold = args.cold or (2 if q else 3)
    args.warm = args.warm or (3 if q else 5)
    args.runs = args.runs or (3 if q else 7)
    args.launches = args.launches or (5000 if q else 20000)
    if args.child:
        child_main(args)
        return

    startup = [run_child([sys.executable, "-c", "pass"], dict(os.environ))[2] for _ in range(5)]
    args.startup_s = statistics.median(startup)
    variants: dict[str, Variant] = {}
    if args.only != "warp":
        variants["gradloom"] = Variant("gradloom", "gradloom", backward=False, full=True)
    if args.only != "gradloom":
        variants["warp"] = Variant("warp", "warp", backward=True, full=True)
        variants["warp-fwd"] = Variant("warp-fwd", "warp", backward=False, full=False)
    bench = Bench(args)
    print(f"benchmark work dir: {bench.work}")
    for v in variants.values():
        bench.measure(v)
    sizes = QUICK if q else FULL
    report(variants, args, sizes)
    grads = compare_grads(variants, sizes)
    report_backward(variants, sizes, grads)

    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"bench_core-{time.strftime('%Y%m%d-%H%M%S')}.json"
    meta = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "args": {k: v for k, v in vars(args).items() if not k.startswith(("child", "kdir"))},
        "sizes": sizes,
        "gradloom_env": {k: v for k, v in os.environ.items() if k.startswith("GRADLOOM_")},
    }
    doc = {
        "meta": meta,
        "grad_check": grads,
        "variants": {
            n: {
                "backend": v.backend,
                "backward": v.backward,
                "median": {m: v.value(m) for m in v.samples},
                "samples": v.samples,
                "errors": v.errors,
                "extra": v.extra,
            }
            for n, v in variants.items()
        },
    }
    path.write_text(json.dumps(doc, indent=1))
    print(f"results written to {path}")
    shutil.rmtree(bench.work, ignore_errors=True)


if __name__ == "__main__":
    main()
