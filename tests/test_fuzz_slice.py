"""A fixed-seed slice of the project's random-kernel gradient fuzzer (tools/fuzz, docs/fuzzing.md).

Two slices of small random kernels run through the fuzzer as the command line does (each case
in a worker subprocess, Tape gradients against float64 central differences, no warp-lang: its
compile time is too long for the suite; long runs compare forward values with it):

* ``PLAIN`` cases of seed ``SEED`` (``python -m tools.fuzz --seed 7 --count 150 --size small
  --no-warp``). Those in ``KNOWN`` fail today because of bugs listed in docs/fuzzing.md (the letters are
  the known-bug patterns each kernel contains, tools/fuzz/patterns.py); they are strict xfails,
  so fixing a bug flips them and the entry must then be removed.
* ``CLEAN`` cases of seed ``SEED + 1`` generated with ``--avoid ABCDE`` (the known bugs' patterns
  left out): every one must pass.

Any other failure fails ``test_slice_no_unexpected_failures`` with the command that reproduces
it. The remaining tests check the fuzzer itself: reproducible generation, the ``--avoid`` flags,
a wrong gradient is caught, a crash and a hang are pinned to their case, the shrinker minimises.
"""

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tools.fuzz.classify import FAILURES  # noqa: E402
from tools.fuzz.edits import count_stmts  # noqa: E402
from tools.fuzz.gen import SMALL, generate  # noqa: E402
from tools.fuzz.model import ArrayDef, Case, For, Launch  # noqa: E402
from tools.fuzz.patterns import known_patterns  # noqa: E402
from tools.fuzz.render import case_module  # noqa: E402
from tools.fuzz.session import Session  # noqa: E402
from tools.fuzz.shrink import shrink  # noqa: E402
from tools.fuzz.validate import is_valid  # noqa: E402

SEED = 7
PLAIN = 150
CLEAN = 150
AVOID = "ABCDE"
# PLAIN case index -> known-bug patterns it contains (known-bug letters); strict xfails below
KNOWN: dict[int, str] = {}  # every bug the slice has found is fixed (history: git log)


@pytest.fixture(scope="module")
def slice_outcomes():
    cases = [generate(SEED, i, SMALL) for i in range(PLAIN)]
    cases += [generate(SEED + 1, i, SMALL, avoid=AVOID) for i in range(CLEAN)]
    session = Session(use_warp=False, timeout=120.0, env={"GRADLOOM_OPT_LEVEL": "0"})
    try:
        outs = session.evaluate(cases)
    finally:
        session.close()
    return {_key(o.case): o for o in outs}


def _key(case):
    """(in the clean slice, case index) from the case's origin 'seed:index [avoid=...]'."""
    seed, rest = case.origin.split(":")
    return int(seed) == SEED + 1, int(rest.split()[0])


def _describe(key, o):
    clean, index = key
    seed, avoid = (SEED + 1, f" --avoid {AVOID}") if clean else (SEED, "")
    hint = "".join(sorted(known_patterns(o.case)))
    return (f"case {seed}:{index}{avoid} [{o.cls}] {o.detail}"
            f"{f' (known-bug patterns: {hint})' if hint else ''}\n"
            f"    reproduce: python -m tools.fuzz --seed {seed} --start {index} --count 1 "
            f"--size small --no-warp{avoid}")


def test_slice_no_unexpected_failures(slice_outcomes):
    bad = [_describe(k, o) for k, o in sorted(slice_outcomes.items())
           if o.cls in FAILURES and (k[0] or k[1] not in KNOWN)]
    assert not bad, "fuzz slice failures:\n" + "\n".join(bad)


def test_slice_checks_most_kernels(slice_outcomes):
    classes = [o.cls for o in slice_outcomes.values()]
    # a documented refusal (a clear error where no right gradient is defined) is checked too
    checked = sum(c in ("ok", "documented", *FAILURES) for c in classes)
    assert checked >= 0.85 * len(classes), f"only {checked} of {len(classes)} kernels checked"
    assert classes.count("invalid") == 0


@pytest.mark.parametrize("index", sorted(KNOWN))
def test_slice_known_failure(slice_outcomes, index):
    o = slice_outcomes[(False, index)]
    if o.cls in FAILURES:
        pytest.xfail(f"known-bug patterns {KNOWN[index]}: {o.cls}: {o.detail}")
    pytest.fail(f"case {SEED}:{index} passes now (patterns {KNOWN[index]}): remove it from KNOWN")


# ---------------------------------------------------------------------------------------------
# the fuzzer itself


def test_generation_is_reproducible_and_valid():
    for i in range(30):
        a, b = generate(11, i, SMALL), generate(11, i, SMALL)
        assert case_module(a) == case_module(b)
        assert np.array_equal(a.arrays[0].values, b.arrays[0].values)
        assert is_valid(a)
    assert case_module(generate(11, 0, SMALL)) != case_module(generate(12, 0, SMALL))


def test_avoid_flags_leave_out_known_patterns():
    plain = set().union(*(known_patterns(generate(5, i)) for i in range(150)))
    assert plain == set("ABCDE")  # the generator does make all of them
    for letter in "ABCDE":
        cases = [generate(5, i, avoid=letter) for i in range(150)]
        assert not any(letter in known_patterns(c) for c in cases), letter


