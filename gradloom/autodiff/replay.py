"""Whether an adjoint's forward replay reads what the forward read, where threads share arrays.

The adjoint replays each thread's forward code, threads last first, writing into a working copy
of every array the kernel both reads and writes (reverse.py). A thread that reads an element
another thread of the launch overwrites read it before or after that write in the forward, and
the replay may see the other version. That is harmless while the value read only feeds values
the reverse sweep never uses (`x[i] = 2 * x[i + 1]`: the derivative needs no primal), and a
wrong gradient otherwise. This pass follows every value a load of such an array gives through
the finished adjoint to find the arrays where one reaches a gradient, an address, a branch, a
loop's trip count or the adjoint stack. Whether threads of a launch really read what others
overwrite there depends on the launch (its arguments and grid), so the adjoint carries a check
each launch makes (passes/overlap.py); a kernel whose addresses cannot be computed ahead of a
launch is refused here.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import CompileError, SourceLoc
from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Var, pointer_root, walk_ops
from ..ir.prims import PRIMS, Effect
from ..passes.address_program import address_program
from ..passes.overlap import ORDER, REPLAY, LaunchCheck, hazard_message
from ..passes.threads import Addresses
from .access import KernelAccess

#: ops whose operands decide what the adjoint writes into gradients or what it keeps for later
#: (addresses of memory ops are sinks too): a value from an unfaithful replay must not reach them
_SINKS = Effect.GRAD | Effect.STACK | Effect.CHECK | Effect.IO


def shared_working_arrays(kernel: KernelIR, access: KernelAccess) -> dict[int, SourceLoc]:
    """Working arrays (read and written by the kernel, other than only through atomics) with an
    access that other threads may also make: argument offset -> the location of that access."""
    addr = Addresses(kernel)
    shared: dict[int, SourceLoc] = {}
    plain: set[int] = set()
    for op in walk_ops(kernel.body):
        effects = PRIMS[op.prim].effects
        if not access.tracked(op):
            continue
        offset = access.root(op.args[0], op.loc)
        if not access.arrays[offset].working:
            continue
        if Effect.ATOMIC not in effects:
            plain.add(offset)
        if not addr.own(op.args[1]):
            shared.setdefault(offset, op.loc)
    return {k: v for k, v in shared.items() if k in plain}


def replay_hazards(adjoint: KernelIR, shared: dict[int, SourceLoc]) -> set[int]:
    """The shared working arrays a value loaded from reaches what the adjoint uses."""
    if not shared:
        return set()
    graph = FlowGraph(adjoint)
    found: set[int] = set()
    for origin in shared:
        # each origin walks the whole graph: paths from two arrays' loads often merge, and a
        # walk stopping at what another origin's saw would miss that this one reaches a sink
        seen: set[Node] = set()
        todo: list[Node] = [("mem", origin)]
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            for user in graph.users.get(node, ()):
                if user == "sink":
                    found.add(origin)
                todo.append(user)
    return found


def order_hazards(kernel: KernelIR, shared: dict[int, SourceLoc]) -> set[int]:
    """For a kernel whose adjoint must replay threads in launch order (it uses a value an
    atomic returns): the shared arrays threads read float elements of, whose gradients would
    pass between threads, which needs the reverse order."""
    addr = Addresses(kernel)
    found: set[int] = set()
    for op in walk_ops(kernel.body):
        prim = PRIMS[op.prim]
        reads = prim.has(Effect.READ) and not prim.has(Effect.WRITE)
        if not reads or op.result is None or not op.result.type.is_float:
            continue
        offset = addr.root(op.args[0])
        if offset in shared:
            found.add(offset)
    return found


def launch_check(kernel: KernelIR, shared: dict[int, SourceLoc], replay: set[int],
                 order: set[int]) -> LaunchCheck | None:
    """The check each launch of the adjoint makes instead of refusing the kernel (None: no
    hazard); raises where the addresses cannot be computed at launch."""
    hazards = replay | order
    if not hazards:
        return None
    kinds = {off: ORDER if off in order else REPLAY for off in hazards}
    program = address_program(kernel, frozenset(hazards))
    origin = min(hazards)
    if program is None:
        name = dict(kernel.array_names).get(origin)
        raise CompileError(hazard_message(kinds[origin], name), shared[origin])
    return LaunchCheck(program, tuple(sorted(kinds.items())), kernel.array_names,
                       shared[origin])


def _is_pointer_load(op: Op) -> bool:
    """Reading an array pointer out of a struct in memory, not an element of array data."""
    return op.result is not None and op.result.type.kind == "p"


#: a variable (its id), an array's memory ("mem", argument offset), or "sink"
Node = int | tuple[str, int] | str


class FlowGraph:
    """Which nodes each node's value flows into, over a whole adjoint kernel."""

    def __init__(self, kernel: KernelIR) -> None:
        ops = list(walk_ops(kernel.body))
        self.defs = {op.result.id: op for op in ops if op.result is not None}
        self.users: dict[Node, list[Node]] = {}
        for src, dst in self._block(kernel.body):
            self.users.setdefault(src, []).append(dst)

    def _memory(self, p: Var) -> Node:
        root = pointer_root(self.defs, p)
        return ("mem", int(root.attr)) if root is not None and root.prim == "arg" else "sink"

    def _op(self, op: Op) -> Iterator[tuple[Node, Node]]:
        prim = PRIMS[op.prim]
        if prim.memory and not _is_pointer_load(op):
            mem = self._memory(op.args[0])
            yield from ((a.id, "sink") for a in op.args[:2])  # where: an address
            yield from ((a.id, mem) for a in op.args[2:])  # what: a value written there
            if op.result is not None:
                yield mem, op.result.id
        elif prim.has(_SINKS):
            yield from ((a.id, "sink") for a in op.args)
        elif op.result is not None:
            yield from ((a.id, op.result.id) for a in op.args)

    def _block(self, b: Block) -> Iterator[tuple[Node, Node]]:
        for s in b.stmts:
            if isinstance(s, Op):
                yield from self._op(s)
            elif isinstance(s, If):
                yield s.cond.id, "sink"
                for branch in (s.then, s.orelse):
                    yield from self._block(branch)
                    yield from ((y.id, r.id) for y, r in zip(branch.yields, s.results))
            elif isinstance(s, Custom):
                yield from self._block(s.body)
                yield from self._block(s.adjoint)
            else:
                yield from self._loop(s)

    def _loop(self, s: Loop) -> Iterator[tuple[Node, Node]]:
        yield from ((i.id, p.id) for i, p in zip(s.inits, s.params))
        yield from ((y.id, p.id) for y, p in zip(s.body.yields, s.params))
        yield from ((p.id, r.id) for p, r in zip(s.params, s.results))
        yield from ((y.id, "sink") for y in s.cond.yields)
        yield from self._block(s.cond)
        yield from self._block(s.body)
