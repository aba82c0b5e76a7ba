"""Warp's autograd array-access check (`config.verify_autograd_array_access`): read marks.

While a Tape records with the option on, a launch marks the memory of every array it reads, and
a launch or an array copy that then writes marked memory prints a warning naming the array, the
kernel argument (or the copy's call site) and the file and line. `Tape.backward()` and
`Tape.reset()` clear the marks of the arrays they recorded. The mark lives on the memory
(`watch.Memory`), so every view of an allocation shares it.

gradloom's own gradients stay right after such a write (copy-on-write snapshots, docs/autodiff.md);
the warning is for code that must also run on Warp, where the overwrite corrupts the gradient.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Iterable
from typing import Any

from .. import config

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_CONSEQUENCE = ("This may corrupt gradient computation in the backward pass. (gradloom keeps "
                "a copy of what its backward pass needs, so its gradients stay right; Warp's "
                "do not.)")


class ReadMarks:
    """The array methods of Warp's check (a mixin of `wp.array`)."""

    _mem: Any

    @property
    def _is_read(self) -> bool:
        return bool(self._mem.is_read)

    def mark_init(self) -> None:
        """Clear this array's read mark."""
        self._mem.is_read = False

    def mark_read(self) -> None:
        """Mark this array (its memory, so every view of it) as read by a recorded launch."""
        self._mem.is_read = True

    def mark_write(self, **where: Any) -> None:
        """Warn (on stderr) if this array is written after a recorded launch read it. `where`:
        `arg_name`, `kernel_name`, `filename`, `lineno` for a launch, or `operation`,
        `filename`, `lineno` for another write."""
        if not self._mem.is_read:
            return
        at = f" at {where['filename']}:{where['lineno']}" if "filename" in where else ""
        if "kernel_name" in where:
            what = (f"Array {self} passed to argument {where.get('arg_name')} in kernel "
                    f"{where['kernel_name']}{at} is being written to but")
        elif "operation" in where:
            what = f"Array {self} is being written to by {where['operation']}{at} but"
        else:
            what = f"Array {self} is being written to but"
        print(f"gradloom warning: {what} has already been read from in a previous launch. "
              f"{_CONSEQUENCE}", file=sys.stderr)


def check_launch(kernel: Any, touches: Iterable[tuple[Any, str, bool, bool]]) -> None:
    """A recorded launch: warn for each marked array it writes, then mark those it reads.
    touches: (array, parameter name, reads it, writes it)."""
    if not config.verify_autograd_array_access:
        return
    touches = list(touches)
    filename, lineno = _definition(kernel)
    for a, name, _, writes in touches:
        if writes:
            a.mark_write(arg_name=name, kernel_name=getattr(kernel, "key", kernel),
                         filename=filename, lineno=lineno)
    for a, _, reads, _ in touches:
        if reads:
            a.mark_read()


def check_copy(dest: Any, src: Any) -> None:
    """A recorded array copy dest <- src (wp.copy, assign, clone)."""
    if not config.verify_autograd_array_access:
        return
    if dest._mem.is_read:
        filename, lineno = _caller()
        dest.mark_write(operation="an array copy", filename=filename, lineno=lineno)
    src.mark_read()


def clear(arrays: Iterable[Any]) -> None:
    """Forget the read marks of these arrays (backward consumed the reads, or reset)."""
    for a in arrays:
        mem = getattr(a, "_mem", None)
        if mem is not None:
            mem.is_read = False


def _definition(kernel: Any) -> tuple[str, int]:
    func = getattr(kernel, "func", None)
    if func is None:
        return "?", 0
    try:
        return inspect.getsourcefile(func) or "?", inspect.getsourcelines(func)[1]
    except (TypeError, OSError):
        return "?", 0


def _caller() -> tuple[str, int]:
    """The first frame outside gradloom: the user's call site."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "?", 0
    return frame.f_code.co_filename, frame.f_lineno
