"""A fixed-seed slice of the project's random-kernel gradient fuzzer (tools/fuzz, docs/fuzzing.md).

``SLICE`` small random kernels (seed ``SEED``) run through the fuzzer exactly as
``python -m tools.fuzz --seed 7 --count 200 --size small --no-warp`` does: each case in a worker
subprocess, Tape gradients against float64 central differences. Kernels in ``KNOWN`` fail today
because of bugs listed in issue 12; they are strict xfails, so fixing a bug flips them and the
entry must then be removed. Any other failure fails ``test_slice_no_unexpected_failures`` with
the command that reproduces it. warp-lang is not used here (its compile time is too long for the
suite); long runs compare forward values with it.

The other tests check the fuzzer itself: reproducible generation, a wrong gradient is caught,
a crash and a hang are pinned to their case, the shrinker minimises.
"""

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tools.fuzz.classify import FAILURES  # noqa: E402
from tools.fuzz.gen import SMALL, generate  # noqa: E402
from tools.fuzz.model import (  # noqa: E402
    ArrayDef, Assign, Atomic, Case, For, IntAtomic, Launch, Store, While, stmt_exprs, walk_exprs,
    walk_stmts,
)
from tools.fuzz.render import case_module  # noqa: E402
from tools.fuzz.session import Session  # noqa: E402
from tools.fuzz.shrink import shrink  # noqa: E402
from tools.fuzz.validate import is_valid  # noqa: E402
from tools.fuzz.edits import count_stmts  # noqa: E402

SEED = 7
SLICE = 200
# case index -> why it fails today (issue 12 letters); strict xfails below
KNOWN: dict[int, str] = {}


@pytest.fixture(scope="module")
def slice_outcomes():
    session = Session(use_warp=False, timeout=120.0, env={"GRADLOOM_OPT_LEVEL": "0"})
    try:
        outs = session.evaluate([generate(SEED, i, SMALL) for i in range(SLICE)])
    finally:
        session.close()
    return {int(o.case.origin.split(":")[1]): o for o in outs}


def _describe(index, o):
    return (f"case {SEED}:{index} [{o.cls}] {o.detail}\n"
            f"    reproduce: python -m tools.fuzz --seed {SEED} --start {index} --count 1 "
            f"--size small --no-warp   (source: --show {SEED}:{index} --size small)")


def test_slice_no_unexpected_failures(slice_outcomes):
    bad = [_describe(i, o) for i, o in sorted(slice_outcomes.items())
           if o.cls in FAILURES and i not in KNOWN]
    assert not bad, "fuzz slice failures:\n" + "\n".join(bad)


def test_slice_checks_most_kernels(slice_outcomes):
    classes = [o.cls for o in slice_outcomes.values()]
    checked = sum(c in ("ok", *FAILURES) for c in classes)
    assert checked >= 0.8 * SLICE, f"only {checked} of {SLICE} kernels were checked"
    assert classes.count("invalid") == 0


@pytest.mark.parametrize("index", sorted(KNOWN))
def test_slice_known_failure(slice_outcomes, index):
    o = slice_outcomes[index]
    if o.cls in FAILURES:
        pytest.xfail(f"{KNOWN[index]}: {o.cls}: {o.detail}")
    pytest.fail(f"case {SEED}:{index} passes now ({KNOWN[index]}): remove it from KNOWN")


# ---------------------------------------------------------------------------------------------
# the fuzzer itself


def test_generation_is_reproducible_and_valid():
    for i in range(30):
        a, b = generate(11, i, SMALL), generate(11, i, SMALL)
        assert case_module(a) == case_module(b)
        assert np.array_equal(a.arrays[0].values, b.arrays[0].values)
        assert is_valid(a)
    assert case_module(generate(11, 0, SMALL)) != case_module(generate(12, 0, SMALL))


