"""Runtime of the ``warp`` shim package: forwards Warp's module names to gradloom.

This file is copied verbatim into the generated shim as ``warp/_shimlib.py`` and must stay
self-contained (standard library and gradloom only). The rest of the shim is a handful of
one-line modules that call ``forward``, ``alias`` or ``private`` from here.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any, NoReturn


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
        _raise(cls._exc, f"{cls._what}[...]", cls._why)

    def __len__(cls) -> int:
        _raise(cls._exc, f"len({cls._what})", cls._why)

    def __enter__(cls) -> Any:
        _raise(cls._exc, f"with {cls._what}", cls._why)

    def __exit__(cls, *exc: Any) -> None:
        return None

    def __repr__(cls) -> str:
        return f"<not in gradloom: {cls._what}>"


def placeholder(what: str, why: str, exc: type[BaseException]) -> type:
    """A stand-in for the missing object ``what``: importable, but raises ``exc`` when used."""
    return _PlaceholderMeta(what.rsplit(".", 1)[-1], (), {"_what": what, "_why": why, "_exc": exc})


def _try_import(name: str) -> types.ModuleType | None:
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
