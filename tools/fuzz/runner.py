"""Driver side of the worker subprocesses: send batches, read events, pin crashes and hangs.

A ``Worker`` keeps one ``python -m tools.fuzz.worker`` process alive across batches (restarted
after ``recycle`` cases, and after a crash or a hang). When the process dies while a case is
running, that case is recorded as ``crash`` (with the exit status and the tail of its stderr)
and the rest of the batch goes on in a fresh process; when a case runs past the timeout it is
recorded as ``hang`` and the process is killed.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import subprocess
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Worker:
    """One worker subprocess for ``lib`` (gradloom or warp)."""

    def __init__(self, lib: str, workdir: str, *, timeout: float = 60.0,
                 build_timeout: float = 900.0, recycle: int = 400,
                 env: dict[str, str] | None = None) -> None:
        self.lib, self.workdir = lib, workdir
        self.timeout, self.build_timeout, self.recycle = timeout, build_timeout, recycle
        self.env = {**os.environ, **(env or {})}
        self.env["PYTHONPATH"] = os.pathsep.join(
            [ROOT] + [p for p in self.env.get("PYTHONPATH", "").split(os.pathsep) if p])
        self.proc: subprocess.Popen | None = None
        self.buf = b""
        self.served = 0
        self.log_path = os.path.join(workdir, f"{lib}-worker.log")
        self.nbatch = 0

    # ------------------------------------------------------------------ process

    def _start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tools.fuzz.worker", self.lib], cwd=ROOT, env=self.env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        self.buf, self.served = b"", 0

    def close(self) -> None:
        if self.proc is not None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def _kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def _readline(self, deadline: float) -> str | None:
        """The next line; '' at end of file; None at the deadline."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return ""
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def _log_tail(self, since: int) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(since)
                return fh.read()[-3000:].decode(errors="replace")
        except OSError:
            return ""

    # ------------------------------------------------------------------ batches

    def run(self, jobs: list[dict]) -> dict[str, dict]:
        """Results by case tag for every job (crash / hang results included)."""
        results: dict[str, dict] = {}
        remaining = list(jobs)
        while remaining:
            if self.proc is None or self.served >= self.recycle:
                self.close()
                self._start()
            self._one_pass(remaining, results)
            remaining = [j for j in remaining if j["case"].tag not in results]
        return results

    def _one_pass(self, jobs: list[dict], results: dict[str, dict]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.nbatch += 1
        path = os.path.join(self.workdir, f"jobs-{self.lib}-{os.getpid()}-{self.nbatch}.pkl")
        with open(path, "wb") as fh:
            pickle.dump(jobs, fh)
        log_pos = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        self.proc.stdin.write((path + "\n").encode())
        self.proc.stdin.flush()
        current, deadline = None, time.monotonic() + self.build_timeout
        while True:
            line = self._readline(deadline)
            if line is None or line == "":
                self._lost(jobs, results, current, hang=line is None, log_pos=log_pos)
                return
            msg = json.loads(line)
            if "start" in msg:
                current = msg["start"]
                limit = self.build_timeout if current == "__build__" else self.timeout
                deadline = time.monotonic() + limit
            elif "done" in msg:
                results[msg["done"]] = msg["result"]
                current, self.served = None, self.served + 1
            elif msg.get("idle"):
                os.unlink(path)
                return

    def _lost(self, jobs: list[dict], results: dict[str, dict], current: str | None,
              hang: bool, log_pos: int) -> None:
        """The worker crashed or hung while running ``current``."""
        if hang:
            self._kill()
            rc = None
        else:
            assert self.proc is not None
            rc = self.proc.wait()
            self.proc = None
        info: dict[str, Any] = {"status": "hang" if hang else "crash", "returncode": rc,
                                "stderr": self._log_tail(log_pos)}
        pending = [j["case"].tag for j in jobs if j["case"].tag not in results]
        if current is None or current == "__build__":
            for tag in pending:  # lost outside any one case: nothing to pin it on
                results[tag] = {**info, "unpinned": True}
        else:
            results[current] = info
