"""Ctrl-C stops a running launch: SIGINT sent to a child process stuck in a runaway kernel makes it
raise KeyboardInterrupt within a second or so, and the process stays usable.

Each scenario is a child process (tests/test_interrupt.py's SCRIPT) that installs Python's
default SIGINT handler (a shell may start test processes with SIGINT ignored), compiles its
kernels, prints READY, and then runs the scenario's runaway launch; the parent sends SIGINT.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gradloom as wp
from gradloom.codegen import cpu
from gradloom.codegen.signals import POLL_TRIPS

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the native SIGINT handler is installed on Linux only")

SCRIPT = r"""
import json, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np
import gradloom as wp

scenario = sys.argv[1]
if scenario == "debug":
    wp.config.mode = "debug"


@wp.kernel
def spin(a: wp.array(dtype=float), n: int):
    i = wp.tid()
    x = float(0.0)
    while n > 0:  # never ends when n > 0
        x = x + 1.0
        a[i] = x


@wp.kernel
def nested(a: wp.array(dtype=float), n: int):
    i = wp.tid()
    for j in range(n):
        for k in range(n):
            a[i] = a[i] + float(j * k % 3)


@wp.kernel
def wide(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i % 4] = float(i % 7)


@wp.kernel
def add_one(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0


a = wp.zeros(4, dtype=float)
for k, args in ((spin, [a, 0]), (nested, [a, 1]), (wide, [a]), (add_one, [a])):
    wp.launch(k, 4, args)
a.zero_()
if scenario == "reinstalled":
    # someone (Jupyter, IPython) installs Python's handler again after gradloom's
    signal.signal(signal.SIGINT, signal.default_int_handler)
if scenario == "custom_handler":
    signal.signal(signal.SIGINT, lambda *_: print("HANDLER", flush=True))
print("READY", flush=True)
t0 = time.perf_counter()
out = {"scenario": scenario}
try:
    if scenario == "wide":
        wp.launch(wide, 10**13, [a])
    elif scenario == "nested":
        wp.launch(nested, 2, [a, 10**9])
    elif scenario == "tape":
        tape = wp.Tape()
        with tape:
            wp.launch(spin, 2, [a, 1])
    else:
        wp.launch(spin, 2, [a, 1])
    out["error"] = None
except KeyboardInterrupt as exc:
    out["error"] = "KeyboardInterrupt"
out["seconds"] = time.perf_counter() - t0
out["a_after"] = a.numpy().tolist()
b = wp.array(np.arange(4, dtype=np.float32))
wp.launch(add_one, 4, [b])
out["later_launch"] = b.numpy().tolist()
print(json.dumps(out), flush=True)
"""


def _default_sigint() -> None:
    """In the child: SIGINT at its default, as in a terminal. A shell starts background jobs
    with SIGINT ignored, which the child would inherit, and then Python (and gradloom) leave
    Ctrl-C ignored."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_scenario(tmp_path: Path, scenario: str, delay: float = 0.4) -> dict:
    script = tmp_path / "interrupt_script.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "GRADLOOM_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT),
           "GRADLOOM_NUM_THREADS": "2"}
    env.pop("GRADLOOM_MODE", None)
    proc = subprocess.Popen([sys.executable, str(script), scenario], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "READY", line + proc.stderr.read() if proc.stderr else line
        time.sleep(delay)
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        took = time.perf_counter() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    result = json.loads(lines[-1])
    result["after_signal"] = took
    result["stdout"] = out
    return result


@pytest.mark.parametrize("scenario", ["spin", "nested", "wide", "tape", "reinstalled"])
def test_sigint_stops_a_runaway_launch(tmp_path, scenario):
    r = run_scenario(tmp_path, scenario)
    assert r["error"] == "KeyboardInterrupt", r
    assert r["after_signal"] < 5.0, r  # the process answered at once, not at the launch's end
    assert r["later_launch"] == [1.0, 2.0, 3.0, 4.0]  # a stale interrupt stops nothing later


def test_release_mode_leaves_partial_results(tmp_path):
    r = run_scenario(tmp_path, "spin")
    # thread 0 had written (and never finished); thread 1, after it in the serial launch, had not
    assert r["a_after"][0] > 0 and r["a_after"][1] == 0, r


def test_debug_mode_restores_the_arrays_an_interrupted_launch_wrote(tmp_path):
    r = run_scenario(tmp_path, "debug")
    assert r["error"] == "KeyboardInterrupt", r
    assert r["a_after"] == [0.0, 0.0, 0.0, 0.0], r


def test_a_handler_that_does_not_raise_still_ends_the_launch(tmp_path):
    r = run_scenario(tmp_path, "custom_handler")
    assert "HANDLER" in r["stdout"]
    assert r["error"] == "KeyboardInterrupt", r


@wp.kernel
def scale_rows(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    for k in range(n):
        out[i * n + k] = a[i * n + k] * 2.0


def test_polls_leave_inner_loops_vectorised():
    text, _ = scale_rows._codegen("gl_test_scale_rows", False)
    assert "@gl_interrupts" in text and str(POLL_TRIPS) in text  # strips of POLL_TRIPS trips
    optimized = cpu.optimized_ir(text, 3)
    assert any(f"<{w} x float>" in optimized for w in (4, 8, 16)), optimized


# Strip-mined loops must compute exactly what the loops compute, across strip boundaries.
BIG = 3 * POLL_TRIPS + 17


@wp.kernel
def loop_shapes(out: wp.array(dtype=wp.int64), n: int, counter: wp.array(dtype=int)):
    t = wp.tid()
    acc = wp.int64(0)
    if t == 0:  # counted, up
        for k in range(n):
            acc += wp.int64(k % 7)
    elif t == 1:  # counted, down by 3
        for k in range(n, -5, -3):
            acc += wp.int64(k)
    elif t == 2:  # while with a pure condition
        k = int(0)
        while k * 2 < n:
            acc += wp.int64(k)
            k += 1
    elif t == 3:  # a condition with a side effect
        while wp.atomic_add(counter, 0, 1) < n:
            acc += wp.int64(1)
    elif t == 4:  # break and continue
        for k in range(n):
            if k % 5 == 0:
                continue
            if k > n - 10:
                break
            acc += wp.int64(1)
    elif t == 5:  # nested, inner longer than a strip
        for j in range(3):
            for _k in range(n):
                acc += wp.int64(j)
    elif t == 6:  # near the top of int32
        for k in range(2147483647 - 40000, 2147483647):
            acc += wp.int64(k) - wp.int64(2147483647 - 40000)
    elif t == 7:  # int64 induction variable, step 5
        for k in range(wp.int64(-3), wp.int64(n), wp.int64(5)):
            acc += k
    elif t == 8:  # no trips
        for _k in range(n, n):
            acc += wp.int64(1)
    out[t] = acc


def test_strip_mined_loops_compute_what_the_loops_compute():
    n = BIG
    out = wp.zeros(9, dtype=wp.int64)
    counter = wp.zeros(1, dtype=int)
    wp.launch(loop_shapes, 9, [out, n, counter])
    want = [sum(k % 7 for k in range(n)), sum(range(n, -5, -3)),
            sum(k for k in range((n + 1) // 2)), n,
            sum(1 for k in range(n) if k % 5 and k <= n - 10), 3 * n,
            40000 * 39999 // 2, sum(range(-3, n, 5)), 0]
    assert out.numpy().tolist() == want
    assert counter.numpy()[0] == n + 1


@wp.kernel
def long_sum(out: wp.array(dtype=float), n: int):
    s = float(0.0)
    for k in range(n):
        s += wp.sin(float(k))
    out[wp.tid()] = s


def test_ctrl_c_while_python_prepares_the_launch_stops_its_kernel(monkeypatch):
    """A SIGINT counted after the launch began but before its entry started (here: while the
    launch plans its split) must stop the kernel. Entries used to read the count at their start,
    so such a Ctrl-C was only raised when the launch ended (never, for a runaway one)."""
    from gradloom.runtime.cpu import parallel
    from gradloom.runtime.signals import launch_words

    out = wp.zeros(2, dtype=float)
    wp.launch(long_sum, 2, [out, 10])  # compiled and loaded
    real_plan = parallel.plan

    def plan_then_sigint(*args, **kwargs):  # the count a SIGINT leaves, without Python's part
        launch_words().gl_interrupts += 1
        return real_plan(*args, **kwargs)

    monkeypatch.setattr(parallel, "plan", plan_then_sigint)
    with pytest.raises(KeyboardInterrupt):
        wp.launch(long_sum, 2, [out, 1 << 22])
    monkeypatch.setattr(parallel, "plan", real_plan)
    wp.launch(long_sum, 2, [out, 10])  # the next launch is not affected
    assert abs(float(out.numpy()[0]) - float(np.sum(np.sin(np.arange(10, dtype=np.float32))))) < 1e-5
