"""Whether each @wp.func_grad rule reads arrays as the forward left them right after its call.

A rule runs in the reverse sweep and reads arrays there. An array the kernel never writes holds
its contents from before the launch; one it writes is the thread's working copy after the whole
forward replay of the thread (reverse.py). That is what the forward saw right after the call
only when nothing in the thread writes the array later: a store after the call, or a store
anywhere in a runtime loop around the call (a later trip), would show the rule values from
after its call. Such kernels are refused rather than given a plausible wrong gradient.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import CompileError
from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, walk_ops
from ..ir.prims import PRIMS, Effect
from .access import KernelAccess


@dataclass
class _Order:
    """Ops numbered in program order: stores per array, loop extents, rule calls."""

    access: KernelAccess
    pos: int = 0
    stores: list[tuple[int, int]] = field(default_factory=list)  # (array, position)
    loops: dict[int, tuple[int, int]] = field(default_factory=dict)  # id(loop) -> extent
    calls: list[tuple[Custom, int, tuple[int, ...]]] = field(default_factory=list)

    def block(self, b: Block, loops: tuple[int, ...]) -> None:
        for s in b.stmts:
            if isinstance(s, Op):
                self.pos += 1
                if Effect.WRITE in PRIMS[s.prim].effects and self.access.tracked(s):
                    self.stores.append((self.access.root(s.args[0], s.loc), self.pos))
            elif isinstance(s, If):
                self.block(s.then, loops)
                self.block(s.orelse, loops)
            elif isinstance(s, Loop):
                start = self.pos
                self.block(s.cond, (*loops, id(s)))
                self.block(s.body, (*loops, id(s)))
                self.loops[id(s)] = (start, self.pos)
            else:
                self.block(s.body, loops)
                self.calls.append((s, self.pos, loops))


def check_rule_reads(kernel: KernelIR, access: KernelAccess) -> None:
    """Raise when a rule reads an array the kernel writes later in the thread."""
    order = _Order(access)
    order.block(kernel.body, ())
    names = dict(kernel.array_names)
    for call, end, loops in order.calls:
        for array in _reads(call, access):
            later = any(a == array and p > end for a, p in order.stores)
            in_loop = any(a == array and order.loops[lp][0] < p <= order.loops[lp][1]
                          for lp in loops for a, p in order.stores)
            if later or in_loop:
                name = names.get(array)
                raise CompileError(
                    f"cannot differentiate this kernel: the @wp.func_grad rule called here "
                    f"reads {f'{name!r}' if name else 'an array'}, which the kernel writes "
                    f"again {'after the call' if later else 'in the loop around the call'}; "
                    "the rule runs in the backward pass and would see the later values. Write "
                    "the new values to a separate array", call.loc)


def _reads(call: Custom, access: KernelAccess) -> set[int]:
    return {access.root(op.args[0], op.loc) for op in walk_ops(call.adjoint)
            if access.tracked(op) and not PRIMS[op.prim].effects & Effect.WRITE}
