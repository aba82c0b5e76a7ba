"""Runs an address program (passes/address_program.py) over every thread of a launch at once:
the elements each access touches and the threads touching them.

Values are numpy arrays shaped to broadcast against the launch grid, so a value that depends on
one thread index component, or on none, costs an element per distinct value rather than one per
thread. A branch runs its accesses for the threads that take it; a loop runs trip by trip for the
threads still in it. The rules are the primitives' `host_threads` entries (ir/thread_rules.py),
which compute what the compiled ops compute.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.prims import PRIMS, Effect
from .address_program import Access, AddressProgram, IfStep, LoopStep, OpStep, Region

#: at most this many addresses per launch check (8 bytes each, and as much again to compare)
MAX_ADDRESSES = 1 << 27
#: at most this many trips of one loop
MAX_TRIPS = 1 << 20


class TooLarge(Exception):
    """The launch makes more accesses, or loop trips, than a check follows."""


@dataclass
class Part:
    """The addresses one access makes in one run (a loop trip), and the threads making them."""

    where: Any  # byte offsets from the array's start (passes/overlap.py rescales them)
    threads: Any  # the flat index of the thread making each
    access: Access


def run(program: AddressProgram, args: bytes, dims: tuple[int, ...]) -> list[Part]:
    """The parts the program's accesses make over the launch `dims`, with the argument block
    `args` (abi.py's layout: an `arg` step reads its value at its byte offset)."""
    runner = _Runner(args, dims)
    with np.errstate(all="ignore"):  # integer wrap-around is the kernel's too
        runner.region(program.region, None)
    return runner.parts


class _Runner:
    def __init__(self, args: bytes, dims: tuple[int, ...]) -> None:
        self.args, self.dims = args, dims
        self.every = np.arange(math.prod(dims), dtype=np.int64)
        self.env: dict[int, Any] = {}
        self.parts: list[Part] = []
        self.count = 0

    def region(self, region: Region, live: Any) -> None:
        """Run the steps for the threads where `live` (a bool grid; None: every thread)."""
        for s in region:
            if isinstance(s, OpStep):
                self.op(s)
            elif isinstance(s, Access):
                self.access(s, live)
            elif isinstance(s, IfStep):
                self.branch(s, live)
            else:
                self.loop(s, live)

    def op(self, s: OpStep) -> None:
        effects = PRIMS[s.prim].effects
        if effects == Effect.PARAM:  # read from the launch block at its byte offset
            assert isinstance(s.attr, int)
            value = np.frombuffer(self.args, s.rtype.np_dtype, 1, s.attr).reshape(())
        elif effects == Effect.THREAD:
            assert isinstance(s.attr, tuple)
            value = _tid(s.attr, self.dims)
        else:
            rule = PRIMS[s.prim].host_threads
            assert rule is not None  # the slicer keeps only such ops
            value = rule([self.env[i] for i in s.operands], s.rtype, s.attr)
        self.env[s.result] = value

    def access(self, a: Access, live: Any) -> None:
        addr: Any = np.int64(a.offset)
        for t in a.terms:
            addr = addr + self.env[t].astype(np.int64)
        where = np.empty(self.dims, dtype=np.int64)
        where[...] = addr
        where = where.reshape(-1)
        threads = self.every
        if live is not None:
            mask = np.broadcast_to(live, self.dims).reshape(-1)
            where, threads = where[mask], threads[mask]
        self.count += len(where)
        if self.count > MAX_ADDRESSES:
            raise TooLarge(f"more than {MAX_ADDRESSES} accesses")
        if len(where):
            self.parts.append(Part(where, threads, a))

    def branch(self, s: IfStep, live: Any) -> None:
        if s.cond is None:  # not computable: both branches, for every thread
            self.region(s.then, live)
            self.region(s.orelse, live)
            return
        cond = self.env[s.cond].astype(np.bool_)
        self.region(s.then, _both(live, cond))
        self.region(s.orelse, _both(live, ~cond))
        for result, then, orelse in s.results:
            self.env[result] = np.where(cond, self.env[then], self.env[orelse])

    def loop(self, s: LoopStep, live: Any) -> None:
        if s.go is None:  # the trip count is not computable: the accesses once, every thread
            self.region(s.cond, live)
            self.region(s.body, live)
            return
        for init, param, _, _ in s.carried:
            self.env[param] = self.env[init]
        trips = 0
        while True:
            self.region(s.cond, live)
            live = _both(live, self.env[s.go].astype(np.bool_))
            if not np.any(live):
                break
            trips += 1
            if trips > MAX_TRIPS:
                raise TooLarge(f"a loop of more than {MAX_TRIPS} trips")
            self.region(s.body, live)
            for _, param, yielded, _ in s.carried:
                self.env[param] = np.where(live, self.env[yielded], self.env[param])
        for _, param, _, result in s.carried:
            self.env[result] = self.env[param]


def _both(live: Any, cond: Any) -> Any:
    return cond if live is None else live & cond


def _tid(attr: tuple[int, int], dims: tuple[int, ...]) -> Any:
    """wp.tid()'s component k of n over the grid, as codegen/tid_split.py computes it: the
    index along dimension k when n is the launch's dimension count, else from the flat index."""
    k, n = attr
    if n == len(dims) and n > 1:
        shape = [1] * n
        shape[k] = dims[k]
        return np.arange(dims[k], dtype=np.int32).reshape(shape)
    flat = np.arange(math.prod(dims), dtype=np.int64).reshape(dims)
    if n > 1:
        flat = flat // math.prod(dims[k + 1:n])
        if k > 0:
            flat = flat % dims[k]
    return flat.astype(np.int32)
