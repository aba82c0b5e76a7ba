"""Worker subprocess: runs batches of cases on gradloom or warp-lang, one JSON line per event.

``python -m tools.fuzz.worker gradloom|warp`` reads job-file paths (a pickled list of jobs) from
stdin, one per line. For each case it writes ``{"start": tag}`` before touching it and
``{"done": tag, "result": {...}}`` after, then ``{"idle": true}`` when the batch is done, so the
driver can pin a crash or a hang on the case that was running. Protocol lines go to the original
stdout; anything the libraries print goes to stderr.
"""

from __future__ import annotations

import faulthandler
import itertools
import json
import os
import pickle
import re
import sys
from typing import Any, TextIO

from .evaluate import error_info, load_module, run_program
from .render import Renderer, module_text

_counter = itertools.count()


def _send(proto: TextIO, msg: dict) -> None:
    proto.write(json.dumps(msg) + "\n")
    proto.flush()


def _write_module(directory: str, stem: str, text: str) -> Any:
    name = f"fz_{stem}_{os.getpid()}_{next(_counter)}"
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as fh:
        fh.write(text)
    return load_module(path, name)


# ----------------------------------------------------------------------------- gradloom


def _gradloom_programs(job: dict) -> dict[str, Any]:
    case, d = job["case"], job["dir"]
    main = _write_module(d, case.tag + "_main", module_text([Renderer(case)], "gradloom"))
    traced = _write_module(d, case.tag + "_traced",
                           module_text([Renderer(case, traced=True)], "gradloom"))
    progs = {"main": main.program, "traced": traced.program, "twin": traced.program}
    if case.dtype == "float32":
        twin = _write_module(d, case.tag + "_twin",
                             module_text([Renderer(case, dtype="float64", traced=True)],
                                         "gradloom"))
        progs["twin"] = twin.program
    return progs


def _test_hooks(tag: str) -> None:
    """Fail on purpose (tests of crash and hang pinning): FUZZ_TEST_CRASH / FUZZ_TEST_HANG."""
    if tag == os.environ.get("FUZZ_TEST_CRASH"):
        os.abort()
    if tag == os.environ.get("FUZZ_TEST_HANG"):
        import time

        time.sleep(3600)


def run_gradloom(jobs: list[dict], proto: TextIO) -> None:
    import gradloom as wp

    from .check import check

    for job in jobs:
        tag = job["case"].tag
        _send(proto, {"start": tag})
        _test_hooks(tag)
        try:
            progs = _gradloom_programs(job)
        except Exception as exc:
            result = error_info("import", exc)
        else:
            result = check(wp, job["case"], progs, jvp=job.get("jvp", False))
        _send(proto, {"done": tag, "result": result})


# ----------------------------------------------------------------------------- warp-lang

_WARP: Any = None


def _warp() -> Any:
    global _WARP
    if _WARP is None:
        import warp

        setattr(warp.config, "quiet", True)  # noqa: B010 (no stubs for warp.config)
        cache = os.environ.get("FUZZ_WARP_CACHE")
        if cache:
            warp.config.kernel_cache_dir = cache
        warp.init()
        _WARP = warp
    return _WARP


def _build_warp(pending: list[dict], directory: str, proto: TextIO) -> tuple[Any, list[dict]]:
    """Build one warp module for the pending cases, dropping those warp rejects."""
    wp = _warp()
    while pending:
        renders = [Renderer(j["case"], traced=True, suffix=f"_w{i}") for i, j in enumerate(pending)]
        mod = _write_module(directory, "warp", module_text(renders, "warp", no_backward=True))
        _send(proto, {"start": "__build__"})
        try:
            wp.load_module(mod, device="cpu")
            return mod, pending
        except Exception as exc:
            hits = {int(m) for m in re.findall(r"_w(\d+)\b", str(exc)) if int(m) < len(pending)}
            if not hits and len(pending) > 1:
                return None, pending  # cannot tell which one: the caller runs them one by one
            bad = pending[min(hits)] if hits else pending[0]
            _send(proto, {"done": bad["case"].tag,
                          "result": {"status": "rejected", "message": str(exc)[:2000]}})
            pending = [j for j in pending if j is not bad]
    return None, []


def run_warp(jobs: list[dict], proto: TextIO) -> None:
    if not jobs:
        return
    wp = _warp()
    mod, pending = _build_warp(list(jobs), jobs[0]["dir"], proto)
    if mod is None and pending:
        for job in pending:
            run_warp([job], proto)
        return
    for i, job in enumerate(pending):
        case = job["case"]
        _send(proto, {"start": case.tag})
        try:
            outs, _ = run_program(wp, getattr(mod, f"program_w{i}"), case, {}, case.dtype,
                                      traced=True)
            result = {"status": "ok", "forward": {n: v.tolist() for n, v in outs.items()}}
        except Exception as exc:
            result = error_info("warp-run", exc)
        _send(proto, {"done": case.tag, "result": result})


def main() -> None:
    lib = sys.argv[1]
    faulthandler.enable()  # a segfault prints the Python stack to stderr (the crash report)
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        with open(path, "rb") as fh:
            jobs = pickle.load(fh)
        (run_gradloom if lib == "gradloom" else run_warp)(jobs, proto)
        _send(proto, {"idle": True})


if __name__ == "__main__":
    main()
