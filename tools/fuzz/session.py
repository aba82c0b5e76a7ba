"""A fuzz session: generate cases in batches, run them on gradloom (and warp-lang), classify.

``Session.run_cases`` is what the command line and the test-suite slice both call. The workers
run concurrently (gradloom and warp-lang each in their own subprocess); a batch's results are
classified as soon as both are in.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .classify import FAILURES, classify, signature
from .model import Case
from .runner import Worker


def warp_available() -> bool:
    try:
        import importlib.util

        return importlib.util.find_spec("warp") is not None
    except (ImportError, ValueError):
        return False


@dataclass
class Outcome:
    case: Case
    cls: str
    detail: str
    signature: str
    gradloom: dict[str, Any]
    warp: dict[str, Any] | None


@dataclass
class Session:
    """Owns a scratch directory and the worker processes."""

    use_warp: bool = True
    timeout: float = 60.0
    workdir: str = ""
    keep: bool = False
    #: also check forward mode: jvp tangents against finite differences
    jvp: bool = False
    env: dict[str, str] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    failures: list[Outcome] = field(default_factory=list)
    notes: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.use_warp = self.use_warp and warp_available()
        self.workdir = self.workdir or tempfile.mkdtemp(prefix="gradloom-fuzz-")
        os.makedirs(self.workdir, exist_ok=True)
        env = {"GRADLOOM_CACHE_DIR": os.environ.get("GRADLOOM_CACHE_DIR",
                                                    os.path.join(self.workdir, "glcache")),
               "FUZZ_WARP_CACHE": os.path.join(self.workdir, "warpcache"), **self.env}
        self.gl = Worker("gradloom", self.workdir, timeout=self.timeout, env=env)
        self.wp = Worker("warp", self.workdir, timeout=self.timeout, env=env) \
            if self.use_warp else None

    def close(self) -> None:
        self.gl.close()
        if self.wp is not None:
            self.wp.close()
        if not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def evaluate(self, cases: list[Case], warp: bool | None = None) -> list[Outcome]:
        """Run ``cases`` (one batch) and classify each."""
        jobs = [{"case": c, "dir": self.workdir, "jvp": self.jvp} for c in cases]
        wres: dict[str, dict] = {}
        use_warp = self.wp is not None and (warp is None or warp)
        thread = None
        if use_warp:
            assert self.wp is not None
            worker = self.wp
            thread = threading.Thread(target=lambda: wres.update(worker.run(jobs)))
            thread.start()
        gres = self.gl.run(jobs)
        if thread is not None:
            thread.join()
        out = []
        for c in cases:
            g, w = gres[c.tag], wres.get(c.tag) if use_warp else None
            if w is not None and w.get("status") in ("crash", "hang", "error"):
                self.notes[f"warp-lang {w['status']}"] += 1
                w = None  # warp-lang itself fell over: no reference for this case
            elif w is not None and w.get("status") == "rejected" and g.get("status") != "error":
                self.notes["warp-lang rejects, gradloom accepts"] += 1
            if g.get("jvp"):
                self.notes[f"jvp: tangents {g['jvp'].get('status')}"] += 1
            if g.get("unstable"):
                self.notes["forward not compared with warp-lang: a branch follows rounding"] += 1
            cls, detail = classify(c.dtype, g, w)
            out.append(Outcome(c, cls, detail, signature(cls, g), g, w))
        return out

    def run_cases(self, cases: Iterable[Case], batch: int = 40,
                  progress: Callable[[Session, int], None] | None = None) -> None:
        pending: list[Case] = []
        done = 0
        for case in cases:
            pending.append(case)
            if len(pending) >= batch:
                done += self._batch(pending)
                pending = []
                if progress:
                    progress(self, done)
        if pending:
            done += self._batch(pending)
            if progress:
                progress(self, done)

    def _batch(self, cases: list[Case]) -> int:
        for o in self.evaluate(cases):
            self.counts[o.cls] += 1
            if o.cls == "rejected":
                self.notes["rejected: " + o.detail.split(" within")[0][:60]] += 1
            if o.cls in FAILURES:
                self.failures.append(o)
        return len(cases)
