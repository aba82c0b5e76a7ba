"""Which arrays' pre-launch contents an adjoint reads; its replayed writes to the others go.

An adjoint replays the forward's writes into a working copy of each array the kernel reads and
writes, so that its loads see what the forward's loads saw (runtime/tape/adjoint.py). Where no value
loaded from an array reaches what the adjoint keeps or writes into gradients (a linear update
`y[i] = a * x[i] + y[i]` or `x[i] += v[i] * dt`: its derivative needs no primal), the contents
do not matter: the replayed writes to that array are dropped here, the adjoint records which
arrays it still reads, and a Tape keeps neither a snapshot nor a working copy of the others.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Stmt, pointer_root, walk_ops
from ..ir.prims import PRIMS
from .replay import FlowGraph, Node


def drop_unread_writes(adjoint: KernelIR, working: frozenset[int]) -> KernelIR:
    """The adjoint without its replayed writes to working arrays (`working`: their argument
    offsets) whose contents it never uses, and with `contents_read` (the offsets of the arrays
    whose contents it uses) set. Writes to other arrays are the adjoint's own (a
    `@wp.func_grad` rule's counter) and stay."""
    graph = FlowGraph(adjoint)
    loaded = {node[1] for node in graph.users if isinstance(node, tuple)}
    read = frozenset(off for off in loaded if _reaches_sink(graph, ("mem", off)))
    defs = {op.result.id: op for op in walk_ops(adjoint.body) if op.result is not None}
    dropper = _Dropper(defs, working - read)
    return replace(adjoint, body=dropper.block(adjoint.body), contents_read=read)


def dead_value(op: Op) -> Op:
    """A constant standing in for the result of a dropped write (an atomic's old value that
    nothing reads): any value will do for what still names it, a loop that carries it."""
    assert op.result is not None
    return Op("const", (), op.result, op.loc, False if op.result.type.kind == "b" else 0)


def _reaches_sink(graph: FlowGraph, origin: Node) -> bool:
    seen: set[Node] = set()
    todo = [origin]
    while todo:
        node = todo.pop()
        if node == "sink":
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(graph.users.get(node, ()))
    return False


class _Dropper:
    """Rebuilds blocks without the writes to the data of the arrays at `unread` offsets."""

    def __init__(self, defs: dict[int, Op], unread: frozenset[int]) -> None:
        self.defs, self.unread = defs, unread

    def dropped(self, op: Op) -> bool:
        prim = PRIMS[op.prim]
        if not (prim.memory and prim.writes):
            return False
        root = pointer_root(self.defs, op.args[0])
        return root is not None and root.prim == "arg" and int(root.attr) in self.unread

    def block(self, b: Block) -> Block:
        return Block(tuple(s for stmt in b.stmts for s in self.stmt(stmt)), b.yields)

    def stmt(self, s: Stmt) -> list[Stmt]:
        if isinstance(s, Op):
            if not self.dropped(s):
                return [s]
            if s.result is None:
                return []
            # an atomic's old value that nothing uses (else the array would be read)
            return [dead_value(s)]
        if isinstance(s, If):
            return [replace(s, then=self.block(s.then), orelse=self.block(s.orelse))]
        if isinstance(s, Loop):
            return [replace(s, cond=self.block(s.cond), body=self.block(s.body))]
        assert isinstance(s, Custom)
        return [replace(s, body=self.block(s.body), adjoint=self.block(s.adjoint))]
