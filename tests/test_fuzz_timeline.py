"""The fuzzer's time-indexed cases (tools/fuzz/timeline.py, timeline_check.py): the oracle that
says whether a launch's threads meet, a fixed-seed slice run end to end (every case
differentiated right, or refused exactly where threads meet), and the checker catching a
missing refusal."""

import dataclasses
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tools.fuzz import timeline_check  # noqa: E402
from tools.fuzz.timeline import generate, overlaps, thread_elements  # noqa: E402

SEED, COUNT = 11, 60


def _case(**changes):
    """A plain 2-D case: S trajectories of T steps, stride T."""
    base = generate(1, 0)
    fields = {"kind": "2d", "S": 3, "N": 2, "T": 3, "stride": 3, "base": 0, "shift": 0,
              "cut": 0, "prev": False, "accumulate": False, "second": False,
              "expr": "wp.tanh(wp.sin({r0}) + {w})", "launches": 2, "layout": "rows",
              "colmap": False, "cstride": 1, "coff": 0, "prev2": False, "control": False}
    fields.update(changes)
    rows = (fields["S"] - 1) * fields["stride"] + fields["launches"] + fields["base"] + 1
    return dataclasses.replace(base, rows=rows, **fields)


@pytest.mark.parametrize("changes,meet", [
    ({}, False),  # stride = T: trajectories apart
    ({"stride": 4}, False),
    ({"T": 1, "stride": 1, "launches": 1}, True),  # thread s writes the row s + 1 reads
    ({"stride": 1}, True),  # step 0 of trajectory s writes row s + 1, trajectory s + 1 reads it
    ({"stride": 0}, False),  # every trajectory writes one row, none reads it: no read meets
    ({"stride": 2, "launches": 1}, False),  # only step 0: rows 2s and 2s + 1
    ({"T": 1, "stride": 1, "launches": 1, "cut": 2}, False),  # no thread stores
    ({"stride": 1, "launches": 1, "prev": True}, False),  # the guarded store never runs
])
def test_oracle_on_hand_made_launches(changes, meet):
    assert overlaps(_case(**changes)) is meet


def test_thread_elements_follow_the_kernel_text():
    c = _case(kind="3d", shift=1, prev=True, second=True)
    reads, writes = thread_elements(c, 1, 2, 0)
    k = 2 * 3 + 1
    assert writes == {(a, k + 1, 0, comp) for a in "qu" for comp in range(3)}
    assert reads == {(a, row, col, comp) for a in "qu" for comp in range(3)
                     for row, col in ((k, 0), (k, 1), (k - 1, 0))}


def test_slice_is_differentiated_or_refused_exactly_where_threads_meet():
    with open(os.devnull, "w") as quiet:
        counts, failures = timeline_check.run(SEED, 0, COUNT, workers=1, batch=COUNT,
                                              log=quiet)
    assert failures == []
    assert counts["ok"] > COUNT // 2 and counts["documented"] > 0


def test_a_missing_refusal_is_caught(monkeypatch, tmp_path):
    # with the launch check switched off, kernels whose threads meet are differentiated from
    # a replay that cannot know what each thread read: the checker must say so
    from gradloom.passes import overlap

    monkeypatch.setattr(overlap.LaunchCheck, "error", lambda self, *a, **k: None)
    meeting = [c for c in (generate(SEED, i) for i in range(200)) if overlaps(c)][:6]
    assert meeting
    classes = {timeline_check.check(c, str(tmp_path), 3)[0] for c in meeting}
    assert classes <= {"accepted", "grad"} and classes
