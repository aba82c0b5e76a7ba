"""`python -m gradloom.as_warp [--package NAME=DIR] (SCRIPT | -m MODULE | -c CODE) [ARGS...]`.

Runs a program written for `import warp` on gradloom, unedited: the finder of
`gradloom.as_warp` is installed first, then the program runs as `__main__` with `sys.argv` as
it would see it when run directly (`python -m gradloom.as_warp -m pytest tests/` runs a
library's own test suite on gradloom).
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from . import install_as_warp

USAGE = "usage: python -m gradloom.as_warp [--package NAME=DIR]... (SCRIPT | -m MODULE | -c CODE) [ARGS...]"


def _package(spec: str) -> tuple[str, Path]:
    name, sep, directory = spec.partition("=")
    if not sep or not name.isidentifier() or not directory:
        raise SystemExit(f"{USAGE}\n--package wants NAME=DIR, got {spec!r}")
    if not (Path(directory) / "__init__.py").is_file():
        raise SystemExit(f"{USAGE}\n--package {name}: {directory} has no __init__.py")
    return name, Path(directory)


def parse(argv: list[str]) -> tuple[dict[str, Path], str, str, list[str]]:
    """(packages, kind, what, program arguments); kind is "module", "code" or "script".

    Parsed by hand: everything after the program is the program's own, options included.
    """
    packages: dict[str, Path] = {}
    rest = list(argv)
    while rest and rest[0] == "--package" and len(rest) > 1:
        name, directory = _package(rest[1])
        packages[name] = directory
        rest = rest[2:]
    if rest and rest[0] in ("-m", "-c") and len(rest) > 1:
        return packages, "module" if rest[0] == "-m" else "code", rest[1], rest[2:]
    if rest and not rest[0].startswith("-"):
        return packages, "script", rest[0], rest[1:]
    raise SystemExit(USAGE)


def main(argv: list[str]) -> None:
    packages, kind, what, args = parse(argv)
    install_as_warp(packages)
    if kind == "module":
        sys.argv = [what, *args]
        runpy.run_module(what, run_name="__main__", alter_sys=True)
    elif kind == "code":
        sys.argv = ["-c", *args]
        exec(compile(what, "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = [what, *args]
        sys.path.insert(0, str(Path(what).resolve().parent))
        runpy.run_path(what, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
