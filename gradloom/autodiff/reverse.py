"""Reverse mode on scalar IR: a kernel's adjoint runs its forward sweep, then the reverse sweep.

The adjoint is an ordinary kernel with the same arguments. Per thread it first re-runs the
forward code (writes are replayed only into arrays the kernel also reads; the runtime hands it a
copy of their pre-launch contents), keeping what the reverse sweep needs: branch values become
extra results of their `if`, loop values are pushed on a per-thread stack unless they can be
recomputed (see scopes.py). The reverse sweep then walks the code backwards, applying each
primitive's rule from ir/prims.py; array loads add into the gradient array, stores take (read
and zero) it, so an element overwritten later passes no gradient through the earlier write.
"""

from __future__ import annotations

from dataclasses import replace

from ..abi import GRAD_SLOT
from ..errors import UNKNOWN_LOC, CompileError, SourceLoc
from ..ir.nodes import Block, Custom, If, KernelIR, Loop, Op, Var, max_var_id, walk_ops
from ..ir.prims import PRIMS, Effect, MemoryRule, PrintFormat
from ..passes.custom import custom_as_if, has_effects, inline_block, retarget_gradients
from ..passes.substitute import substitute
from ..types import int64
from .access import KernelAccess, analyze
from .contents import dead_value, drop_unread_writes
from .emit import Emitter, MBlock, MIf, MLoop, freeze
from .replay import launch_check, order_hazards, replay_hazards, shared_working_arrays
from .rule_reads import check_rule_reads
from .scopes import BranchScope, LoopScope, Scope
from .take_back import fold_take_back


def adjoint_kernel(kernel: KernelIR, prints: dict[int, int] | None = None) -> KernelIR:
    """The adjoint of a kernel: gradients of its outputs flow to the gradients of its inputs.
    `prints` (an explicit adjoint launch's, pipeline.printing_kernel): its replay prints as
    the forward does, and each wp.print also prints its values' adjoints, those of a
    parameter's value with the adjoint given for it: the argument at offset prints[o] for
    the one read at offset o (None: prints nothing)."""
    return Reverse(kernel, prints).build()


def _level_defs(b: MBlock | Block) -> list[Var]:
    """The variables a block defines at its own level (op results, if/loop results)."""
    out: list[Var] = []
    for s in b.stmts:
        if isinstance(s, Op):
            if s.result is not None:
                out.append(s.result)
        else:
            out.extend(s.results)
    return out


