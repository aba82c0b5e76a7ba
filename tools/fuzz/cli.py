"""Command line: ``python -m tools.fuzz --seed S --count N [options]`` (see docs/fuzzing.md)."""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from collections import Counter, defaultdict

from .classify import FAILURES
from .gen import SIZES, generate
from .model import Case
from .patterns import known_patterns
from .render import case_module
from .report import canonical, summary_line, write_failure
from .session import Outcome, Session
from .shrink import shrink
from .timeline_check import main as timeline_main


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=200, help="kernels to generate")
    p.add_argument("--start", type=int, default=0, help="first case index")
    p.add_argument("--size", choices=sorted(SIZES), default="medium")
    p.add_argument("--dtype", choices=["float64", "float32"], default=None,
                   help="only this float width (default: 3/4 float64, 1/4 float32)")
    p.add_argument("--avoid", default="", metavar="LETTERS",
                   help="leave out the patterns of known bugs (known-bug letters, e.g. ABCDE)")
    p.add_argument("--batch", type=int, default=40, help="cases per worker batch")
    p.add_argument("--no-warp", action="store_true", help="skip the forward check vs warp-lang")
    p.add_argument("--jvp", action="store_true",
                   help="also check forward mode: jvp tangents vs float64 finite differences")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds before a case is a hang")
    p.add_argument("--out", default="fuzz-out", help="directory for failing kernels")
    p.add_argument("--shrink-time", type=float, default=900.0,
                   help="total seconds for shrinking failures (0: no shrinking)")
    p.add_argument("--shrink-each", type=float, default=150.0, help="seconds per failure")
    p.add_argument("--shrink-max", type=int, default=4,
                   help="failures shrunk per distinct signature")
    p.add_argument("--show", metavar="SEED:INDEX", help="print one case's source and exit")
    p.add_argument("--replay", metavar="CASE.pkl", help="run one saved case and print the result")
    p.add_argument("--shrink", metavar="CASE.pkl", nargs="+",
                   help="shrink saved failing case(s) and write them to --out")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    p.add_argument("--pattern", choices=["random", "time"], default="random",
                   help="time: time-indexed state arrays (tools/fuzz/timeline.py), checked by "
                        "tools/fuzz/timeline_check.py")
    p.add_argument("-q", "--quiet", action="store_true")
    return p


def _log(args: argparse.Namespace, msg: str) -> None:
    if not args.quiet:
        print(msg, file=sys.stderr, flush=True)


def _shrink_failures(args: argparse.Namespace, session: Session) -> list[tuple[Outcome, Case]]:
    by_sig: dict[str, list[Outcome]] = defaultdict(list)
    for o in session.failures:
        by_sig[o.signature].append(o)
    order = [o for i in range(args.shrink_max) for sig in sorted(by_sig)
             for o in by_sig[sig][i:i + 1]]
    t_end = time.monotonic() + args.shrink_time
    out = []
    for o in order:
        left = t_end - time.monotonic()
        if left <= 0:
            break
        _log(args, f"shrinking {o.case.tag} ({o.cls}: {o.detail[:120]})")
        use_warp = o.cls == "forward" and o.warp is not None

        def still_fails(c: Case, o: Outcome = o, use_warp: bool = use_warp) -> bool:
            # a crash or hang must happen twice (memory corruption can crash by chance)
            runs = 2 if o.cls in ("crash", "hang") else 1
            return all(session.evaluate([c], warp=use_warp)[0].signature == o.signature
                       for _ in range(runs))

        small = shrink(o.case, still_fails, budget_s=min(args.shrink_each, left),
                       log=lambda m: _log(args, m))
        out.append((o, small))
    return out


def _write_found(args: argparse.Namespace, session: Session, written: set[str]) -> None:
    """Write failures not yet written, unshrunk, as they are found (to `--out`/found)."""
    for o in session.failures:
        if o.case.tag not in written:
            written.add(o.case.tag)
            write_failure(os.path.join(args.out, "found"), o.case, o.cls, o.detail, o.gradloom)


