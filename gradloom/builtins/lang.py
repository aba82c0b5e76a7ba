"""Language-level builtins the frontend treats specially: wp.tid(), wp.static(), wp.grad()."""

from __future__ import annotations

from typing import Any

from .registry import builtin
from .values import Ctx, Value


@builtin("tid", "this thread's index; `i, j = wp.tid()` on multi-dimensional launches",
         differentiable=False, signatures=("() -> Int", "() -> Tuple[Int, ...]"))
def tid(ctx: Ctx) -> Value:
    return ctx.op("tid", attr=(0, 1))


def static(expr: Any) -> Any:
    """`wp.static(expr)`: evaluated in Python when the kernel is compiled; here, the identity."""
    return expr


STATIC = static


class GradOf:
    """`wp.grad(f)`: in a kernel, called as f is, it gives the gradient of f's scalar result
    with respect to each argument (one value, or a tuple for several); frontend/grad.py."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, *args: Any) -> Any:
        raise RuntimeError("wp.grad(f)(...) computes a gradient inside kernels and @wp.func "
                           "functions only")

    def __repr__(self) -> str:
        return f"wp.grad({getattr(self.fn, '__name__', self.fn)!r})"


def grad(fn: Any) -> GradOf:
    """`wp.grad(f)`: f's gradient function, for use in kernels (see GradOf)."""
    return GradOf(fn)


class _AdjointMarker:
    """`wp.adjoint`: only meaningful as `wp.adjoint[param]` inside a @wp.func_grad function."""

    def __getitem__(self, key: Any) -> Any:
        raise TypeError("wp.adjoint[...] is only valid inside a @wp.func_grad function")

    def __repr__(self) -> str:
        return "wp.adjoint"


ADJOINT = _AdjointMarker()
