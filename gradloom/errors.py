"""Source locations and the error classes users see, with a caret excerpt of their own code."""

from __future__ import annotations

import functools
import itertools
import linecache
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast


@dataclass(frozen=True)
class SourceLoc:
    """A position in the user's source: file, 1-based line, 0-based column."""

    file: str
    line: int
    col: int = 0
    func: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def excerpt(self) -> str:
        """The user's line with a caret under the column, or '' if the source is unavailable."""
        text = linecache.getline(self.file, self.line).rstrip("\n")
        if not text:
            return ""
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        caret = " " * max(self.col - indent, 0) + "^"
        return f"    {stripped}\n    {caret}"


@dataclass(frozen=True)
class AssertLoc(SourceLoc):
    """The location of a kernel's `assert` (checked in debug mode), with the assertion's text
    for the error a failure raises."""

    message: str = ""


UNKNOWN_LOC = SourceLoc("<unknown>", 0, 0)


class GradloomError(Exception):
    """Base class for every error gradloom raises on purpose."""


class CompileError(GradloomError, RuntimeError):
    """A kernel or func cannot be compiled; the message names the user's file and line, and a
    note (shown under it in tracebacks) the user's statement with a caret under the column.
    The message ends with the words about the problem, so Warp's tests' `...$` patterns match.
    A RuntimeError too, as Warp's `WarpCodegenError` (its alias); the subclasses below are also
    the builtin exception Warp's matching codegen error derives from."""

    def __init__(self, message: str, loc: SourceLoc | None = None) -> None:
        self.bare_message = message
        self.loc = loc
        super().__init__(self._render())
        excerpt = self.excerpt()
        if excerpt:
            self.add_note(excerpt)

    def _render(self) -> str:
        if self.loc is None or self.loc is UNKNOWN_LOC:
            return self.bare_message
        where = f"{self.loc}" + (f" in {self.loc.func}" if self.loc.func else "")
        return f"{where}: {self.bare_message}"

    def excerpt(self) -> str:
        """The user's statement with a caret under the column ('' without a location)."""
        if self.loc is None or self.loc is UNKNOWN_LOC:
            return ""
        return self.loc.excerpt()

    def __str__(self) -> str:  # the message as is (KeyError alone would quote it)
        return str(self.args[0]) if self.args else ""


class UnsupportedSyntaxError(CompileError):
    """Python syntax the kernel language does not support."""


class KernelTypeError(CompileError, TypeError):
    """Operands or arguments whose types do not fit (Warp's `WarpCodegenTypeError`)."""


class CompileValueError(CompileError, ValueError):
    """A value the kernel language rejects, e.g. a zero slice step (`WarpCodegenValueError`)."""


class CompileIndexError(CompileError, IndexError):
    """A constant index out of range at compile time (`WarpCodegenIndexError`)."""


class CompileKeyError(CompileError, KeyError):
    """A name or key that resolves to nothing (`WarpCodegenKeyError`)."""


class CompileAttributeError(CompileError, AttributeError):
    """An attribute a kernel value or module lacks (`WarpCodegenAttributeError`)."""


class UnknownNameError(CompileKeyError):
    """A name that resolves to nothing in the kernel, its globals or the builtins."""


#: Warp's public names of its compile errors: aliases, one class per concept
WarpCodegenError = CompileError
WarpCodegenTypeError = KernelTypeError
WarpCodegenValueError = CompileValueError
WarpCodegenIndexError = CompileIndexError
WarpCodegenKeyError = CompileKeyError
WarpCodegenAttributeError = CompileAttributeError


class ArrayValueError(GradloomError, ValueError):
    """An array function's argument with a value it cannot take, e.g. a negative size (a
    ValueError too, as Warp raises)."""


class ArrayShapeError(GradloomError, RuntimeError):
    """An array cannot take the shape asked of it, e.g. reshape to another size (a RuntimeError
    too, as Warp raises)."""


class ArrayCopyError(GradloomError, RuntimeError):
    """`wp.copy` arguments that do not fit (offsets, count, element sizes, shapes; a
    RuntimeError too, as Warp raises)."""


class ArrayTypeError(GradloomError, TypeError):
    """An array cannot be seen as the element type asked for, e.g. a view whose element size
    differs (a TypeError too, as Warp raises)."""


class StructFieldError(GradloomError, TypeError):
    """A value a `@wp.struct` field cannot hold, e.g. a number for a vector field or an array of
    another dtype (a TypeError too, as Warp raises)."""


class LaunchError(GradloomError, RuntimeError):
    """A launch whose arguments do not match the kernel; the message names the argument (a
    RuntimeError too, as Warp raises)."""


class LaunchValueError(LaunchError, ValueError):
    """A launch argument whose value cannot be converted to its parameter's type, e.g. None
    for a vector (a ValueError too, as Warp raises)."""


class KernelRuntimeError(GradloomError, RuntimeError):
    """A kernel reported an error while running (e.g. an out-of-bounds index in debug mode)."""


class WarpDeterminismError(GradloomError, RuntimeError):
    """Warp's error for a program its deterministic mode cannot make reproducible. gradloom's
    deterministic mode adds in thread order, which any kernel allows, so it never raises this;
    the name exists for programs that catch it."""


class TapeError(GradloomError, RuntimeError):
    """A Tape used wrongly (a RuntimeError too, as Warp raises for the same misuse)."""


class GradloomWarning(UserWarning):
    """Base class of the warnings gradloom issues."""


def warn_caller(message: str, category: type[Warning] = GradloomWarning) -> None:
    """Warn, attributing the warning to the first frame outside gradloom (the user's line),
    however deep inside gradloom the warning is issued."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    level = 2  # warn()'s stacklevel of that frame
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, category, stacklevel=level)


class CacheWarning(GradloomWarning):
    """The kernel cache held damaged entries (they were recompiled)."""


_PACKAGE = str(Path(__file__).resolve().parent)


def _internal(tb: TracebackType) -> bool:
    return tb.tb_frame.f_code.co_filename.startswith(_PACKAGE + os.sep)


def user_traceback(exc: BaseException) -> BaseException:
    """exc with gradloom's own frames dropped from its traceback (the user's frames stay), and
    without the internal exception it was raised while handling; for re-raising a
    GradloomError at a public entry point (errors that are gradloom's bugs keep theirs)."""
    kept: list[TracebackType] = []
    tb = exc.__traceback__
    while tb is not None:
        if not _internal(tb):
            kept.append(tb)
        tb = tb.tb_next
    for a, b in itertools.pairwise(kept):
        a.tb_next = b
    if kept:
        kept[-1].tb_next = None
    exc.__traceback__ = kept[0] if kept else None
    exc.__suppress_context__ = True
    return exc



_F = TypeVar("_F", bound=Callable[..., Any])


def user_facing(fn: _F) -> _F:
    """A public entry point: a GradloomError raised inside it reaches the user with gradloom's
    own frames hidden (see user_traceback)."""
    @functools.wraps(fn)
    def entry(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GradloomError as exc:
            raise user_traceback(exc) from None
    return cast(_F, entry)
