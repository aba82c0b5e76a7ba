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
from dataclasses import dataclass, field
from typing import Any

from .host import Call, HostCache, caller_loc, host_call

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
    #: programs lowered for calls from Python, by argument types (builtins/host.py)
    host_cache: HostCache = field(default_factory=HostCache, compare=False, repr=False)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A call from Python: the kernel definition, evaluated on the host values."""
        loc = caller_loc(1)
        call = Call(f"wp.{self.name}()", self._lower, list(args), kwargs, loc, plain_kwargs=True)
        return host_call(self.host_cache, call)

    def _lower(self, ctx: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return self.fn(ctx, *args, **kwargs)

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
