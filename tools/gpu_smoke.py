"""GPU smoke run: everything to run first on a machine with an NVIDIA GPU, in one command.

    python3 tools/gpu_smoke.py            # from the repository root, on the GPU machine

It prints the environment (versions, libdevice, the devices gradloom sees), runs the CUDA tests
(tests/test_cuda_runtime.py, on the real device and against the fake driver; CI already
assembles every kernel's PTX with ptxas: tests/test_ptx.py),
then a few measurements (launch overhead, copy bandwidth, one adjoint against finite
differences), and ends with a summary: every test that failed or was skipped on the GPU, and
what was measured. The exit status is 1 if a test failed. With $OUT set (an output folder), the
report is also written to $OUT/gpu_smoke.txt and pytest's log to $OUT/gpu_smoke_pytest.txt.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    REPORT.append(line)


def environment() -> bool:
    """Print versions and devices; False if gradloom cannot run CUDA here."""
    say(f"python {sys.version.split()[0]} at {sys.executable}")
    for name in ("numpy", "llvmlite", "cuda.bindings", "pytest"):
        try:
            mod = importlib.import_module(name)
            say(f"{name:14s} {getattr(mod, '__version__', '?')}")
        except ImportError as exc:
            say(f"{name:14s} MISSING ({exc}): carry it as a wheel (.library/device/README.md)")
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=60)
        say(f"nvidia-smi     {smi.stdout.strip() or smi.stderr.strip()}")
    except (OSError, subprocess.TimeoutExpired) as exc:
        say(f"nvidia-smi     not run: {exc}")
    import gradloom as wp
    from gradloom.codegen import nvptx
    from gradloom.runtime.cuda import driver as cuda_driver

    try:
        say(f"libdevice      {nvptx.libdevice_path()}")
    except nvptx.LibdeviceNotFound as exc:
        say(f"libdevice      MISSING: {exc}")
    if not wp.is_cuda_available():
        say(f"CUDA           NOT AVAILABLE: {cuda_driver.unavailable_reason()}")
        return False
    for dev in wp.get_cuda_devices():
        info = dev.info
        say(f"{dev.alias:14s} {info.name}, {info.sm}, {info.sm_count} SMs, "
            f"{info.total_memory / 2**30:.1f} GiB, memory pools: {info.mempool}")
    return True


def run_tests() -> int:
    """pytest over the CUDA tests; returns its exit status."""
    log = Path(os.environ.get("OUT", tempfile.gettempdir())) / "gpu_smoke_pytest.txt"
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider",
           "tests/test_cuda_runtime.py", "tests/test_cuda_tape.py", "tests/test_cuda_graph.py",
           "tests/test_cuda_interop.py", "tests/test_abi.py", "tests/test_array.py"]
    say(f"$ {' '.join(cmd[2:])}   (log: {log})")
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    log.write_text(r.stdout + r.stderr)
    lines = r.stdout.splitlines()
    for line in lines:  # failures, errors and skips (with a GPU, only the CPU-only checks skip)
        if line.startswith(("FAILED", "ERROR", "SKIPPED")):
            say("  " + line)
    say("  " + (lines[-1] if lines else r.stderr.strip()[-300:])
        + f"  ({time.perf_counter() - t0:.0f} s)")
    return r.returncode


def measure() -> None:
    """Launch overhead, copy bandwidth and one adjoint, on cuda:0."""
    import numpy as np

    import gradloom as wp

    @wp.kernel
    def axpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    @wp.kernel
    def powsum(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        s = wp.float64(0.0)
        for _k in range(n):
            s = s * x[i] + wp.sin(x[i])
        y[i] = s

    n = 1 << 24
    x = wp.array(np.ones(n, np.float32), device="cuda")
    y = wp.zeros(n, device="cuda")
    t0 = time.perf_counter()
    wp.launch(axpy, n, inputs=[2.0, x, y], device="cuda")  # compiles (or loads) the PTX
    wp.synchronize()
    say(f"first launch (compile or cache + module load): {time.perf_counter() - t0:.3f} s")
    ok = bool(np.all(y.numpy() == 2.0))
    say(f"axpy over 2^24 elements correct: {ok}")
    small_x, small_y = x[:256], y[:256]
    for label, sync in (("queued", False), ("with synchronize", True)):
        reps = 2000
        t0 = time.perf_counter()
        for _ in range(reps):
            wp.launch(axpy, 256, inputs=[1.0, small_x, small_y], device="cuda")
            if sync:
                wp.synchronize_device("cuda:0")
        wp.synchronize()
        say(f"launch overhead, {label}: {(time.perf_counter() - t0) / reps * 1e6:.1f} us")
    big = np.ones(n, np.float32)
    for label, fn in (("host->device", lambda: x.assign(big)), ("device->host", x.numpy),
                      ("device->device", lambda: wp.copy(y, x))):
        fn()
        wp.synchronize()
        t0 = time.perf_counter()
        for _ in range(5):
            fn()
        wp.synchronize()
        say(f"copy {label}: {5 * 4 * n / (time.perf_counter() - t0) / 1e9:.1f} GB/s")
    rng = np.random.default_rng(0)
    xs, trips, eps = rng.uniform(-0.9, 0.9, 64), 50, 1e-6
    dx = wp.array(xs, dtype=wp.float64, device="cuda", requires_grad=True)
    dy = wp.zeros(64, dtype=wp.float64, device="cuda", requires_grad=True)
    wp.launch(powsum, 64, inputs=[dx, trips, dy], device="cuda")
    dy.grad.fill_(1.0)
    wp.launch(powsum, 64, inputs=[dx, trips, dy], device="cuda", adjoint=True)

    def f(v: np.ndarray) -> np.ndarray:
        out = wp.zeros(64, dtype=wp.float64, device="cuda")
        wp.launch(powsum, 64, inputs=[wp.array(v, dtype=wp.float64, device="cuda"), trips,
                                       out], device="cuda")
        return out.numpy()

    fd = (f(xs + eps) - f(xs - eps)) / (2 * eps)
    err = float(np.max(np.abs(dx.grad.numpy() - fd) / np.maximum(1.0, np.abs(fd))))
    say(f"adjoint with a {trips}-trip loop (stack grows) vs central differences: max rel "
        f"error {err:.2e} ({'ok' if err < 1e-5 else 'WRONG'})")


def main() -> int:
    os.environ.setdefault("GRADLOOM_CACHE_DIR", tempfile.mkdtemp(prefix="glcache-gpu-"))
    sys.path.insert(0, str(ROOT))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    say("== environment")
    have_cuda = environment()
    say("== tests")
    status = run_tests()
    if have_cuda:
        say("== measurements (cuda:0)")
        try:
            measure()
        except Exception as exc:  # report, do not hide the test summary
            say(f"measurement failed: {type(exc).__name__}: {exc}")
            status = status or 1
    out = os.environ.get("OUT")
    if out:
        (Path(out) / "gpu_smoke.txt").write_text("\n".join(REPORT) + "\n")
    say(f"== exit status {status}")
    return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main())
