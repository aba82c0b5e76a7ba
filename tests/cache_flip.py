"""Byte flips in the kernel cache must never crash a process or change a result.

    python tests/cache_flip.py --flips 240 [--seed 1] [--batch 40]

Writes a module of small kernels (forward ones, and some differentiated through a wp.Tape, so
adjoint entries are cached too) to a temporary directory, fills a fresh cache by running them
once, then repeatedly flips one random byte in each of a random choice of the cache's entry
files (kernels, adjoints, and the native support code every process loads) and runs the kernels
again in a child process, which checks every result against numpy. A child that dies is run
again case by case, so that a crash is pinned to the kernel whose entry was flipped. After each
child every flipped entry must have been noticed: rewritten intact by the recompile.

Prints the counts (flips, crashes, wrong results, flips noticed) and exits non-zero unless there
were no crashes, no wrong results, and every flip was noticed. tests/test_cache_corruption.py
runs it with a smaller count.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N_FORWARD = 36
N_GRAD = 8

_FORWARD = """
@wp.kernel
def f{n}(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range({trips}):
        s += x[i] * float({n}) + float(j)
    y[i] = s
"""

_GRAD = """
@wp.kernel
def g{n}(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i] * float({n} + 1)
"""

_DRIVER = """
import json, sys
import numpy as np
import gradloom as wp
import kmod

x0 = np.arange(1, 9, dtype=np.float32)
for name in sys.argv[1:]:
    k = getattr(kmod, name)
    n = int(name[1:])
    x = wp.array(x0, dtype=float, requires_grad=True)
    y = wp.zeros(8, dtype=float, requires_grad=True)
    if name[0] == "f":
        wp.launch(k, 8, [x, y])
        want = sum(x0 * n + j for j in range(n % 3 + 1))
        ok = bool(np.allclose(y.numpy(), want))
    else:
        tape = wp.Tape()
        with tape:
            wp.launch(k, 8, [x, y])
        tape.backward(grads={y: wp.ones(8, dtype=float)})
        ok = bool(np.allclose(y.numpy(), x0 * x0 * (n + 1))
                  and np.allclose(x.grad.numpy(), 2 * x0 * (n + 1)))
    print("CASE " + json.dumps({"case": name, "ok": ok}), flush=True)
"""


@dataclass
class Counts:
    flips: int = 0
    crashes: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    noticed: int = 0
    unnoticed: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not self.crashes and not self.wrong and not self.unnoticed

    def summary(self) -> str:
        return (f"flips: {self.flips}, crashes: {len(self.crashes)}, wrong results: "
                f"{len(self.wrong)}, flips noticed (entry recompiled and rewritten): "
                f"{self.noticed}/{self.flips}"
                + (f"\ncrashed: {self.crashes}" if self.crashes else "")
                + (f"\nwrong: {self.wrong}" if self.wrong else "")
                + (f"\nunnoticed: {self.unnoticed}" if self.unnoticed else ""))


def _module() -> str:
    parts = ["import gradloom as wp\n"]
    parts += [_FORWARD.format(n=n, trips=n % 3 + 1) for n in range(N_FORWARD)]
    parts += [_GRAD.format(n=n) for n in range(N_GRAD)]
    return "\n".join(parts)


CASES = [f"f{n}" for n in range(N_FORWARD)] + [f"g{n}" for n in range(N_GRAD)]


class Workspace:
    """The kernel module, the driver and the cache of one run."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.cache = work / "cache"
        (work / "kmod.py").write_text(_module())
        (work / "driver.py").write_text(_DRIVER)
        self.env = {**os.environ, "GRADLOOM_CACHE_DIR": str(self.cache),
                    "PYTHONPATH": os.pathsep.join([str(work), str(ROOT)]),
                    "PYTHONDONTWRITEBYTECODE": "1", "GRADLOOM_NUM_THREADS": "1"}
        for var in ("GRADLOOM_MODE", "GRADLOOM_CACHE", "GRADLOOM_PRINT_IR"):
            self.env.pop(var, None)

    def run(self, cases: list[str]) -> tuple[int, dict[str, bool], str]:
        """Run the driver on cases: (exit code, case -> result ok, stderr)."""
        proc = subprocess.run([sys.executable, str(self.work / "driver.py"), *cases],
                              cwd=self.work, env=self.env, capture_output=True, text=True,
                              timeout=600)
        done = {}
        for line in proc.stdout.splitlines():
            if line.startswith("CASE "):
                rec = json.loads(line[5:])
                done[rec["case"]] = rec["ok"]
        return proc.returncode, done, proc.stderr

    def entries(self) -> list[Path]:
        return sorted(self.cache.glob("kernels/*/*.bin"))


def _intact(path: Path) -> bool:
    sys.path.insert(0, str(ROOT))
    from gradloom.runtime.cache import decode

    return decode(path.stem, path.read_bytes()) is not None


def _flip(path: Path, rng: random.Random) -> str:
    data = bytearray(path.read_bytes())
    pos = rng.randrange(len(data))
    data[pos] ^= rng.randrange(1, 256)
    path.write_bytes(bytes(data))
    return f"{path.name[:12]}@{pos}"


def _round(ws: Workspace, rng: random.Random, count: int, counts: Counts) -> None:
    """Flip one byte in each of `count` entries, run every case, and check the outcome."""
    flipped = {p: _flip(p, rng) for p in rng.sample(ws.entries(), count)}
    counts.flips += len(flipped)
    rc, done, _ = ws.run(CASES)
    if rc != 0 or len(done) != len(CASES):
        for case in CASES:  # pin the crash: each case not reported yet, on its own
            if case in done:
                continue
            rc1, one, err1 = ws.run([case])
            if rc1 != 0 or case not in one:
                counts.crashes.append(f"{case} (exit {rc1}): {err1.strip()[-300:]}")
            else:
                done[case] = one[case]
    counts.wrong += [case for case, ok in done.items() if not ok]
    for path, where in flipped.items():
        if path.exists() and _intact(path):
            counts.noticed += 1
        else:
            counts.unnoticed.append(where)


def run(flips: int, seed: int = 1, batch: int = 30, work: Path | None = None) -> Counts:
    """Flip `flips` bytes (at most `batch` per child process) and count what happened."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="gradloom-flip-") as tmp:
        ws = Workspace(Path(work or tmp))
        rc, done, err = ws.run(CASES)  # fill the cache
        if rc != 0 or not all(done.get(c) for c in CASES):
            raise RuntimeError(f"the clean run failed (exit {rc}):\n{err}")
        counts = Counts()
        while counts.flips < flips:
            entries = len(ws.entries())
            _round(ws, rng, min(batch, flips - counts.flips, entries), counts)
        return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flips", type=int, default=240, help="bytes to flip (default 240)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--batch", type=int, default=40,
                    help="entries flipped per child process (default 40)")
    args = ap.parse_args()
    counts = run(args.flips, args.seed, args.batch)
    print(counts.summary())
    return 0 if counts.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
