"""Child side of the benchmark: one measurement task per fresh process, result printed as JSON.

`bench_core.py --child TASK` lands in `child_main`: it imports and configures the framework (timed:
"import + init"), runs TASK and prints one line `MARK + json`. numpy is imported inside the
functions, after the framework, so that the import time includes the numpy import that both
frameworks pay. The `copy` task imports numpy alone (the copy-bandwidth reference).
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from specs import (
    BWD_BUDGET_S,
    BWD_MAX_REPS,
    COPY_BYTES,
    COPY_REPS,
    FULL,
    KERNELS,
    MARK,
    QUICK,
    SMALL,
)

TASKS = ["cold", "launch", "throughput", "backward", "copy"]
WARMUP_LAUNCHES = 1000  # launch overhead: untimed launches before the timed batches
BATCHES = 5


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


# the warm start: a `python -c` child that imports, defines the kernels and launches each once
WARM_CODE = """\
import time
t0 = time.perf_counter()
import json, sys
sys.path[:0] = [{kdir!r}, {here!r}]
{setup}
import bench_kernels as k
cases = k.all_cases({sizes!r})
for case in cases.values():
    case.launch()
t1 = time.perf_counter()
print({mark!r} + json.dumps({{"in_process_s": t1 - t0}}))
"""


def sizes_for(args: argparse.Namespace) -> dict[str, int]:
    """The kernels this child measures (--kernels, default all) at the run's sizes."""
    sizes = QUICK if args.quick else FULL
    names = args.kernels.split(",") if args.kernels else KERNELS
    return {name: sizes[name] for name in names}


def child_main(args: argparse.Namespace) -> None:
    """Run one task (args.child) and print its result as MARK + JSON."""
    if args.child == "copy":
        print(MARK + json.dumps(copy_bandwidth()), flush=True)
        return
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
    tasks = {
        "cold": task_cold,
        "launch": task_launch,
        "throughput": task_throughput,
        "backward": task_backward,
    }
    out.update(tasks[args.child](wp, args, sync))
    print(MARK + json.dumps(out), flush=True)


def task_cold(wp: Any, args: argparse.Namespace, sync: Any) -> dict[str, Any]:
    """Define the kernel module and launch each of its kernels once on SMALL sizes (compile +
    load; Warp compiles the whole module at the first launch, gradloom kernel by kernel)."""
    t1 = time.perf_counter()
    import bench_kernels as k

    define_s = time.perf_counter() - t1
    cases = k.all_cases(SMALL)
    errors, first = {}, {}
    t2 = time.perf_counter()
    for name, case in cases.items():
        try:
            case.launch()
        except Exception as e:
            errors[name] = f"{type(e).__name__}: {e}"
        first[name] = time.perf_counter() - t2
    sync()
    compile_s = time.perf_counter() - t2
    return {"define_s": define_s, "compile_s": compile_s, "first_launch_s": first, "errors": errors}


def time_batches(fn: Any, per_batch: int, sync: Any) -> list[float]:
    """µs per call of fn, for BATCHES batches of per_batch calls."""
    batches = []
    for _ in range(BATCHES):
        t = time.perf_counter()
        for _ in range(per_batch):
            fn()
        sync()
        batches.append((time.perf_counter() - t) / per_batch * 1e6)
    return batches


def task_launch(wp: Any, args: argparse.Namespace, sync: Any) -> dict[str, Any]:
    """µs per wp.launch of `bump` (dim=1), then µs per cmd.launch() of a recorded launch."""
    import bench_launch

    per_batch = max(args.launches // BATCHES, 1)
    expected = WARMUP_LAUNCHES + BATCHES * per_batch
    a = wp.zeros(1, dtype=float, device="cpu")

    def plain() -> None:
        wp.launch(bench_launch.bump, dim=1, inputs=[a], device="cpu")

    for _ in range(WARMUP_LAUNCHES):
        plain()
    batches = time_batches(plain, per_batch, sync)
    out: dict[str, Any] = {"launch_us": statistics.median(batches), "launch_us_batches": batches}
    out["value_ok"] = float(a.numpy()[0]) == expected
    try:
        b = wp.zeros(1, dtype=float, device="cpu")
        cmd = wp.launch(bench_launch.bump, dim=1, inputs=[b], device="cpu", record_cmd=True)
        for _ in range(WARMUP_LAUNCHES):
            cmd.launch()
        batches = time_batches(cmd.launch, per_batch, sync)
        out.update(prepared_us=statistics.median(batches), prepared_us_batches=batches)
        value = float(b.numpy()[0])  # Warp: record_cmd=True records without launching
        if value != expected:
            out["prepared_error"] = f"wrong result: a[0] = {value:g}, expected {expected}"
    except Exception as e:
        out["prepared_error"] = f"{type(e).__name__}: {e}"
    try:
        out.update(time_recorded(wp, bench_launch.double, per_batch, sync))
    except Exception as e:
        out["recorded_error"] = f"{type(e).__name__}: {e}"
    return out


def time_recorded(wp: Any, kernel: Any, per_batch: int, sync: Any) -> dict[str, Any]:
    """µs per launch of `kernel` (two arrays) recorded on a Tape, and per launch of that tape's
    backward (a differentiable simulation records every substep's launches)."""
    x = wp.ones(1, dtype=float, device="cpu", requires_grad=True)
    y = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)

    def recorded() -> None:
        wp.launch(kernel, dim=1, inputs=[x, y], device="cpu")

    tape = wp.Tape()
    with tape:
        for _ in range(WARMUP_LAUNCHES):
            recorded()
        batches = time_batches(recorded, per_batch, sync)
    launches = WARMUP_LAUNCHES + BATCHES * per_batch
    t = time.perf_counter()
    tape.backward(grads={y: wp.ones(1, dtype=float, device="cpu")})
    sync()
    backward_us = (time.perf_counter() - t) / launches * 1e6
    return {"recorded_us": statistics.median(batches), "recorded_us_batches": batches,
            "backward_launch_us": backward_us}


