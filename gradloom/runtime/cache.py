"""The on-disk cache of compiled kernels, keyed by a content hash of everything that shapes them."""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from .. import config

_FORMAT = 2


def _path(key: str) -> Path:
    return Path(config.cache_dir) / "kernels" / key[:2] / f"{key}.bin"


def load(key: str) -> dict[str, Any] | None:
    """The cached entry for key, or None (a missing or unreadable entry is a miss)."""
    if not config.cache_enabled:
        return None
    try:
        with open(_path(key), "rb") as fh:
            entry = pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != _FORMAT:
        return None
    return entry


def store(key: str, entry: dict[str, Any]) -> None:
    """Write atomically (temp file + rename) so concurrent processes never see half an entry."""
    if not config.cache_enabled:
        return
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump({**entry, "format": _FORMAT}, fh)
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs a recompile next time


def clear() -> None:
    """Delete every cached kernel on disk (`wp.clear_kernel_cache()`); kernels this process has
    already loaded stay usable."""
    import shutil

    shutil.rmtree(Path(config.cache_dir) / "kernels", ignore_errors=True)
