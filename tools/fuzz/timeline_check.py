"""Runs time-indexed cases (timeline.py) on gradloom: the Tape gradient against float64 central
differences where no launch's threads meet, a clear refusal where one does.

    python -m tools.fuzz --pattern time --seed 1 --count 2000 [--show-case 1:17]

Classes: `ok` (gradient matches), `documented` (refused with the documented error where a
launch's threads do meet), and the failures `grad` (gradient differs), `refused` (refused where
no threads meet, or any other error), `accepted` (differentiated where threads meet: the
refusal went missing; its gradient is checked too, and a wrong one counts as `grad`).
Cases run in two worker processes, each with a scratch kernel cache.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from .timeline import TimeCase, generate, initial_values, overlaps

FAILURES = ("grad", "refused", "accepted")
REFUSAL = "that other threads overwrite"
EPS, RTOL, ATOL = 1e-6, 1e-5, 1e-7


def _load(c: TimeCase, directory: str) -> Any:
    path = os.path.join(directory, f"{c.tag}.py")
    with open(path, "w") as fh:
        fh.write(c.source())
    spec = importlib.util.spec_from_file_location(c.tag, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _arrays(wp: Any, c: TimeCase, values: dict[str, np.ndarray]) -> dict[str, Any]:
    dtype = {"vec": wp.vec3d}.get(c.kind, wp.float64)
    return {name: wp.array(v, dtype=wp.float64 if name == "w" else dtype, requires_grad=True)
            for name, v in values.items()}


def _loss(wp: Any, module: Any, c: TimeCase, values: dict[str, np.ndarray],
          weights: list[np.ndarray]) -> float:
    outs = module.program(_arrays(wp, c, values))
    return float(sum(np.sum(o.numpy().reshape(w.shape) * w) for o, w in zip(outs, weights)))


def check(c: TimeCase, directory: str, seed: int) -> tuple[str, str]:
    """(class, detail) of one case."""
    import gradloom as wp

    expect_refusal = overlaps(c)
    module = _load(c, directory)
    values = initial_values(c, seed)
    rng = np.random.default_rng(seed + 1)
    states = ["q", "u"] if c.second else ["q"]
    weights = [rng.uniform(-1, 1, values[s].shape) for s in states]
    arrays = _arrays(wp, c, values)
    try:
        tape = wp.Tape()
        with tape:
            outs = module.program(arrays)
        tape.backward(grads={o: wp.array(w, dtype=o.dtype) for o, w in zip(outs, weights)})
    except wp.errors.GradloomError as exc:
        text = str(exc).splitlines()[0]
        if REFUSAL in text:
            return ("documented", "") if expect_refusal else ("refused", text)
        return "refused", text
    except Exception as exc:  # an internal error is always a failure
        return "refused", f"{type(exc).__name__}: {exc}"
    grads = {name: a.grad.numpy().reshape(values[name].shape) for name, a in arrays.items()}
    for _ in range(3):
        d = {name: rng.uniform(-1, 1, v.shape) for name, v in values.items()}
        plus = {n: values[n] + EPS * d[n] for n in values}
        minus = {n: values[n] - EPS * d[n] for n in values}
        fd = (_loss(wp, module, c, plus, weights) - _loss(wp, module, c, minus, weights)) / (2 * EPS)
        rev = float(sum(np.sum(grads[n] * d[n]) for n in values))
        if abs(rev - fd) > ATOL + RTOL * abs(fd):
            return "grad", f"tape {rev!r} vs finite differences {fd!r}"
    return ("accepted", "differentiated although threads meet") if expect_refusal else ("ok", "")


def _batch(seed: int, indices: list[int]) -> list[tuple[int, str, str]]:
    """One worker's share: a scratch cache and module directory of its own."""
    with tempfile.TemporaryDirectory(prefix="gl-timefuzz-") as scratch:
        os.environ["GRADLOOM_CACHE_DIR"] = os.path.join(scratch, "cache")
        out = []
        for i in indices:
            c = generate(seed, i)
            cls, detail = check(c, scratch, seed * 7919 + i)
            out.append((i, cls, detail))
        return out


def run(seed: int, start: int, count: int, workers: int = 2, batch: int = 50,
        log: Any = sys.stderr) -> tuple[Counter[str], list[tuple[int, str, str]]]:
    """Check cases start..start+count-1 of `seed`; the counts per class and the failures."""
    t0 = time.monotonic()
    counts: Counter[str] = Counter()
    failures: list[tuple[int, str, str]] = []
    chunks = [list(range(i, min(i + batch, start + count)))
              for i in range(start, start + count, batch)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for done, results in enumerate(pool.map(_batch, [seed] * len(chunks), chunks)):
            for i, cls, detail in results:
                counts[cls] += 1
                if cls in FAILURES:
                    failures.append((i, cls, detail))
            print(f"timefuzz: {sum(counts.values())}/{count} in "
                  f"{time.monotonic() - t0:.0f}s: {_counts(counts)}", file=log, flush=True)
            del done
    return counts, failures


def _counts(counts: Counter[str]) -> str:
    return " ".join(f"{k}={counts.get(k, 0)}" for k in ("ok", "documented", *FAILURES))


def main(seed: int, start: int, count: int, show: str | None = None) -> int:
    """The `--pattern time` command: a campaign, or one case's source (`show`)."""
    if show:
        s, i = (int(v) for v in show.split(":"))
        c = generate(s, i)
        print(c.source())
        print(f"# threads meet in some launch: {overlaps(c)}")
        return 0
    t0 = time.monotonic()
    counts, failures = run(seed, start, count)
    for i, cls, detail in failures:
        print(f"  {cls}: case {seed}:{i} (python -m tools.fuzz --pattern time --show {seed}:{i})"
              f": {detail}")
    print(f"timefuzz: {count} kernels in {time.monotonic() - t0:.0f}s: {_counts(counts)} "
          f"(seed {seed}, time-indexed)")
    return 1 if failures else 0