_WRONG_GRAD_MODULE = '''
import gradloom as wp


@wp.func
def g(x: wp.{dtype}) -> wp.{dtype}:
    return wp.sin(x)


@wp.func_grad(g)
def adj_g(x: wp.{dtype}, adj_ret: wp.{dtype}):
    wp.adjoint[x] += adj_ret * wp.cos(x) * wp.{dtype}({factor})


@wp.kernel
def k(x: wp.array(dtype=wp.{dtype}), y: wp.array(dtype=wp.{dtype})):
    tid = wp.tid()
    y[tid] = g(x[tid]) * x[tid]


def program(a, tr=None):
    wp.launch(k, dim=3, inputs=[a["x0"], a["x1"]], device="cpu")
'''


@pytest.mark.parametrize("factor,expected", [("1.0", "ok"), ("1.01", "grad")])
def test_checker_catches_a_wrong_gradient(tmp_path, factor, expected):
    import gradloom as wp
    from tools.fuzz.check import check

    mod = _wrong_grad_module(tmp_path, "float64", factor)
    progs = {"main": mod.program, "traced": mod.program, "twin": mod.program}
    result = check(wp, _selftest_case("float64"), progs)
    assert result["status"] == expected, result


@pytest.mark.parametrize("twin_factor,expected", [("1.0", "rejected"), ("1.1", "grad")])
def test_float32_miss_is_rounding_only_where_the_float64_twin_matches(tmp_path, twin_factor,
                                                                      expected):
    """A float32 Tape gradient off by 10% counts as a mismatch unless the float64 twin's
    gradient matches the finite differences (then it is float32 rounding, fuzz 2:830)."""
    import gradloom as wp
    from tools.fuzz.check import check

    main = _wrong_grad_module(tmp_path, "float32", "1.1")
    twin = _wrong_grad_module(tmp_path, "float64", twin_factor)
    progs = {"main": main.program, "traced": main.program, "twin": twin.program}
    result = check(wp, _selftest_case("float32"), progs)
    assert result["status"] == expected, result


@pytest.mark.parametrize("twin_factor,expected", [("1.0", "rejected"), ("1.1", "grad")])
def test_a_nan_float32_gradient_is_overflow_only_where_the_float64_twin_matches(
        tmp_path, twin_factor, expected):
    """fuzz 14:71: a float32 intermediate overflowed to inf and was then overwritten, so the
    adjoint's 0 * inf made the gradient NaN: the float64 twin's gradient is judged on its own
    scale (the float32 one is NaN too), so a matching twin rejects the sample."""
    import gradloom as wp
    from tools.fuzz.check import check

    nan = "(1e30 * x * 1e30) - (1e30 * x * 1e30) + 1.0"  # inf - inf in float32
    main = _wrong_grad_module(tmp_path, "float32", nan)
    twin = _wrong_grad_module(tmp_path, "float64", twin_factor)
    progs = {"main": main.program, "traced": main.program, "twin": twin.program}
    result = check(wp, _selftest_case("float32"), progs)
    assert result.get("nonfinite_grad") == "x0"
    assert result["status"] == expected, result
    if expected == "rejected":
        assert result["reason"].startswith("float32 overflow"), result


def _wrong_grad_module(tmp_path, dtype, factor):
    from tools.fuzz.evaluate import load_module

    path = tmp_path / f"wrong_grad_{dtype}_{abs(hash(factor))}.py"
    path.write_text(_WRONG_GRAD_MODULE.format(dtype=dtype, factor=factor))
    return load_module(str(path), path.stem)


def _selftest_case(dtype):
    rng = np.random.default_rng(0)
    return Case("selftest", dtype, 3, [ArrayDef("x0", "F", rng.uniform(-1, 1, 3)),
                                       ArrayDef("x1", "F", rng.uniform(-1, 1, 3))],
                {"nt": 3}, [], [], [], origin="selftest")


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


def test_disagreeing_differences_are_rejected_whatever_the_reverse_says():
    """fuzz 7:330: sin of a 6.7e5 argument; the Tape's 7e13 is right, no step resolves the
    oscillation, and the two differences (7e5, -3e7) disagree. Judged against a scale holding
    the reverse value they passed as agreeing, and a right gradient counted as a mismatch."""
    from tools.fuzz.check import _compare_direction
    from tools.fuzz.evaluate import TOL

    rev, d = {"x": np.array([7.2e13])}, {"x": np.array([1.0])}
    ok, why, _ = _compare_direction(rev, d, [7.1e5, -3.07e7], 1.0, TOL["float64"])
    assert why == "finite differences at two step sizes disagree"
    ok, why, _ = _compare_direction({"x": np.array([2.0])}, d, [2.0, 2.0 + 1e-9], 1.0,
                                    TOL["float64"])
    assert why is None and ok
    ok, why, _ = _compare_direction({"x": np.array([2.5])}, d, [2.0, 2.0], 1.0, TOL["float64"])
    assert why is None and not ok
