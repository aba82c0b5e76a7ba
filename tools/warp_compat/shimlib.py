"""Runtime of the ``warp`` shim package: forwards Warp's module names to gradloom.

This file is copied verbatim into the generated shim as ``warp/_shimlib.py`` and must stay
self-contained (standard library and gradloom only). The rest of the shim is a handful of
one-line modules that call ``forward``, ``alias`` or ``private`` from here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any, NoReturn, TypeVar


class ShimMissing(BaseException):
    """A Warp module that gradloom does not provide was used.

    A BaseException, so that a test's ``assertRaises(Exception)`` cannot swallow it.
    """


class WarpPrivate(BaseException):
    """A Warp-private internal (``warp._src``) was used: the test is not applicable to gradloom."""


def _raise(cls: type[BaseException], what: str, why: str) -> NoReturn:
    raise cls(f"{what}: {why}")


class _PlaceholderMeta(type):
    """Type of placeholders: every use except identity, hashing and repr raises."""

    _what: str
    _why: str
    _exc: type[BaseException]

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        _raise(cls._exc, f"{cls._what}.{name}", cls._why)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        _raise(cls._exc, f"{cls._what}(...)", cls._why)

    def __instancecheck__(cls, obj: Any) -> bool:
        _raise(cls._exc, f"isinstance(..., {cls._what})", cls._why)

    def __subclasscheck__(cls, sub: Any) -> bool:
        _raise(cls._exc, f"issubclass(..., {cls._what})", cls._why)

    def __iter__(cls) -> Any:
        _raise(cls._exc, f"iter({cls._what})", cls._why)

    def __contains__(cls, item: Any) -> bool:
        _raise(cls._exc, f"... in {cls._what}", cls._why)

    def __getitem__(cls, key: Any) -> Any:
        spell = cls.__dict__.get("_spell")
        if spell is not None:
            return spell(key)
        _raise(cls._exc, f"{cls._what}[...]", cls._why)

    def __len__(cls) -> int:
        _raise(cls._exc, f"len({cls._what})", cls._why)

    def __setitem__(cls, key: Any, value: Any) -> None:
        _raise(cls._exc, f"{cls._what}[...] = ...", cls._why)

    def __delitem__(cls, key: Any) -> None:
        _raise(cls._exc, f"del {cls._what}[...]", cls._why)

    def __enter__(cls) -> Any:
        _raise(cls._exc, f"with {cls._what}", cls._why)

    def __exit__(cls, *exc: Any) -> None:
        return None

    def __repr__(cls) -> str:
        return f"<not in gradloom: {cls._what}>"


def placeholder(what: str, why: str, exc: type[BaseException], spell: Any = None) -> type:
    """A stand-in for the missing object ``what``: importable, but raises ``exc`` when used.

    ``spell(key)``, if given, answers ``what[key]`` instead (see ``_type_spelling``).
    """
    body = {"_what": what, "_why": why, "_exc": exc, "_spell": staticmethod(spell) if spell else None}
    return _PlaceholderMeta(what.rsplit(".", 1)[-1], (), body)


def _literal_int(value: Any) -> int | None:
    """3 or Literal[3] -> 3; anything else (Any, a TypeVar, Literal[2, 3]) -> None."""
    import typing

    if typing.get_origin(value) is typing.Literal:
        args = typing.get_args(value)
        value = args[0] if len(args) == 1 else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _type_spelling(name: str, arity: int, build: Any) -> type:
    """``warp._src.types.<name>[dtype, sizes...]``: Warp's typing spelling of a public factory.

    Only the concrete form maps to gradloom's public factory (``Vector[float32, 3]`` is
    ``wp.types.vector(3, float32)`` in Warp too); generic or malformed forms are Warp-private.
    """
    what = f"warp._src.types.{name}"

    def spell(key: Any) -> Any:
        args = key if isinstance(key, tuple) else (key,)
        sizes = [_literal_int(a) for a in args[1:]]
        if len(args) != arity or None in sizes or isinstance(args[0], (str, int, TypeVar)):
            _raise(WarpPrivate, f"{what}[{key!r}]", "generic or malformed Warp-private spelling")
        return build(args[0], *sizes)

    return placeholder(what, "Warp-private internal", WarpPrivate, spell)


def _inside_package(name: str) -> bool:
    """Whether ``name`` would load from the imported gradloom package's own directory.

    (An editable install of another checkout can otherwise supply a submodule this one lacks.)
    """
    import gradloom

    if name == "gradloom":
        return True
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    roots = [str(p) for p in gradloom.__path__]
    where = spec.origin if spec is not None else None
    if spec is not None and where in (None, "namespace") and spec.submodule_search_locations:
        where = next(iter(spec.submodule_search_locations), None)
    return where is not None and any(where.startswith(r) for r in roots)


def _try_import(name: str) -> types.ModuleType | None:
    if not _inside_package(name):
        return None
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is not None and (name == e.name or name.startswith(e.name + ".")):
            return None
        raise


def forward(modname: str, targets: tuple[str, ...]) -> None:
    """Make module ``modname`` forward attribute reads to the first of ``targets`` that has them.

    If the first target module does not exist, every public name of ``modname`` is a placeholder
    raising ShimMissing when used (so a test file that imports one name still loads).
    """
    mod = sys.modules[modname]
    found = [m for m in map(_try_import, targets) if m is not None]
    primary_missing = not found or found[0].__name__ != targets[0]

    def __getattr__(name: str) -> Any:
        if not (name.startswith("__") or primary_missing):
            for target in found:
                if hasattr(target, name):
                    return getattr(target, name)
        if name.startswith("_") or not primary_missing:
            raise AttributeError(
                f"module {modname!r} (gradloom shim) has no attribute {name!r}: "
                f"gradloom has no {targets[0]}.{name}"
            )
        return placeholder(f"{modname}.{name}", f"gradloom has no module {targets[0]}", ShimMissing)

    def __dir__() -> list[str]:
        return sorted({n for t in found for n in dir(t) if not n.startswith("_")})

    mod.__getattr__ = __getattr__  # type: ignore[method-assign]
    mod.__dir__ = __dir__  # type: ignore[method-assign]
    mod.__all__ = __dir__()  # type: ignore[attr-defined]


def alias(modname: str, target: str) -> None:
    """Make ``modname`` the very module ``target`` (shared state, e.g. options)."""
    sys.modules[modname] = importlib.import_module(target)


def private(modname: str, data: dict[str, Any] | None = None) -> None:
    """A Warp-private module: ``data`` names resolve, everything else is a WarpPrivate placeholder."""
    mod = sys.modules[modname]
    if data:
        for key, value in data.items():
            setattr(mod, key, value)

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return placeholder(f"{modname}.{name}", "Warp-private internal", WarpPrivate)

    mod.__getattr__ = __getattr__  # type: ignore[method-assign]


def by_names(names: str) -> tuple[Any, ...]:
    """The gradloom objects named (space-separated); names gradloom lacks are left out."""
    import gradloom

    return tuple(getattr(gradloom, n) for n in names.split() if hasattr(gradloom, n))


_INTS = "int8 uint8 int16 uint16 int32 uint32 int64 uint64"
_FLOATS = "float16 bfloat16 float32 float64"
_VEC_SUFFIXES = "b ub s us i ui l ul h f d"


def src_types_data() -> dict[str, Any]:
    """Lists of Warp types that Warp's tests read from ``warp._src.types`` as test parameters.

    They hold public type names only (built here from gradloom's public names), so the tests
    that iterate over them are about public behaviour, not Warp internals.
    """
    import numpy as np

    import gradloom
    import gradloom.types as t

    vecs = " ".join(f"vec{n}{s}" for n in (2, 3, 4) for s in _VEC_SUFFIXES.split())
    mats = " ".join(f"{k}{p}" for k in ("mat22", "mat33", "mat44", "quat", "transform",
                                          "spatial_vector", "spatial_matrix") for p in "hfd")  # fmt: skip
    np_map: dict[Any, Any] = {}
    for np_name, wp_name in (("bool_", "bool"), ("int8", "int8"), ("uint8", "uint8"),
                             ("int16", "int16"), ("uint16", "uint16"), ("int32", "int32"),
                             ("int64", "int64"), ("uint32", "uint32"), ("uint64", "uint64"),
                             ("byte", "int8"), ("ubyte", "uint8"), ("float16", "float16"),
                             ("float32", "float32"), ("float64", "float64")):  # fmt: skip
        if hasattr(gradloom, wp_name):
            np_type = getattr(np, np_name)
            np_map[np_type] = np_map[np.dtype(np_type)] = getattr(gradloom, wp_name)
    ints, floats = by_names(_INTS), by_names(_FLOATS)
    return {
        "int_types": ints,
        "float_types": floats,
        "scalar_types": ints + floats,
        "non_atomic_types": by_names("int8 uint8 int16 uint16"),
        "vector_types": by_names(vecs + " " + mats),
        "np_dtype_to_warp_type": np_map,
        **{n: getattr(gradloom, n) for n in ("vector", "matrix") if hasattr(gradloom, n)},
        "Vector": _type_spelling("Vector", 2, lambda dt, n: t.vector(n, dt)),
        "Matrix": _type_spelling("Matrix", 3, lambda dt, r, c: t.matrix((r, c), dt)),
        "Quaternion": _type_spelling("Quaternion", 1, lambda dt: t.quaternion(dt)),
        "Transformation": _type_spelling("Transformation", 1, lambda dt: t.transformation(dt)),
    }


# Options that only Warp's test harness (unittest_utils) toggles around every test; given a
# neutral value when gradloom's config lacks them so the harness itself can run.
HARNESS_CONFIG_DEFAULTS: dict[str, Any] = {"enable_cpu_blocks": False}


def harness_config(config: types.ModuleType) -> list[str]:
    """Give ``config`` the harness-only options it lacks; returns the names added."""
    added = []
    for key, value in HARNESS_CONFIG_DEFAULTS.items():
        if not hasattr(config, key):
            setattr(config, key, value)
            added.append(key)
    return added


def top_level(modname: str) -> None:
    """The ``warp`` package itself: every attribute read goes to ``gradloom``."""
    import gradloom

    mod = sys.modules[modname]

    def __getattr__(name: str) -> Any:
        if not name.startswith("__") and hasattr(gradloom, name):
            return getattr(gradloom, name)
        raise AttributeError(
            f"module 'warp' (gradloom shim) has no attribute {name!r}: gradloom has no {name!r}"
        )

    def __dir__() -> list[str]:
        return sorted(n for n in dir(gradloom) if not n.startswith("_"))

    mod.__getattr__ = __getattr__  # type: ignore[method-assign]
    mod.__dir__ = __dir__  # type: ignore[method-assign]
    mod.__all__ = [n for n in __dir__() if not isinstance(getattr(gradloom, n), types.ModuleType)]  # type: ignore[attr-defined]