def _write(args: argparse.Namespace, session: Session, shrunk: list[tuple[Outcome, Case]]
           ) -> list[str]:
    """Write every failure (shrunk where it was); distinct shrunk kernels first."""
    lines, seen = [], set()
    done = {o.case.tag for o, _ in shrunk}
    for o, small in shrunk:
        final = session.evaluate([small], warp=session.use_warp)[0]
        if final.cls not in FAILURES:  # flaky: report the case as found
            small, final = o.case, o
        key = (o.signature, canonical(small))
        hint = "".join(sorted(known_patterns(small)))
        detail = final.detail + (f" [known-bug patterns: {hint}]" if hint else "")
        path = write_failure(args.out, small, final.cls, detail, final.gradloom, o.case)
        if key not in seen:
            seen.add(key)
            lines.append(f"[{final.cls}] {detail}\n    {path}")
    for o in session.failures:
        if o.case.tag not in done:
            write_failure(os.path.join(args.out, "unshrunk"), o.case, o.cls, o.detail,
                          o.gradloom)
    return lines


def _replay(path: str, args: argparse.Namespace) -> int:
    with open(path, "rb") as fh:
        case = pickle.load(fh)
    print(case_module(case))
    session = Session(use_warp=not args.no_warp, jvp=args.jvp, timeout=args.timeout)
    try:
        o = session.evaluate([case])[0]
    finally:
        session.close()
    print(f"class: {o.cls}\n{o.detail}")
    for k in ("message", "where", "directions", "reason", "stderr"):
        if k in o.gradloom:
            print(f"{k}: {o.gradloom[k]}")
    return 1 if o.cls in FAILURES else 0


def _shrink_saved(args: argparse.Namespace) -> int:
    session = Session(use_warp=not args.no_warp, jvp=args.jvp, timeout=args.timeout, keep=args.keep)
    try:
        for path in args.shrink:
            with open(path, "rb") as fh:
                case = pickle.load(fh)
            session.failures = [o for o in session.evaluate([case]) if o.cls in FAILURES]
            if not session.failures:
                print(f"{path}: does not fail now")
                continue
            for line in _write(args, session, _shrink_failures(args, session)):
                print(line)
    finally:
        session.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.pattern == "time":
        return timeline_main(args.seed, args.start, args.count, args.show, not args.no_warp)
    size = SIZES[args.size]
    if args.show:
        seed, index = (int(v) for v in args.show.split(":"))
        print(case_module(generate(seed, index, size, args.dtype, args.avoid)))
        return 0
    if args.replay:
        return _replay(args.replay, args)
    if args.shrink:
        return _shrink_saved(args)
    t0 = time.monotonic()
    session = Session(use_warp=not args.no_warp, jvp=args.jvp, timeout=args.timeout, keep=args.keep)
    _log(args, f"fuzz: seed {args.seed}, cases {args.start}..{args.start + args.count - 1}, "
               f"size {args.size}, warp-lang {'on' if session.use_warp else 'off'}, "
               f"scratch {session.workdir}")
    try:
        cases = (generate(args.seed, i, size, args.dtype, args.avoid)
                 for i in range(args.start, args.start + args.count))
        written: set[str] = set()

        def progress(s: Session, n: int) -> None:
            _log(args, summary_line(s.counts, n, time.monotonic() - t0))
            _write_found(args, s, written)  # a long campaign can be stopped and still read

        interrupted = False
        try:
            session.run_cases(cases, batch=args.batch, progress=progress)
        except KeyboardInterrupt:  # Ctrl-C: keep what was found, skip shrinking
            interrupted = True
            _log(args, "fuzz: interrupted; writing the failures found so far")
        shrunk = _shrink_failures(args, session) if args.shrink_time > 0 and \
            not interrupted else []
        lines = _write(args, session, shrunk) if session.failures else []
    finally:
        session.close()
    line = summary_line(session.counts, args.count, time.monotonic() - t0,
                        f" (seed {args.seed}, size {args.size}"
                        f"{', avoid ' + args.avoid if args.avoid else ''})")
    for note, n in sorted(session.notes.items()):
        _log(args, f"  {n:5d}  {note}")
    by_pattern = Counter((o.cls, "".join(sorted(known_patterns(o.case))) or "none")
                         for o in session.failures)
    for (cls, pat), n in sorted(by_pattern.items()):
        _log(args, f"  {n:5d}  {cls} with known-bug patterns: {pat}")
    if lines:
        text = line + "\n\ndistinct shrunk failures:\n" + "\n".join(lines) + "\n"
        with open(os.path.join(args.out, "summary.txt"), "w") as fh:
            fh.write(text)
        print(text)
    else:
        print(line)
    return 1 if session.failures else 0
