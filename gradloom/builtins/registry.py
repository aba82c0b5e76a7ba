"""The builtin registry: the single source of kernel-language function names, signatures and docs.

Signatures are written in a small type language that `docs/builtins.md` prints and the builtin
gradient test instantiates: `Float` (float16/32/64), `Int`, `Scalar` (Float or Int), `Vector`
(any length, one float dtype), `Matrix` (any shape), `Quat`, `Transform`, `SpatialVector`,
`SpatialMatrix`, `Array`, `Bool`, `Any`; `Vector3` / `Matrix33` fix the size. Each signature is
one overload: a differentiable builtin has a gradient test row per overload (see
tests/test_builtin_grads.py).
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import KernelTypeError
from .host import Call, HostCache, caller_loc, host_call

BuiltinFn = Callable[..., Any]

GROUPS = ("Scalar Math", "Vector Math", "Quaternion Math", "Transformations", "Spatial Math",
          "Random", "Geometry", "Operators", "Utility", "Code Generation", "Tile Primitives")


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

    def __post_init__(self) -> None:
        # help(wp.<name>) shows this rather than the class's docstring
        object.__setattr__(self, "__doc__", builtin_doc(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A call from Python: the kernel definition, evaluated on the host values."""
        loc = caller_loc(1)
        mismatch = call_mismatch(self, list(args), kwargs)
        if mismatch:
            raise KernelTypeError(mismatch, loc)
        call = Call(f"wp.{self.name}()", self._lower, list(args), kwargs, loc, plain_kwargs=True,
                    builtin=self.name)
        return host_call(self.host_cache, call)

    def _lower(self, ctx: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return self.fn(ctx, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<gradloom builtin {self.name}>"

    def __gl_fingerprint__(self, visiting: set[int]) -> str:
        """Its part of a kernel's cache key when a kernel captures it (`_fn` in wp.map's
        kernels): the builtin's name, so two builtins never share compiled code."""
        return f"builtin:{self.name}"


class Registry(Mapping[str, Builtin]):
    """Every builtin by name. The modules of subsystems a program may not use (tiles' linear
    algebra, meshes, volumes, ...) register theirs on demand: the first lookup of a name not
    registered yet, or a walk over all names, runs the loaders the catalog gave (`on_miss`)."""

    def __init__(self) -> None:
        self._entries: dict[str, Builtin] = {}
        self._loaders: list[Callable[[], None]] = []
        self._lock = threading.RLock()

    def add(self, b: Builtin) -> None:
        if b.name in self._entries:
            raise RuntimeError(f"builtin {b.name} registered twice")
        self._entries[b.name] = b

    def on_miss(self, loader: Callable[[], None]) -> None:
        """Run loader (it imports builtin modules) before answering a name not registered."""
        self._loaders.append(loader)

    def loaded(self) -> dict[str, Builtin]:
        """The builtins registered so far, loading nothing."""
        return dict(self._entries)

    def _load_rest(self) -> None:
        # the lock makes a second thread wait until the modules are in, rather than miss
        with self._lock:
            loaders, self._loaders = self._loaders, []
            for load in loaders:
                load()

    def __getitem__(self, name: str) -> Builtin:
        found = self._entries.get(name)
        if found is None:
            self._load_rest()  # returns once any other thread's loading is done, too
            found = self._entries.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        self._load_rest()
        return iter(self._entries)

    def __len__(self) -> int:
        self._load_rest()
        return len(self._entries)


REGISTRY = Registry()

_TYPE_WORDS = ("Types: Float is float16, float32 or float64; Int any integer type; Scalar\n"
               "either; Vector and Matrix any size (one float dtype), Vector3 and Matrix33 a\n"
               "fixed size; Quat, Transform, SpatialVector, SpatialMatrix; Array a wp.array.")


def builtin_doc(b: Builtin) -> str:
    """The docstring of builtin b, rendered from its registry entry."""
    grad = ("Differentiable: gradients flow through it in reverse mode (wp.Tape)."
            if b.differentiable else "Not differentiable.")
    lines = [f"wp.{b.name}: {b.doc.rstrip('.')}.", "",
             f"A kernel builtin ({b.group}): call it inside a @wp.kernel or @wp.func.", "",
             "Signatures (one per overload):"]
    lines += [f"    {b.name}{sig}" for sig in b.signatures] or ["    (see docs/builtins.md)"]
    lines += ["", grad, "", _TYPE_WORDS]
    return "\n".join(lines)


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
        REGISTRY.add(Builtin(name, fn, doc, differentiable, sigs, group))
        return fn

    return register


@functools.cache
def _python_signature(fn: BuiltinFn) -> inspect.Signature:
    return inspect.signature(fn)


def call_mismatch(b: Builtin, args: list[Any], kwargs: dict[str, Any]) -> str | None:
    """Why a call of builtin b with these arguments cannot work (the wrong number of arguments,
    an unknown keyword), naming its signatures; None when the arguments fit."""
    try:
        _python_signature(b.fn).bind(None, *args, **kwargs)
    except TypeError:
        pass
    else:
        return None
    got = f"{len(args)} argument{'s' if len(args) != 1 else ''}"
    if kwargs:
        got += " and keyword" + ("s " if len(kwargs) > 1 else " ") + ", ".join(kwargs)
    sigs = "; ".join(f"{b.name}{sig}" for sig in b.signatures) or f"see help(wp.{b.name})"
    return f"wp.{b.name}() got {got}, which fits none of its signatures: {sigs}"
