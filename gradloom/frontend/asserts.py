"""`assert` in kernels: compiled out in release mode, as Warp compiles it out; in debug mode a
false condition stops the launch and raises KernelRuntimeError naming the assertion (Warp
aborts the process there: docs/differences.md)."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from .. import config
from ..errors import AssertLoc, SourceLoc
from ..ir.builder import Builder
from ..types import int64


def _message(node: ast.Assert) -> str:
    text = f"assert {ast.unparse(node.test)}"
    if node.msg is None:
        return text
    if isinstance(node.msg, ast.Constant) and isinstance(node.msg.value, str):
        return f"{text}, {node.msg.value}"
    return f"{text}, {ast.unparse(node.msg)}"


class AssertLowerer:
    """The Lowerer's `assert` statement."""

    b: Builder
    info: Any

    def value(self, node: ast.expr) -> Any: ...

    def truth_at(self, v: Any, loc: SourceLoc) -> Any: ...

    def stmt_Assert(self, node: ast.Assert) -> None:
        if config.mode != "debug":
            return
        loc = self.info.loc(node)
        cond = self.truth_at(self.value(node.test), loc)
        # a bounds check of index 0 against extent 1 (true) or 0 (false): it fails where the
        # condition does, through the launch's error record; the location says it is an assert
        extent = self.b.op("select", (cond, self.b.const(1, int64, loc),
                                      self.b.const(0, int64, loc)), loc)
        where = AssertLoc(**{f.name: getattr(loc, f.name) for f in dataclasses.fields(loc)},
                          message=_message(node))
        self.b.effect("check_bounds", (self.b.const(0, int64, loc), extent), loc,
                      attr=self.b.loc_index(where))