class Reverse:
    """One kernel's adjoint under construction."""

    def __init__(self, kernel: KernelIR, prints: dict[int, int] | None = None) -> None:
        self.kernel = kernel
        self.prints = prints
        self.given_args: dict[int, Op] = {}  # the adjoints given for parameters, read once
        self.access: KernelAccess = analyze(kernel)
        loc = next((op.loc for op in walk_ops(kernel.body)), UNKNOWN_LOC)
        self.em = Emitter(max_var_id(kernel.body), loc)
        self.if_extra: dict[If, dict[Var, Var]] = {}
        self.loop_fwd: dict[Loop, tuple[MLoop, Var]] = {}
        self.args_at = {int(s.attr): s.result for s in kernel.body.stmts
                        if isinstance(s, Op) and s.prim == "arg" and s.result is not None}
        self._check_minmax()
        check_rule_reads(kernel, self.access)

    def build(self) -> KernelIR:
        self.forward(self.kernel.body)
        self.reverse(self.kernel.body, Scope(self, None))
        self.em.cur.stmts[:0] = list(self.given_args.values())
        body = freeze(self.em.cur)
        k = self.kernel
        # Threads run last first, so a gradient passed through memory from a later thread to an
        # earlier one (thread i read what thread i+1 then overwrote) arrives in time. Replaying
        # atomics whose returned value is used (slot counters) needs the forward order instead.
        forward_order = any(a.result_used for a in self.access.arrays.values())
        adjoint = KernelIR(k.name + "_adjoint", body, k.launch_ndim, k.locs, k.unit_strides,
                           reverse_threads=not forward_order, array_names=k.array_names)
        shared = shared_working_arrays(k, self.access)
        check = launch_check(k, shared, replay_hazards(adjoint, shared),
                             order_hazards(k, shared) if forward_order else set())
        working = frozenset(off for off, a in self.access.arrays.items() if a.working)
        return replace(fold_take_back(drop_unread_writes(adjoint, working)), launch_check=check)

    def _check_minmax(self) -> None:
        """A float atomic_min/max whose array the launch's final contents stand for (access.py:
        `minmax`) must be its array's only use: elsewhere the thread order decides."""
        for op in walk_ops(self.kernel.body):
            if PRIMS[op.prim].memory_rule is not MemoryRule.PICK or not self.access.tracked(op):
                continue
            acc = self.access.arrays[self.access.root(op.args[0], op.loc)]
            if not acc.minmax:
                continue
            if acc.result_used:
                raise CompileError(f"cannot differentiate through the value wp.{op.prim}() "
                                   "returns where other threads may update the same element: "
                                   "it depends on the order threads run in (at the thread's "
                                   "own element, as a[i] of a launch over i, it is exact)",
                                   op.loc)
            if acc.loads or acc.stores:
                raise CompileError(f"cannot differentiate wp.{op.prim}() on an array the kernel "
                                   "also reads or writes otherwise, where threads may share "
                                   "elements; use a separate array for the min/max", op.loc)

    def recomputable_load(self, op: Op) -> bool:
        if op.result is None or op.result.type.kind == "p":
            return False
        try:
            return not self.access.working(op.args[0])
        except CompileError:
            return False

    # -- forward sweep ------------------------------------------------------------------------

    def forward(self, b: Block) -> None:
        for s in b.stmts:
            if isinstance(s, Op):
                effects = PRIMS[s.prim].effects
                if Effect.WRITE in effects and not self.access.working(s.args[0], s.loc):
                    # its only effect is on memory that nothing here reads again
                    if s.result is not None:
                        self.em.cur.stmts.append(dead_value(s))
                    continue
                if Effect.IO in effects and (self.prints is None or s.prim != "print"):
                    continue  # output belongs to the forward launch, not to its replay
                self.em.cur.stmts.append(s)
            elif isinstance(s, If):
                self.forward_if(s)
            elif isinstance(s, Custom):
                true, branch = custom_as_if(s, self.em.new_var)
                self.em.cur.stmts.append(true)
                self.forward_if(branch)
            else:
                self.forward_loop(s)

    def forward_if(self, s: If) -> None:
        """Copy an if; it also yields every value its branches define (zero on the other)."""
        em = self.em
        blocks = []
        for blk in (s.then, s.orelse):
            em.open()
            self.forward(blk)
            blocks.append(em.close())
        then_m, else_m = blocks
        then_m.yields, else_m.yields = list(s.then.yields), list(s.orelse.yields)
        extra: dict[Var, Var] = {}
        results = list(s.results)
        defs = {id(then_m): _level_defs(then_m), id(else_m): _level_defs(else_m)}
        for mine, other in ((then_m, else_m), (else_m, then_m)):
            for v in defs[id(mine)]:
                zero = em.make("const", (), v.type, False if v.type.kind == "b" else 0)
                other.stmts.append(zero)
                assert zero.result is not None
                mine.yields.append(v)
                other.yields.append(zero.result)
                extra[v] = em.new_var(v.type)
                results.append(extra[v])
        self.if_extra[s] = extra
        em.cur.stmts.append(MIf(s.cond, then_m, else_m, results, s.loc))

    def forward_loop(self, s: Loop) -> None:
        """Copy a loop, counting its trips (the reverse loop runs as many)."""
        em = self.em
        start = em.const(0, int64)
        count = em.new_var(int64)
        em.open()
        self.forward(s.cond)
        cond = em.close()
        cond.yields = list(s.cond.yields)
        em.open()
        self.forward(s.body)
        counted = em.op("add", count, em.const(1, int64))
        body = em.close()
        body.yields = [*s.body.yields, counted]
        trips = em.new_var(int64)
        loop = MLoop([*s.inits, start], [*s.params, count], cond, body, [*s.results, trips],
                     s.loc)
        em.cur.stmts.append(loop)
        self.loop_fwd[s] = (loop, trips)

    # -- reverse sweep ------------------------------------------------------------------------

    def reverse(self, b: Block, scope: Scope) -> None:
        for s in reversed(b.stmts):
            if isinstance(s, Op):
                if PRIMS[s.prim].memory:
                    self.reverse_memory(s, scope)
                else:
                    self.reverse_op(s, scope)
            elif isinstance(s, If):
                self.reverse_if(s, scope)
            elif isinstance(s, Custom):
                self.reverse_custom(s, scope)
            else:
                self.reverse_loop(s, scope)

    def reverse_op(self, op: Op, scope: Scope) -> None:
        if self.prints is not None and op.prim == "print":
            self.reverse_print(op, scope)
            return
        rule = PRIMS[op.prim].vjp
        g: Var | None
        if rule is not None and op.result is None and (
                op.args[-1].type.is_float or PRIMS[op.prim].moves_adjoints):
            # a store into thread-local memory (lstore), or an exchange of it (bxchg): its
            # rule moves adjoints between slots whatever the (absent) result's; it ignores g
            g = op.args[-1]
        elif rule is None or op.result is None or not op.result.type.is_float:
            return
        else:
            g = scope.get_adj(op.result)
        if g is None:
            return
        for arg, contribution in zip(op.args, rule(scope, op, g), strict=True):
            if contribution is not None:
                scope.accumulate(arg, contribution)

    def reverse_print(self, op: Op, scope: Scope) -> None:
        """wp.print in an explicit adjoint launch: the values' adjoints here, as Warp prints
        them (PrintFormat.adjoint; an integer's or bool's is the one given for a parameter)."""
        text = getattr(op.attr, "adjoint", None)
        if text is None:
            return  # wp.printf, expect_*: nothing
        values = []
        for v in op.args[1:]:
            g = scope.get_adj(v) if v.type.is_float else None
            d = self.access.defs.get(v.id)
            assert self.prints is not None
            if d is not None and d.prim == "arg" and int(d.attr) in self.prints:
                given = self.given_arg(self.prints[int(d.attr)], v)
                g = given if g is None else self.em.op("add", g, given)
            values.append(self.em.zero(v.type) if g is None else g)
        self.em.effect("print", scope.primal(op.args[0]), *values, attr=PrintFormat(text))

    def given_arg(self, offset: int, like: Var) -> Var:
        """The argument at `offset` (of like's type), read at the adjoint's top."""
        if offset not in self.given_args:
            v = self.em.new_var(like.type)
            self.given_args[offset] = Op("arg", (), v, self.em.loc, offset)
        result = self.given_args[offset].result
        assert result is not None
        return result

    def reverse_custom(self, s: Custom, scope: Scope) -> None:
        """A @wp.func_grad region: run the user's adjoint on the primal inputs and result
        adjoints. It runs as written (its writes and atomics are the user's), its
        `wp.adjoint[array]` accesses pointed at the gradients."""
        gs = [scope.get_adj(r) for r in s.results]
        if s.results and all(g is None for g in gs) and not has_effects(s.adjoint):
            return
        mapping = {v: scope.primal(v) for v in s.inputs}
        mapping.update({seed: g or self.em.zero(seed.type)
                        for seed, g in zip(s.seeds, gs, strict=True)})
        adjoint = retarget_gradients(s.adjoint, lambda p: self.grad_base(p, scope, s.loc),
                                     self.em.new_var)
        adjoint = inline_block(substitute(adjoint, mapping, self.em.new_var), self.em.new_var)
        self.em.cur.stmts.extend(adjoint.stmts)
        for v, a in zip(s.inputs, adjoint.yields, strict=True):
            scope.accumulate(v, a)

    def reverse_memory(self, op: Op, scope: Scope) -> None:
        """Apply the primitive's MemoryRule (ir/prims.py) to a load, store or atomic."""
        rule = PRIMS[op.prim].memory_rule
        value = op.result if rule is MemoryRule.GATHER else op.args[2]
        if value is None or not value.type.is_float or rule is MemoryRule.INTEGER or \
                not self.access.tracked(op):
            return
        em = self.em
        if rule is MemoryRule.GATHER:
            g = scope.get_adj(value)
            if g is not None:
                em.effect("adj_add", *self.grad_place(op, scope), g, attr=op.attr)
            return
        if rule is MemoryRule.ORDER:
            raise CompileError(f"wp.{op.prim}() on a float array is not differentiable: what "
                               "the array ends up holding depends on the order threads run in; "
                               "launch this kernel outside the Tape", op.loc)
        if rule is MemoryRule.PICK and not self.access.arrays[
                self.access.root(op.args[0], op.loc)].minmax:
            self.reverse_own_pick(op, scope)
            return
        gp, off = self.grad_place(op, scope)
        if rule is MemoryRule.OVERWRITE:
            scope.accumulate(value, em.op("adj_take", gp, off, type=value.type, attr=op.attr))
            return
        g = em.op("adj_read", gp, off, type=value.type, attr=op.attr)
        if rule is MemoryRule.ACCUMULATE:
            scope.accumulate(value, g)
            if op.result is not None and scope.peek_adj(op.result) is not None:
                raise CompileError(f"cannot differentiate through the value wp.{op.prim}() "
                                   "returns on a float array: it depends on the order threads "
                                   "run in; compute the prefix in a separate kernel", op.loc)
            return
        # PICK (atomic_min/max): the array holds the winner; the gradient goes to the thread(s)
        # whose value equals it (the runtime passes the array's contents after the launch)
        final = em.op("load", scope.primal(op.args[0]), off, type=value.type, attr=op.attr)
        v = scope.primal(value)
        both_nan = em.op("and", em.op("isnan", v), em.op("isnan", final))
        won = em.op("or", em.op("eq", v, final), both_nan)
        scope.accumulate(value, em.op("select", won, g, em.zero(value.type)))

    def reverse_own_pick(self, op: Op, scope: Scope) -> None:
        """atomic_min/max at the thread's own element (access.py: not `minmax`): the old value
        it returns was read, the winner stored. The stored value's gradient is taken, as a
        store's, and goes to the value where it replaced the old one, else to the old value,
        whose gradient (with its uses' adjoint) goes back into the element, as a load's."""
        em, value = self.em, op.args[2]
        assert op.result is not None
        gp, off = self.grad_place(op, scope)
        g = em.op("adj_take", gp, off, type=value.type, attr=op.attr)
        old = scope.primal(op.result)
        won = PRIMS[op.prim].replaces(scope, scope.primal(value), old)
        zero = em.zero(value.type)
        scope.accumulate(value, em.op("select", won, g, zero))
        scope.accumulate(op.result, em.op("select", won, zero, g))
        adj_old = scope.get_adj(op.result)
        assert adj_old is not None
        em.effect("adj_add", gp, off, adj_old, attr=op.attr)

    def grad_place(self, op: Op, scope: Scope) -> tuple[Var, Var]:
        base, extra = self.grad_base(op.args[0], scope, op.loc)
        off = scope.primal(op.args[1])
        return base, off if extra is None else self.em.op("add", extra, off)

    def grad_base(self, p: Var, scope: Scope, loc: SourceLoc) -> tuple[Var, Var | None]:
        """The gradient array's pointer for data pointer p, as the gradient argument and a
        byte offset into it (None: none), so a null gradient stays null (adj_* skip it)."""
        d = self.access.defs.get(p.id)
        if d is not None and d.prim == "arg":
            return self.args_at[int(d.attr) + GRAD_SLOT], None
        if d is not None and d.prim == "ptr_add":
            base, extra = self.grad_base(d.args[0], scope, loc)
            step = scope.primal(d.args[1])
            return base, step if extra is None else self.em.op("add", extra, step)
        raise CompileError("cannot differentiate an access to an array that is chosen at run "
                           "time or stored inside another array", loc)

    def reverse_if(self, s: If, scope: Scope) -> None:
        em = self.em
        gs = [scope.get_adj(r) for r in s.results]
        done = []
        for blk in (s.then, s.orelse):
            block = em.open()
            inner = BranchScope(self, scope, self.if_extra[s])
            for y, g in zip(blk.yields, gs, strict=True):
                if g is not None:
                    inner.accumulate(y, g)
            self.reverse(blk, inner)
            em.close()
            done.append((block, inner))
        touched = list(dict.fromkeys(v for _, inner in done for v in inner.touched))
        if not touched and not any(block.stmts for block, _ in done):
            return
        incoming = {}
        for u in touched:
            incoming[u] = scope.get_adj(u) or em.zero(u.type)
        for block, inner in done:
            block.yields = [inner.adj.get(u, incoming[u]) for u in touched]
        results = [em.new_var(u.type) for u in touched]
        em.cur.stmts.append(MIf(scope.primal(s.cond), done[0][0], done[1][0], results, s.loc))
        for u, r in zip(touched, results, strict=True):
            scope.set_adj(u, r)

    def reverse_loop(self, s: Loop, scope: Scope) -> None:
        """Run the body's reverse once per forward trip, last trip first."""
        em = self.em
        fwd, trips = self.loop_fwd[s]
        floats = [j for j, p in enumerate(s.params) if p.type.is_float]
        gs = [scope.get_adj(s.results[j]) for j in floats]
        outer = em.cur
        body = em.open()
        count = em.new_var(int64)
        iteration = em.op("sub", count, em.const(1, int64))
        head = len(body.stmts)
        # the body's own values, also those of ops the forward replay left out (a write to an
        # array nothing reads): their adjoints start inside the iteration, never outside it
        local = set(_level_defs(fwd.body)) | set(_level_defs(s.body)) | set(s.params)
        inner = LoopScope(self, scope, s, local, outer, iteration)
        adj_in = [em.new_var(s.params[j].type) for j in floats]
        for j, a in zip(floats, adj_in, strict=True):
            inner.accumulate(s.body.yields[j], a)
        self.reverse(s.body, inner)
        adj_out = [inner.get_adj(s.params[j]) or em.zero(s.params[j].type) for j in floats]
        em.close()
        if len(body.stmts) == head and not inner.carried and all(g is None for g in gs):
            return  # nothing flows backwards through this loop
        self._finish_reverse_loop(s, scope, inner, body, head, count, adj_in, adj_out, gs,
                                  trips, outer)

    def _finish_reverse_loop(self, s: Loop, scope: Scope, inner: LoopScope, body: MBlock,
                             head: int, count: Var, adj_in: list[Var], adj_out: list[Var],
                             gs: list[Var | None], trips: Var, outer: MBlock) -> None:
        em = self.em
        fwd, _ = self.loop_fwd[s]
        pops = [Op("pop", (), inner.pops[v], em.loc) for v in reversed(inner.pushed)]
        body.stmts[head:head] = [*pops, *inner.prelude]
        body.yields = [body.stmts[head - 1].result, *adj_out,
                       *(inner.adj[u] for u, _, _ in inner.carried)]
        fwd.body.stmts.extend(Op("push", (v,), None, em.loc) for v in inner.pushed)
        cond = MBlock()
        zero = em.make("const", (), int64, 0)
        assert zero.result is not None
        more = em.make("gt", (count, zero.result))
        assert more.result is not None
        cond.stmts, cond.yields = [zero, more], [more.result]
        floats = [j for j, p in enumerate(s.params) if p.type.is_float]
        inits = [scope.primal(trips),
                 *(g or em.zero(s.params[j].type) for g, j in zip(gs, floats, strict=True)),
                 *(init for _, _, init in inner.carried)]
        params = [count, *adj_in, *(p for _, p, _ in inner.carried)]
        results = [em.new_var(v.type) for v in params]
        outer.stmts.append(MLoop(inits, params, cond, body, results, s.loc))
        # Carried adjoints first: each is the outer variable's whole adjoint so far (it started
        # from the adjoint before the loop). An init may be that same variable (`s = t` before
        # a loop carrying s and reading t), so its contribution must add on top, not under.
        for (u, _, _), r in zip(inner.carried, results[1 + len(floats):], strict=True):
            scope.set_adj(u, r)
        for j, r in zip(floats, results[1:], strict=False):
            scope.accumulate(s.inits[j], r)

