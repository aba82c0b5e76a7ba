"""`warp._src.thirdparty.appdirs` under the alias: the per-user cache directory libraries ask for.

Warp vendors the `appdirs` package, and libraries built on Warp (newton) import its
`user_cache_dir` from there to place their own caches; this gives the same directories.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def user_cache_dir(appname: str | None = None, appauthor: str | None = None,
                   version: str | None = None, opinion: bool = True) -> str:  # fmt: skip
    """The user's cache directory for an application, as `appdirs` places it per platform."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
        parts = [p for p in (appauthor or appname, appname) if p]
        path = base.joinpath(*parts, "Cache") if appname and opinion else base.joinpath(*parts)
    elif sys.platform == "darwin":
        path = Path.home() / "Library" / "Caches"
        path = path / appname if appname else path
    else:
        path = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        path = path / appname if appname else path
    if appname and version:
        path = path / version
    return str(path)
