"""Warp's logging API (gradloom/logger.py): active logger, scopes, levels."""

import threading
import warnings

import pytest

import gradloom as wp
from gradloom import logger as gl_logger


class Recorder:
    def __init__(self):
        self.lines = []

    def debug(self, message):
        self.lines.append(("debug", message))

    def info(self, message):
        self.lines.append(("info", message))

    def warning(self, message, category=None, stacklevel=1):
        self.lines.append(("warning", message))

    def error(self, message):
        self.lines.append(("error", message))


def test_levels_gate_messages():
    rec = Recorder()
    with wp.ScopedLogger(rec), wp.ScopedLogLevel(wp.LOG_WARNING):
        gl_logger.log_debug("d")
        gl_logger.log_info("i")
        gl_logger.log_warning("w")
        gl_logger.log_error("e")
        assert wp.config.log_level == wp.LOG_WARNING
    assert rec.lines == [("warning", "w"), ("error", "e")]
    with wp.ScopedLogger(rec), wp.ScopedLogLevel(wp.LOG_ERROR):
        gl_logger.log_warning("hidden")
        gl_logger.log_error("always")
    assert rec.lines[-1] == ("error", "always") and len(rec.lines) == 3


def test_set_and_scope_restore():
    original = wp.get_logger()
    rec = Recorder()
    with pytest.raises(RuntimeError), wp.ScopedLogger(rec) as scope:
        assert scope.logger is rec and wp.get_logger() is rec
        raise RuntimeError("boom")
    assert wp.get_logger() is original
    try:
        wp.set_logger(rec)
        assert wp.get_logger() is rec
        wp.set_logger(None)
        assert isinstance(wp.get_logger(), gl_logger.LoggerBasic)
    finally:
        wp.set_logger(original)


def test_invalid_loggers_are_refused():
    with pytest.raises(TypeError):
        wp.set_logger("not a logger")
    with pytest.raises(TypeError, match="info, warning, error"):
        wp.set_logger(type("Half", (), {"debug": lambda self, m: None})())
    with pytest.raises(TypeError):
        wp.Logger()


def test_basic_logger_warning_goes_through_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gl_logger.LoggerBasic().warning("careful", DeprecationWarning)
    assert [str(w.message) for w in caught] == ["careful"]
    assert caught[0].category is DeprecationWarning


def test_logger_is_per_context():
    rec, seen = Recorder(), []
    with wp.ScopedLogger(rec):
        t = threading.Thread(target=lambda: seen.append(wp.get_logger()))
        t.start()
        t.join()
    assert isinstance(seen[0], gl_logger.LoggerBasic)  # a new thread starts with the basic one
