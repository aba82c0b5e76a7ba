"""Runs time-indexed cases (timeline.py) on gradloom: the Tape gradient against float64 central
differences where no launch's threads meet, a clear refusal where one does; the forward values
against warp-lang's where no threads meet (where they do, the result depends on thread order).

    python -m tools.fuzz --pattern time --seed 1 --count 2000 [--no-warp] [--show 1:17]

Classes: `ok` (gradient and forward values match), `documented` (refused with the documented
error where a launch's threads do meet), and the failures `grad` (gradient differs), `forward`
(forward values differ from warp-lang's), `refused` (refused where no threads meet, or any
other error), `accepted` (differentiated where threads meet: the refusal went missing; its
gradient is checked too, and a wrong one counts as `grad`), `invalid` (warp-lang rejects a
generated kernel) and `oracle` (the generator's model of what each thread reads and writes
disagrees with the kernel text run in Python, timeline_trace.py: the fuzzer's own bug).
Cases run in worker processes, each with a scratch kernel cache.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import numpy as np

from . import timeline_warp
from .classify import DOCUMENTED_REFUSALS, forward_mismatch
from .timeline import PARAMS, TimeCase, generate, initial_values, overlaps
from .timeline_trace import TraceError, traced_overlaps

FAILURES = ("grad", "forward", "refused", "accepted", "invalid", "oracle")
#: the refusals expected where threads meet: the cross-thread ones of classify's documented list
REFUSALS = tuple(d for d in DOCUMENTED_REFUSALS if "that other threads overwrite" in d)
EPS, RTOL, ATOL = 1e-6, 1e-5, 1e-7
Result = tuple[int, str, str, "dict[str, np.ndarray] | None"]


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
    return {name: wp.array(v, dtype=wp.float64 if name in PARAMS else dtype, requires_grad=True)
            for name, v in values.items()}


def _loss(wp: Any, module: Any, c: TimeCase, values: dict[str, np.ndarray],
          weights: list[np.ndarray]) -> float:
    outs = module.program(_arrays(wp, c, values))
    return float(sum(np.sum(o.numpy().reshape(w.shape) * w) for o, w in zip(outs, weights)))


def check(c: TimeCase, directory: str, seed: int
          ) -> tuple[str, str, dict[str, np.ndarray] | None]:
    """(class, detail, forward values of the states or None) of one case on gradloom."""
    import gradloom as wp

    expect_refusal = overlaps(c)
    module = _load(c, directory)
    values = initial_values(c, seed)
    rng = np.random.default_rng(seed + 1)
    weights = [rng.uniform(-1, 1, values[s].shape) for s in c.states]
    arrays = _arrays(wp, c, values)
    fwd = None
    try:
        tape = wp.Tape()
        with tape:
            outs = module.program(arrays)
        fwd = {n: np.array(o.numpy()) for n, o in zip(c.states, outs)}
        tape.backward(grads={o: wp.array(w, dtype=o.dtype) for o, w in zip(outs, weights)})
    except wp.errors.GradloomError as exc:
        text = str(exc).splitlines()[0]
        if any(r in str(exc) for r in REFUSALS):
            return ("documented", "", fwd) if expect_refusal else ("refused", text, fwd)
        return "refused", text, fwd
    except Exception as exc:  # an internal error is always a failure
        return "refused", f"{type(exc).__name__}: {exc}", fwd
    grads = {name: a.grad.numpy().reshape(values[name].shape) for name, a in arrays.items()}
    for _ in range(3):
        d = {name: rng.uniform(-1, 1, v.shape) for name, v in values.items()}
        plus = {n: values[n] + EPS * d[n] for n in values}
        minus = {n: values[n] - EPS * d[n] for n in values}
        fd = (_loss(wp, module, c, plus, weights) - _loss(wp, module, c, minus, weights)) / (2 * EPS)
        rev = float(sum(np.sum(grads[n] * d[n]) for n in values))
        if abs(rev - fd) > ATOL + RTOL * abs(fd):
            return "grad", f"tape {rev!r} vs finite differences {fd!r}", fwd
    if expect_refusal:
        return "accepted", "differentiated although threads meet", fwd
    return "ok", "", fwd


def oracle_problem(c: TimeCase) -> str | None:
    """Why the generator's `overlaps` cannot be trusted for this case, or None."""
    try:
        traced = traced_overlaps(c)
    except TraceError as exc:
        return f"kernel text run in Python: {exc}"
    if traced != overlaps(c):
        return f"threads meet: generator says {overlaps(c)}, the kernel text run says {traced}"
    return None