def _known_patterns(case):
    """Which of the issue-12 patterns (A, C, D, E and B's same-kernel part) a case contains."""
    found = set()

    def visit(body, loops, nest):
        for s in body:
            if isinstance(s, Assign) and s.ty != "I" and s.expr.kind in ("var", "comp"):
                found.add("A")
            if isinstance(s, IntAtomic) and loops:
                found.add("C")
            if (isinstance(s, Atomic) or (isinstance(s, Store) and s.op != "=")) and loops:
                found.add("D")
            if isinstance(s, Store) and s.op == "=" and len(nest) > 1 and \
                    any(n == "loop" for n in nest[1:]):
                found.add("E")
            inner = "loop" if isinstance(s, (For, While)) else "if"
            for blk in (getattr(s, "body", None), getattr(s, "orelse", None)):
                if blk:
                    visit(blk, loops + (inner == "loop"), nest + [inner])

    for k in case.kernels:
        visit(k.body, 0, [])
        written = {s.arr for s in walk_stmts(k.body) if isinstance(s, Store) and s.op == "="}
        for s in walk_stmts(k.body):
            for e in stmt_exprs(s):
                for sub in walk_exprs(e):
                    if sub.kind == "load" and sub.data in written and sub.args[0].kind != "tid":
                        found.add("B")
    for f in case.funcs:
        visit(f.body, 0, [])
    return found


def test_avoid_flags_leave_out_known_patterns():
    plain = set().union(*(_known_patterns(generate(5, i)) for i in range(150)))
    assert plain == set("ABCDE")  # the generator does make all of them
    for letter in "ABCDE":
        cases = [generate(5, i, avoid=letter) for i in range(150)]
        assert not any(letter in _known_patterns(c) for c in cases), letter


_WRONG_GRAD_MODULE = '''
import gradloom as wp


@wp.func
def g(x: wp.float64) -> wp.float64:
    return wp.sin(x)


@wp.func_grad(g)
def adj_g(x: wp.float64, adj_ret: wp.float64):
    wp.adjoint[x] += adj_ret * wp.cos(x) * wp.float64({factor})


@wp.kernel
def k(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    tid = wp.tid()
    y[tid] = g(x[tid]) * x[tid]


def program(a, tr=None):
    wp.launch(k, dim=3, inputs=[a["x0"], a["x1"]], device="cpu")
'''


@pytest.mark.parametrize("factor,expected", [("1.0", "ok"), ("1.01", "grad")])
def test_checker_catches_a_wrong_gradient(tmp_path, factor, expected):
    import gradloom as wp
    from tools.fuzz.check import check
    from tools.fuzz.evaluate import load_module

    path = tmp_path / f"wrong_grad_{factor.replace('.', '_')}.py"
    path.write_text(_WRONG_GRAD_MODULE.format(factor=factor))
    mod = load_module(str(path), path.stem)
    rng = np.random.default_rng(0)
    case = Case("selftest", "float64", 3, [ArrayDef("x0", "F", rng.uniform(-1, 1, 3)),
                                          ArrayDef("x1", "F", rng.uniform(-1, 1, 3))],
                {"nt": 3}, [], [], [], origin="selftest")
    progs = {"main": mod.program, "traced": mod.program, "twin": mod.program}
    result = check(wp, case, progs)
    assert result["status"] == expected, result


def test_crash_and_hang_are_pinned_to_their_case():
    cases = [generate(SEED, i, SMALL) for i in range(4)]
    env = {"FUZZ_TEST_CRASH": cases[1].tag, "FUZZ_TEST_HANG": cases[2].tag,
           "GRADLOOM_OPT_LEVEL": "0"}
    session = Session(use_warp=False, timeout=5.0, env=env)
    try:
        outs = session.evaluate(cases)
    finally:
        session.close()
    assert [o.cls for o in outs][1:3] == ["crash", "hang"]
    assert outs[0].cls not in ("crash", "hang") and outs[3].cls not in ("crash", "hang")


def test_shrinker_keeps_the_failure_and_minimises():
    case = next(c for c in (generate(3, i, SMALL) for i in range(100))
                if count_stmts(c) > 8 and any(isinstance(s, For) for k in c.kernels
                                              for s in k.body))

    def has_loop(c):
        return any(isinstance(s, For) for k in c.kernels for s in k.body)

    small = shrink(case, has_loop, budget_s=60)
    assert has_loop(small) and is_valid(small)
    assert count_stmts(small) < count_stmts(case)
    assert sum(isinstance(s, Launch) for s in small.steps) == 1
