"""The Warp compatibility runner's own pieces (tools/warp_compat): parsing, scoring, the shim.

Needs no warp-lang: the shim is generated against a stand-in wheel directory made here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tools.warp_compat import catalog, classify, runner, shim
from tools.warp_compat.examples import Side, compare, rel_diff
from tools.warp_compat.results import CaseResult, FileRun, parse_events
from tools.warp_compat.runner import run_file

REPO = Path(__file__).resolve().parents[1]


def _lines(*events: dict) -> list[str]:
    return [json.dumps(e) for e in events]


def test_parse_events_complete_run():
    lines = _lines(
        {"event": "collected", "tests": ["T.a", "T.b"]},
        {"event": "start", "test": "T.a"},
        {"event": "end", "test": "T.a", "outcome": "pass"},
        {"event": "start", "test": "T.b"},
        {"event": "end", "test": "T.b", "outcome": "error", "exc_type": "KeyError", "message": "x"},
        {"event": "done"},
    )
    run = parse_events("test_x", lines, timed_out=False, returncode=0)
    assert run.status == "ok"
    assert run.tests["T.a"].outcome == "pass"
    assert (run.tests["T.b"].outcome, run.tests["T.b"].exc_type) == ("error", "KeyError")


@pytest.mark.parametrize("timed_out, exc", [(True, "Timeout"), (False, "Crash")])
def test_parse_events_pins_abort_to_running_test(timed_out, exc):
    lines = _lines(
        {"event": "collected", "tests": ["T.a", "T.b", "T.c"]},
        {"event": "start", "test": "T.a"},
        {"event": "end", "test": "T.a", "outcome": "pass"},
        {"event": "start", "test": "T.b"},
    )
    lines.append('{"event": "end", "te')  # a line cut short by the crash
    run = parse_events("test_x", lines, timed_out=timed_out, returncode=-11)
    assert run.status == ("timeout" if timed_out else "crash")
    assert run.tests["T.a"].outcome == "pass"
    assert run.tests["T.b"].exc_type == exc
    assert run.tests["T.c"].exc_type == "NotRun" and "T.b" in run.tests["T.c"].message


def test_import_error_blocks_every_warp_passing_test():
    warp = FileRun("test_x", tests={"T.a": CaseResult("pass"), "T.b": CaseResult("skip")})
    gl = parse_events("test_x", _lines(
        {"event": "file_error", "where": "import", "exc_type": "TypeError", "message": "boom 1.5"},
        {"event": "done"}), False, 0)  # fmt: skip
    score = classify.score_file("test_x", warp, gl)
    assert [t.test for t in score.tests] == ["T.a"]  # only tests passing on warp-lang count
    assert score.tests[0].status == "errored"
    assert score.tests[0].cause == "TypeError: boom <num>"


def test_scoring_statuses_and_private_is_not_applicable():
    warp = FileRun("test_x", tests={n: CaseResult("pass") for n in "abcdefg"})
    gl = FileRun("test_x", tests={
        "a": CaseResult("pass"),
        "b": CaseResult("fail", "AssertionError", "\nArrays differ at 0x7f00"),
        "c": CaseResult("error", "WarpPrivate", "warp._src.context.runtime: Warp-private internal"),
        "d": CaseResult("error", "AttributeError", "gradloom has no 'vec3s'"),
        "e": CaseResult("skip", message="needs CUDA"),
        "g": CaseResult("error", "AttributeError", "'Kernel' object has no attribute 'adj'"),
    })  # fmt: skip
    score = {t.test: t for t in classify.score_file("test_x", warp, gl).tests}
    assert score["a"].status == "passed"
    assert (score["b"].status, score["b"].cause) == ("failed", "AssertionError: Arrays differ at 0x…")
    assert score["c"].status == "n/a" and "warp._src.context.runtime" in score["c"].cause
    assert score["d"].status == "errored"
    assert score["e"].status == "failed"
    assert score["f"].cause.startswith("not registered on gradloom")
    assert score["g"].status == "n/a" and "Adjoint" in score["g"].cause
    top = classify.causes([classify.score_file("test_x", warp, gl)])
    assert sum(n for _, n, _ in top) == 4  # b, d, e, f; n/a and passed are not causes


def test_cause_key_blanks_locations_and_numbers():
    r = CaseResult("error", "ValueError", "kernel.py:12:4: bad value 3.25e-3 at /a/b/c.py:7 (line 9)")
    assert classify.cause_key(r) == "ValueError: <loc>: bad value <num> at <loc> (<loc>)"


def test_rel_diff_and_example_compare():
    ref = np.array([1.0, -2.0, np.nan])
    assert rel_diff(ref.copy(), ref) == 0.0
    assert rel_diff(np.array([1.0, -2.002, np.nan]), ref) == pytest.approx(1e-3)
    assert rel_diff(np.array([1.0, -2.0, 0.0]), ref) == float("inf")
    assert rel_diff(np.zeros(2), np.zeros(3)) == float("inf")
    warp = Side("ok", arrays={"x": ref, "y": np.ones(2)}, losses=[1.0, 0.5])
    same = compare("wave", warp, Side("ok", arrays={"x": ref, "y": np.ones(2)}, losses=[1.0, 0.5]))
    assert same.matches and same.compared == 2
    lossy = compare("wave", warp, Side("ok", arrays=dict(warp.arrays), losses=[1.0, 0.6]))
    assert not lossy.matches
    missing = compare("wave", warp, Side("ok", arrays={"x": ref}))
    assert missing.missing == ["y"] and not missing.matches
    garbage = {"e_x": ref, "e_x_center_plane_buffer": np.full(2, 9e37)}  # listed in ignore
    fdtd = compare("fdtd_3d", Side("ok", arrays=garbage), Side("ok", arrays={
        "e_x": ref, "e_x_center_plane_buffer": np.zeros(2)}))  # fmt: skip
    assert fdtd.matches and fdtd.compared == 1


@pytest.fixture(scope="module")
def fake_wheel(tmp_path_factory) -> Path:
    """A stand-in for the installed warp package: tests/ with a harness and one test module."""
    root = tmp_path_factory.mktemp("site") / "warp"
    (root / "tests").mkdir(parents=True)
    (root / "examples").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    (root / "examples" / "__init__.py").write_text("def where():\n    return __file__\n")
    (root / "tests" / "unittest_utils.py").write_text("import warp as wp\ntest_mode = 'x'\n")
    (root / "tests" / "test_fake.py").write_text(textwrap.dedent("""
        import unittest
        import warp as wp
        from warp._src.types import some_private_thing, int_types

        class TestFake(unittest.TestCase):
            def test_public(self):
                self.assertIs(wp.float32, wp.types.float32)
                self.assertIn(wp.int32, int_types)
            def test_private(self):
                some_private_thing()
            def test_missing(self):
                wp.no_such_name_in_gradloom
    """))  # fmt: skip
    (root / "tests" / "test_abort.py").write_text(textwrap.dedent("""
        import os, sys, time, unittest

        class TestAbort(unittest.TestCase):
            def test_a_fine(self):
                pass
            def test_b_dies(self):
                if os.environ.get("FAKE_HANG"):
                    time.sleep(60)
                sys.stdout.flush()
                os._exit(3)
            def test_c_never(self):
                pass
    """))  # fmt: skip
    return root


def _run_child(shim_dir: Path, tmp: Path) -> FileRun:
    out = tmp / "events.jsonl"
    cmd = [*shim.command_prefix(shim_dir), "-m", "tools.warp_compat.child", "test_fake", str(out)]
    subprocess.run(cmd, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES=""),
                   check=True, timeout=120, capture_output=True)  # fmt: skip
    return parse_events("test_fake", out.read_text().splitlines(), False, 0)


def test_shim_runs_wheel_tests_against_gradloom(fake_wheel, tmp_path):
    shim_dir = shim.generate(tmp_path / "shim", fake_wheel)
    assert not list(shim_dir.rglob("test_fake.py"))  # Warp's files are never copied
    run = _run_child(shim_dir, tmp_path)
    assert run.status == "ok", run.file_errors
    assert run.tests["TestFake.test_public"].outcome == "pass", run.tests["TestFake.test_public"]
    private = run.tests["TestFake.test_private"]
    assert (private.outcome, private.exc_type) == ("error", "WarpPrivate")
    missing = run.tests["TestFake.test_missing"]
    assert missing.exc_type == "AttributeError" and "no_such_name_in_gradloom" in missing.message


def test_shim_modules_alias_and_experiment(fake_wheel, tmp_path):
    shim_dir = shim.generate(tmp_path / "shim", fake_wheel, experiment="wp.EXPERIMENT_RAN = 1")
    code = textwrap.dedent(f"""
        import os, gradloom, gradloom.config, warp, warp.config, warp.examples, warp.optim
        from tools.warp_compat import shimlib
        assert shimlib.prepare_child(warp) and warp.EXPERIMENT_RAN == 1
        assert warp.config is gradloom.config and warp.vec3 is gradloom.vec3
        assert warp.optim is gradloom.optim
        assert warp.examples.where().startswith({str(fake_wheel)!r})
        from warp._src.types import Vector
        assert repr(Vector[warp.float32, 3]) == repr(gradloom.types.vector(3, gradloom.float32))
        print("ok")
    """)  # fmt: skip
    env = runner.child_env(shim_dir)
    out = subprocess.run([*shim.command_prefix(shim_dir), "-c", code], env=env, cwd=REPO,
                         timeout=120, capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_child_subprocesses_import_gradloom(fake_wheel, tmp_path):
    """A plain interpreter a gradloom child starts (Warp's run_python_subprocess) gets
    gradloom's warp and the shim's packages, not the installed warp-lang."""
    shim_dir = shim.generate(tmp_path / "shim", fake_wheel)
    code = ("import warp, warp.tests.unittest_utils as u; "
            "print(hasattr(warp, '__gradloom_version__'), u.__file__)")
    out = subprocess.run([sys.executable, "-c", code], env=runner.child_env(shim_dir), cwd=REPO,
                         timeout=120, capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    flag, where = out.stdout.split()
    assert flag == "True" and where.startswith(str(fake_wheel))
    plain = subprocess.run([sys.executable, "-c", code], env=runner.child_env(None), cwd=REPO,
                           timeout=120, capture_output=True, text=True)  # fmt: skip
    assert "True" not in plain.stdout  # warp-lang's children stay on warp-lang


def test_catalog_lists_unique_files_and_examples():
    assert len(set(catalog.TEST_FILES)) == len(catalog.TEST_FILES)
    names = [e.name for e in catalog.EXAMPLES]
    assert len(set(names)) == len(names)
    assert catalog.example_spec("wave").module == "core.example_wave"
    root = catalog.warp_root()
    if root is not None:  # every listed example is one the installed wheel ships
        missing = [e.name for e in catalog.EXAMPLES
                   if not (root / "examples" / (e.module.replace(".", "/") + ".py")).exists()]
        assert not missing, missing


def test_installed_wheel_has_every_covered_file():
    root = catalog.warp_root()
    if root is None:
        pytest.skip("warp-lang is not installed (pip install -e '.[compat]')")
    missing = [m for m in catalog.TEST_FILES if not catalog.test_file_path(root, m).is_file()]
    assert not missing


@pytest.mark.parametrize("hang", [False, True])
def test_runner_pins_crash_or_hang_to_the_test(fake_wheel, tmp_path, monkeypatch, hang):
    shim_dir = shim.generate(tmp_path / "shim", fake_wheel)
    if hang:
        monkeypatch.setenv("FAKE_HANG", "1")
    run = run_file("test_abort", shim_dir, tmp_path / "work", timeout=8.0 if hang else 120.0)
    assert run.status == ("timeout" if hang else "crash")
    assert run.tests["TestAbort.test_a_fine"].outcome == "pass"
    assert run.tests["TestAbort.test_b_dies"].exc_type == ("Timeout" if hang else "Crash")
    assert run.tests["TestAbort.test_c_never"].exc_type == "NotRun"


def test_failing_tests_carry_their_notes():
    from tools.warp_compat import notes, report

    module, name = "test_tape", "TestTape.test_tape_no_nested_tapes"
    assert "nested tapes" in notes.note_for(module, name)
    assert notes.note_for(module, "TestTape.test_other") == ""
    score = classify.FileScore(module, "ok", 1, [classify.Scored(name, "failed", "AssertionError")])
    text = "\n".join(report._details([score], ("failed",), "Failing"))
    assert f"`{name}` [failed]: AssertionError — *why:* " in text
