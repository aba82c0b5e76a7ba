"""The SIMD thread loop: W consecutive threads per trip, one per vector lane (passes/lanes.py
decides which kernels and which values), with masked `if`s and loops, and the run-time check
that lets the entry take it.

The entry takes this loop when every array is contiguous (as for the contiguous scalar copy,
codegen/entry_cpu.py), no array the kernel writes overlaps another array it accesses (or itself,
through a zero stride), and the launch has at most 2**30 threads; the threads left over after
the last full vector run in the strided scalar loop. An `if` whose condition differs between
lanes runs each branch that some lane takes, under that branch's lane mask, and merges the
values with a select; a loop whose condition differs runs until no lane wants another trip, each
lane's values frozen from the trip it left. Memory accesses under a mask are masked.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from ..ir.nodes import Block, If, KernelIR, Loop, Op, Var, regions, walk_ops
from ..ir.prims import PRIMS, Effect
from .lane_log import MEMORY_RULES, LaneLog, LogEntry
from .lane_ops import _AFFINE, PURE_RULES
from .llvm_types import reg_type
from .signals import POLL_THREADS, POLL_TRIPS


class LaneFacts(Protocol):
    """What codegen needs of passes/lanes.LanePlan."""

    @property
    def reason(self) -> str | None: ...
    @property
    def varying(self) -> frozenset[int]: ...
    @property
    def roots(self) -> tuple[int, ...]: ...
    @property
    def written(self) -> tuple[int, ...]: ...
    @property
    def shared_atomics(self) -> tuple[int, ...]: ...
    @property
    def ordered(self) -> bool: ...
    @property
    def conditions(self) -> tuple[tuple[int, int, int, int], ...]: ...

#: the SIMD thread loop prefetches its windows PREFETCH_VECTORS vectors of threads ahead.
#: Measured (docs/performance.md): neo-Hookean's forward (100 ops, 9 cache lines per vector)
#: 2.8 -> 1.5 ms on one core; a vec3 integrate step 7.4-8.5 -> 4.4-5.3 ms on one core; the
#: forward-mode benchmark's program (float32, short bodies), one core, CPU time: jvp 3.6 -> 3.3
#: ms, forward + backward 6.2-6.7 -> 5.2, its forward unchanged; float32 saxpy 6.4-7.0 -> 6.0-6.3
#: ms on one core. (Short float32 bodies had none before: saxpy got 10% slower in an older run.)
PREFETCH_VECTORS = 16
#: a SIMD loop body of more IR ops than this, on a host of 16 lanes, runs two vectors of threads
#: per trip (`interleaves`): the body outgrows the CPU's out-of-order window, so one vector's
#: long dependency chains (a log, a division) no longer overlap the next vector's; LLVM emits
#: every op for the 32 lanes as two 16-lane instructions side by side. Measured: neo-Hookean's
#: adjoint (150 ops) 4.8-5.2 -> 4.0-4.2 ms on one core, 2.8 -> 2.3-2.4 ms on two; its
#: forward (70 ops) gained nothing and the cloth springs' adjoint (gathers) lost 10%
INTERLEAVE_OPS = 128
#: launches of more threads than this run the scalar loop (see lane_values.TID_OFFSET_MAX)
MAX_LANE_THREADS = 1 << 30
_BY_LANE = Effect.WRITE | Effect.STACK | Effect.GRAD | Effect.ATOMIC


def interleaves(kernel: KernelIR, width: int) -> bool:
    """Whether the SIMD loop may run two vectors of threads per trip: 16 lanes (32 registers
    to hold two), a long body without loops or an adjoint stack. The emitter gives up on it
    at the first access that is not a window or that lanes share (lane_memory.NotWindows):
    then results are bit for bit one vector's, which a wider tree of shared additions would
    change."""
    if width != 16 or _has_region(kernel.body):
        return False
    ops = list(walk_ops(kernel.body))
    return len(ops) > INTERLEAVE_OPS and not any(PRIMS[op.prim].effects & _NOT_INTERLEAVED
                                                 for op in ops)


#: what a body of two vectors per trip may not do: an adjoint stack, atomics, output, checks,
#: a tile's thread-local buffers
_NOT_INTERLEAVED = Effect.STACK | Effect.ATOMIC | Effect.IO | Effect.CHECK | Effect.LOCAL | \
    Effect.LOCAL_WRITE


def _has_region(b: Block) -> bool:
    """Whether a block holds a loop or a @wp.func_grad region, directly or under a branch."""
    return any(not isinstance(s, Op | If) or
               (isinstance(s, If) and any(_has_region(inner) for inner in regions(s)))
               for s in b.stmts)


class LaneEmitter(LaneLog):
    """The SIMD copy of the thread loop (a mixin of the CPU kernel emitter)."""

    kernel: KernelIR
    defs: dict[int, Op]
    uses_stack: bool
    in_lanes: bool = False

    if TYPE_CHECKING:
        def block(self, b: Block) -> None: ...
        def poll(self, go_on: str) -> None: ...
        def define(self, v: Var) -> str: ...
        def op(self, s: Op) -> None: ...
        def emit_if(self, s: If) -> None: ...
        def emit_loop(self, s: Loop) -> None: ...
        def root_offset(self, p: Var) -> int | None: ...
        def emit_scalar_op(self, s: Op) -> None: ...
        def emit_scalar_loop(self, s: Loop) -> None: ...

    def setup_lanes(self, plan: LaneFacts | None, width: int) -> None:
        self.lane_plan = plan if plan is not None and plan.reason is None else None
        self.width = width
        self.varying = self.lane_plan.varying if self.lane_plan else frozenset()
        self.lane_by_lane = frozenset(self.lane_plan.shared_atomics) if self.lane_plan \
            else frozenset()
        self.ordered = bool(self.lane_plan and self.lane_plan.ordered)
        self.prefetch_vectors = PREFETCH_VECTORS
        self.prefetched = set()
        self.mask = None
        self.log: list[LogEntry] = []
        self.allocas: list[str] = []
        self.depth = 0
        self.loop_depth = 0  # loops around the op being emitted
        self.reverse = self.kernel.reverse_threads
        self.setup_values()
        self.alias_md = {}
        self.shared_add_count = {}
        for op in walk_ops(self.kernel.body):
            if Effect.ACCUMULATE in PRIMS[op.prim].effects:
                root = self.root_offset(op.args[0])
                if root is not None and root in self.private_adds:
                    self.shared_add_count[root] = self.shared_add_count.get(root, 0) + 1
        self.streams = False
        if self.lane_plan is not None:
            self.module_metadata = ('!3 = distinct !{!3, !4}',
                                    '!4 = !{!"llvm.loop.unroll.disable"}', '!5 = !{i32 1}',
                                    *self.setup_alias_scopes(self.lane_plan.roots))

    # -- dispatch ----------------------------------------------------------------------------

    def lane_op(self, s: Op) -> None:
        lanewise = PRIMS[s.prim].has(_BY_LANE) or (s.result is not None and self.is_varying(s.result))
        if not lanewise:
            self.emit_scalar_op(s)
        elif s.prim in MEMORY_RULES:
            MEMORY_RULES[s.prim](self, s)
        elif not (s.prim in _AFFINE and self.try_affine(s)):
            PURE_RULES[s.prim](self, s)

    def lane_block(self, b: Block) -> None:
        """A block's statements, runs of accesses to one element's components together."""
        stmts, k = list(b.stmts), 0
        while k < len(stmts):
            s = stmts[k]
            if isinstance(s, Op):
                run = self.run_of(stmts, k)  # type: ignore[arg-type]
                if len(run) > 1 and self.lane_run(run):
                    k += len(run)
                    continue
                if s.prim != "arg":
                    self.op(s)
            elif isinstance(s, If):
                self.emit_if(s)
            else:
                assert isinstance(s, Loop)
                self.emit_loop(s)
            k += 1

    def lane_value(self, v: Var, varying: bool) -> str:
        """v's name as a value of the given kind (a vector is made where needed)."""
        return self.vec(v) if varying else self.names[v.id]

    # -- if ----------------------------------------------------------------------------------

    def lane_if(self, s: If) -> None:
        if not self.is_varying(s.cond):
            self.uniform_if(s)
            return
        f = self.f
        cond = self.vec(s.cond)
        outer = self.mask
        masks = (self.mask_and(outer, cond), self.mask_and(outer, self.mask_not(cond)))
        values = []
        for blk, m in zip((s.then, s.orelse), masks, strict=True):
            values.append(self.masked_block(blk, m))
        self.mask = outer
        for r, a, b in zip(s.results, values[0], values[1], strict=True):
            vt = self.vty(r.type)
            f.emit(f"{self.vdefine(r)} = select {self.vty('i1')} {cond}, {vt} {a}, {vt} {b}")

    def masked_block(self, blk: Block, mask: str) -> list[str]:
        """Run a branch under mask when some lane is on; its yields as vectors (zero where no
        lane ran it)."""
        f = self.f
        if not blk.stmts:
            return [self.vec(y) for y in blk.yields]
        go, done, before = f.fresh("lgo"), f.fresh("ldone"), f.label
        f.emit(f"br i1 {self.any_lane(mask)}, label %{go}, label %{done}")
        f.start_block(go)
        self.enter_scope(mask)
        self.block(blk)
        ys = [self.vec(y) for y in blk.yields]
        self.leave_scope()
        end = f.label
        f.emit(f"br label %{done}")
        f.start_block(done)
        out = []
        for y, name in zip(blk.yields, ys, strict=True):
            merged = f.fresh("%lphi")
            f.emit(f"{merged} = phi {self.vty(y.type)} [{name}, %{end}], "
                   f"[zeroinitializer, %{before}]")
            out.append(merged)
        return out

    def enter_scope(self, mask: str | None) -> None:
        self.mask = mask
        self.depth += 1
        self.memo.append({})

    def leave_scope(self) -> None:
        self.depth -= 1
        self.memo.pop()

    def uniform_if(self, s: If) -> None:
        """A branch every lane takes the same way: an ordinary branch (yields made vectors
        where the result varies)."""
        f = self.f
        then_l, else_l, merge_l = f.fresh("then"), f.fresh("else"), f.fresh("endif")
        f.emit(f"br i1 {self.names[s.cond.id]}, label %{then_l}, label %{else_l}")
        ends = []
        for label, blk in ((then_l, s.then), (else_l, s.orelse)):
            f.start_block(label)
            self.enter_scope(self.mask)
            self.block(blk)
            vals = [self.lane_value(y, self.is_varying(r))
                    for y, r in zip(blk.yields, s.results, strict=True)]
            self.leave_scope()
            ends.append((f.label, vals))
            f.emit(f"br label %{merge_l}")
        f.start_block(merge_l)
        for i, r in enumerate(s.results):
            ty = self.vty(r.type) if self.is_varying(r) else reg_type(r.type)
            incoming = ", ".join(f"[{vals[i]}, %{lab}]" for lab, vals in ends)
            name = self.vdefine(r) if self.is_varying(r) else self.define(r)
            f.emit(f"{name} = phi {ty} {incoming}")

    # -- loops whose condition differs between lanes ------------------------------------------

    def lane_loop(self, s: Loop) -> None:
        """Trips while some lane is live; a lane leaves for good when its condition fails."""
        self.loop_depth += 1
        try:
            self.lane_loop_trips(s)
        finally:
            self.loop_depth -= 1

    def lane_loop_trips(self, s: Loop) -> None:
        if not self.is_varying(s.cond.yields[0]):
            self.emit_scalar_loop(s)  # every lane makes the same trips (LoopEmitter, hooked)
            return
        f = self.f
        outer = self.mask
        inits = [self.vec(i) for i in s.inits]
        pre = f.label
        labels = {k: f.fresh(k) for k in ("lhead", "lbody", "llatch", "lpoll", "lend")}
        f.emit(f"br label %{labels['lhead']}")
        f.start_block(labels["lhead"])
        phi_at = len(f.lines)
        for p in s.params:
            self.vdefine(p)
        active, trip = f.fresh("%lact"), f.fresh("%ltrip")
        self.enter_scope(active)
        self.block(s.cond)
        live = self.mask_and(active, self.vec(s.cond.yields[0]))
        f.emit(f"br i1 {self.any_lane(live)}, label %{labels['lbody']}, label %{labels['lend']}")
        f.start_block(labels["lbody"])
        nexts = self.loop_trip(s, live)
        self.leave_scope()
        polled = self.loop_latch(trip, labels)
        start = "splat (i1 true)" if outer is None else outer
        ways = [(pre, start, "0"), (labels["llatch"], live, f"{trip}.next"),
                (polled, live, f"{trip}.next")]
        phis = [f"  {active} = phi {self.vty('i1')} " + _incoming((w[0], w[1]) for w in ways),
                f"  {trip} = phi i64 " + _incoming((w[0], w[2]) for w in ways)]
        for p, i, n in zip(s.params, inits, nexts, strict=True):
            phis.append(f"  {self.vnames[p.id]} = phi {self.vty(p.type)} "
                        + _incoming([(pre, i), (labels["llatch"], n), (polled, n)]))
        f.lines[phi_at:phi_at] = phis
        f.start_block(labels["lend"])
        self.mask = outer
        for r, p in zip(s.results, s.params, strict=True):
            self.vnames[r.id] = self.vnames[p.id]

    def loop_trip(self, s: Loop, live: str) -> list[str]:
        """One trip's body under the live lanes; the next values (the old ones where a lane is
        not live)."""
        f = self.f
        self.mask = live
        self.memo.append({})
        self.block(s.body)
        nexts = []
        for p, y in zip(s.params, s.body.yields, strict=True):
            kept = f.fresh("%lkeep")
            vt = self.vty(p.type)
            f.emit(f"{kept} = select {self.vty('i1')} {live}, {vt} {self.vec(y)}, {vt} "
                   f"{self.vnames[p.id]}")
            nexts.append(kept)
        self.memo.pop()
        return nexts

    def loop_latch(self, trip: str, labels: dict[str, str]) -> str:
        """Count the trip and poll for Ctrl-C every POLL_TRIPS trips; the poll's last label."""
        f = self.f
        f.emit(f"br label %{labels['llatch']}")
        f.start_block(labels["llatch"])
        f.emit(f"{trip}.next = add nuw nsw i64 {trip}, 1")
        f.emit(f"{trip}.strip = and i64 {trip}.next, {POLL_TRIPS - 1}")
        f.emit(f"{trip}.poll = icmp eq i64 {trip}.strip, 0")
        f.emit(f"br i1 {trip}.poll, label %{labels['lpoll']}, label %{labels['lhead']}")
        f.start_block(labels["lpoll"])
        self.poll(labels["lhead"])
        return f.label

    # -- hooks for LoopEmitter (a loop every lane runs alike) ---------------------------------

    def lane_phi_type(self, p: Var) -> str:
        return self.vty(p.type) if self.is_varying(p) else reg_type(p.type)

    # -- the thread loop ---------------------------------------------------------------------

    def lane_thread_loop(self, names: dict[int, str], tail: str) -> None:
        """The SIMD loop over [start, vend) in chunks of POLL_THREADS threads (a multiple of
        W); then the scalar loop `tail` runs [vend, end)."""
        f, w = self.f, self.width
        self.prefix, self.names, self.in_lanes = "v.", names, True
        self.grads_known = True
        f.start_block("v.pre")
        f.emit("%v.n = sub i64 %end, %start")
        f.emit(f"%v.rem = urem i64 %v.n, {w}")
        f.emit("%v.vend = sub i64 %end, %v.rem")
        f.emit("%v.any = icmp slt i64 %start, %v.vend")
        if self.uses_stack:
            f.emit(f"%lcap = udiv i64 %stack.cap, {8 * w}")
        f.emit("br i1 %v.any, label %v.chunk, label %v.tail")
        f.start_block("v.chunk")
        f.emit("%v.c = phi i64 [%start, %v.pre], [%v.cend, %v.polled]")
        f.emit(f"%v.cnext = add nuw nsw i64 %v.c, {POLL_THREADS}")
        f.emit("%v.cless = icmp slt i64 %v.cnext, %v.vend")
        f.emit("%v.cend = select i1 %v.cless, i64 %v.cnext, i64 %v.vend")
        f.emit("br label %v.thread")
        self.lane_vector()
        f.start_block("v.chunk.end")
        f.emit("%v.cmore = icmp slt i64 %v.cend, %v.vend")
        f.emit("br i1 %v.cmore, label %v.poll, label %v.tail")
        f.start_block("v.poll")
        self.poll("v.polled")
        f.start_block("v.polled")
        f.emit("br label %v.chunk")
        f.start_block("v.tail")
        f.emit("%v.left = icmp slt i64 %v.vend, %end")
        f.emit(f"br i1 %v.left, label %{tail}, label %exit")
        self.in_lanes = False

    def lane_vector(self) -> None:
        """One trip of the SIMD loop: W threads from %v.t, then their logged additions."""
        f = self.f
        f.start_block("v.thread")
        f.emit("%v.t = phi i64 [%v.c, %v.chunk], [%v.t.next, %v.latch]")
        f.emit("%v.tid = " + ("sub i64 %last.thread, %v.t" if self.reverse else "add i64 %v.t, 0"))
        if self.uses_stack:
            f.emit(f"store {self.vty('i64')} zeroinitializer, ptr %lsp, align 64")
        at = len(f.lines)
        self.block(self.kernel.body)
        self.clear_log_at(at)
        self.flush_log("v.flush")
        f.emit("br label %v.latch")
        f.start_block("v.latch")
        f.emit(f"%v.t.next = add nuw nsw i64 %v.t, {self.width}")
        f.emit("%v.more = icmp slt i64 %v.t.next, %v.cend")
        f.emit("br i1 %v.more, label %v.thread, label %v.chunk.end, !llvm.loop !0")

    def clear_log_at(self, at: int) -> None:
        """Clear the conditional log entries at the top of each vector of threads."""
        saved = self.f.lines
        self.f.lines = []
        self.clear_log()
        lines, self.f.lines = self.f.lines, saved
        saved[at:at] = lines

    def lane_entry_allocas(self) -> list[str]:
        out = [f"  {a}" for a in self.allocas]
        if self.uses_stack and self.lane_plan is not None:
            out.append(f"  %lsp = alloca {self.vty('i64')}, align 64")
        return out

    # -- when the entry may take the SIMD loop ------------------------------------------------

    def lanes_allowed(self, arrays: dict[int, int]) -> str:
        """An i1: the launch is small enough, and no written array overlaps another array the
        kernel accesses (nor itself: a zero stride along an axis of more than one element).
        arrays: data-pointer argument offset -> ndim, for every array parameter."""
        assert self.lane_plan is not None
        f = self.f
        ok = f.fresh("%lok")
        f.emit(f"{ok} = icmp sle i64 %end, {MAX_LANE_THREADS}")
        for condition in self.lane_plan.conditions:
            ok = self.and_(ok, self.permutation_covers(*condition))
        roots = self.lane_plan.roots
        for r in self.lane_plan.written:
            ok = self.and_(ok, self.not_self_overlapping(r, arrays))
        written = self.lane_plan.written
        pairs = [(roots.index(r), k) for r in written for k, q in enumerate(roots)
                 if q != r and (q not in written or q > r)]  # each written pair once
        if not pairs:
            return ok
        self.allocas.append(f"%lspans = alloca [{len(roots)} x [2 x i64]], align 16")
        for k, r in enumerate(roots):
            for half, value in enumerate(self.span(r, arrays)):
                p = f.fresh("%lspp")
                f.emit(f"{p} = getelementptr [2 x i64], ptr %lspans, i64 {k}, i64 {half}")
                f.emit(f"store i64 {value}, ptr {p}, align 8")
        return self.and_(ok, self.disjoint_pairs(pairs))

    def permutation_covers(self, offset: int, dim: int, count: int, ready: int) -> str:
        """An i1: the permutation whose descriptor the argument at `offset` points at exists and
        has at least the launch's extent along `dim` entries (passes/threads.py `conditions`:
        lanes then store at distinct elements, as the plan assumed)."""
        f = self.f
        at, desc, flag = (f.fresh("%lpc") for _ in range(3))
        f.emit(f"{at} = getelementptr i8, ptr %args, i64 {offset}")
        f.emit(f"{desc} = load ptr, ptr {at}, align 8")
        words = []
        for word in (ready, count):
            p, v = f.fresh("%lpc"), f.fresh("%lpc")
            f.emit(f"{p} = getelementptr i8, ptr {desc}, i64 {word}")
            f.emit(f"{v} = load i32, ptr {p}, align 4")
            words.append(v)
        f.emit(f"{flag} = icmp ne i32 {words[0]}, 0")
        wide, enough = f.fresh("%lpc"), f.fresh("%lpc")
        f.emit(f"{wide} = sext i32 {words[1]} to i64")
        f.emit(f"{enough} = icmp sge i64 {wide}, %dim{dim}")
        return self.and_(flag, enough)

    def disjoint_pairs(self, pairs: list[tuple[int, int]]) -> str:
        """An i1: the spans of each pair (indices into %lspans) do not overlap. A loop over a
        table of pairs, not a chain of compares: such chains take LLVM's instruction combiner
        seconds on kernels with many arrays."""
        f = self.f
        table = ", ".join(f"i32 {a}, i32 {b}" for a, b in pairs)
        self.declares.add(f"@gl.lane.pairs = private unnamed_addr constant "
                          f"[{2 * len(pairs)} x i32] [{table}], align 4")
        pre = f.label
        f.emit("br label %lpairs")
        f.start_block("lpairs")
        f.emit(f"%lpk = phi i64 [0, %{pre}], [%lpk.next, %lpairs.next]")
        sides = []
        for half in (0, 1):
            at, idx, lo, hi = (f.fresh("%lpq") for _ in range(4))
            f.emit(f"{at} = getelementptr [2 x i32], ptr @gl.lane.pairs, i64 %lpk, i64 {half}")
            f.emit(f"{idx} = load i32, ptr {at}, align 4")
            for name, part in ((lo, 0), (hi, 1)):
                q = f.fresh("%lpq")
                f.emit(f"{q} = getelementptr [2 x i64], ptr %lspans, i32 {idx}, i64 {part}")
                f.emit(f"{name} = load i64, ptr {q}, align 8")
            sides.append((lo, hi))
        apart = self.disjoint(sides[0], sides[1])
        f.emit(f"br i1 {apart}, label %lpairs.next, label %lpairs.end")
        f.start_block("lpairs.next")
        f.emit("%lpk.next = add nuw nsw i64 %lpk, 1")
        f.emit(f"%lpk.more = icmp ult i64 %lpk.next, {len(pairs)}")
        f.emit("br i1 %lpk.more, label %lpairs, label %lpairs.end, !llvm.loop !3")
        f.start_block("lpairs.end")
        f.emit("%lpairs.ok = phi i1 [false, %lpairs], [true, %lpairs.next]")
        return "%lpairs.ok"

    def and_(self, a: str, b: str) -> str:
        out = self.f.fresh("%lok")
        self.f.emit(f"{out} = and i1 {a}, {b}")
        return out

    def words(self, root: int, arrays: dict[int, int]) -> tuple[int, list[str], list[str]]:
        """(ndim, shape words, stride words) of the array a data or gradient pointer is in."""
        data = root if root in arrays else root - 8
        ndim = arrays[data]
        loaded = []
        for k in range(2 * ndim):
            p, v = self.f.fresh("%lwp"), self.f.fresh("%lw")
            self.f.emit(f"{p} = getelementptr i8, ptr %args, i64 {data + 16 + 8 * k}")
            self.f.emit(f"{v} = load i64, ptr {p}, align 8")
            loaded.append(v)
        return ndim, loaded[:ndim], loaded[ndim:]

    def span(self, root: int, arrays: dict[int, int]) -> tuple[str, str]:
        """[lo, hi) of the bytes an array's elements occupy, as integers (lo = hi: empty)."""
        f = self.f
        _, shape, strides = self.words(root, arrays)
        p, base = f.fresh("%lspan"), f.fresh("%lspan")
        f.emit(f"{p} = getelementptr i8, ptr %args, i64 {root}")
        f.emit(f"{base} = load i64, ptr {p}, align 8")
        lo, hi, empty = base, base, "false"
        for n, st in zip(shape, strides, strict=True):
            last, ext, neg, e0 = (f.fresh("%lspan") for _ in range(4))
            f.emit(f"{last} = sub i64 {n}, 1")
            f.emit(f"{ext} = mul i64 {last}, {st}")
            f.emit(f"{neg} = icmp slt i64 {ext}, 0")
            lo2, hi2 = f.fresh("%lspan"), f.fresh("%lspan")
            f.emit(f"{lo2} = add i64 {lo}, {ext}")
            f.emit(f"{hi2} = add i64 {hi}, {ext}")
            lo3, hi3 = f.fresh("%lspan"), f.fresh("%lspan")
            f.emit(f"{lo3} = select i1 {neg}, i64 {lo2}, i64 {lo}")
            f.emit(f"{hi3} = select i1 {neg}, i64 {hi}, i64 {hi2}")
            f.emit(f"{e0} = icmp slt i64 {n}, 1")
            lo, hi, empty = lo3, hi3, self.or_(empty, e0)
        size = self.elem_sizes.get(root, 1)
        end, hi_out = f.fresh("%lspan"), f.fresh("%lspan")
        f.emit(f"{end} = add i64 {hi}, {size}")
        f.emit(f"{hi_out} = select i1 {empty}, i64 {lo}, i64 {end}")
        return lo, hi_out

    def or_(self, a: str, b: str) -> str:
        if a == "false":
            return b
        out = self.f.fresh("%lor")
        self.f.emit(f"{out} = or i1 {a}, {b}")
        return out

    def disjoint(self, a: tuple[str, str], b: tuple[str, str]) -> str:
        f = self.f
        x, y, z = f.fresh("%ldj"), f.fresh("%ldj"), f.fresh("%ldj")
        f.emit(f"{x} = icmp ule i64 {a[1]}, {b[0]}")
        f.emit(f"{y} = icmp ule i64 {b[1]}, {a[0]}")
        f.emit(f"{z} = or i1 {x}, {y}")
        return z

    def not_self_overlapping(self, root: int, arrays: dict[int, int]) -> str:
        f = self.f
        _, shape, strides = self.words(root, arrays)
        ok = "true"
        for n, st in zip(shape, strides, strict=True):
            zero, wide, bad, good = (f.fresh("%lso") for _ in range(4))
            f.emit(f"{zero} = icmp eq i64 {st}, 0")
            f.emit(f"{wide} = icmp sgt i64 {n}, 1")
            f.emit(f"{bad} = and i1 {zero}, {wide}")
            f.emit(f"{good} = xor i1 {bad}, true")
            ok = good if ok == "true" else self.and_(ok, good)
        return ok


def _incoming(ways: Iterable[tuple[str, str]]) -> str:
    """A phi's incoming list from (label, value) pairs."""
    return ", ".join(f"[{value}, %{label}]" for label, value in ways)
