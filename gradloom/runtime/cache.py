"""The on-disk cache of compiled kernels, keyed by a content hash of everything that shapes them.

An entry file is a header — magic, format version, payload length, and a SHA-256 over its key
and payload — then the payload (a pickled dict). The checksum is verified before anything is
unpickled or loaded, so a damaged entry (a flipped byte, a truncated write, a file copied under
another key) is a miss: the kernel is recompiled and the entry rewritten, with one warning per
process. Entries are written to a temporary file and renamed into place, so processes sharing a
cache directory never read half an entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import struct
import tempfile
import warnings
from pathlib import Path
from typing import Any

from .. import config
from ..errors import CacheWarning

_FORMAT = 3
_MAGIC = b"GLCACHE\0"
#: magic, format, payload length, SHA-256 of key + payload
_HEADER = struct.Struct("<8sIQ32s")


def _path(key: str) -> Path:
    return Path(config.cache_dir) / "kernels" / key[:2] / f"{key}.bin"


def _digest(key: str, payload: bytes) -> bytes:
    return hashlib.sha256(key.encode() + b"\0" + payload).digest()


def encode(key: str, entry: dict[str, Any]) -> bytes:
    """An entry's file contents: header, then the pickled entry."""
    payload = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(_MAGIC, _FORMAT, len(payload), _digest(key, payload)) + payload


def decode(key: str, data: bytes) -> dict[str, Any] | None:
    """The entry a file holds, or None when it is not an intact entry for key (a damaged one
    also warns; one in another format, from another gradloom version, is just a miss)."""
    if len(data) < _HEADER.size:
        if data.startswith(_MAGIC):
            _damaged()
        return None
    magic, fmt, size, digest = _HEADER.unpack_from(data)
    if magic != _MAGIC or fmt != _FORMAT:
        return None
    payload = data[_HEADER.size:]
    if size != len(payload) or _digest(key, payload) != digest:
        _damaged()
        return None
    try:
        entry = pickle.loads(payload)
    except Exception:  # an intact checksum over data this gradloom cannot read
        return None
    return entry if isinstance(entry, dict) else None


def load(key: str) -> dict[str, Any] | None:
    """The cached entry for key, or None (a missing or damaged entry is a miss)."""
    if not config.cache_enabled:
        return None
    try:
        data = _path(key).read_bytes()
    except OSError:
        return None
    return decode(key, data)


def _damaged() -> None:
    # one message from one place: Python's default warning filter shows it once per process
    warnings.warn(f"gradloom: ignored damaged or foreign entries in the kernel cache "
                  f"({config.cache_dir}); those kernels are recompiled and their entries "
                  "rewritten", CacheWarning, stacklevel=1)


def store(key: str, entry: dict[str, Any]) -> None:
    """Write atomically (temp file + rename) so concurrent processes never see half an entry."""
    if not config.cache_enabled:
        return
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    except OSError:
        return  # an unwritable cache only costs a recompile next time
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(encode(key, entry))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def clear() -> None:
    """Delete every cached kernel on disk (`wp.clear_kernel_cache()`); kernels this process has
    already loaded stay usable."""
    import shutil

    shutil.rmtree(Path(config.cache_dir) / "kernels", ignore_errors=True)
