"""The builtin registry: the single source of kernel-language function names and their docs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import GradloomError

BuiltinFn = Callable[..., Any]


@dataclass(frozen=True, eq=False)
class Builtin:
    """A kernel-language function. `fn(ctx, *args, **kwargs)` emits IR for one call."""

    name: str
    fn: BuiltinFn
    doc: str
    differentiable: bool = True
    signature: str = ""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise GradloomError(
            f"wp.{self.name}() is a kernel builtin: call it inside a @wp.kernel or @wp.func"
        )

    def __repr__(self) -> str:
        return f"<gradloom builtin {self.name}>"


REGISTRY: dict[str, Builtin] = {}


def builtin(
    name: str, doc: str, differentiable: bool = True, signature: str = ""
) -> Callable[[BuiltinFn], BuiltinFn]:
    """Register fn as the kernel builtin `name` (one name, one entry)."""

    def register(fn: BuiltinFn) -> BuiltinFn:
        if name in REGISTRY:
            raise RuntimeError(f"builtin {name} registered twice")
        REGISTRY[name] = Builtin(name, fn, doc, differentiable, signature)
        return fn

    return register