def time_case(case: Any, runs: int, sync: Any) -> dict[str, Any]:
    """Warm-up launch and checksum, then `runs` runs of enough launches to last >= 20 ms."""
    case.launch()  # compiles or loads from the cache; the checksum is of one launch
    sync()
    check = case.checksum()
    t = time.perf_counter()
    case.launch()
    sync()
    # each run averages enough launches to last >= 20 ms, which steadies short kernels
    reps = max(1, round(0.02 / max(time.perf_counter() - t, 1e-6)))
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        for _ in range(reps):
            case.launch()
        sync()
        times.append((time.perf_counter() - t) / reps * 1e3)
    return {
        "ms": statistics.median(times),
        "runs_ms": times,
        "checksum": check,
        "launches_per_run": reps,
    }


def task_throughput(wp: Any, args: argparse.Namespace, sync: Any) -> dict[str, Any]:
    """ms per launch (cloth: per step, two launches) of each kernel at the run's sizes."""
    import bench_kernels as k

    sizes = sizes_for(args)
    res: dict[str, Any] = {}
    for name, case in k.make_cases(sizes).items():
        try:
            res[name] = {**time_case(case, args.runs, sync), "size": sizes[name]}
        except Exception as e:
            res[name] = {"error": f"{type(e).__name__}: {e}"}
    threads = getattr(getattr(wp, "config", None), "num_threads", None)
    return {"kernels": res, "num_threads": threads if isinstance(threads, int) else None}


def task_backward(wp: Any, args: argparse.Namespace, sync: Any) -> dict[str, Any]:
    """Forward on a tape + tape.backward of every kernel; input gradients saved for the parent."""
    import bench_kernels as k

    res = {}
    for name, size in sizes_for(args).items():
        try:
            res[name] = time_backward(k, name, size, args, sync)
        except Exception as e:
            res[name] = {"error": f"{type(e).__name__}: {e}"}
    return {"backward": res}


def time_backward(
    k: Any, name: str, size: int, args: argparse.Namespace, sync: Any
) -> dict[str, Any]:
    """Time one kernel's forward on a wp.Tape and tape.backward; then, on fresh inputs, one
    forward + backward whose input gradients are saved to args.grads for the parent to compare."""
    import numpy as np
    from host_data import grad_data

    data = grad_data(name, size)
    case = k.make_grad_case(name, data)

    def once() -> tuple[float, float]:
        t0 = time.perf_counter()
        tape = case.forward_on_tape()
        sync()
        t1 = time.perf_counter()
        case.backward(tape)
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
    case.backward(case.forward_on_tape())
    sync()
    saved = {}
    for key, array in case.wrt.items():
        path = Path(args.grads) / f"{name}-{key}.npy"
        np.save(path, array.grad.numpy())
        saved[key] = str(path)
    fwdbwd = [f + b for f, b in zip(fwd, bwd)]
    return dict(fwd_ms=fwd, bwd_ms=bwd, fwdbwd_ms=fwdbwd, first_s=first, size=size, grads=saved)


def copy_bandwidth() -> dict[str, Any]:
    """numpy's copy bandwidth: np.copyto(dst, src) on two float32 arrays of COPY_BYTES each;
    bytes moved per copy = read + write = 2 * COPY_BYTES; GB/s = 1e9 bytes per second."""
    import numpy as np

    src = np.random.default_rng(0).random(COPY_BYTES // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # first touch of dst
    times = []
    for _ in range(COPY_REPS):
        t = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t)
    gbs = [2 * src.nbytes / t / 1e9 for t in times]
    return {"gbs": statistics.median(gbs), "gbs_runs": gbs, "bytes_per_copy": 2 * src.nbytes}
