"""The CPU target's entry function: a loop over the thread range [start, end) of a launch block.

The entry takes one pointer, to a launch block (layout: abi.py; runtime/launch/launch.py fills
it): one ctypes argument keeps a launch's foreign call cheap, and each worker thread of a split
launch gets its own block. The thread loop is emitted twice (a copy for contiguous arrays — SIMD
lanes where codegen/lanes.py can, else unit innermost strides that LLVM vectorises — and the
general one) — once only for kernels past CONTIGUOUS_MAX_OPS operations, where the second copy
would double LLVM's time past what it gains — and polls for Ctrl-C between chunks of threads
(codegen/signals.py).
"""

from __future__ import annotations

from ..abi import (
    BLOCK_ARGS,
    BLOCK_DIMS,
    BLOCK_END,
    BLOCK_START,
    BLOCK_STATUS,
    STATUS_INTERRUPTED,
)
from ..ir.nodes import Block, If, KernelIR, Loop, Op, Var, walk_ops
from .float32_math import OWN_FLOAT32
from .lane_memory import NotWindows
from .lanes import LaneEmitter, LaneFacts, interleaves
from .llvm import KernelEmitter, emit_module
from .llvm_blocks import depart
from .llvm_ops import MathCall, string_global
from .signals import KERNEL_DECLARES, POLL_THREADS

_INTRINSICS = ("sqrt", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
               "exp2", "log2", "log10", "floor", "ceil", "round", "rint", "trunc", "pow")
#: LLVM's intrinsics, which become calls of the C library where the CPU has no instruction;
#: the C library for what LLVM has no intrinsic for; gradloom's own float32 exp, log, sin and
#: cos, which SIMD lanes compute as vectors (codegen/float32_math.py)
CPU_MATH: dict[str, MathCall] = {
    **{n: ("intrinsic", n) for n in _INTRINSICS},
    **{n: ("libm", n) for n in ("cbrt", "erf", "erfc", "atan2")},
    **{n: ("own", n) for n in OWN_FLOAT32},
}


#: kernels of more primitive operations than this get one thread loop, not two: the second
#: copy (the SIMD lanes, or the contiguous scalar loop) doubles LLVM's optimisation time. Up to
#: here it pays: curlnoise on vec4 with 2 octaves (6,004 operations, its adjoint 16,042) runs
#: 5x faster in lanes (65,536 points on one core: 54.8 -> 11.0 ms, backward 62.6 -> 13.3 ms)
#: and compiles in 1.26 s (adjoint 1.96 s) against 0.84 (1.22) with one loop
#: (benchmarks/bench_compile.py, docs/performance.md); the cap was 2,000 before the lanes existed
CONTIGUOUS_MAX_OPS = 16384


def contiguous_copy(kernel: KernelIR) -> bool:
    """Whether the entry gets a second thread loop for contiguous arrays."""
    return sum(1 for _ in walk_ops(kernel.body)) <= CONTIGUOUS_MAX_OPS


