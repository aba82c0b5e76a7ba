"""Constant bounds of integer values where the IR fixes them: constants, widening casts and
sums of such, and the counters of loops that count up from such a start by a constant step
while below a constant bound (`for k in range(c)`, a tile's loop over its elements).

A counter's bounds hold where its loop's body runs (the only place a counter is used but its
own loop test, which must be that one comparison): it starts at the start, only grows, and the
body runs only while it is below the bound. Its step must not carry it past the type's range.
Sums are bounded only where their bounds stay inside the type's range (no wrap).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..ir.nodes import Block, KernelIR, Loop, Op, Var, regions

Bounds = tuple[int, int]


def widening(d: Op) -> bool:
    """d is a cast of a signed integer to a signed integer at least as wide (value kept)."""
    if d.prim != "cast" or d.result is None:
        return False
    src, out = d.args[0].type, d.result.type
    return out.kind == "i" and src.kind == "i" and out.bits >= src.bits


def _limits(v: Var) -> Bounds:
    half = 1 << (v.type.bits - 1)
    return -half, half - 1


class Ranges:
    """Bounds of the integer values of one kernel body (None: not known)."""

    def __init__(self, kernel: KernelIR, defs: dict[int, Op]) -> None:
        self.defs = defs
        self.counters: dict[int, Bounds] = {}
        for loop in _loops(kernel.body):  # outer loops first: an inner start may be outer's
            for n, p in enumerate(loop.params):
                found = self._counter(loop, n)
                if found is not None:
                    self.counters[p.id] = found

    def of(self, v: Var) -> Bounds | None:
        """[lo, hi] holding v's value wherever v is used (a counter: in its loop's body)."""
        if v.id in self.counters:
            return self.counters[v.id]
        d = self.defs.get(v.id)
        if d is None or v.type.kind != "i":
            return None
        if d.prim == "const":
            return (d.attr, d.attr) if type(d.attr) is int else None
        if widening(d):
            return self.of(d.args[0])
        if d.prim == "add":
            a, b = self.of(d.args[0]), self.of(d.args[1])
            if a is None or b is None:
                return None
            lo, hi = a[0] + b[0], a[1] + b[1]
            least, most = _limits(v)
            return (lo, hi) if least <= lo and hi <= most else None
        return None

    def _const(self, v: Var) -> int | None:
        d = self.defs.get(v.id)
        return d.attr if d is not None and d.prim == "const" and type(d.attr) is int else None

    def _counter(self, loop: Loop, n: int) -> Bounds | None:
        """Bounds of loop.params[n] in the loop's body, when it counts up below a constant."""
        p = loop.params[n]
        start = self.of(loop.inits[n])
        test = loop.cond.stmts[-1] if len(loop.cond.stmts) == 1 else None
        step = self.defs.get(loop.body.yields[n].id)
        if (start is None or p.type.kind != "i" or not isinstance(test, Op)
                or test.prim != "lt" or loop.cond.yields != (test.result,)
                or test.args[0] is not p or step is None or step.prim != "add"):
            return None
        bound = self._const(test.args[1])
        by = (self._const(step.args[1]) if step.args[0] is p
              else self._const(step.args[0]) if step.args[1] is p else None)
        if bound is None or by is None or by < 1 or bound - 1 + by > _limits(p)[1] \
                or start[0] > bound - 1:
            return None
        return start[0], bound - 1


def _loops(b: Block) -> Iterator[Loop]:
    """Every loop in a block and its nested regions, each before the loops inside it."""
    for s in b.stmts:
        if isinstance(s, Loop):
            yield s
        if not isinstance(s, Op):
            for inner in regions(s):
                yield from _loops(inner)
