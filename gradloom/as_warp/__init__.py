"""`import warp` answered by gradloom, for programs and libraries that cannot be edited.

`install_as_warp()` puts an import finder first on `sys.meta_path` that answers `warp` and its
public submodules with gradloom's: `warp.config` *is* `gradloom.config`, `warp.types` *is*
`gradloom.types`, and so on, so every object has one identity whichever name reached it
(`warp.vec3 is gradloom.vec3`). `warp` itself is a small module that reads its attributes from
`gradloom` and reports the Warp version whose API gradloom follows. A Warp module or attribute
that gradloom lacks fails with an error naming it (an `ImportError` or `AttributeError`, so a
library's `try: import warp.render` or `hasattr(wp, ...)` feature checks behave).

`python -m gradloom.as_warp script.py [args]` (or `-m module`, `-c code`) runs a program with
the finder installed (`gradloom/as_warp/__main__.py`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: the Warp release whose API gradloom follows; `warp.__version__` under the alias
WARP_API_VERSION = "1.19.0"

#: warp.<name> -> the gradloom module that is it (one module object under both names)
SUBMODULES: dict[str, str] = {
    "config": "gradloom.config",
    "types": "gradloom.types",
    "utils": "gradloom.utils",
    "autograd": "gradloom.autograd",
    "optim": "gradloom.optim",
    "sparse": "gradloom.sparse",
    "fem": "gradloom.fem",
    "geometry": "gradloom.geometry",
    "render": "gradloom.render",
    "jax_experimental": "gradloom.jax_experimental",
}

#: Warp-private modules that libraries built on Warp import all the same (newton), mapped to
#: gradloom's counterpart; the packages above them are empty namespaces
PRIVATE: dict[str, str] = {
    "_src.types": "gradloom.as_warp.private_types",
    "_src.thirdparty.appdirs": "gradloom.as_warp.appdirs",
    "_src.context": "gradloom.as_warp.context",
}
_PRIVATE_PACKAGES = {".".join(k.split(".")[:n]) for k in PRIVATE for n in range(1, k.count(".") + 1)}

#: Warp modules with no gradloom counterpart, and why (named in the ImportError)
WHY_ABSENT: dict[str, str] = {
    "tests": "Warp's own test suite ships with warp-lang, not with gradloom",
    "examples": "Warp's examples ship with warp-lang, not with gradloom",
    "_src": "Warp-private internals; gradloom's are organised differently",
    "native": "Warp's C++/CUDA runtime; gradloom compiles kernels through LLVM instead",
    "build_experimental": "Warp's ahead-of-time C++ build; gradloom compiles through LLVM",
}

_NAME = "warp"


class AsWarpError(ImportError):
    """`import warp` cannot be answered by gradloom here (warp-lang already imported, ...)."""


def _missing(fullname: str, why: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(
        f"No module named {fullname!r}: gradloom, standing in for warp (gradloom.as_warp), "
        f"does not provide it ({why})",
        name=fullname,
    )


class WarpModule(types.ModuleType):
    """The `warp` module under the alias: attributes are gradloom's, submodules are mapped."""

    def __getattr__(self, name: str) -> Any:
        finder = _installed()
        if name in SUBMODULES or name in _PRIVATE_PACKAGES or (
                finder is not None and name in finder.packages):
            return importlib.import_module(f"{_NAME}.{name}")
        import gradloom  # the alias stands on the whole public package

        if name.startswith("__") and name != "__all__":
            raise AttributeError(name)
        if name == "__all__":
            return [n for n in dir(gradloom) if not n.startswith("_")]
        try:
            value = getattr(gradloom, name)
        except AttributeError:
            raise AttributeError(
                f"module 'warp' has no attribute {name!r}: gradloom, standing in for warp "
                f"(gradloom.as_warp), does not provide warp.{name}"
            ) from None
        self.__dict__[name] = value  # later reads skip this method
        return value

    def __dir__(self) -> list[str]:
        import gradloom

        return sorted({*dir(gradloom), *SUBMODULES} - {"as_warp"})


