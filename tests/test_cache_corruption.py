"""A damaged, truncated or foreign kernel cache entry is a miss: recompiled, one warning, never a
crash or a wrong number; processes sharing a cache directory write it safely.

The byte-flip run below is tests/cache_flip.py with a small count; the full one is
`python tests/cache_flip.py --flips 240`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from gradloom import config
from gradloom.errors import CacheWarning
from gradloom.runtime import cache

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cache_flip  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KEY = "ab" + "0" * 62
ENTRY = {"object": b"\x7fELF" + bytes(range(256)) * 4, "launch_ndim": 1, "threads": (None, (), ())}


@pytest.fixture()
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(config, "cache_enabled", True)
    return tmp_path / "cache"


def _quiet_load(key: str) -> tuple[dict | None, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        return cache.load(key), seen


def test_round_trip(tmp_cache):
    cache.store(KEY, ENTRY)
    entry, seen = _quiet_load(KEY)
    assert entry == ENTRY and not seen
    assert not list(tmp_cache.rglob("*.tmp"))  # the temporary file was renamed into place


def test_every_single_byte_flip_is_a_miss_with_a_warning(tmp_cache):
    cache.store(KEY, ENTRY)
    path = next(tmp_cache.rglob("*.bin"))
    good = path.read_bytes()
    for pos in range(len(good)):
        bad = bytearray(good)
        bad[pos] ^= 0x41
        path.write_bytes(bytes(bad))
        entry, seen = _quiet_load(KEY)
        assert entry is None, pos
        # a flip in the magic or the format number reads as another gradloom's entry: silent
        damaged = pos >= 12
        assert any(w.category is CacheWarning for w in seen) == damaged, pos


def test_truncated_and_empty_entries_are_misses(tmp_cache):
    cache.store(KEY, ENTRY)
    path = next(tmp_cache.rglob("*.bin"))
    good = path.read_bytes()
    for size in (0, 7, cache._HEADER.size - 1, cache._HEADER.size, len(good) - 1):
        path.write_bytes(good[:size])
        assert _quiet_load(KEY)[0] is None, size


def test_an_entry_under_another_key_is_a_miss(tmp_cache):
    other = "cd" + "1" * 62
    cache.store(KEY, ENTRY)
    src = next(tmp_cache.rglob("*.bin"))
    dest = tmp_cache / "kernels" / other[:2] / f"{other}.bin"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(src.read_bytes())
    entry, seen = _quiet_load(other)
    assert entry is None and any(w.category is CacheWarning for w in seen)


def test_an_old_format_entry_is_a_silent_miss(tmp_cache):
    import pickle

    path = tmp_cache / "kernels" / KEY[:2] / f"{KEY}.bin"
    path.parent.mkdir(parents=True)
    path.write_bytes(pickle.dumps({**ENTRY, "format": 2}))
    entry, seen = _quiet_load(KEY)
    assert entry is None and not seen


def test_an_unwritable_cache_costs_only_a_recompile(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setattr(config, "cache_dir", blocker)
    cache.store(KEY, ENTRY)  # no exception
    assert cache.load(KEY) is None


def test_byte_flips_never_crash_or_change_results():
    counts = cache_flip.run(flips=30, seed=3, batch=30)
    assert counts.flips == 30
    assert counts.ok(), counts.summary()
    assert counts.noticed == 30


_WARN_SCRIPT = """
import numpy as np
import gradloom as wp

@wp.kernel
def double(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0

@wp.kernel
def triple(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 3.0

a = wp.array(np.ones(4, dtype=np.float32))
wp.launch(double, 4, [a])
wp.launch(triple, 4, [a])
print(a.numpy().tolist())
"""


def _run(script: Path, cache_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GRADLOOM_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    env.pop("GRADLOOM_CACHE", None)
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300)


def test_damaged_entries_warn_once_per_process_and_are_rewritten(tmp_path):
    script = tmp_path / "warn.py"
    script.write_text(_WARN_SCRIPT)
    cache_dir = tmp_path / "cache"
    first = _run(script, cache_dir)
    assert first.returncode == 0, first.stderr
    entries = sorted(cache_dir.glob("kernels/*/*.bin"))
    for path in entries:  # damage every entry: kernels and support code alike
        data = bytearray(path.read_bytes())
        data[-10] ^= 0xFF
        path.write_bytes(bytes(data))
    second = _run(script, cache_dir)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "[6.0, 6.0, 6.0, 6.0]"
    assert second.stderr.count("CacheWarning") == 1, second.stderr
    assert all(cache.decode(p.stem, p.read_bytes()) is not None for p in entries)
    third = _run(script, cache_dir)
    assert "CacheWarning" not in third.stderr and third.stdout == second.stdout


def test_processes_sharing_an_empty_cache_agree(tmp_path):
    script = tmp_path / "shared.py"
    script.write_text(_WARN_SCRIPT)
    env = {**os.environ, "GRADLOOM_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    env.pop("GRADLOOM_CACHE", None)
    procs = [subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.strip() == "[6.0, 6.0, 6.0, 6.0]"
        assert "CacheWarning" not in err
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def _cli(cache_dir: Path, *args: str) -> str:
    env = {**os.environ, "GRADLOOM_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "gradloom", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_python_m_gradloom_shows_the_cache_and_clears_it(tmp_path):
    from gradloom import __version__

    script = tmp_path / "fill.py"
    script.write_text(_WARN_SCRIPT)
    cache_dir = tmp_path / "cache"
    assert _run(script, cache_dir).returncode == 0
    entries = len(list(cache_dir.glob("kernels/*/*.bin")))
    assert entries >= 2
    report = _cli(cache_dir)
    assert f"gradloom {__version__}" in report and "devices:     cpu" in report
    assert str(cache_dir) in report and f"{entries} kernel entries" in report
    cleared = _cli(cache_dir, "cache", "clear")
    assert f"{entries} kernel entries" in cleared
    assert not list(cache_dir.glob("kernels/*/*.bin"))
    assert "0 kernel entries, 0 bytes" in _cli(cache_dir)
    assert "cache clear" in _cli(cache_dir, "--help")