def combine(cls: str, detail: str, mine: dict[str, np.ndarray] | None,
            theirs: dict[str, Any] | None) -> tuple[str, str]:
    """gradloom's class amended by warp-lang's forward result (None: not run), as classify.py
    does for random cases: a forward mismatch comes first."""
    if theirs is None:
        return cls, detail
    if theirs["status"] != "ok":
        return "invalid", f"warp-lang: {theirs['message']}"
    if mine is not None:
        diff = forward_mismatch("float64", mine, theirs["forward"])
        if diff:
            return "forward", diff
    return cls, detail


def _seed(seed: int, i: int) -> int:
    return seed * 7919 + i


def _batch(seed: int, indices: list[int]) -> list[Result]:
    """One worker's share on gradloom: a scratch cache and module directory of its own."""
    with tempfile.TemporaryDirectory(prefix="gl-timefuzz-") as scratch:
        os.environ["GRADLOOM_CACHE_DIR"] = os.path.join(scratch, "cache")
        out: list[Result] = []
        for i in indices:
            c = generate(seed, i)
            problem = oracle_problem(c)
            if problem:
                out.append((i, "oracle", problem, None))
                continue
            out.append((i, *check(c, scratch, _seed(seed, i))))
        return out


def _warp_batch(seed: int, indices: list[int], scratch: str) -> dict[int, dict[str, Any]]:
    """warp-lang's forward values for the cases whose threads do not meet."""
    cases = {i: c for i in indices if not overlaps(c := generate(seed, i))}
    if not cases:
        return {}
    return timeline_warp.forward(cases, {i: _seed(seed, i) for i in cases}, scratch,
                                 os.path.join(scratch, "warp-cache"), f"tw{seed}_{indices[0]}")


def run(seed: int, start: int, count: int, workers: int = 2, batch: int = 50,
        log: Any = sys.stderr, warp: bool = True
        ) -> tuple[Counter[str], list[tuple[int, str, str]]]:
    """Check cases start..start+count-1 of `seed`; the counts per class (and `forward-compared`:
    cases whose forward values were compared with warp-lang's) and the failures."""
    t0 = time.monotonic()
    counts: Counter[str] = Counter()
    failures: list[tuple[int, str, str]] = []
    chunks = [list(range(i, min(i + batch, start + count)))
              for i in range(start, start + count, batch)]
    scratch = tempfile.mkdtemp(prefix="gl-timefuzz-warp-")
    warp = warp and timeline_warp.available()
    try:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            jobs: list[tuple[Future[Any], Future[Any] | None]] = [
                (pool.submit(_batch, seed, ch),
                 pool.submit(_warp_batch, seed, ch, scratch) if warp else None)
                for ch in chunks]
            for mine, theirs in jobs:
                _tally(mine.result(), theirs.result() if theirs else {}, counts, failures)
                print(f"timefuzz: {sum(counts[k] for k in ('ok', 'documented', *FAILURES))}"
                      f"/{count} in {time.monotonic() - t0:.0f}s: {_counts(counts)}",
                      file=log, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return counts, failures


def _tally(results: list[Result], warp: dict[int, dict[str, Any]], counts: Counter[str],
           failures: list[tuple[int, str, str]]) -> None:
    for i, cls, detail, fwd in results:
        if cls != "oracle":
            cls, detail = combine(cls, detail, fwd, warp.get(i))
        counts[cls] += 1
        counts["forward-compared"] += i in warp and fwd is not None
        if cls in FAILURES:
            failures.append((i, cls, detail))


def _counts(counts: Counter[str]) -> str:
    return " ".join(f"{k}={counts.get(k, 0)}" for k in ("ok", "documented", *FAILURES))


def main(seed: int, start: int, count: int, show: str | None = None, warp: bool = True) -> int:
    """The `--pattern time` command: a campaign, or one case's source (`show`)."""
    if show:
        s, i = (int(v) for v in show.split(":"))
        c = generate(s, i)
        print(c.source())
        print(f"# threads meet in some launch: {overlaps(c)}")
        return 0
    t0 = time.monotonic()
    counts, failures = run(seed, start, count, warp=warp)
    for i, cls, detail in failures:
        print(f"  {cls}: case {seed}:{i} (python -m tools.fuzz --pattern time --show {seed}:{i})"
              f": {detail}")
    print(f"timefuzz: {count} kernels in {time.monotonic() - t0:.0f}s: {_counts(counts)} "
          f"(seed {seed}, time-indexed; forward vs warp-lang: "
          f"{counts['forward-compared'] if warp else 'off'})")
    return 1 if failures else 0
