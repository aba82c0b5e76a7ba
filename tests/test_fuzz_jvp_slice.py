"""The fuzzer's forward-mode slice (`python -m tools.fuzz --jvp`, tools/fuzz/jvp_check.py): random
kernels' jvp tangents against float64 central differences, and a wrong tangent is caught."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tools.fuzz import jvp_check as jc  # noqa: E402
from tools.fuzz.classify import FAILURES  # noqa: E402
from tools.fuzz.gen import SMALL, generate  # noqa: E402
from tools.fuzz.session import Session  # noqa: E402

SEED = 41
COUNT = 60


def test_jvp_slice_no_failures():
    cases = [generate(SEED, i, SMALL) for i in range(COUNT)]
    session = Session(use_warp=False, jvp=True, timeout=120.0, env={"GRADLOOM_OPT_LEVEL": "0"})
    try:
        outs = session.evaluate(cases)
    finally:
        session.close()
    bad = [f"case {SEED}:{i} [{o.cls}] {o.detail}\n    reproduce: python -m tools.fuzz --seed "
           f"{SEED} --start {i} --count 1 --size small --no-warp --jvp"
           for i, o in enumerate(outs) if o.cls in FAILURES]
    assert not bad, "jvp slice failures:\n" + "\n".join(bad)
    checked = sum(o.gradloom.get("jvp", {}).get("status") == "ok" for o in outs)
    assert checked >= 0.8 * COUNT, f"only {checked} of {COUNT} kernels' tangents checked"


@pytest.fixture()
def first_checked_case(tmp_path):
    import gradloom as wp
    from tools.fuzz.worker import _gradloom_programs

    for i in range(20):
        case = generate(SEED, i, SMALL, "float64")
        progs = _gradloom_programs({"case": case, "dir": str(tmp_path)})
        if jc.jvp_check(wp, case, progs)["status"] == "ok":
            return wp, case, progs
    pytest.fail("no case of the first 20 could be checked")


def test_wrong_tangent_is_caught(first_checked_case, monkeypatch):
    wp, case, progs = first_checked_case
    right = jc.tangents

    def off_by_a_percent(*args, **kw):
        return {n: t * 1.01 + 1e-3 for n, t in right(*args, **kw).items()}

    monkeypatch.setattr(jc, "tangents", off_by_a_percent)
    res = jc.jvp_check(wp, case, progs)
    assert res["status"] == "mismatch", res