class CpuKernelEmitter(KernelEmitter, LaneEmitter):
    """The CPU entry: `void entry(ptr block)` looping over its slice of the threads."""

    math = CPU_MATH
    module_declares = tuple(KERNEL_DECLARES)
    #: the threads of a CPU block run at once and exchange tile records (codegen/llvm_blocks.py)
    block_exchange = True

    def __init__(self, kernel: KernelIR, symbol: str, private_adds: tuple[int, ...] = (),
                 lanes: LaneFacts | None = None, width: int = 0,
                 arrays: dict[int, tuple[int, int]] | None = None,
                 streamed: frozenset[int] = frozenset()) -> None:
        super().__init__(kernel, symbol, private_adds)
        self.arrays = arrays or {}
        self.streamed = streamed
        self.elem_sizes = {off + g: size for off, (_, size) in self.arrays.items()
                           for g in (0, 8)}
        use = lanes is not None and width > 1 and contiguous_copy(kernel)
        self.setup_lanes(lanes if use else None, width)

    # -- the SIMD copy's dispatch (codegen/lanes.py) -------------------------------------------

    def op(self, s: Op) -> None:
        if self.in_lanes:
            self.lane_op(s)
        else:
            super().op(s)

    def emit_scalar_op(self, s: Op) -> None:
        super().op(s)

    def block(self, b: Block) -> None:
        if self.in_lanes:
            self.lane_block(b)
        else:
            super().block(b)

    def emit_if(self, s: If) -> None:
        if self.in_lanes:
            self.lane_if(s)
        else:
            super().emit_if(s)

    def emit_loop(self, s: Loop) -> None:
        if self.in_lanes:
            self.lane_loop(s)
        else:
            super().emit_loop(s)

    def emit_scalar_loop(self, s: Loop) -> None:
        """A loop every lane runs alike: LoopEmitter's, with vector phis where values vary."""
        for p, i in zip(s.params, s.inits, strict=True):
            if self.is_varying(p):
                self.vec(i)  # made before the loop, so the loop's phi can use it
        self.memo.append({})
        super().emit_loop(s)
        self.memo.pop()

    def name(self, v: Var) -> str:
        if self.in_lanes and self.is_varying(v):
            return self.vec(v)
        return super().name(v)

    def define(self, v: Var) -> str:
        if self.in_lanes and self.is_varying(v):
            return self.vdefine(v)
        return super().define(v)

    def loop_phi_type(self, p: Var) -> str:
        return self.lane_phi_type(p) if self.in_lanes else super().loop_phi_type(p)

    def loop_value(self, p: Var, v: Var) -> str:
        if self.in_lanes:
            return self.lane_value(v, self.is_varying(p))
        return super().loop_value(p, v)

    def loop_result(self, r: Var, p: Var) -> None:
        if self.in_lanes and self.is_varying(r):
            self.vnames[r.id] = self.vnames[p.id]
        else:
            super().loop_result(r, p)

    def emit_function(self) -> str:
        f = self.f
        f.start_block("entry")
        f.emit("%dims = getelementptr i8, ptr %block, i64 " + str(BLOCK_DIMS))
        f.emit("%err = getelementptr i8, ptr %block, i64 " + str(BLOCK_STATUS))
        f.emit("%args = getelementptr i8, ptr %block, i64 " + str(BLOCK_ARGS))
        f.emit("%startp = getelementptr i8, ptr %block, i64 " + str(BLOCK_START))
        f.emit("%start = load i64, ptr %startp, align 8")
        f.emit("%endp = getelementptr i8, ptr %block, i64 " + str(BLOCK_END))
        f.emit("%end = load i64, ptr %endp, align 8")
        self.enter()
        self.hoist_args(self.kernel.body)
        for k in range(4):
            f.emit(f"%dimp{k} = getelementptr i64, ptr %dims, i64 {k}")
            f.emit(f"%dim{k} = load i64, ptr %dimp{k}, align 8")
        self.uses_stack = any(op.prim == "push" for op in walk_ops(self.kernel.body))
        if self.uses_stack:
            self.stack_setup()
        f.emit("%ends = add i64 %start, %end")
        f.emit("%last.thread = sub i64 %ends, 1")
        f.emit("%nonempty = icmp slt i64 %start, %end")
        f.emit("br i1 %nonempty, label %dispatch, label %exit")
        f.start_block("dispatch")
        self.thread_loops()
        f.start_block("interrupted")
        f.emit(f"store i32 {STATUS_INTERRUPTED}, ptr %err, align 4")
        f.emit("br label %exit")
        f.start_block("exit")
        if self.streams:  # streamed lines reach memory before the launch is done (x86)
            self.declares.add("declare void @llvm.x86.sse.sfence()")
            f.emit("call void @llvm.x86.sse.sfence()")
        f.emit("store atomic ptr null, ptr @gl_running monotonic, align 8")
        if any(op.prim == "bxchg" for op in walk_ops(self.kernel.body)):
            depart(self)
        f.emit("ret void")
        f.lines[1:1] = self.lane_entry_allocas()
        head = f"define void @{self.symbol}(ptr noalias nocapture %block) nounwind {{"
        return "\n".join([head, *f.lines, "}"])

    def thread_loops(self) -> None:
        """The copies of the thread loop and the branch to the one this launch takes: the SIMD
        copy (codegen/lanes.py) or the contiguous one when every array is contiguous, else the
        strided one, which also runs the threads the SIMD copy leaves over."""
        f = self.f
        arg_names = dict(self.names)
        unit = {**arg_names, **{v.id: str(size) for v, size in self.kernel.unit_strides}}
        begin = [("%start", "dispatch")]
        if self.lane_plan is not None:
            go = self.and_(self.all_contiguous(), self.lanes_allowed(
                {off: ndim for off, (ndim, _) in self.arrays.items()}))
            begin = [("%start", f.label)]
            f.emit(f"br i1 {go}, label %v.pre, label %s.pre")
            self.lane_thread_loop(unit, "s.pre")
            begin.append(("%v.vend", "v.tail"))
        elif self.kernel.unit_strides and contiguous_copy(self.kernel):
            f.emit(f"br i1 {self.all_contiguous()}, label %c.pre, label %s.pre")
            self.thread_loop("c.", unit, [("%start", "dispatch")])
        else:
            f.emit("br label %s.pre")
        self.thread_loop("s.", arg_names, begin)

    def enter(self) -> None:
        """Note the interrupt count (codegen/signals.py) and which kernel runs; every way out
        of the entry goes through the `exit` block, which clears the second."""
        name = string_global(self.declares, f"'{self.kernel.name}'")
        self.f.emit("%interrupts = load atomic i64, ptr @gl_launch_base monotonic, align 8")
        self.f.emit(f"store atomic ptr {name}, ptr @gl_running monotonic, align 8")

    def all_contiguous(self) -> str:
        """An i1 that is true when every array's innermost stride is its element size (and, in
        an adjoint, every gradient pointer it uses is non-null)."""
        acc = "true"
        for v in self.grad_roots:
            live, both = self.f.fresh("%glive"), self.f.fresh("%unit")
            self.f.emit(f"{live} = icmp ne ptr {self.name(v)}, null")
            self.f.emit(f"{both} = and i1 {acc}, {live}")
            acc = both
        for v, size in self.kernel.unit_strides:
            eq, both = self.f.fresh("%unit"), self.f.fresh("%unit")
            self.f.emit(f"{eq} = icmp eq i64 {self.name(v)}, {size}")
            self.f.emit(f"{both} = and i1 {acc}, {eq}")
            acc = both
        return acc

    def thread_loop(self, prefix: str, names: dict[int, str],
                    begin: list[tuple[str, str]]) -> None:
        """One copy of the loop over thread indices, its SSA names and labels prefixed: chunks
        of POLL_THREADS threads, with an interrupt poll between chunks (the inner loop stays
        free of it, so it still vectorises). begin: (first thread, label) per way in."""
        f = self.f
        p = prefix
        self.prefix, self.names = prefix, names
        self.grads_known = prefix == "c."
        f.start_block(f"{p}pre")
        ways = ", ".join(f"[{t}, %{label}]" for t, label in begin)
        f.emit(f"%{p}begin = phi i64 {ways}")
        f.emit(f"br label %{p}chunk")
        f.start_block(f"{p}chunk")
        f.emit(f"%{p}c = phi i64 [%{p}begin, %{p}pre], [%{p}cend, %{p}polled]")
        f.emit(f"%{p}cnext = add nuw nsw i64 %{p}c, {POLL_THREADS}")
        f.emit(f"%{p}cless = icmp slt i64 %{p}cnext, %end")
        f.emit(f"%{p}cend = select i1 %{p}cless, i64 %{p}cnext, i64 %end")
        f.emit(f"br label %{p}thread")
        f.start_block(f"{p}thread")
        f.emit(f"%{p}t = phi i64 [%{p}c, %{p}chunk], [%{p}t.next, %{p}latch]")
        if self.kernel.reverse_threads:
            f.emit(f"%{p}tid = sub i64 %last.thread, %{p}t")
        else:
            f.emit(f"%{p}tid = add i64 %{p}t, 0")
        if self.uses_stack:
            f.emit("store i64 0, ptr %sp, align 8")
        self.block(self.kernel.body)
        f.emit(f"br label %{p}latch")
        f.start_block(f"{p}latch")
        f.emit(f"%{p}t.next = add nuw nsw i64 %{p}t, 1")
        f.emit(f"%{p}more = icmp slt i64 %{p}t.next, %{p}cend")
        f.emit(f"br i1 %{p}more, label %{p}thread, label %{p}chunk.end, !llvm.loop !0")
        f.start_block(f"{p}chunk.end")
        f.emit(f"%{p}cmore = icmp slt i64 %{p}cend, %end")
        f.emit(f"br i1 %{p}cmore, label %{p}poll, label %exit")
        f.start_block(f"{p}poll")
        self.poll(f"{p}polled")
        f.start_block(f"{p}polled")
        f.emit(f"br label %{p}chunk")

    def emit_print(self, s: Op) -> None:
        """printf(attr, values...) when the condition holds, then fflush (output in order)."""
        f = self.f
        fmt = string_global(self.declares, str(s.attr))
        args = [f"ptr {fmt}"] + [self.vararg(v) for v in s.args[1:]]
        go, done = f.fresh("print"), f.fresh("printed")
        f.emit(f"br i1 {self.a(s, 0)}, label %{go}, label %{done}")
        f.start_block(go)
        self.declares.add("declare i32 @printf(ptr, ...)")
        self.declares.add("declare i32 @fflush(ptr)")
        f.emit(f"call i32 (ptr, ...) @printf({', '.join(args)})")
        f.emit("call i32 @fflush(ptr null)")
        f.emit(f"br label %{done}")
        f.start_block(done)

    def poll(self, go_on: str) -> None:
        """Continue at go_on unless a SIGINT arrived since the entry started; on the way, tick
        (codegen/signals.py: now and then that puts the SIGINT handler back if it was
        replaced). Ends in a block of its own, the one branching to go_on."""
        f = self.f
        now, hit, tick, unset, fn = (f.fresh("%irq") for _ in range(5))
        ticked = f.fresh("tick")
        f.emit(f"{now} = load atomic i64, ptr @gl_interrupts monotonic, align 8")
        f.emit(f"{hit} = icmp ne i64 {now}, %interrupts")
        f.emit(f"br i1 {hit}, label %interrupted, label %{ticked}, !prof !2")
        f.start_block(ticked)
        f.emit(f"{tick} = load atomic ptr, ptr @gl_tick_fn monotonic, align 8")
        f.emit(f"{unset} = icmp eq ptr {tick}, null")
        f.emit(f"{fn} = select i1 {unset}, ptr @gl.noop, ptr {tick}")
        f.emit(f"call void {fn}()")
        f.emit(f"br label %{go_on}")


def cpu_module(kernel: KernelIR, symbol: str, triple: str, datalayout: str,
               private_adds: tuple[int, ...] = (), lanes: LaneFacts | None = None,
               width: int = 0, arrays: dict[int, tuple[int, int]] | None = None,
               streamed: frozenset[int] = frozenset()) -> str:
    """The LLVM module of a kernel's CPU entry; with a lane plan (passes/lanes.py) and a vector
    width, a SIMD copy of the thread loop (arrays: data-pointer argument offset -> (ndim,
    element size) of each array parameter; streamed: argument offsets of the pointers whose
    whole-vector stores in that copy are non-temporal, x86 only: LaneMemory.vector_store)."""
    if lanes is not None and interleaves(kernel, width):
        em = CpuKernelEmitter(kernel, symbol, private_adds, lanes, 2 * width, arrays, streamed)
        em.windows_only = True
        try:
            return emit_module(em, triple, datalayout)
        except NotWindows:
            pass
    em = CpuKernelEmitter(kernel, symbol, private_adds, lanes, width, arrays, streamed)
    return emit_module(em, triple, datalayout)
