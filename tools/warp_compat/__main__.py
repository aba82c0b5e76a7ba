"""Command line: ``python -m tools.warp_compat [--refresh-baseline] [--files ...] [...]``.

Default: run every covered Warp test file and example on gradloom (through the shim), compare
with the cached warp-lang baseline, and rewrite docs/compat.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import baseline, catalog, report, shim
from .results import FileRun
from .runner import REPO_ROOT, run_files

BUILD_DIR = REPO_ROOT / "build" / "warp_compat"
DOC_PATH = REPO_ROOT / "docs" / "compat.md"


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tools.warp_compat", description=__doc__)
    p.add_argument("--files", nargs="+", metavar="MODULE",
                   help="test modules under warp.tests (default: all covered files)")
    p.add_argument("--refresh-baseline", action="store_true",
                   help="re-run the files on warp-lang and update warp_baseline.json; re-run "
                   "the examples on warp-lang (otherwise their outputs in build/ are reused)")
    p.add_argument("--missing-baseline", action="store_true",
                   help="with --refresh-baseline: only files the baseline does not have yet")
    p.add_argument("--no-tests", action="store_true", help="skip the test files")
    p.add_argument("--no-examples", action="store_true", help="skip the examples")
    p.add_argument("--examples", nargs="+", metavar="NAME", help="only these examples")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds per test file on gradloom (default 600)")
    p.add_argument("--warp-timeout", type=float, default=3600.0,
                   help="seconds per test file on warp-lang (default 3600: first compiles)")
    p.add_argument("--experiment", type=Path, default=None, metavar="FILE",
                   help="Python code appended to the shim's warp/__init__.py, to look behind a "
                   "known gap (the report is marked as an experiment; give --report)")
    p.add_argument("--merge", action="store_true",
                   help="with --files: put these files' new results into the last full run's "
                   "(build/warp_compat/full_results.json), run the examples, and rewrite the "
                   "full report")
    p.add_argument("--report", type=Path, default=None,
                   help=f"report path (default {DOC_PATH.relative_to(REPO_ROOT)} on a full run)")
    return p.parse_args(argv)  # fmt: skip


def _progress(run: FileRun) -> None:
    counts: dict[str, int] = {}
    for r in run.tests.values():
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    summary = " ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "no tests"
    print(f"  {run.module:40s} {run.status:12s} {run.seconds:7.1f}s  {summary}", flush=True)


def refresh_baseline(modules: list[str], args: argparse.Namespace) -> None:
    """Run ``modules`` on warp-lang, saving after each file (a long run can be resumed)."""
    _, have = baseline.load()
    if args.missing_baseline:
        modules = [m for m in modules if m not in have]
    print(f"warp-lang baseline: {len(modules)} files", flush=True)
    version = catalog.warp_version()
    for module in modules:
        runs = run_files([module], None, BUILD_DIR / "warp", args.warp_timeout, _progress)
        baseline.save(runs, version)


def run_gradloom(modules: list[str], args: argparse.Namespace, root: Path) -> dict[str, FileRun]:
    """Run ``modules`` on gradloom through a freshly generated shim."""
    with tempfile.TemporaryDirectory(prefix="warp_shim_") as tmp:
        shim_dir = shim.generate(Path(tmp), root, _experiment(args))
        print(f"gradloom: {len(modules)} files (shim in {shim_dir})", flush=True)
        return run_files(modules, shim_dir, BUILD_DIR / "gradloom", args.timeout, _progress)


def _experiment(args: argparse.Namespace) -> str:
    return args.experiment.read_text() if args.experiment else ""


FULL_RESULTS = BUILD_DIR / "full_results.json"


def _is_full(args: argparse.Namespace) -> bool:
    return args.merge or not (args.files or args.examples or args.no_tests or args.no_examples
                              or args.experiment)


def _run_tests(modules: list[str], args: argparse.Namespace, root: Path) -> dict[str, FileRun]:
    runs = run_gradloom(modules, args, root)
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    out = {m: r.to_json() for m, r in runs.items()}
    (BUILD_DIR / "gradloom_results.json").write_text(json.dumps(out, indent=1))
    revision = report.git_revision()
    if args.merge:  # the last full run's results, these files' replaced
        kept = json.loads(FULL_RESULTS.read_text())
        revision = kept["revision"]
        out = {**kept["files"], **out}
        runs = {m: FileRun.from_json(m, d) for m, d in out.items()}
    if _is_full(args):
        FULL_RESULTS.write_text(json.dumps({"revision": revision, "files": out}, indent=1))
    return runs


def _merge_note(args: argparse.Namespace) -> str:
    if not args.merge:
        return ""
    kept = json.loads(FULL_RESULTS.read_text())["revision"]
    return (f" Test files re-run on this revision: {', '.join(args.files)}; the others are "
            f"from the full run on {kept}.")


def _run_examples(args: argparse.Namespace) -> list[Any]:
    from . import examples as ex

    results = ex.run_all(args.examples, BUILD_DIR / "examples", args.refresh_baseline,
                         _experiment(args))  # fmt: skip
    (BUILD_DIR / "examples_results.json").write_text(json.dumps(ex.to_json(results), indent=1))
    return results


def _write_report(args: argparse.Namespace, runs: dict[str, FileRun], examples: Any) -> None:
    full = _is_full(args)
    path = args.report or (DOC_PATH if full else None)
    base = baseline.load()
    if path is None:
        print(report.summary(runs, base))
        return
    text = report.render(runs, base, examples, full=full, experiment=str(args.experiment or ""),
                         note=_merge_note(args))
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    root = catalog.warp_root()
    if root is None:
        print("warp-lang is not installed: pip install -e '.[compat]'", file=sys.stderr)
        return 2
    modules = list(args.files or catalog.TEST_FILES)
    if args.merge and (not args.files or args.no_tests or args.no_examples or args.experiment
                       or not FULL_RESULTS.exists()):
        print("--merge needs --files, tests and examples run, and a full run's results in "
              f"{FULL_RESULTS}", file=sys.stderr)
        return 2
    if args.refresh_baseline and not args.no_tests:
        refresh_baseline(modules, args)
    runs = {} if args.no_tests else _run_tests(modules, args, root)
    examples = None if args.no_examples else _run_examples(args)
    if not (args.no_tests and args.no_examples):
        _write_report(args, runs, examples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
