"""Bad input gives a clear gradloom error — naming the argument, or the user's file and line —
and never a crash, a hang, or a change to the user's arrays.

The cases live in tests/bad_inputs_cases.py. They run in child processes, a batch of cases per
child (so the suite stays fast); each child reports every case as it finishes, and a batch whose
child dies or hangs is run again case by case, so a crash or a hang is pinned to its case. Every
case then becomes one test here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bad_inputs_cases import CASES, KERNELS, Case  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BATCHES = 4
BATCH_TIMEOUT = 120
CASE_TIMEOUT = 30

CHILD = """
import json, sys, traceback
import numpy as np
import gradloom as wp
from gradloom import config
import bad_kernels
from bad_inputs_cases import CASES, PRELUDE

by_id = {c.id: c for c in CASES}
saved = {name: getattr(config, name) for name in dir(config)}
for case_id in sys.argv[1:]:
    case = by_id[case_id]
    ns = {"wp": wp, "np": np, **{k: v for k, v in vars(bad_kernels).items()
                                  if not k.startswith("_")}}
    exec(PRELUDE, ns)
    users = {k: ns[k] for k in ("A", "B", "G", "V", "I")}
    before = {k: a.numpy().copy() for k, a in users.items()}
    out = {"id": case_id, "error": None, "mro": [], "message": ""}
    try:
        exec(compile(case.code, f"<case {case_id}>", "exec"), ns)
    except Exception as exc:
        out["error"] = type(exc).__name__
        out["mro"] = [c.__name__ for c in type(exc).__mro__]
        out["message"] = str(exc)
        out["traceback"] = traceback.format_exc()[-1500:]
    out["unchanged"] = [k for k, a in users.items()
                        if not np.array_equal(a.numpy(), before[k], equal_nan=True)]
    for name, value in saved.items():
        setattr(config, name, value)
    print("CASE " + json.dumps(out), flush=True)
"""


def _marker_lines() -> dict[str, int]:
    return {m.group(1): KERNELS[: m.start()].count("\n") + 1
            for m in re.finditer(r"# @(\w+)", KERNELS)}


def _run(work: Path, ids: list[str], timeout: float) -> tuple[dict[str, dict], str]:
    env = {**os.environ, "GRADLOOM_CACHE_DIR": str(work / "cache"),
           "PYTHONPATH": os.pathsep.join([str(work), str(Path(__file__).parent), str(ROOT)]),
           "GRADLOOM_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    for var in ("GRADLOOM_MODE", "GRADLOOM_CACHE", "GRADLOOM_VERIFY_FP"):
        env.pop(var, None)
    done: dict[str, dict] = {}
    try:
        proc = subprocess.run([sys.executable, str(work / "child.py"), *ids], cwd=work, env=env,
                              capture_output=True, text=True, timeout=timeout)
        stdout, status = proc.stdout, f"exit {proc.returncode}: {proc.stderr[-800:]}"
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        status = f"hung (no answer within {timeout} s)"
    for line in stdout.splitlines():
        if line.startswith("CASE "):
            rec = json.loads(line[5:])
            done[rec["id"]] = rec
    return done, status


def _run_batch(work: Path, ids: list[str]) -> dict[str, dict]:
    done, status = _run(work, ids, BATCH_TIMEOUT)
    for case_id in ids:  # the child died or hung: pin it on its case
        if case_id not in done:
            one, status = _run(work, [case_id], CASE_TIMEOUT)
            done[case_id] = one.get(case_id) or {"id": case_id, "crash": status}
    return done


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    work = tmp_path_factory.mktemp("bad_inputs")
    (work / "bad_kernels.py").write_text(KERNELS)
    (work / "child.py").write_text(CHILD)
    _run(work, ["launch-too-few-args"], BATCH_TIMEOUT)  # fill the cache once
    ids = [c.id for c in CASES]
    batches = [ids[k::BATCHES] for k in range(BATCHES)]
    with ThreadPoolExecutor(2) as pool:
        parts = list(pool.map(lambda b: _run_batch(work, b), batches))
    out = {k: v for part in parts for k, v in part.items()}
    out["__file__"] = {"path": str((work / "bad_kernels.py").resolve())}
    return out


def test_there_are_at_least_100_cases():
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(results: dict[str, dict], case: Case) -> None:
    r = results[case.id]
    assert "crash" not in r, f"{case.id}: the process {r.get('crash')}"
    assert r["unchanged"] == [], f"{case.id} changed the user's arrays {r['unchanged']}"
    if case.error == "-":
        assert r["error"] is None, r
        return
    assert case.error in r["mro"], f"{case.id}: expected {case.error}, got {r['error']}: {r}"
    if case.error not in ("ValueError", "TypeError", "IndexError"):
        assert "GradloomError" in r["mro"], r
    phrase = re.sub(r"\{line:(\w+)\}",
                    lambda m: f"{results['__file__']['path']}:{_marker_lines()[m.group(1)]}:",
                    case.phrase)
    assert phrase.lower() in r["message"].lower(), f"{case.id}: {r['message']!r}"
