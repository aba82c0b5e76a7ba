"""tools/library_compat's own pieces: reading pytest's junit reports, scoring, grouping causes."""

from __future__ import annotations

import textwrap

from tools.library_compat import report, suites
from tools.library_compat.suites import FILE_ERROR, FileResult

JUNIT = textwrap.dedent("""\
    <?xml version="1.0" encoding="utf-8"?>
    <testsuites><testsuite name="pytest">
      <testcase classname="_src.math_test.MathTest" name="test_a"/>
      <testcase classname="_src.math_test.MathTest" name="test_b">
        <failure message="AssertionError: 3 != 4&#10;more lines">trace</failure></testcase>
      <testcase classname="_src.math_test.MathTest" name="test_c"><skipped message="no gpu"/></testcase>
      <testcase classname="_src.math_test.MathTest" name="test_d"><error message="KeyError: 'x'"/></testcase>
    </testsuite></testsuites>
""")


def test_junit_outcomes_and_first_message_lines(tmp_path):
    path = tmp_path / "r.xml"
    path.write_text(JUNIT)
    tests, messages = suites._outcomes(path)
    prefix = "_src.math_test.MathTest::"
    assert tests == {prefix + "test_a": "pass", prefix + "test_b": "fail",
                     prefix + "test_c": "skip", prefix + "test_d": "error"}  # fmt: skip
    assert messages == {prefix + "test_b": "AssertionError: 3 != 4", prefix + "test_d": "KeyError: 'x'"}


def test_scores_count_only_what_passes_on_warp_lang():
    warp = FileResult("f.py", "warp", tests={"a": "pass", "b": "pass", "c": "fail", "d": "skip"})
    gl = FileResult("f.py", "gradloom", tests={"a": "pass", "b": "fail", "c": "pass"},
                    messages={"b": "ValueError: shape 12 differs"})  # fmt: skip
    assert report.score(warp, gl) == (2, 1)
    stopped = FileResult("f.py", "gradloom", status="no report",
                         messages={FILE_ERROR: "AttributeError: no attribute 'Bvh'"})  # fmt: skip
    assert report.score(warp, stopped) == (2, 0)
    assert report.causes([(warp, gl), (warp, stopped)]) == [
        ("AttributeError: no attribute 'Bvh'", 2), ("ValueError: shape N differs", 1)]
    text = report.table("T", "cmd", [(warp, gl)])
    assert "**1 of the 2 tests" in text and "| `f.py` | 2 | 1 | ok |" in text


def test_loss_lines_of_the_diffsim_examples_and_their_comparison():
    from tools.library_compat import probes

    text = ("Train iter: 0 Loss: [0.2392059]\n    x_min: 0.8 g_min: -0.2\nIteration 0: [9.400977]\n"
            "[  1/10] loss=0.12345678\nTrain iter: 8 Loss: 0.286\nMax Mu Grad: 3.9e-05\n")
    assert probes._LOSS.findall(text) == ["0.2392059", "9.400977", "0.12345678", "0.286"]
    assert abs(probes.loss_difference([1.0, 2.0], [1.0, 2.2]) - 0.1) < 1e-12
    assert probes.loss_difference([1.0], [1.0, 2.0]) is None
    assert set(probes.DIFFSIM_OPTIONS) == set(probes.DIFFSIM)
