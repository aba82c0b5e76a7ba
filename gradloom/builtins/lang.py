"""Language-level builtins the frontend treats specially: wp.tid() and wp.static()."""

from __future__ import annotations

from typing import Any

from .registry import builtin
from .values import Ctx, Value


@builtin("tid", "this thread's index; `i, j = wp.tid()` on multi-dimensional launches (fewer "
         "indices than the launch has dimensions: the leading ones, as Warp)",
         differentiable=False, signatures=("() -> Int", "() -> Tuple[Int, ...]"))
def tid(ctx: Ctx) -> Value:
    return ctx.op("tid", attr=(0, 1))


def static(expr: Any) -> Any:
    """`wp.static(expr)`: evaluated in Python when the kernel is compiled; here, the identity."""
    return expr


STATIC = static


class _AdjointMarker:
    """`wp.adjoint`: only meaningful as `wp.adjoint[param]` inside a @wp.func_grad function."""

    def __getitem__(self, key: Any) -> Any:
        raise TypeError("wp.adjoint[...] is only valid inside a @wp.func_grad function")

    def __repr__(self) -> str:
        return "wp.adjoint"


ADJOINT = _AdjointMarker()
