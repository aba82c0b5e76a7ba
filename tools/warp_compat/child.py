"""Child process: run one Warp test module and stream one JSON line per test event to a file.

Usage (the parent runs it through ``python -m gradloom.as_warp`` for gradloom, plainly for warp-lang):

    python -m tools.warp_compat.child MODULE OUT.jsonl

Events: ``{"event": "start", "test": ID}``, ``{"event": "end", "test": ID, "outcome": ...}``
(outcome: pass, fail, error, skip, xfail, upass; with exc_type, message, origin, traceback),
``{"event": "file_error", ...}`` when the module (or the harness) cannot be imported or a
class/module fixture fails, and ``{"event": "done"}``. Lines are flushed one by one, so a crash
or a hang is pinned to the test that was running.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import traceback
import unittest
from types import TracebackType
from typing import Any, TextIO

from . import shimlib

ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]

_RANK = {"pass": 0, "xfail": 0, "skip": 1, "upass": 2, "fail": 3, "error": 4}
_MAX_MESSAGE = 2000
_MAX_TRACEBACK = 4000


def test_id(test: unittest.TestCase) -> str:
    """``Class.method``: the test's id without its module."""
    return f"{type(test).__name__}.{getattr(test, '_testMethodName', test.id())}"


def describe(err: ExcInfo) -> dict[str, Any]:
    """Exception type, first part of the message, innermost frame and a short traceback."""
    etype, value, tb = err
    frames = traceback.extract_tb(tb)
    origin = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    text = "".join(traceback.format_exception(etype, value, tb))
    return {
        "exc_type": etype.__name__,
        "message": str(value)[:_MAX_MESSAGE],
        "origin": origin,
        "traceback": text[-_MAX_TRACEBACK:],
    }


class StreamingResult(unittest.TestResult):
    """Records each test's worst outcome and writes start/end events as they happen."""

    def __init__(self, out: TextIO) -> None:
        super().__init__()
        self._out = out
        self._current: dict[str, Any] | None = None

    def emit(self, event: dict[str, Any]) -> None:
        self._out.write(json.dumps(event) + "\n")
        self._out.flush()

    def startTest(self, test: unittest.TestCase) -> None:
        super().startTest(test)
        self._current = {"event": "end", "test": test_id(test), "outcome": "pass"}
        self.emit({"event": "start", "test": test_id(test)})

    def stopTest(self, test: unittest.TestCase) -> None:
        super().stopTest(test)
        if self._current is not None:
            self.emit(self._current)
        self._current = None

    def _note(self, outcome: str, err: ExcInfo | None = None, reason: str = "") -> None:
        cur = self._current
        if cur is None or _RANK[outcome] < _RANK[cur["outcome"]]:
            return
        cur["outcome"] = outcome
        if err is not None:
            cur.update(describe(err))
        if reason:
            cur["message"] = reason

    def addError(self, test: Any, err: Any) -> None:
        super().addError(test, err)
        if isinstance(test, unittest.TestCase) and self._current is not None:
            self._note("error", err)
        else:  # setUpClass / setUpModule failure (an _ErrorHolder)
            self.emit({"event": "file_error", "where": str(test), **describe(err)})

    def addFailure(self, test: Any, err: Any) -> None:
        super().addFailure(test, err)
        self._note("fail", err)

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self._note("skip", reason=reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self._note("xfail")

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self._note("upass")

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._note("fail" if failed else "error", err)


def _iter_tests(suite: unittest.TestSuite) -> list[str]:
    ids: list[str] = []
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            ids.extend(_iter_tests(item))
        else:
            ids.append(test_id(item))
    return ids


def _prepare_backend() -> None:
    """Import warp (real or shim) and Warp's test harness, restricted to the CPU."""
    import warp

    on_gradloom = shimlib.prepare_child(warp)
    if hasattr(warp.config, "quiet"):
        warp.config.quiet = True
    utils: Any = importlib.import_module("warp.tests.unittest_utils")
    utils.test_mode = "basic"  # the CPU plus the first GPU: none is visible here
    if on_gradloom:
        # The harness silences warp-lang's native (C) error printing through warp._src; gradloom
        # has no native error output, so there is nothing to silence.
        utils.suppress_native_error_output = contextlib.nullcontext


def run(module: str, out: TextIO) -> int:
    """Run every test of ``warp.tests.<module>``, streaming events to ``out``."""
    result = StreamingResult(out)
    try:
        _prepare_backend()
        mod = importlib.import_module(f"warp.tests.{module}")
    except BaseException as e:  # any import failure is the file's result
        if isinstance(e, KeyboardInterrupt):
            raise
        result.emit({"event": "file_error", "where": "import", **describe(sys.exc_info())})  # type: ignore[arg-type]
        result.emit({"event": "done"})
        return 0
    suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
    result.emit({"event": "collected", "tests": _iter_tests(suite)})
    suite.run(result)
    result.emit({"event": "done"})
    return 0


def main(argv: list[str]) -> int:
    module, out_path = argv[0], argv[1]
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    with open(out_path, "w", encoding="utf-8") as out:
        return run(module, out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
