"""The time-indexed fuzz cases' oracle (tools/fuzz/timeline.py) against the kernel text run in
Python (tools/fuzz/timeline_trace.py), the generated kernels compiling and running on gradloom,
and the checker's use of warp-lang's forward values (tools/fuzz/timeline_check.py).

The tests above the END-TO-END line check the fuzzer alone: what the generator says each
thread reads and writes, and whether a launch's threads meet, must be what the rendered kernel
does, element for element. The tests below it run gradloom's Tape and warp-lang: they pass
once gradloom decides cross-thread overwrites per launch (its launch-time overlap check).
"""

import dataclasses
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tools.fuzz import timeline, timeline_check, timeline_warp  # noqa: E402
from tools.fuzz.timeline_trace import TraceError, trace  # noqa: E402

SEED, COUNT = 5, 60
CASES = [timeline.generate(SEED, i) for i in range(COUNT)]


def _disagreements(cases):
    """Where the generator's per-thread sets or its `overlaps` differ from the traced run."""
    out = []
    for c in cases:
        try:
            launches, _ = trace(c)
        except TraceError as exc:
            out.append(f"{c.tag}: {exc}")
            continue
        for t, sets in enumerate(launches):
            for (s, i), got in sets.items():
                if got != timeline.thread_elements(c, t, s, i):
                    out.append(f"{c.tag}: launch {t} thread {(s, i)}")
        traced = any(timeline.meets(sets) for sets in launches)
        if traced != timeline.overlaps(c) or len(launches) != c.launches:
            out.append(f"{c.tag}: overlaps {timeline.overlaps(c)}, traced {traced}")
    return out


def test_the_slice_covers_every_variant():
    # a variant the slice never draws would go unchecked by the oracle test below
    seen = {(f, getattr(c, f)) for c in CASES for f in
            ("kind", "layout", "colmap", "prev", "prev2", "control", "accumulate", "second")}
    seen |= {("shift", bool(c.shift)) for c in CASES} | {("cut", bool(c.cut)) for c in CASES}
    seen |= {("T", c.T) for c in CASES} | {("meet", timeline.overlaps(c)) for c in CASES}
    want = {("kind", k) for k in ("2d", "3d", "vec")} | {("layout", "rows"), ("layout", "cols")}
    want |= {(f, v) for f in ("colmap", "prev", "prev2", "control", "accumulate", "second",
                              "shift", "cut", "meet") for v in (False, True)}
    want |= {("T", t) for t in (1, 2, 3, 4)}
    assert want <= seen, sorted(want - seen)


def test_oracle_matches_the_kernel_text_run_in_python():
    assert _disagreements(CASES) == []


def test_a_wrong_oracle_is_caught(monkeypatch):
    # the generator forgetting the shifted-column read: the traced sets must show it
    real = timeline.thread_elements

    def forgetful(c, t, s, i):
        return real(dataclasses.replace(c, shift=0), t, s, i)

    monkeypatch.setattr(timeline, "thread_elements", forgetful)
    assert any(c.shift for c in CASES) and _disagreements(CASES)


def test_a_kernel_text_off_its_model_is_caught(monkeypatch):
    # the renderer ignoring the layout (time always on the first axis): wrong elements, or out
    # of bounds
    monkeypatch.setattr(timeline, "_ix", lambda c, row, col, comp: f"{row}, {col}{comp}")
    cols = [c for c in CASES if c.layout == "cols" and c.launches > c.back]  # a store runs
    assert cols and {d.split(':')[0] for d in _disagreements(cols)} == {c.tag for c in cols}


def test_the_checker_reports_an_oracle_problem(monkeypatch):
    monkeypatch.setattr(timeline_check, "overlaps", lambda c: not timeline.overlaps(c))
    assert all(timeline_check.oracle_problem(c) for c in CASES[:10])
    monkeypatch.undo()
    assert not any(timeline_check.oracle_problem(c) for c in CASES[:10])


def test_combine_puts_a_forward_mismatch_first():
    mine = {"q": np.array([1.0, 2.0])}
    same = {"status": "ok", "forward": {"q": np.array([1.0, 2.0])}}
    other = {"status": "ok", "forward": {"q": np.array([1.0, 2.5])}}
    assert timeline_check.combine("ok", "", mine, same) == ("ok", "")
    assert timeline_check.combine("ok", "", mine, other)[0] == "forward"
    assert timeline_check.combine("grad", "x", mine, other)[0] == "forward"
    assert timeline_check.combine("ok", "", mine, None) == ("ok", "")
    assert timeline_check.combine("refused", "r", None, same) == ("refused", "r")
    bad = {"status": "rejected", "message": "no"}
    assert timeline_check.combine("ok", "", mine, bad)[0] == "invalid"


def test_generated_kernels_compile_and_run_as_traced(tmp_path):
    # forward only (no Tape): where threads do not meet, gradloom's values are the traced ones
    import gradloom as wp

    compared = 0
    for c in CASES[:20]:
        module = timeline_check._load(c, str(tmp_path))
        values = timeline.initial_values(c, 0)
        outs = module.program(timeline_check._arrays(wp, c, values))
        if timeline.overlaps(c):
            continue  # which value a thread read depends on the order threads run in
        _, expected = trace(c, 0)
        for name, out in zip(c.states, outs):
            np.testing.assert_allclose(out.numpy().reshape(expected[name].shape),
                                       expected[name], rtol=1e-12, atol=1e-12, err_msg=c.tag)
        compared += 1
    assert compared >= 10


# ----------------------------------------------------------------------------- END-TO-END
# These need gradloom's launch-time overlap check: before it, every time-indexed case was
# refused from the kernel text alone (`refused`), whether its threads meet or not.


@pytest.mark.skipif(not timeline_warp.available(), reason="warp-lang not installed")
def test_end_to_end_gradients_and_warp_forward():
    with open(os.devnull, "w") as quiet:
        counts, failures = timeline_check.run(SEED, 0, 16, workers=1, batch=16, log=quiet)
    assert failures == []
    assert counts["ok"] >= 8 and counts["forward-compared"] == counts["ok"]