class _AliasLoader(importlib.abc.Loader):
    """Loads `warp.<name>` as the existing gradloom module `target` (not a copy of it)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        # the import system returns whatever sys.modules holds after exec: the gradloom module
        sys.modules[module.__name__] = importlib.import_module(self.target)


class _TopLoader(importlib.abc.Loader):
    """Loads `warp` itself: a WarpModule."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return WarpModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        import gradloom

        module.__version__ = WARP_API_VERSION  # type: ignore[attr-defined]
        module.__gradloom_version__ = gradloom.__version__  # type: ignore[attr-defined]
        module.__doc__ = "gradloom, standing in for warp (gradloom.as_warp)."
        module.__path__ = []  # type: ignore[attr-defined]  # a package: submodules come from the finder


class _NamespaceLoader(importlib.abc.Loader):
    """Loads a package above a mapped Warp-private module: it holds only its submodules."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []  # type: ignore[attr-defined]
        prefix = module.__name__[len(_NAME) + 1:] + "."

        def submodule(name: str) -> types.ModuleType:  # `warp._src.context` read as an attribute
            if prefix + name in PRIVATE or prefix + name in _PRIVATE_PACKAGES:
                return importlib.import_module(f"{module.__name__}.{name}")
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

        module.__getattr__ = submodule  # type: ignore[method-assign]


class WarpFinder(importlib.abc.MetaPathFinder):
    """Answers `warp` and `warp.*` imports; `packages` are extra `warp.<name>` directories."""

    def __init__(self, packages: Mapping[str, Path]) -> None:
        self.packages = {name: Path(p) for name, p in packages.items()}

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:  # fmt: skip
        if fullname == _NAME:
            return importlib.machinery.ModuleSpec(fullname, _TopLoader(), is_package=True)
        if not fullname.startswith(_NAME + "."):
            return None
        parts = fullname.split(".")
        if parts[1] in self.packages:
            return self._package_spec(fullname, parts)
        inner = fullname[len(_NAME) + 1:]
        if inner in _PRIVATE_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, _NamespaceLoader(), is_package=True)
        target_name = self._target(fullname, parts)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(target_name), is_package=True)

    def _package_spec(self, fullname: str, parts: list[str]) -> importlib.machinery.ModuleSpec | None:
        if len(parts) > 2:
            return None  # inside a directory package: found through its __path__
        root = self.packages[parts[1]]
        return importlib.util.spec_from_file_location(
            fullname, root / "__init__.py", submodule_search_locations=[str(root)]
        )

    def _target(self, fullname: str, parts: list[str]) -> str:
        head = parts[1]
        inner = ".".join(parts[1:])
        if inner in PRIVATE:
            return PRIVATE[inner]
        if head not in SUBMODULES:
            raise _missing(fullname, WHY_ABSENT.get(head, "no gradloom module of that name"))
        target = ".".join([SUBMODULES[head], *parts[2:]])
        try:
            found = importlib.util.find_spec(target)
        except ModuleNotFoundError:
            found = None
        if found is None:
            raise _missing(fullname, f"gradloom has no {target}")
        return target


def _installed() -> WarpFinder | None:
    return next((f for f in sys.meta_path if isinstance(f, WarpFinder)), None)


def install_as_warp(packages: Mapping[str, str | Path] | None = None) -> types.ModuleType:
    """Make `import warp` (and `warp.*`) import gradloom; returns the `warp` module.

    Call it before the first `import warp` of the process. ``packages`` maps extra
    `warp.<name>` subpackages to directories holding them (e.g. warp-lang's own `tests`,
    loaded from the installed wheel). Calling it again adds packages; it never replaces an
    already imported warp-lang.
    """
    loaded = sys.modules.get(_NAME)
    if loaded is not None and not isinstance(loaded, WarpModule):
        where = getattr(loaded, "__file__", None) or "an unknown location"
        raise AsWarpError(
            f"warp is already imported (from {where}); call gradloom.install_as_warp() before "
            "the first `import warp` of the process, or run the program with "
            "`python -m gradloom.as_warp`"
        )
    finder = _installed()
    if finder is None:
        finder = WarpFinder({})
        sys.meta_path.insert(0, finder)
    finder.packages.update({name: Path(p) for name, p in (packages or {}).items()})
    return importlib.import_module(_NAME)


def uninstall_as_warp() -> None:
    """Undo `install_as_warp`: remove the finder and every `warp` module it answered."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, WarpFinder)]
    for name in [n for n in sys.modules if n == _NAME or n.startswith(_NAME + ".")]:
        del sys.modules[name]
