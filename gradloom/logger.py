"""Warp's logging API: the `Logger` protocol, the basic logger, `get_logger` / `set_logger`,
`ScopedLogger`, `ScopedLogLevel`, and `log_debug` ... `log_error` gated by
`config.log_level`. The active logger is a context variable (each thread starts with the
basic logger)."""

from __future__ import annotations

import sys
import warnings
from contextvars import ContextVar
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from . import config as _config
from .runtime.launch.launch import PRINT_LAUNCH

LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR = 10, 20, 30, 40

#: the options module (log_level is one of Warp's options it keeps: config.py)
config: Any = _config

_METHODS = ("debug", "info", "warning", "error")


@runtime_checkable
class Logger(Protocol):
    """What `wp.set_logger` takes: any object with these four methods."""

    def debug(self, message: str) -> None: ...

    def info(self, message: str) -> None: ...

    def warning(self, message: str, category: type[Warning] | None = None,
                stacklevel: int = 1) -> None: ...

    def error(self, message: str) -> None: ...


class LoggerBasic:
    """The default logger: debug and info to stdout, warnings through Python's `warnings`
    (so filters apply), errors to stderr."""

    def debug(self, message: str) -> None:
        print(message)

    def info(self, message: str) -> None:
        print(message)

    def warning(self, message: str, category: type[Warning] | None = None,
                stacklevel: int = 1) -> None:
        warnings.warn(message, category or UserWarning, stacklevel=stacklevel + 1)

    def error(self, message: str) -> None:
        print(message, file=sys.stderr)


_BASIC = LoggerBasic()
_ACTIVE: ContextVar[Any] = ContextVar("gradloom_logger", default=None)


def get_logger() -> Any:
    """The active logger (the basic logger unless `set_logger` chose another)."""
    logger = _ACTIVE.get()
    return _BASIC if logger is None else logger


def _checked(logger: Any) -> Any:
    if logger is None:
        return LoggerBasic()
    missing = [m for m in _METHODS if not callable(getattr(logger, m, None))]
    if missing:
        raise TypeError(f"a logger needs the methods {', '.join(_METHODS)}; "
                        f"{type(logger).__name__} lacks {', '.join(missing)}")
    return logger


def set_logger(logger: Any) -> None:
    """Make `logger` the active logger (None: a fresh basic logger)."""
    _ACTIVE.set(_checked(logger))


class ScopedLogger:
    """`with wp.ScopedLogger(logger):` uses `logger` inside the block (None: the basic one)."""

    def __init__(self, logger: Any) -> None:
        self.logger = _checked(logger)
        self._saved: Any = None

    def __enter__(self) -> ScopedLogger:
        self._saved = _ACTIVE.get()
        _ACTIVE.set(self.logger)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        _ACTIVE.set(self._saved)


class ScopedLogLevel:
    """`with wp.ScopedLogLevel(level):` sets `config.log_level` inside the block."""

    def __init__(self, level: int) -> None:
        self.level = int(level)
        self._saved = config.log_level

    def __enter__(self) -> ScopedLogLevel:
        self._saved = config.log_level
        config.log_level = self.level
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        config.log_level = self._saved


def _enabled(level: int) -> bool:
    return bool(config.log_level <= level)


def log_debug(message: str) -> None:
    if _enabled(LOG_DEBUG):
        get_logger().debug(message)


def log_info(message: str) -> None:
    if _enabled(LOG_INFO):
        get_logger().info(message)


def log_warning(message: str, category: type[Warning] | None = None,
                stacklevel: int = 1) -> None:
    if _enabled(LOG_WARNING):
        get_logger().warning(message, category, stacklevel + 1)


def log_error(message: str) -> None:
    """Errors are always reported."""
    get_logger().error(message)


def _print_launch(message: str) -> None:
    """`config.print_launches`: the active logger's info, whatever the log level (as Warp)."""
    get_logger().info(message)


PRINT_LAUNCH.fill(_print_launch)
