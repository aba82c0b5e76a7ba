"""`python -m gradloom`: the version, devices, options and kernel cache; `cache clear` empties it."""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
from pathlib import Path

_DESCRIPTION = """\
Show what gradloom sees on this machine: its version, the devices kernels can run on, the
CPU target compiled kernels are specialised for, the options in effect, and the kernel cache
(where it is and how big). `python -m gradloom cache clear` deletes the cached kernels (they
are compiled again when next launched)."""


def _size(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"


def _cache_usage(root: Path) -> tuple[int, int]:
    """(entry files, bytes) of everything under the cache directory."""
    files = total = 0
    if root.is_dir():
        for dirpath, _, names in os.walk(root):
            for name in names:
                try:
                    total += (Path(dirpath) / name).stat().st_size
                except OSError:
                    continue
                files += name.endswith(".bin")
    return files, total


def _cuda_state() -> str:
    from gradloom.runtime.cuda import driver as cuda_driver

    if not cuda_driver.is_cuda_available():
        return f"CUDA: none, {cuda_driver.unavailable_reason()}"
    driver = cuda_driver.current()
    return "CUDA: " + "; ".join(f"cuda:{i} {driver.info(i).name}, {driver.info(i).sm}"
                                for i in range(driver.device_count()))


def info() -> str:
    """The report `python -m gradloom` prints."""
    import gradloom as wp
    from gradloom.codegen.cpu import host_target

    target = host_target()
    root = Path(wp.config.cache_dir)
    files, total = _cache_usage(root)
    cache_state = "enabled" if wp.config.cache_enabled else "disabled (GRADLOOM_CACHE=0)"
    lines = [
        f"gradloom {wp.__version__} (Python {platform.python_version()}, numpy "
        f"{__import__('numpy').__version__}, llvmlite {__import__('llvmlite').__version__})",
        f"devices:     {', '.join(str(d) for d in wp.get_devices())} ({_cuda_state()})",
        f"cpu target:  {target.triple}, {target.cpu}; {wp.config.num_threads} worker thread(s)",
        f"mode:        {wp.config.mode} (GRADLOOM_MODE), opt level {wp.config.opt_level}",
        f"cache:       {root} ({cache_state})",
        f"             {files} kernel entr{'y' if files == 1 else 'ies'}, {_size(total)}",
    ]
    return "\n".join(lines)


def clear_cache() -> str:
    """Delete the kernel cache directory's contents; say what was freed."""
    from gradloom import config

    root = Path(config.cache_dir)
    files, total = _cache_usage(root)
    if root.is_dir():
        shutil.rmtree(root / "kernels", ignore_errors=True)
    return f"cleared {root}: {files} kernel entr{'y' if files == 1 else 'ies'}, {_size(total)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gradloom", description=_DESCRIPTION)
    sub = parser.add_subparsers(dest="command", metavar="{cache}")
    cache = sub.add_parser("cache", help="manage the kernel cache",
                           description="Manage the on-disk kernel cache (GRADLOOM_CACHE_DIR).")
    cache.add_argument("action", choices=["clear", "info"],
                       help="clear: delete every cached kernel; info: show where and how big")
    args = parser.parse_args(argv)
    if args.command == "cache" and args.action == "clear":
        print(clear_cache())
    else:
        print(info())
    return 0


if __name__ == "__main__":
    sys.exit(main())
