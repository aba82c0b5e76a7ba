"""`warp._src.context` under the alias: `runtime.core`'s exported builtins, and nothing else.

Libraries reach past Warp's public API into `warp._src.context.runtime.core`, the ctypes handle
of Warp's C++ library: newton's `host_transform.py` calls the builtins Warp exports there,
`wp_builtin_<builtin>_<argument type names>` (Warp's mangling: the builtin's key, then each
parameter type's `__name__`: `wp_builtin_mul_transformf_transformf`,
`wp_builtin_transform_point_transformf_vec3f`, `wp_builtin_quat_from_matrix_mat44f`), with
values passed by value and the result written through a last `ctypes.byref(out)` argument.

gradloom's values are ctypes arrays as Warp's are (types/values.py), so the same calls work
here: every such name is answered from the builtin library itself (the name is parsed into a
builtin of gradloom's and types of gradloom's; no list of names is kept), the builtin is
evaluated on the host as any Python-scope call, and the result is written into `out`. The
rest of Warp's native library (allocators, streams, `wp_float_to_half_bits`, ...) is not
there: reading it raises an AttributeError naming it. Nothing else of `warp._src` is offered;
docs/differences.md keeps the boundary.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

import gradloom

_PREFIX = "wp_builtin_"


def _type_names() -> dict[str, Any]:
    """gradloom's named value types by Warp's `__name__` of them (vec3f, transformf, float32)."""
    kinds = (gradloom.types.VectorType, gradloom.types.MatrixType, gradloom.types.ScalarType)
    return {repr(t): t for t in vars(gradloom.types).values() if isinstance(t, kinds)}


def _types(tokens: list[str], names: dict[str, Any]) -> list[Any] | None:
    """tokens (a mangled name's tail split at '_') as a sequence of type names, or None."""
    if not tokens:
        return []
    for n in range(1, len(tokens) + 1):
        t = names.get("_".join(tokens[:n]))
        rest = _types(tokens[n:], names) if t is not None else None
        if rest is not None:
            return [t, *rest]
    return None


def _builtin(key: str) -> Any:
    b = getattr(gradloom, key, None) if key.isidentifier() else None
    return b if callable(b) and getattr(b, "name", None) == key and \
        hasattr(b, "signatures") else None  # fmt: skip


def parse(name: str) -> tuple[Any, list[Any]] | None:
    """A mangled export name as (gradloom builtin, parameter types); None if it names none."""
    if not name.startswith(_PREFIX):
        return None
    tokens = name[len(_PREFIX):].split("_")
    names = _type_names()
    for k in range(len(tokens), 0, -1):  # the longest builtin name whose tail is types
        b = _builtin("_".join(tokens[:k]))
        types = _types(tokens[k:], names) if b is not None else None
        if types is not None:
            return b, types
    return None


def _argument(t: Any, value: Any) -> Any:
    """A by-value argument as a gradloom value of parameter type t."""
    if isinstance(value, ctypes._SimpleCData):
        value = value.value
    if isinstance(t, gradloom.types.ScalarType):
        return t(value)
    return value if isinstance(value, t) else t(np.asarray(value))


def _store(out: Any, result: Any) -> None:
    """Writes a builtin's result where a `ctypes.byref(out)` (or pointer) argument points."""
    target = getattr(out, "_obj", None)
    if target is None and isinstance(out, ctypes._Pointer):
        target = out.contents
    if isinstance(target, ctypes._SimpleCData):
        target.value = result
    elif isinstance(target, ctypes.Array):
        np.asarray(target)[...] = np.asarray(result).reshape(np.shape(np.asarray(target)))
    else:
        raise TypeError(f"expected ctypes.byref(result) as the last argument, got {out!r}")


def exported(name: str) -> Callable[..., None]:
    """The function Warp's native library exports under `name`, evaluated by gradloom."""
    found = parse(name)
    if found is None:
        raise AttributeError(
            f"warp._src.context.runtime.core.{name}: gradloom, standing in for warp "
            "(gradloom.as_warp), answers only Warp's exported builtins there "
            "(wp_builtin_<builtin>_<argument types>, e.g. wp_builtin_mul_transformf_transformf); "
            "the rest of Warp's native library does not exist in gradloom")
    builtin, types = found

    def call(*args: Any) -> None:
        if len(args) not in (len(types), len(types) + 1):
            raise TypeError(f"{name} takes {len(types)} arguments and a result pointer, "
                            f"got {len(args)} arguments")
        result = builtin(*(_argument(t, a) for t, a in zip(types, args)))
        if len(args) > len(types):
            _store(args[-1], result)

    call.__name__ = call.__qualname__ = name
    return call


class _Core:
    """Stands for Warp's native library handle: its exported builtins only."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return exported(name)


class _Runtime:
    """Stands for Warp's `Runtime`: `core` is the exported builtins."""

    core = _Core()


#: Warp's process-wide runtime object
runtime = _Runtime()
