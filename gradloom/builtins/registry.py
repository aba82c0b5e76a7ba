"""The builtin registry: the single source of kernel-language function names, signatures and docs.

Signatures are written in a small type language that `docs/builtins.md` prints and the builtin
gradient test instantiates: `Float` (float16/32/64), `Int`, `Scalar` (Float or Int), `Vector`
(any length, one float dtype), `Matrix` (any shape), `Quat`, `Transform`, `SpatialVector`,
`SpatialMatrix`, `Array`, `Bool`, `Any`; `Vector3` / `Matrix33` fix the size. Each signature is
one overload: a differentiable builtin has a gradient test row per overload (see
tests/test_builtin_grads.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import GradloomError

BuiltinFn = Callable[..., Any]

GROUPS = ("Scalar Math", "Vector Math", "Quaternion Math", "Transformations", "Spatial Math",
          "Random", "Geometry", "Operators", "Utility", "Code Generation")


@dataclass(frozen=True, eq=False)
class Builtin:
    """A kernel-language function. `fn(ctx, *args, **kwargs)` emits IR for one call."""

    name: str
    fn: BuiltinFn
    doc: str
    differentiable: bool = True
    signatures: tuple[str, ...] = ()
    group: str = "Utility"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise GradloomError(
            f"wp.{self.name}() is a kernel builtin: call it inside a @wp.kernel or @wp.func"
        )

    def __repr__(self) -> str:
        return f"<gradloom builtin {self.name}>"


REGISTRY: dict[str, Builtin] = {}


def builtin(
    name: str,
    doc: str,
    differentiable: bool = True,
    signatures: tuple[str, ...] | str = (),
    group: str = "Utility",
) -> Callable[[BuiltinFn], BuiltinFn]:
    """Register fn as the kernel builtin `name` (one name, one entry, one or more overloads)."""
    sigs = (signatures,) if isinstance(signatures, str) else tuple(signatures)
    if group not in GROUPS:
        raise RuntimeError(f"builtin {name}: unknown group {group!r}")

    def register(fn: BuiltinFn) -> BuiltinFn:
        if name in REGISTRY:
            raise RuntimeError(f"builtin {name} registered twice")
        REGISTRY[name] = Builtin(name, fn, doc, differentiable, sigs, group)
        return fn

    return register
